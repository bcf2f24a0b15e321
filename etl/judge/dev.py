"""The rule judge's dev set: read, stripped of everything training saw, tokenized.

A dev document that is an exact or near duplicate of a training document of *any* variant is
removed before the proxies are scored (a variant that kept a copy of a dev article would be
rewarded for memorising it). This is the corpus dedup itself, not a second implementation:
every variant's documents go into a ``DedupIndex`` as one batch (band and exact keys, doc_id
prefixed with the variant's name) and the dev set is deduplicated against it with
``etl.phases.dedup_phase`` (the build's ``[dedup]`` settings). A dev document that ends as a duplicate of an indexed
document is an overlap; one that duplicates another dev document is an internal duplicate. Both
are removed and counted; ``dev/dedup/duplicates/`` lists them with what they duplicate.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from etl.dedup.stage import DedupConfig, band_rows, signatures
from etl.judge.section import JudgeError
from etl.read import records as rec
from etl.read.readers import list_input_files
from etl.runtime.publish import LocalStorage, Staging

log = logging.getLogger("zhcorpus")
DEV_PREFIX = "dev:"  # dev doc_ids: never equal to a training doc_id
DEV_SOURCE = "dev"  # the one source of the dev shards
DEV_SCHEMA = "id string, text string"


def read_dev(spark: SparkSession, paths: list[str]) -> tuple[DataFrame, dict[str, int]]:
    """(doc_id, text) of the dev set (JSONL or Parquet with a ``text`` column and optionally an
    ``id``) and its counts; blank texts are dropped and counted. Refuses an empty set, another
    format, a malformed JSON line, repeated ids."""

    files = list_input_files(spark, paths)
    by_fmt: dict[str | None, list[str]] = {}
    for f in files:
        by_fmt.setdefault(rec.detect_format(f), []).append(f)
    other = [f for fmt, fs in by_fmt.items() if fmt not in (rec.JSONL_FMT, rec.PARQUET_FMT) for f in fs]
    if other:
        raise JudgeError(f"the dev set must be JSONL or Parquet; not: {', '.join(other[:3])}")
    frames = []
    if by_fmt.get(rec.JSONL_FMT):
        frames.append(spark.read.schema(DEV_SCHEMA).option("mode", "FAILFAST").json(by_fmt[rec.JSONL_FMT]))
    if by_fmt.get(rec.PARQUET_FMT):
        pq = spark.read.parquet(*by_fmt[rec.PARQUET_FMT])
        if "text" not in pq.columns:
            raise JudgeError(f"the dev set's Parquet has no 'text' column (columns: {pq.columns})")
        ident = F.col("id").cast("string") if "id" in pq.columns else F.lit(None).cast("string")
        frames.append(pq.select(ident.alias("id"), F.col("text").cast("string")))
    raw = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    docs = raw.select(
        F.concat(F.lit(DEV_PREFIX), F.coalesce("id", F.sha2("text", 256))).alias("doc_id"),
        "text",
        (F.coalesce(F.trim("text"), F.lit("")) == "").alias("blank"),
    )
    try:
        c = docs.agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.col("blank").cast("int")).alias("blank"),
            F.countDistinct(F.when(~F.col("blank"), F.col("doc_id"))).alias("ids"),
        ).first()
    except Exception as e:  # a malformed JSON line under FAILFAST: Spark's error, one line of it
        raise JudgeError(f"cannot read the dev set {paths}: {str(e).strip().splitlines()[0][:300]}") from e
    counts = {"records": c["n"], "blank": c["blank"] or 0}
    kept = counts["records"] - counts["blank"]
    if kept == 0:
        raise JudgeError(f"the dev set {paths} has no document with text")
    if c["ids"] != kept:
        raise JudgeError(
            f"the dev set repeats {kept - c['ids']} ids (or identical texts without an id): give every "
            "document its own id"
        )
    return docs.where(~F.col("blank")).select("doc_id", "text"), counts


def index_training(spark: SparkSession, documents: dict[str, str], cfg: DedupConfig, index_dir: str):
    """A ``DedupIndex`` holding every variant's documents (doc_id ``VARIANT:doc_id``), one batch."""
    from etl.dedup.index import DedupIndex

    params = cfg.minhash.resolved()
    index = DedupIndex(spark, index_dir, params)
    frames = [
        spark.read.parquet(path).select(F.concat(F.lit(f"{name}:"), "doc_id").alias("doc_id"), "text")
        for name, path in documents.items()
    ]
    docs = frames[0]
    for other in frames[1:]:
        docs = docs.unionByName(other)
    keys = signatures(docs, params)
    index.append(band_rows(keys).select("band", "key", "doc_id"), keys.select("exact_key", "doc_id"), run="training")
    return index


def prepare_dev(
    spark: SparkSession,
    dev: DataFrame,
    counts: dict[str, int],
    documents: dict[str, str],
    cfg: DedupConfig,
    tokenizer: str,
    root: str,
    min_documents: int,
) -> dict[str, Any]:
    """Remove the overlap (``documents``: variant -> its documents/ directory), refuse a dev set
    with fewer than ``min_documents`` left, write ROOT/shards; returns the report's ``dev`` part."""
    from etl.phases import dedup_phase
    from etl.shards.stage import write_shards

    index = index_training(spark, documents, cfg, f"{root}/index")
    _summary, deduplicated = dedup_phase(dev, cfg, index, Staging(LocalStorage(), f"{root}/dedup"))
    deduplicated.survivors.select("doc_id", "text").write.parquet(f"{root}/dedup/documents")
    dups = spark.read.parquet(f"{root}/dedup/duplicates")
    overlap = F.col("duplicate_of").startswith(DEV_PREFIX)
    by = {r["internal"]: r["count"] for r in dups.groupBy((overlap).alias("internal")).count().collect()}
    examples = [
        r.asDict()
        for r in dups.where(~overlap).orderBy("doc_id").select("doc_id", "duplicate_of", "kind").limit(10).collect()
    ]
    kept = spark.read.parquet(f"{root}/dedup/documents")
    n_kept = kept.count()
    n_in = counts["records"] - counts["blank"]
    summary = {
        "records": counts["records"],
        "blank_dropped": counts["blank"],
        "documents_in": n_in,
        "overlap_removed": by.get(False, 0),
        "internal_duplicates_removed": by.get(True, 0),
        "documents": n_kept,
        "overlap_examples": examples,
        "near_duplicate_threshold": cfg.minhash.threshold,
        "shards": "dev/shards/manifest.json",
    }
    log.info(
        "judge: dev set %d documents, %d removed as duplicates of training documents, %d as internal "
        "duplicates, %d left",
        n_in,
        summary["overlap_removed"],
        summary["internal_duplicates_removed"],
        n_kept,
    )
    if n_kept < max(1, min_documents):
        raise JudgeError(
            f"the dev set overlaps the training documents: {summary['overlap_removed']} of {n_in} dev "
            f"documents are exact or near duplicates of training documents (and "
            f"{summary['internal_duplicates_removed']} of each other), {n_kept} left; at least "
            f"{max(1, min_documents)} needed (judge.min_dev_documents)"
        )
    manifest = write_shards(kept.withColumn("source", F.lit(DEV_SOURCE)), tokenizer, f"{root}/shards", 1)
    summary["tokens"] = manifest["totals"]["tokens"]
    return summary
