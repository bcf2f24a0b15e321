"""Crawl-level template repetition (``filters.crawl_repeat``) as one Spark aggregation over the
whole input, after read → clean → quality → classify.

1. Each record with text (kept or already rejected by another rule: both are evidence of a
   template) gives its distinct sampled n-gram keys, tagged with an identity of its span text,
   so exact copies of one text count once.
2. ``groupBy(key)`` counts the distinct texts holding each key; the keys held by at least
   ``min_docs`` are the template spans (less any span of the reference corpus, when the profile
   ships its spans: natural text is not a template, however often a crawl quotes it).
3. Each document's share of template spans is joined back by (source_file, offset), the record's
   identity before doc_ids are made unique, as the ``template_share`` column; a document at or
   over ``max_share`` is marked ``stage="quality"``, ``reason="template_share_high"``
   (``annotate`` mode: a flag).

Two shuffles of 8 bytes per ``modulus`` characters of kept text, no per-row Python on the driver.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from etl.read import records as rec
from filters.classify import require_sha256, sha256_file
from filters.crawl_repeat import CrawlRepeatConfig, batch_keys

log = logging.getLogger("zhcorpus")

SHARE = "template_share"
REASON = "template_share_high"
QUALITY_STAGE = "quality"
_KEYS = T.StructType(
    [
        T.StructField("source_file", T.StringType()),
        T.StructField("offset", T.LongType()),
        T.StructField("ident", T.LongType()),
        T.StructField("key", T.LongType()),
    ]
)


def keys_batch(batch: pa.RecordBatch, cfg: CrawlRepeatConfig) -> pa.RecordBatch:
    """(source_file, offset, ident, key) for every distinct sampled key of every text in ``batch``."""
    got = batch_keys(batch.column("text").to_pylist(), cfg)
    take = pa.array(got.doc)
    return pa.RecordBatch.from_arrays(
        [
            batch.column("source_file").take(take),
            batch.column("offset").cast(pa.int64()).take(take),
            pa.array(got.ident[got.doc]),
            pa.array(got.keys),
        ],
        names=_KEYS.names,
    )


def template_shares(live: DataFrame, cfg: CrawlRepeatConfig, reference_keys: DataFrame | None = None) -> DataFrame:
    """(source_file, offset, template_share, template_keys) of every live document with at least
    one sampled key. ``live``: rows with source_file, offset, text."""

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield keys_batch(b, cfg)

    keys = live.select("source_file", "offset", "text").mapInArrow(apply, _KEYS)
    held = keys.select("ident", "key").distinct().groupBy("key").count().where(F.col("count") >= cfg.min_docs)
    if reference_keys is not None:
        held = held.join(reference_keys, "key", "left_anti")
    held = held.select("key", F.lit(1).alias("_t"))
    return (
        keys.join(held, "key", "left")
        .groupBy("source_file", "offset")
        .agg(F.count("*").alias("template_keys"), F.count("_t").alias("_hits"))
        .select("source_file", "offset", (F.col("_hits") / F.col("template_keys")).alias(SHARE), "template_keys")
    )


def crawl_repeat_stage(
    rows: DataFrame, cfg: CrawlRepeatConfig, mode: str = "filter", reference_keys: DataFrame | None = None
) -> DataFrame:
    """``rows``: the marked rows (kind, source_file, offset, text, stage, reason, quality_flags).
    Returns them with ``template_share`` (null where not measured) and, for documents over the
    threshold, the quality stage's mark (``filter``) or flag (``annotate``)."""
    if not cfg.enabled:
        return rows.withColumn(SHARE, F.lit(None).cast("double"))
    # every record with text is evidence of a template, the ones an earlier rule removed too (a
    # farm's pages caught by another rule still show the frame its other pages share)
    texts = rows.where((F.col("kind") == rec.RECORD) & F.col("text").isNotNull())
    shares = template_shares(texts, cfg, reference_keys)
    out = rows.join(shares, ["source_file", "offset"], "left")
    live_row = (F.col("kind") == rec.RECORD) & F.col("reason").isNull()
    hit = live_row & (F.col("template_keys") >= cfg.min_keys) & (F.col(SHARE) >= cfg.max_share)
    flags = F.when(hit, F.concat(F.coalesce("quality_flags", F.array().cast("array<string>")), F.array(F.lit(REASON))))
    cols = {
        "quality_flags": flags.otherwise(F.col("quality_flags")),
        SHARE: F.round(F.col(SHARE), 6),
    }
    if mode == "filter":
        cols["stage"] = F.when(hit, F.lit(QUALITY_STAGE)).otherwise(F.col("stage"))
        cols["reason"] = F.when(hit, F.lit(REASON)).otherwise(F.col("reason"))
    return out.withColumns(cols).select(*rows.columns, SHARE)


SPANS_FILE = "reference_spans.parquet"  # beside the fluency model: the reference's sampled span keys
SPANS_META = "reference_spans.json"  # their settings, count and sha256


def write_reference_spans(texts: DataFrame, out_dir: str | Path, cfg: CrawlRepeatConfig) -> dict:
    """The distinct sampled span keys of the reference corpus ``texts`` (column ``text``) into
    ``out_dir`` (a profile being staged): natural text a crawl may quote as often as it likes."""

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield pa.RecordBatch.from_arrays([pa.array(batch_keys(b.column("text").to_pylist(), cfg).keys)], ["key"])

    rows = texts.select("text").mapInArrow(apply, "key long").distinct().toArrow()
    keys = np.sort(rows.column("key").to_numpy())
    path = Path(out_dir) / SPANS_FILE
    pq.write_table(pa.table({"key": keys}), path)
    meta = {"ngram": cfg.ngram, "modulus": cfg.modulus, "keys": int(len(keys)), "sha256": sha256_file(path)}
    (Path(out_dir) / SPANS_META).write_text(json.dumps(meta) + "\n", encoding="utf-8")
    return meta


def reference_spans(spark, profile_dir: str, cfg: CrawlRepeatConfig) -> tuple[DataFrame | None, dict]:
    """The profile's reference span keys as a one-column frame, verified against their recorded
    checksum, and what report.json says of them. None when the profile has none or was built with
    other span settings (a warning: the rule then runs without them)."""
    meta_path = Path(profile_dir) / SPANS_META if profile_dir else None
    if meta_path is None or not meta_path.exists():
        return None, {"reference_spans": None}
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if (meta.get("ngram"), meta.get("modulus")) != (cfg.ngram, cfg.modulus):
        log.warning(
            "quality.template: the profile's reference spans are %s-grams mod %s, the rule's %s mod %s: not used",
            meta.get("ngram"),
            meta.get("modulus"),
            cfg.ngram,
            cfg.modulus,
        )
        return None, {"reference_spans": None}
    path = Path(profile_dir) / SPANS_FILE
    require_sha256(path, meta.get("sha256"), None)  # ModelError on a damaged file
    keys = pq.read_table(path).column("key").to_numpy()
    frame = spark.createDataFrame(pa.table({"key": keys}).to_pandas())
    return frame, {"reference_spans": {"file": str(path), "keys": int(len(keys)), "sha256": meta["sha256"]}}
