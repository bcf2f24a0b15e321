"""The corpus jobs as compositions of phases, each published atomically as one directory:

    clean_corpus   read → clean → classify                                → documents/ rejected/
    dedup_corpus   Parquet documents → dedup                              → documents/ duplicates/
    build_corpus   read → clean → classify → dedup → tokenize → shards    → the DESIGN.md contract

A phase takes frames and typed config sections and returns frames plus a small typed summary;
``etl.report.assemble`` turns the summaries into ``report.json`` and checks the ledger once.
The config sections are each defined once, next to their code, and mounted under the same key
by every job (``spark``, ``reader``, ``rules``, ``classify``, ``dedup``, ``tokenizer``, ``shards``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from etl.classify import ClassifyConfig
from etl.dedup import DedupConfig
from etl.documents import Marked, read_clean_classify
from etl.failpoints import failpoint
from etl.ledger import build_ledger
from etl.phases import dedup_phase, distributions, shards_phase
from etl.progress import Counters, report_progress
from etl.publish import HadoopStorage, publish_dir
from etl.records import ReaderConfig
from etl.report import Laps, assemble, resources
from etl.spark import SparkConfig, session
from etl.tokenizer_train import TokenizerConfig
from filters.config import RulesConfig

log = logging.getLogger("zhcorpus")


@dataclass(frozen=True)
class CleanConfig:
    spark: SparkConfig = field(default_factory=SparkConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    rules: RulesConfig = field(default_factory=RulesConfig)
    classify: ClassifyConfig = field(default_factory=ClassifyConfig)


@dataclass(frozen=True)
class ShardsConfig:
    num_shards: int = 0  # 0 = about one shard per target_mb of token data
    # ~1.3 characters per token and 2 bytes per token (uint16) -> ~1.5 bytes of .bin per character
    target_mb: int = 256


@dataclass(frozen=True)
class BuildConfig(CleanConfig):
    dedup: DedupConfig = field(default_factory=DedupConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    shards: ShardsConfig = field(default_factory=ShardsConfig)
    RENAMED: ClassVar[dict[str, str]] = {"tokenizer.params": "tokenizer"}


def _job(name: str, inputs: list[str], laps: Laps, spark: SparkSession) -> dict[str, Any]:
    sc = spark.sparkContext
    return {"name": name, "inputs": inputs, "elapsed_s": laps.elapsed, "stage_seconds": laps.seconds,
            "spark_master": sc.master, "default_parallelism": sc.defaultParallelism}


def clean_corpus(cfg: CleanConfig, inputs: list[str], output: str, overwrite: bool = False,
                 spark: SparkSession | None = None) -> dict[str, Any]:
    """read → clean → classify; ``documents/``, ``rejected/``, ``report.json``."""
    spark = spark or session("zhcorpus-clean", cfg.spark)
    res = resources(cfg.rules, {})
    laps, counters = Laps(), Counters(spark.sparkContext)
    with publish_dir(output, overwrite, HadoopStorage(spark)) as out:
        with report_progress(spark.sparkContext, counters, "clean"):
            marked = read_clean_classify(spark, inputs, cfg.reader, cfg.rules, cfg.classify, counters)
            try:
                _write_marked(marked, out)
                ledger = build_ledger(marked.rows, marked.files)
            finally:
                marked.unpersist()
        laps.lap("read_clean_classify")
        report = assemble(ledger, job=_job("clean", inputs, laps, spark), config=asdict(cfg),
                          resources={**res, **({"models": marked.models} if marked.models else {})})
        out.write_text("report.json", json.dumps(report, ensure_ascii=False, indent=2))
    return report


def _write_marked(marked: Marked, out) -> None:
    marked.documents().write.parquet(out.path("documents"))
    marked.rejected().write.parquet(out.path("rejected"))


def build_corpus(cfg: BuildConfig, inputs: list[str], output: str, index_dir: str | None = None,
                 overwrite: bool = False, spark: SparkSession | None = None,
                 index_run: str | None = None) -> dict[str, Any]:
    """The whole chain; ``index_run`` names this build's batch in the dedup index (default: random).
    The index learns the survivors before the output is published (a crash in between is undone
    by the nightly refresh, which retracts the batch of an unpublished version)."""
    from etl.dedup_index import DedupIndex
    from etl.report_html import render as render_html
    spark = spark or session("zhcorpus-build", cfg.spark)
    res = resources(cfg.rules, {})
    index = DedupIndex(spark, index_dir, cfg.dedup.minhash.resolved()) if index_dir else None  # refuses other settings
    laps, counters = Laps(), Counters(spark.sparkContext)
    with publish_dir(output, overwrite, HadoopStorage(spark)) as out:
        with report_progress(spark.sparkContext, counters, "build"):
            marked = read_clean_classify(spark, inputs, cfg.reader, cfg.rules, cfg.classify, counters)
            try:
                marked.rejected().write.parquet(out.path("rejected"))
                ledger = build_ledger(marked.rows, marked.files)
                laps.lap("read_clean_classify")
                dedup, survivors = dedup_phase(marked.documents(), cfg.dedup, index, out)
                laps.lap("dedup")
                documents = spark.read.parquet(out.path("documents"))
                shards, tokens = shards_phase(documents, cfg.tokenizer, cfg.shards, out)
                dist = distributions(documents, tokens, spark.read.parquet(out.path("duplicates")))
                tokens.unpersist()
                laps.lap("tokenize_shards")
            finally:
                marked.unpersist()
        if index is not None:
            dedup.index = {"dir": index_dir, "batches_before": len(index.committed()),
                           "appended_run": index.append(survivors.bands, survivors.exact, index_run)}
            failpoint("build:index_appended")
        report = assemble(ledger, job=_job("build_corpus", inputs, laps, spark), config=asdict(cfg),
                          resources={**res, **({"models": marked.models} if marked.models else {})},
                          dedup=dedup, shards=shards, extra={"distributions": dist})
        out.write_text("report.json", json.dumps(report, ensure_ascii=False, indent=2))
        out.write_text("report.html", render_html(json.loads(json.dumps(report))))  # as a reader of report.json sees it
    return report


def dedup_corpus(spark_cfg: SparkConfig, cfg: DedupConfig, inputs: list[str], output: str,
                 index_dir: str | None = None, overwrite: bool = False,
                 spark: SparkSession | None = None) -> dict[str, Any]:
    """Deduplicate Parquet documents (doc_id, text[, quality_score, source_file]); ``documents/``,
    ``duplicates/``, ``report.json`` (input documents = documents + duplicates)."""
    from etl.dedup_index import DedupIndex

    spark = spark or session("zhcorpus-dedup", spark_cfg)
    index = DedupIndex(spark, index_dir, cfg.minhash.resolved()) if index_dir else None
    laps = Laps()
    with publish_dir(output, overwrite, HadoopStorage(spark)) as out:
        docs = spark.read.parquet(*inputs)  # read again where needed: cheaper than caching the text
        files = _files(docs)
        n_in = sum(f["records"] for f in files.values())
        summary, survivors = dedup_phase(docs, cfg, index, out)
        if index is not None:
            summary.index = {"dir": index_dir, "batches_before": len(index.committed()),
                             "appended_run": index.append(survivors.bands, survivors.exact)}
        laps.lap("dedup")
        ledger = {"input": {"files": len(inputs), "records": n_in, "documents": n_in, "bytes": 0,
                            "skipped_non_document_records": {}, "file_errors": []},
                  "documents": n_in, "rejected": 0, "rejected_by_stage": {}, "files": files}
        report = assemble(ledger, job=_job("dedup", inputs, laps, spark), resources={}, dedup=summary,
                          config={"spark": asdict(spark_cfg), "dedup": asdict(cfg)})
        out.write_text("report.json", json.dumps(report, ensure_ascii=False, indent=2))
    return report


def _files(docs) -> dict[str, dict[str, Any]]:
    """The per-file part of a dedup-only ledger: documents per ``source_file`` (one small aggregate)."""
    from etl.phases import NO_SOURCE_FILE

    source = F.col("source_file") if "source_file" in docs.columns else F.lit(NO_SOURCE_FILE)
    rows = docs.groupBy(source.alias("f")).count().collect()
    return {r.f: {"records": r["count"], "documents": r["count"], "rejected": 0} for r in sorted(rows, key=lambda r: r.f)}
