"""Build the labelled seed data for the pipeline's two text classifiers.

    python -m demo.seed --output data/seed --crawl data/demo_crawl \
        --reference data/reference/reference.jsonl [--seed 1] [--n-per-label 1500] [--spam-per-label 5000]

Writes OUTPUT/spam.jsonl ("spam" / "ham", the PanGu-α §3.1.1 fastText spam filter),
OUTPUT/quality.jsonl ("hq" / "lq", the GPT-3 Appendix A quality classifier), one
{"text", "label", "id"} object a line, and OUTPUT/SEED.json (seed, counts per label and kind,
sources, sha256 of each file). Spam comes from the seed's own generator (ten families, no
template or word list of the demo crawl); ham is reference documents of every genre and
crawl-like pages of ordinary text; hq is the reference corpus; lq a random sample of the raw
crawl as the readers extract it, before any rule. The same inputs and seed give the same bytes.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from base.log import setup_logging
from demo.seed import build_seed_data
from demo.seed.build import DEFAULT_CRAWL

log = logging.getLogger("zhcorpus")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m demo.seed", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--output", type=Path, required=True, help="directory to write, e.g. data/seed")
    p.add_argument(
        "--crawl",
        type=Path,
        default=Path(DEFAULT_CRAWL),
        help="crawl whose raw records are the quality model's lq (default: %(default)s)",
    )
    p.add_argument(
        "--reference",
        type=Path,
        default=None,
        help="reference corpus JSONL (text, genre); default: demo.reference's documents",
    )
    p.add_argument(
        "--hq-crawl-like",
        type=float,
        default=0.0,
        help="share of the quality model's hq made of good pages of the crawl's own genres "
        "(news windows, reviews, threads) beside the reference (default: %(default)s)",
    )
    p.add_argument("--seed", type=int, default=1, help="seed of every random choice (default: %(default)s)")
    p.add_argument(
        "--n-per-label", type=int, default=1500, help="records per label of quality.jsonl (default: %(default)s)"
    )
    p.add_argument(
        "--spam-per-label",
        type=int,
        default=5000,
        help="records per label of spam.jsonl (default: %(default)s: at 1,500 one held-out ham "
        "page set the spam model's threshold, docs/classifiers.md)",
    )
    args = p.parse_args(argv)
    if args.n_per_label < 1 or args.spam_per_label < 1:
        p.error("--n-per-label and --spam-per-label must be at least 1")
    if not 0.0 <= args.hq_crawl_like <= 1.0:
        p.error("--hq-crawl-like must be in [0, 1]")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging()
    start = time.perf_counter()
    info = build_seed_data(
        args.output,
        seed=args.seed,
        n_per_label=args.n_per_label,
        crawl_dir=args.crawl,
        reference=args.reference,
        hq_crawl_like=args.hq_crawl_like,
        spam_per_label=args.spam_per_label,
    )
    for f in info["files"]:
        log.info("%s: %d records, %.1f MiB, kinds %s", f["path"], f["records"], f["bytes"] / (1 << 20), f["kinds"])
    log.info("wrote seed data to %s in %.1f s", args.output, time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
