"""Labelled seed data for the pipeline's two text classifiers: spam / ham for the fastText spam
filter (the seed's own spam generator, ``spam``; ham from the reference corpus and crawl-like
pages, ``pages``) and hq / lq for the quality classifier (the reference corpus, optionally with crawl-like
good pages, against a sample of the raw crawl, ``raw``), assembled by ``build``.

    python -m demo.seed --output data/seed --crawl data/demo_crawl \
        --reference data/reference/reference.jsonl --hq-crawl-like 0.3
"""

from demo.seed.build import build_seed_data

__all__ = ["build_seed_data"]
