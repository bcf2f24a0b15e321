"""The whole corpus build in one Spark job: read → clean → classify → dedup → tokenize → shards.

    spark-submit jobs/build_corpus.py --input RAW [RAW ...] --output OUT [--index DIR] [--set k=v ...]
    python -m jobs.build_corpus --input data/demo_crawl/warc --output out/corpus

Writes, atomically, the DESIGN.md contract:
    OUT/documents/   the kept documents (Parquet), one per duplicate cluster
    OUT/rejected/    doc_id, stage, reason, detail, text ... for every dropped record
    OUT/duplicates/  doc_id, duplicate_of, kind (exact | near)
    OUT/shards/      Megatron .bin/.idx pairs + manifest.json (with --set tokenizer.model=DIR, or a
                     tokenizer trained on this build's documents into OUT/tokenizer/)
    OUT/report.json  the ledger: input records = documents + rejected + duplicates, per stage and file
    OUT/report.html  the same as plots, one self-contained page
The config is the cleaning job's (jobs/configs/clean.toml) plus the [dedup], [tokenizer] and
[shards] sections (etl/corpus.py); every key can be overridden with --set. Exit codes: jobs/cli.py.
documents/ and rejected/ are files of about output.target_file_bytes (etl/runtime/sizing.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from base.log import setup_logging
from etl.corpus import BuildConfig, build_corpus
from etl.report.assemble import summary_lines
from etl.runtime.paths import check_job_paths
from jobs import cli
from jobs.config import load_config

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "clean.toml"


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    p = cli.parser("jobs.build_corpus", __doc__, DEFAULT_CONFIG, "dedup.minhash.threshold=0.7")
    p.add_argument(
        "--input",
        nargs="+",
        required=True,
        help="raw crawl files, directories or globs (WARC, WET, JSONL, Parquet; any Hadoop path)",
    )
    p.add_argument("--output", required=True, help="output directory (created atomically)")
    p.add_argument(
        "--index",
        default=None,
        help="persistent dedup index: dedup against every document it holds, "
        "then append this build's survivors (created on first use)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    args = p.parse_args(argv)

    def body() -> int:
        cfg = load_config(BuildConfig, args.config, args.overrides)
        check_job_paths(args.input, args.output, args.index)  # before any work: the input is never written
        report = build_corpus(cfg, args.input, args.output, args.index, args.overwrite)
        for line in summary_lines(report):
            cli.log.info(line)
        cli.log.info("report: %s/report.html", args.output)
        return cli.exit_code(report)

    return cli.run_job(body)


if __name__ == "__main__":
    sys.exit(main())
