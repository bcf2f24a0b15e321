"""The corpus jobs as compositions of phases, each published atomically as one directory:

    clean_corpus   read → clean → personal data → classify                → documents/ rejected/
    dedup_corpus   Parquet documents → dedup                              → documents/ duplicates/
    build_corpus   read → clean → personal data → classify → dedup → decontaminate → tokenize → shards
                                                                          → the DESIGN.md contract

A phase takes frames and typed config sections and returns frames plus a small typed summary;
``etl.report.assemble.assemble`` turns the summaries into ``report.json`` and checks the ledger once.
The config sections are each defined once, next to their code, and mounted under the same key
by every job (``spark``, ``reader``, ``rules``, ``pii``, ``classify``, ``output``, ``dedup``,
``decontaminate``, ``tokenizer``, ``shards``). Every Parquet output is written as files of about
``output.target_file_bytes`` (``etl.runtime.sizing``): small data is a few files, not one per input.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, ClassVar

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from base.s3 import S3Access, S3Config, is_s3
from etl.classify.stage import ClassifyConfig
from etl.clean.pii import PiiConfig
from etl.decontaminate.stage import DecontaminateConfig
from etl.dedup.stage import DedupConfig
from etl.documents import Marked, read_clean_classify
from etl.phases import KEYS, dedup_phase, distributions, shards_phase, written_documents
from etl.quality.stage import QualityConfig, quality_summary
from etl.read.records import ReaderConfig
from etl.report.assemble import Laps, assemble, resources
from etl.report.counts import Counts, count_rows, pii_summary
from etl.report.ledger import build_ledger
from etl.runtime.failpoints import failpoint
from etl.runtime.objstore import publish_output, read_parquet, refuse_store_index
from etl.runtime.progress import Counters, label_jobs, report_progress
from etl.runtime.sizing import OutputConfig, sized
from etl.runtime.spark import SparkConfig, session
from etl.shards.stage import ShardsConfig
from etl.shards.tokenizer_train import TokenizerConfig
from filters.pangu.config import RulesConfig

log = logging.getLogger("zhcorpus")


@dataclass(frozen=True)
class CleanConfig:
    spark: SparkConfig = field(default_factory=SparkConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    rules: RulesConfig = field(default_factory=RulesConfig)
    pii: PiiConfig = field(default_factory=PiiConfig)
    quality: QualityConfig = field(default_factory=QualityConfig)
    classify: ClassifyConfig = field(default_factory=ClassifyConfig)
    output: OutputConfig = field(default_factory=OutputConfig)


@dataclass(frozen=True)
class BuildConfig(CleanConfig):
    dedup: DedupConfig = field(default_factory=DedupConfig)
    decontaminate: DecontaminateConfig = field(default_factory=DecontaminateConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    shards: ShardsConfig = field(default_factory=ShardsConfig)
    RENAMED: ClassVar[dict[str, str]] = {"tokenizer.params": "tokenizer"}


def _job(name: str, inputs: list[str], laps: Laps, spark: SparkSession) -> dict[str, Any]:
    sc = spark.sparkContext
    return {
        "name": name,
        "inputs": inputs,
        "elapsed_s": laps.elapsed,
        "stage_seconds": laps.seconds,
        "spark_master": sc.master,
        "default_parallelism": sc.defaultParallelism,
    }


def clean_corpus(
    cfg: CleanConfig, inputs: list[str], output: str, overwrite: bool = False, spark: SparkSession | None = None
) -> dict[str, Any]:
    """read → clean → classify; ``documents/``, ``rejected/``, ``report.json``."""
    spark = spark or session("zhcorpus-clean", cfg.spark, inputs)
    res = resources(cfg.rules, {})
    laps, counters = Laps(), Counters(spark.sparkContext)
    with publish_output(output, overwrite, spark, cfg.reader.s3) as out:
        with report_progress(spark.sparkContext, counters, "clean"):
            with label_jobs(spark.sparkContext, "read, clean, classify"):
                marked = read_clean_classify(
                    spark, inputs, cfg.reader, cfg.rules, cfg.pii, cfg.quality, cfg.classify, counters
                )
            try:
                with label_jobs(spark.sparkContext, "read, clean, classify"):
                    counts = count_rows(marked.rows)  # the first action computes the cached rows
                    _write_marked(marked, out, cfg.output, counts)
                with label_jobs(spark.sparkContext, "report"):
                    ledger = build_ledger(marked.rows, marked.files, counts)
                    pii = pii_summary(counts, cfg.pii)
                    quality = quality_summary(marked.records(), marked.quality)
            finally:
                marked.unpersist()
        laps.lap("read_clean_classify")
        report = assemble(
            ledger,
            job=_job("clean", inputs, laps, spark),
            config=asdict(cfg),
            resources={**res, **({"models": marked.models} if marked.models else {})},
            extra={"pii": pii, "quality": quality},
        )
        out.write_text("report.json", json.dumps(report, ensure_ascii=False, indent=2))
    return report


def _write_marked(marked: Marked, out, output: OutputConfig, counts: Counts) -> None:
    documents, rejected = counts.text_bytes
    out.write_parquet("documents", sized(marked.documents(), documents, output))
    out.write_parquet("rejected", sized(marked.rejected(), rejected, output))


TEMPLATE_KEYS = "template_keys"  # a nightly version's template key counts (etl.quality.crawl_repeat)


def build_corpus(
    cfg: BuildConfig,
    inputs: list[str],
    output: str,
    index_dir: str | None = None,
    overwrite: bool = False,
    spark: SparkSession | None = None,
    index_run: str | None = None,
    template_history: list[str] | None = None,
    before_commit: Callable[[Any, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The whole chain; ``index_run`` names this build's batch in the dedup index (default: random).
    The index learns the kept documents before the output is published (a crash in between is
    undone by the nightly refresh, which retracts the batch of an unpublished version).
    ``template_history``: earlier builds' ``template_keys/`` (the nightly's versions), counted with
    this input's by the template rule; given (even empty), this build writes its own
    ``template_keys/`` for the builds after it. ``before_commit(staging, report)`` writes more
    files into the output before it is published (the nightly's pointers, on a store)."""
    from etl.decontaminate.stage import prepare
    from etl.dedup.index import DedupIndex
    from etl.report.html import render as render_html

    spark = spark or session("zhcorpus-build", cfg.spark, inputs)
    res = resources(cfg.rules, {})  # before any work: bad lists, models, index settings, eval sets
    refuse_store_index(index_dir)
    index = DedupIndex(spark, index_dir, cfg.dedup.minhash.resolved(), s3=cfg.reader.s3) if index_dir else None
    evals = prepare(spark, cfg.decontaminate)
    laps, counters = Laps(), Counters(spark.sparkContext)
    with publish_output(output, overwrite, spark, cfg.reader.s3) as out:
        with report_progress(spark.sparkContext, counters, "build"):
            with label_jobs(spark.sparkContext, "read, clean, classify"):
                marked = read_clean_classify(
                    spark, inputs, cfg.reader, cfg.rules, cfg.pii, cfg.quality, cfg.classify, counters, template_history
                )
            try:
                parts = _build_phases(cfg, marked, index, evals, out, laps)
                if marked.template_counts is not None:
                    out.write_parquet(TEMPLATE_KEYS, marked.template_counts)
            finally:
                marked.unpersist()
        if index is not None:
            with label_jobs(spark.sparkContext, "dedup index: append"):
                parts.dedup.index = {
                    "dir": index_dir,
                    "batches_before": len(index.committed()),
                    "appended_run": index.append(*parts.kept_keys, index_run),
                }
            failpoint("build:index_appended")
        out.delete(KEYS)
        report = assemble(
            parts.ledger,
            job=_job("build_corpus", inputs, laps, spark),
            config=asdict(cfg),
            resources={**res, **({"models": marked.models} if marked.models else {})},
            dedup=parts.dedup,
            dropped_after_dedup=parts.dropped_after_dedup,
            shards=parts.shards,
            extra=parts.extra,
        )
        out.write_text("report.json", json.dumps(report, ensure_ascii=False, indent=2))
        out.write_text("report.html", render_html(json.loads(json.dumps(report))))  # as a reader of report.json sees it
        if before_commit is not None:
            before_commit(out, report)
    return report


