"""Exact + MinHash-LSH fuzzy deduplication of a cleaned corpus on Spark.

    spark-submit jobs/dedup.py --input OUT_CLEAN/documents --output OUT_DEDUP [--index DIR] \\
        [--set dedup.minhash.threshold=0.7]
    python -m jobs.dedup --input out/clean/documents --output out/dedup

Writes OUT/documents/ (one document per duplicate cluster: an indexed document, then the highest
quality_score, then the smallest doc_id), OUT/duplicates/ (doc_id, duplicate_of, kind = exact |
near) and OUT/report.json (input = documents + duplicates, the MinHash settings). OUT appears
atomically. Exit codes: jobs/cli.py.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import ClassVar

from base.log import setup_logging
from etl.corpus import dedup_corpus
from etl.dedup.stage import DedupConfig
from etl.read.records import ReaderConfig
from etl.runtime.paths import check_job_paths
from etl.runtime.spark import SparkConfig
from jobs import cli
from jobs.config import load_config


@dataclass(frozen=True)
class DedupJobConfig:
    spark: SparkConfig = field(default_factory=SparkConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)  # reader.s3: an s3:// input, output or index's store
    RENAMED: ClassVar[dict[str, str]] = {"master": "spark.master", "minhash": "dedup.minhash", "verify": "dedup.verify"}


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    p = cli.parser("jobs.dedup", __doc__, None, "dedup.minhash.threshold=0.7 --set dedup.verify=measure")
    p.add_argument("--input", nargs="+", required=True, help="Parquet documents (doc_id, text[, quality_score])")
    p.add_argument("--output", required=True, help="output directory (created atomically)")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    p.add_argument(
        "--index",
        default=None,
        help="persistent dedup index directory: dedup against everything it "
        "holds, then append this run's survivors (created on first use)",
    )
    args = p.parse_args(argv)

    def body() -> int:
        cfg = load_config(DedupJobConfig, args.config, args.overrides)
        check_job_paths(args.input, args.output, args.index)  # before any work: the input is never written
        r = dedup_corpus(cfg.spark, cfg.dedup, args.input, args.output, args.index, args.overwrite, s3=cfg.reader.s3)
        cli.log.info(
            "dedup: %d in, %d kept, duplicates %s (%.1f s)",
            r["input"]["records"],
            r["documents"],
            r["duplicates_by_kind"],
            r["job"]["elapsed_s"],
        )
        return cli.EXIT_OK

    return cli.run_job(body)


if __name__ == "__main__":
    sys.exit(main())
