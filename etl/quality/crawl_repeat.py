"""Crawl-level template repetition (``filters.quality.crawl_repeat``) as one Spark aggregation over the
whole input, after read → clean → quality → classify.

1. Each record with text (kept or already rejected by another rule: both are evidence of a
   template) carries its distinct keys (sampled 8-character spans and clauses), cut by the reading
   task's fused pass (``with_keys_batch``: the text crosses into Python once), with an identity of
   its text, so exact copies of one text count once, and the context each key is held in (the long
   sentence holding it, or the text), less the keys the reference corpus holds (natural text is not
   a template, however often a crawl quotes it: they are never counted), and its own totals
   (sampled spans, letters and digits); the JVM explodes them (``key_rows``).
2. ``groupBy(key)`` counts the distinct texts holding each key and the extremes of their contexts
   (``key_counts``, one shuffle of 24 bytes a key; the nightly adds the counts its published
   versions kept); the keys held by at least ``min_docs`` texts in two contexts or more are
   template keys (a long sentence held verbatim by many texts is a quotation, not a frame).
3. Only the keys that are template keys go on to a per-document count (a natural page has few),
   which the per-document totals turn into ``template_share`` (the larger of its spans' and its
   clause characters' share that are template keys); it is joined back by (source_file, offset),
   the record's identity before doc_ids are made unique; a document at or over ``max_share`` is
   marked ``stage="quality"``, ``reason="template_share_high"`` (``annotate`` mode: a flag).

No per-row Python on the driver.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import SparkFiles, StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from base.artifact import require_sha256, sha256_file
from etl.read import records as rec
from etl.read.ids import BROADCAST_MAX
from etl.runtime.ship import ship_directory
from filters import docpass
from filters.quality.crawl_repeat import SPAN, CrawlRepeatConfig, batch_keys

log = logging.getLogger("zhcorpus")

SHARE = "template_share"
REASON = "template_share_high"
QUALITY_STAGE = "quality"
# what a text's own row carries for the rule, cut by the reading task (``with_keys_batch``): an identity
# of its letters and digits, its sampled spans (the reference's too) and its letters and digits, and
# its distinct keys the reference does not hold, as lists (kind, key, weight, context); null on a row
# with no text
KEY_COLUMNS = ("_tk_ident", "_tk_spans", "_tk_chars", "_tk_kinds", "_tk_keys", "_tk_weights", "_tk_contexts")
KEY_FIELDS = tuple(
    T.StructField(name, t)
    for name, t in zip(
        KEY_COLUMNS,
        (
            T.LongType(),
            T.IntegerType(),
            T.IntegerType(),
            T.ArrayType(T.ByteType()),
            T.ArrayType(T.LongType()),
            T.ArrayType(T.IntegerType()),
            T.ArrayType(T.LongType()),
        ),
    )
)


SPANS_FILE = "reference_spans.parquet"  # beside the fluency model: the reference's sampled span keys
SPANS_META = "reference_spans.json"  # their settings, count and sha256


@dataclass(frozen=True)
class ReferenceKeys:
    """The reference corpus's keys, as the executors find them: ``SPANS_FILE`` in the shipped
    directory ``shipped`` (``SparkFiles.get``), verified on the driver (``reference_spans``)."""

    shipped: str
    sha256: str


_reference: dict[str, np.ndarray] = {}


def reference_keys(ref: ReferenceKeys | None) -> np.ndarray | None:
    """The sorted keys, read once per Python worker (None: no reference)."""
    if ref is None:
        return None
    if ref.sha256 not in _reference:
        path = Path(SparkFiles.get(ref.shipped)) / SPANS_FILE
        _reference[ref.sha256] = np.sort(pq.read_table(path).column("key").to_numpy())
    return _reference[ref.sha256]


def _held_by(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Which of ``keys`` are in ``sorted_keys``."""
    if not len(sorted_keys):
        return np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[at] == keys


