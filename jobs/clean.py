"""Rule-based cleaning of a raw Chinese crawl (PanGu-α §3.1.1 + sensitive words) on Spark.

    spark-submit jobs/clean.py --input RAW [RAW ...] --output OUT [--config FILE] [--set k=v ...]
    python -m jobs.clean --input RAW --output OUT          # embedded local[*] Spark

With --set classify.spam_model=DIR / classify.quality_model=DIR (from jobs.train_classifier) it
also scores every kept document (spam_prob, quality_score) and drops spam / low_quality.

Writes OUT/documents/ (kept, Parquet), OUT/rejected/ (doc_id, stage, reason, detail, text),
OUT/report.json (the ledger: input = documents + rejected, per stage, reason and file).
OUT appears atomically; an existing OUT is only replaced with --overwrite.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # spark-submit jobs/clean.py: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.config import ConfigError, load_config, to_dict  # noqa: E402
from etl.records import ReaderConfig  # noqa: E402
from filters.config import RulesConfig  # noqa: E402
from etl.classify import ClassifyConfig  # noqa: E402

log = logging.getLogger("zhcorpus")
DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "clean.toml"

DOCUMENT_COLUMNS = ("doc_id", "text", "source", "url", "timestamp", "title", "n_chars", "han_ratio",
                    "sensitive_hits", "spam_prob", "quality_score", "source_file")
REJECTED_COLUMNS = ("doc_id", "stage", "reason", "detail", "text", "source", "url", "spam_prob", "quality_score",
                    "source_file", "offset")


@dataclass(frozen=True)
class SparkSection:
    master: str = ""  # "" = spark-submit's master, or local[*] when run with python -m
    # Bytes of input files packed into one read task. Compressed WARC/JSONL files are never
    # split, so this only decides how many small files share a task; Spark's 128 MB default
    # left 2 tasks for the 29 MB demo crawl on 2 cores, one of them holding the 10 MB line (ours).
    max_partition_bytes: int = 8 << 20


@dataclass(frozen=True)
class CleanConfig:
    spark: SparkSection = field(default_factory=SparkSection)
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    rules: RulesConfig = field(default_factory=RulesConfig)
    classify: ClassifyConfig = field(default_factory=ClassifyConfig)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="jobs.clean", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", nargs="+", required=True,
                   help="files, directories or globs: *.warc[.gz], *.wet[.gz], *.jsonl[.gz], *.parquet; "
                        "any Hadoop path (file://, hdfs://, s3a://)")
    p.add_argument("--output", required=True, help="output directory (created atomically)")
    p.add_argument("--config", default=str(DEFAULT_CONFIG), help="TOML config (default: %(default)s)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set rules.length.min_chars=200 (repeatable)")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    return p.parse_args(argv)


def run(cfg: CleanConfig, inputs: list[str], output: str, overwrite: bool = False, spark=None) -> dict[str, Any]:
    from etl.classify import ship_models
    from etl.output import AtomicOutput
    from etl.progress import Counters, report_progress
    from etl.spark import get_spark
    from filters.pipeline import Cleaner

    spark = spark or get_spark("zhcorpus-clean", cfg.spark.master or None)
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(cfg.spark.max_partition_bytes))
    cleaner = Cleaner(cfg.rules)  # on the driver only to fail fast on bad lists and to name them in the report
    shipped = ship_models(spark, cfg.classify) if cfg.classify.enabled else None  # verified before any work
    out = AtomicOutput(spark, output, overwrite)
    counters = Counters(spark.sparkContext)
    t0 = time.monotonic()
    marked = None
    try:
        with report_progress(spark.sparkContext, counters, "clean"):
            marked, report = clean_and_write(spark, cfg, inputs, shipped, counters, out, "documents")
        elapsed = time.monotonic() - t0
        report["job"] = {
            "name": "clean", "inputs": inputs, "elapsed_s": round(elapsed, 2),
            "mb_per_s": round(report["input"]["bytes"] / 1e6 / elapsed, 3) if elapsed else None,
            "spark_master": spark.sparkContext.master, "default_parallelism": spark.sparkContext.defaultParallelism,
        }
        report.update(resources_report(cleaner, shipped, cfg.classify))
        report["config"] = to_dict(cfg)
        out.write_text("report.json", json.dumps(report, ensure_ascii=False, indent=2, sort_keys=False))
        final = out.commit()
    except BaseException:
        out.abort()
        raise
    finally:
        if marked is not None:
            marked.unpersist()
    log.info("wrote %s in %.1fs", final, elapsed)
    return report


def clean_and_write(spark, cfg, inputs: list[str], shipped, counters, out, documents: str):
    """Read → clean → classify (when ``shipped``), persisted; writes the kept documents to
    ``out.path(documents)`` and ``rejected/``; returns the persisted marked rows (the caller
    unpersists them) and the ledger."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from etl.classify import classify_stage
    from etl.clean import clean_stage
    from etl.ledger import build_ledger
    from etl.readers import read_raw

    raw, files = read_raw(spark, inputs, cfg.reader, counters)
    marked = clean_stage(raw, cfg.rules)
    if shipped is not None:
        marked = classify_stage(marked, shipped)
    marked = marked.persist(StorageLevel.MEMORY_AND_DISK)
    records = marked.where(F.col("kind") == "record")
    records.where(F.col("reason").isNull()).select(*DOCUMENT_COLUMNS).write.parquet(out.path(documents))
    records.where(F.col("reason").isNotNull()).select(*REJECTED_COLUMNS).write.parquet(out.path("rejected"))
    return marked, build_ledger(marked, files)


