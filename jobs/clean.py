"""Rule-based cleaning of a raw Chinese crawl (PanGu-α §3.1.1 + sensitive words) on Spark.

    spark-submit jobs/clean.py --input RAW [RAW ...] --output OUT [--config FILE] [--set k=v ...]
    python -m jobs.clean --input RAW --output OUT          # embedded local[*] Spark

With --set classify.spam_model=DIR / classify.quality_model=DIR (from jobs.train_classifier) it
also scores every kept document (spam_prob, quality_score) and drops spam / low_quality.

Writes OUT/documents/ (kept, Parquet), OUT/rejected/ (doc_id, stage, reason, detail, text),
OUT/report.json (the ledger: input = documents + rejected, per stage, reason and file). The
Parquet directories are files of about output.target_file_bytes (256 MiB; small outputs: two per
core), however many input files there were (etl/runtime/sizing.py).
OUT appears atomically; an existing OUT is only replaced with --overwrite. Exit codes: jobs/cli.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

from base.log import setup_logging
from etl.corpus import CleanConfig, clean_corpus
from etl.report.assemble import summary_lines
from etl.runtime.paths import check_job_paths
from jobs import cli
from jobs.config import load_config

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "clean.toml"
INPUT_HELP = (
    "files, directories or globs: *.warc[.gz], *.wet[.gz], *.jsonl[.gz], *.parquet; "
    "any Hadoop path (file://, hdfs://, s3a://)"
)


def parse_args(argv: list[str] | None = None):
    p = cli.parser("jobs.clean", __doc__, DEFAULT_CONFIG, "rules.length.min_chars=200")
    p.add_argument("--input", nargs="+", required=True, help=INPUT_HELP)
    p.add_argument("--output", required=True, help="output directory (created atomically)")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    args = parse_args(argv)

    def body() -> int:
        cfg = load_config(CleanConfig, args.config, args.overrides)
        check_job_paths(args.input, args.output)  # before any work: the input is never written
        report = clean_corpus(cfg, args.input, args.output, args.overwrite)
        for line in summary_lines(report):
            cli.log.info(line)
        return cli.exit_code(report)

    return cli.run_job(body)


if __name__ == "__main__":
    sys.exit(main())