def with_keys_batch(
    batch: pa.RecordBatch, cfg: CrawlRepeatConfig, reference: np.ndarray | None = None
) -> pa.RecordBatch:
    """``batch`` (kind, text, ...) with ``KEY_COLUMNS`` for every record with text (null elsewhere): its
    ``filters.quality.crawl_repeat.BatchKeys`` less the keys ``reference`` (sorted) holds. Run where the
    text already is (the reading task's fused pass): the keys never cross into Python again."""
    n = batch.num_rows
    has = pc.and_(pc.equal(batch.column("kind"), rec.RECORD), pc.is_valid(batch.column("text"))).fill_null(False)
    has = has.to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(has)
    texts = batch.column("text").take(pa.array(rows, pa.int64()))
    # the compiled pass reads the Arrow column in place (filters.docpass: the same keys)
    got = docpass.batch_keys(texts, cfg) if docpass.enabled() else batch_keys(texts.to_pylist(), cfg)
    keep = ~_held_by(reference, got.keys) if reference is not None else np.ones(len(got.keys), dtype=bool)
    per_row = np.zeros(n, dtype=np.int64)
    per_row[rows] = np.bincount(got.doc[keep], minlength=len(rows))  # keys are grouped by text, in order
    offsets = pa.array(np.concatenate(([0], np.cumsum(per_row))).astype(np.int32))
    missing = ~has

    def per_text(values: np.ndarray, arrow: pa.DataType) -> pa.Array:
        full = np.zeros(n, dtype=values.dtype)
        full[rows] = values
        return pa.array(full, arrow, mask=missing)

    def lists(values: np.ndarray, arrow: pa.DataType) -> pa.Array:
        return pa.ListArray.from_arrays(offsets, pa.array(values[keep], arrow), mask=pa.array(missing))

    columns = (
        per_text(got.ident, pa.int64()),
        per_text(got.n_spans, pa.int32()),
        per_text(got.chars, pa.int32()),
        lists(got.kind, pa.int8()),
        lists(got.keys, pa.int64()),
        lists(got.weight, pa.int32()),
        lists(got.context, pa.int64()),
    )
    for name, column in zip(KEY_COLUMNS, columns):
        batch = batch.append_column(name, column)
    return batch


def keyed(rows: DataFrame, cfg: CrawlRepeatConfig, reference: ReferenceKeys | None = None) -> DataFrame:
    """``rows`` with ``KEY_COLUMNS``: as they are when the reading task cut them, else cut here."""
    if set(KEY_COLUMNS) <= set(rows.columns):
        return rows
    schema = T.StructType(list(rows.schema.fields) + list(KEY_FIELDS))

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ref = reference_keys(reference)
        for b in batches:
            yield with_keys_batch(b, cfg, ref)

    return rows.mapInArrow(apply, schema)


def key_rows(rows: DataFrame) -> DataFrame:
    """(source_file, offset, ident, kind, key, weight, context): a row per key of the ``keyed`` rows,
    exploded in the JVM (no Python)."""
    zipped = F.arrays_zip(
        F.col("_tk_kinds").alias("kind"),
        F.col("_tk_keys").alias("key"),
        F.col("_tk_weights").alias("weight"),
        F.col("_tk_contexts").alias("context"),
    )
    return rows.where(F.col("_tk_ident").isNotNull()).select(
        "source_file", "offset", F.col("_tk_ident").alias("ident"), F.inline(zipped)
    )


def key_counts(keys: DataFrame) -> DataFrame:
    """(key, texts, context_lo, context_hi): how many distinct texts hold each key (exact copies
    count once; a text's copies hold a key in the same context) and the least and greatest of the
    contexts they hold it in (two contexts or more when they differ: a sum and two extremes, which
    the nightly adds up across inputs). ``keys``: ``key_rows``. One shuffle, by key: the distinct
    (key, ident, context) rows and their aggregate per key are both computed inside it."""
    pairs = keys.select("key", "ident", "context").repartition("key").distinct()
    return pairs.groupBy("key").agg(
        F.count(F.lit(1)).alias("texts"), F.min("context").alias("context_lo"), F.max("context").alias("context_hi")
    )