@dataclass
class _Built:
    ledger: dict[str, Any]
    dedup: Any
    dropped_after_dedup: dict[str, int]
    shards: Any
    kept_keys: tuple[Any, Any]  # band and exact keys of the documents kept, for the dedup index
    extra: dict[str, Any]


def _build_phases(cfg: BuildConfig, marked: Marked, index, evals, out, laps: Laps) -> _Built:
    """dedup → decontaminate → tokenize + shards over the marked rows; writes every output frame."""
    from etl.documents import REJECTED_COLUMNS
    from etl.phases import decontaminate_phase

    spark = marked.rows.sparkSession
    sc = spark.sparkContext
    with label_jobs(sc, "read, clean, classify"):  # the first action computes the cached marked rows
        counts = count_rows(marked.rows)
    docs_bytes, rejected_bytes = counts.text_bytes  # the survivors hold at most the documents' bytes
    with label_jobs(sc, "report: ledger"):
        ledger = build_ledger(marked.rows, marked.files, counts)
        extra: dict[str, Any] = {
            "pii": pii_summary(counts, cfg.pii),
            "quality": quality_summary(marked.records(), marked.quality),
        }
    laps.lap("read_clean_classify")
    with label_jobs(sc, "dedup"):
        dedup, deduped = dedup_phase(marked.documents(), cfg.dedup, index, out, cfg.spark.checkpoint_dir, cfg.output)
    laps.lap("dedup")
    survivors = sized(deduped.survivors, docs_bytes, cfg.output)  # documents/ keeps these partitions
    with label_jobs(sc, "decontaminate"):
        documents, contaminated, extra["decontaminate"], dropped = decontaminate_phase(survivors, evals, out)
        rejected = marked.rejected()
        if contaminated is not None:
            rejected = rejected.unionByName(
                contaminated.withColumn("offset", F.lit(None).cast("long")).select(*REJECTED_COLUMNS)
            )
        out.write_parquet("rejected", sized(rejected, rejected_bytes, cfg.output))
        written = written_documents(documents)  # count, characters, sources, length histogram: one job
        dedup.documents_written = written.documents
    laps.lap("decontaminate")
    with label_jobs(sc, "shards"):
        shards, doc_tokens = shards_phase(documents, cfg.tokenizer, cfg.shards, out, written)
    with label_jobs(sc, "report: distributions"):
        extra["distributions"] = distributions(written.doc_chars, doc_tokens, out.read_parquet(spark, "duplicates"))
    laps.lap("tokenize_shards")
    kept = documents.select("doc_id")
    keys = (deduped.bands.join(kept, "doc_id", "left_semi"), deduped.exact.join(kept, "doc_id", "left_semi"))
    return _Built(ledger, dedup, dropped, shards, keys, extra)