def resources_report(cleaner, shipped, classify: ClassifyConfig) -> dict[str, Any]:
    """The word lists and models a run used, with their checksums."""
    report: dict[str, Any] = {"lists": {
        "sensitive": {"versions": cleaner.sensitive.versions, "sha256": cleaner.sensitive.fingerprint},
        "advertisement": {"versions": cleaner.ads.versions, "sha256": cleaner.ads.fingerprint},
    }}
    if shipped is not None:
        report["models"] = {"spam": {"dir": classify.spam_model, "sha256": shipped.spam_sha256},
                            "quality": {"dir": classify.quality_model, "sha256": shipped.quality_sha256,
                                        "rule": classify.quality_rule}}
    return report


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The ledger as a few human lines (driver log / make demo)."""
    inp = report["input"]
    lines = [f"input  {inp['records']:>9,} records from {inp['files']} files ({inp['bytes'] / 1e6:.1f} MB)",
             f"kept   {report['documents']:>9,} documents",
             f"dropped{report['rejected']:>9,} records"]
    for stage, s in report["rejected_by_stage"].items():
        for reason, n in sorted(s["reasons"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  {stage:>6} {reason:<26}{n:>8,}")
    if report.get("duplicates"):
        lines.append(f"duplicates{report['duplicates']:>6,} ({', '.join(f'{k} {v:,}' for k, v in report['duplicates_by_kind'].items())})")
    if inp["skipped_non_document_records"]:
        lines.append(f"not documents (WARC record types): {inp['skipped_non_document_records']}")
    if inp["file_errors"]:
        lines.append(f"file-level errors: {len(inp['file_errors'])}")
    lines.append(f"balanced: {report['balanced']}  ({report['job']['elapsed_s']} s, {report['job']['mb_per_s']} MB/s)")
    return lines


def main(argv: list[str] | None = None) -> int:
    from filters.classify import ModelError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    args = parse_args(argv)
    try:
        cfg = load_config(CleanConfig, args.config, args.overrides)
    except ConfigError as e:
        log.error("config: %s", e)
        return 2
    try:
        report = run(cfg, args.input, args.output, args.overwrite)
    except (FileNotFoundError, FileExistsError, ValueError, ModelError) as e:
        log.error("%s", e)
        return 2
    for line in summary_lines(report):
        log.info(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