def template_shares(
    rows: DataFrame, cfg: CrawlRepeatConfig, prior_counts: DataFrame | None = None
) -> tuple[DataFrame, DataFrame]:
    """(source_file, offset, template_share, template_keys) of every text with at least one
    sampled span key (``filters.quality.crawl_repeat.template_share``), and this input's ``key_counts``.
    ``rows``: ``keyed`` rows. ``prior_counts``: ``key_counts`` of earlier inputs (the nightly's
    published versions), added to this input's. A template key: held by ``min_docs`` texts, in at
    least two contexts (``CrawlRepeatConfig.min_copy``)."""
    keys = key_rows(rows)
    counts = key_counts(keys)
    total = counts
    if prior_counts is not None:
        total = (
            counts.unionByName(prior_counts.select(*COUNT_COLUMNS))
            .groupBy("key")
            .agg(
                F.sum("texts").alias("texts"),
                F.min("context_lo").alias("context_lo"),
                F.max("context_hi").alias("context_hi"),
            )
        )
    varied = F.col("context_lo") != F.col("context_hi")
    held = total.where((F.col("texts") >= cfg.min_docs) & varied).select("key")
    span = F.col("kind") == SPAN
    hits = (
        keys.join(held, "key")  # template keys only: a natural page has few
        .groupBy("source_file", "offset")
        .agg(
            F.sum(span.cast("int")).alias("_span_hits"),
            F.sum(F.when(~span, F.col("weight")).otherwise(0)).alias("_clause_chars"),
        )
    )
    per_doc = (
        rows.where(F.col("_tk_ident").isNotNull() & (F.col("_tk_spans") > 0))
        .select("source_file", "offset", F.col("_tk_spans").alias("template_keys"), F.col("_tk_chars").alias("_chars"))
        .join(hits, ["source_file", "offset"], "left")
    )
    share = F.greatest(
        F.coalesce(F.col("_span_hits"), F.lit(0)) / F.col("template_keys"),
        F.coalesce(F.col("_clause_chars") / F.col("_chars"), F.lit(0.0)),
    )
    return per_doc.select("source_file", "offset", share.alias(SHARE), "template_keys"), counts


COUNT_COLUMNS = ("key", "texts", "context_lo", "context_hi")


@dataclass
class TemplatePass:
    """``crawl_repeat_stage``'s result: the marked rows, and what the caller unpersists once it has
    persisted them (the per-document shares; this input's key counts, persisted when kept)."""

    rows: DataFrame
    shares: DataFrame | None = None
    counts: DataFrame | None = None

    def unpersist_shares(self) -> None:
        if self.shares is not None:
            self.shares.unpersist()