def dedup_corpus(
    spark_cfg: SparkConfig,
    cfg: DedupConfig,
    inputs: list[str],
    output: str,
    index_dir: str | None = None,
    overwrite: bool = False,
    spark: SparkSession | None = None,
    output_cfg: OutputConfig | None = None,
    s3: S3Config | None = None,
) -> dict[str, Any]:
    """Deduplicate Parquet documents (doc_id, text[, quality_score, source_file]); ``documents/``,
    ``duplicates/``, ``report.json`` (input documents = documents + duplicates). ``documents/``
    is sized by the input's Parquet bytes (``output_cfg``, default ``OutputConfig()``). ``s3``:
    the store's settings when ``output`` is on S3."""
    from etl.dedup.index import DedupIndex

    spark = spark or session("zhcorpus-dedup", spark_cfg)
    refuse_store_index(index_dir)
    index = DedupIndex(spark, index_dir, cfg.minhash.resolved(), s3=s3) if index_dir else None
    laps = Laps()
    with publish_output(output, overwrite, spark, s3) as out:
        docs = read_parquet(spark, inputs, s3)  # read again where needed: cheaper than caching the text
        files = _files(docs)
        n_in = sum(f["records"] for f in files.values())
        output_cfg = output_cfg or OutputConfig()
        summary, deduped = dedup_phase(docs, cfg, index, out, spark_cfg.checkpoint_dir, output_cfg)
        in_bytes = _input_bytes(spark, inputs, s3)  # the survivors hold at most these
        out.write_parquet("documents", sized(deduped.survivors, in_bytes, output_cfg))
        summary.documents_written = out.read_parquet(spark, "documents").count()
        if index is not None:
            summary.index = {
                "dir": index_dir,
                "batches_before": len(index.committed()),
                "appended_run": index.append(deduped.bands, deduped.exact),
            }
        out.delete(KEYS)
        laps.lap("dedup")
        ledger = {
            "input": {
                "files": len(inputs),
                "records": n_in,
                "documents": n_in,
                "bytes": 0,
                "skipped_non_document_records": {},
                "file_errors": [],
            },
            "documents": n_in,
            "rejected": 0,
            "rejected_by_stage": {},
            "files": files,
        }
        report = assemble(
            ledger,
            job=_job("dedup", inputs, laps, spark),
            resources={},
            dedup=summary,
            config={"spark": asdict(spark_cfg), "dedup": asdict(cfg)},
        )
        out.write_text("report.json", json.dumps(report, ensure_ascii=False, indent=2))
    return report


def _input_bytes(spark: SparkSession, inputs: list[str], s3: S3Config | None) -> int:
    """Bytes of the Parquet inputs: listed by Hadoop, or by the commits of ``s3://`` outputs."""
    from etl.read.readers import list_inputs

    if not any(is_s3(p) for p in inputs):
        return sum(f.size for f in list_inputs(spark, inputs))
    from base.committed import resolve

    access, commits, total = S3Access.resolve(s3 or S3Config()), {}, 0
    for p in inputs:
        commit, name = resolve("s3://" + p.split("://", 1)[1].rstrip("/"), access.filesystem(), commits)
        total += sum(commit.files[n].size for n in commit.names(name))
    return total


def _files(docs) -> dict[str, dict[str, Any]]:
    """The per-file part of a dedup-only ledger: documents per ``source_file`` (one small aggregate)."""
    from etl.phases import NO_SOURCE_FILE

    source = F.col("source_file") if "source_file" in docs.columns else F.lit(NO_SOURCE_FILE)
    rows = docs.groupBy(source.alias("f")).count().collect()
    return {
        r.f: {"records": r["count"], "documents": r["count"], "rejected": 0} for r in sorted(rows, key=lambda r: r.f)
    }