def crawl_repeat_stage(
    rows: DataFrame,
    cfg: CrawlRepeatConfig,
    mode: str = "filter",
    reference: ReferenceKeys | None = None,
    prior_counts: DataFrame | None = None,
    keep_counts: bool = False,
) -> TemplatePass:
    """``rows``: the marked rows (kind, source_file, offset, text, stage, reason, quality_flags).
    Returns them with ``template_share`` (null where not measured) and, for documents over the
    threshold, the quality stage's mark (``filter``) or flag (``annotate``); the persisted
    per-document shares they are joined with; with ``keep_counts``, this input's key counts,
    persisted (what a nightly version keeps for the next nights). Runs one job now (counting the
    shares: broadcast up to ``BROADCAST_MAX``)."""
    columns = [c for c in rows.columns if c not in KEY_COLUMNS]
    if not cfg.enabled:
        return TemplatePass(rows.select(*columns).withColumn(SHARE, F.lit(None).cast("double")))
    # every record with text is evidence of a template, the ones an earlier rule removed too (a
    # farm's pages caught by another rule still show the frame its other pages share); the keys
    # come with the rows (cut in the reading task), exploded where the counts and the hits read them
    shares, counts = template_shares(keyed(rows, cfg, reference), cfg, prior_counts)
    if keep_counts:
        counts = counts.persist(StorageLevel.MEMORY_AND_DISK)
    shares = shares.persist(StorageLevel.MEMORY_AND_DISK)
    small = shares.count() <= BROADCAST_MAX  # ~40 bytes a document: the rows are then not shuffled
    out = rows.select(*columns).join(F.broadcast(shares) if small else shares, ["source_file", "offset"], "left")
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
    return TemplatePass(out.withColumns(cols).select(*columns, SHARE), shares, counts if keep_counts else None)


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
    meta = {
        "ngram": cfg.ngram,
        "modulus": cfg.modulus,
        "min_clause": cfg.min_clause,
        "keys": int(len(keys)),
        "sha256": sha256_file(path),
    }
    (Path(out_dir) / SPANS_META).write_text(json.dumps(meta) + "\n", encoding="utf-8")
    return meta


def reference_spans(
    spark, profile_dir: str, cfg: CrawlRepeatConfig, shipped: str = ""
) -> tuple[ReferenceKeys | None, dict]:
    """The profile's reference keys, verified against their recorded checksum, as the executors
    find them (``shipped``: the profile directory's shipped name, when it is shipped already;
    else it is shipped here), and what report.json says of them. None when the profile has none
    or was built with other span settings (a warning: the rule then runs without them)."""
    meta_path = Path(profile_dir) / SPANS_META if profile_dir else None
    if meta_path is None or not meta_path.exists():
        return None, {"reference_spans": None}
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    settings = ("ngram", "modulus", "min_clause")
    if tuple(meta.get(k) for k in settings) != tuple(getattr(cfg, k) for k in settings):
        log.warning(
            "quality.template: the profile's reference keys were cut with %s, the rule's with %s: not used",
            {k: meta.get(k) for k in settings},
            {k: getattr(cfg, k) for k in settings},
        )
        return None, {"reference_spans": None}
    path = Path(profile_dir) / SPANS_FILE
    require_sha256(path, meta.get("sha256"), None)  # ModelError on a damaged file
    shipped = shipped or ship_directory(spark, profile_dir, f"zhcorpus-reference-{meta['sha256'][:16]}")
    summary = {"reference_spans": {"file": str(path), "keys": int(meta["keys"]), "sha256": meta["sha256"]}}
    return ReferenceKeys(shipped, meta["sha256"]), summary


TEMPLATE_SETTINGS = ("ngram", "modulus", "min_clause", "min_copy")  # what a template key is cut with


def template_history(root, versions: list[str], cfg: CrawlRepeatConfig, keys_dir: str = "template_keys") -> list[str]:
    """The published versions' ``keys_dir`` (their template key counts) whose keys were cut the way
    tonight's are, by their report.json's ``config.quality.template``: keys cut with other settings
    never match tonight's, so a version built before a change of settings is left out (a warning
    says which). ``root``: the corpus root (``is_dir``, ``read_text`` and ``uri`` of a relative
    path)."""
    want = {k: getattr(cfg, k) for k in TEMPLATE_SETTINGS}
    out = []
    for v in versions:
        if not root.is_dir(f"versions/{v}/{keys_dir}"):
            continue
        try:
            report = json.loads(root.read_text(f"versions/{v}/report.json") or "")
            had = {k: report["config"]["quality"]["template"][k] for k in TEMPLATE_SETTINGS}
        except (ValueError, KeyError, TypeError):
            had = None
        if had != want:
            log.warning("template keys of %s were cut with %s, tonight's with %s: not counted", v, had, want)
            continue
        out.append(root.uri(f"versions/{v}/{keys_dir}"))
    return out
