"""The quality stage (after the PanGu-α rules and personal data, before the classifiers): every
label-free signal of ``filters.quality.screen`` as a column of the marked rows, and, in ``filter`` mode,
documents failing a rule marked ``stage="quality"`` with the rule as ``reason``.

The reference profile (fluency model + reference percentiles) is verified and its thresholds
derived on the driver before any work (a bad profile is a clear error up front), then shipped to
the executors like the classifier models and loaded once per Python worker.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import SparkFiles
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from base.artifact import sha256_file
from etl.read import records as rec
from etl.runtime.ship import ship_directory
from filters.quality import thresholds as th
from filters.quality.screen import QualityConfig, Screen, derive_thresholds, resolve_profile, signal_names

log = logging.getLogger("zhcorpus")

QUALITY_STAGE = "quality"
BUCKET, SAFETY, FLAGS = "fluency_bucket", "safety_scores", "quality_flags"
_OTHER = [
    (BUCKET, T.StringType(), pa.string()),
    (SAFETY, T.MapType(T.StringType(), T.IntegerType()), pa.map_(pa.string(), pa.int32())),
    (FLAGS, T.ArrayType(T.StringType()), pa.list_(pa.string())),
]


def _appended() -> list[str]:
    """The signals the stage appends: all but han_ratio, the cleaning stage's column already."""
    return [n for n in signal_names() if n != "han_ratio"]


def quality_columns() -> list[str]:
    """The columns the stage appends, in order (``documents/`` and ``rejected/`` carry them)."""
    return _appended() + [n for n, _, _ in _OTHER]


def signal_fields() -> list[tuple[str, T.DataType, pa.DataType]]:
    return [(n, T.DoubleType(), pa.float64()) for n in _appended()] + _OTHER


@dataclass(frozen=True)
class Prepared:
    """What the executors need and what report.json records."""

    cfg: QualityConfig
    shipped: str  # shipped profile directory name ("" = none)
    summary: dict[str, Any]  # mode, profile, thresholds with their provenance


def prepare(spark: SparkSession, cfg: QualityConfig) -> Prepared:
    """Resolve the profile (``quality.profile = "auto"``: make demo's, if valid), read it and
    derive the thresholds on the driver (``ProfileError``/``ModelError`` up front for a named
    profile), ship it. Without one the statistical rules are off: a WARNING line, and
    ``statistical_rules: "off"`` with the reason in the summary."""
    summary: dict[str, Any] = {"mode": cfg.mode, "profile": None, "thresholds": {}}
    if not cfg.enabled:
        summary.update(statistical_rules="off", statistical_rules_reason="quality.enabled is false")
        return Prepared(cfg, "", summary)
    requested, resolved = cfg.profile, resolve_profile(cfg.profile)
    cfg = replace(cfg, profile=resolved.dir)
    if resolved.profile is None:
        log.warning("quality: the statistical rules are off: %s", resolved.why_off)
        summary.update(statistical_rules="off", statistical_rules_reason=resolved.why_off)
        return Prepared(cfg, "", summary)
    thresholds = derive_thresholds(cfg, resolved.profile)
    sha = sha256_file(f"{resolved.dir}/{th.PROFILE_FILE}")
    summary.update(
        statistical_rules="on",
        profile={
            "dir": resolved.dir,
            "requested": requested,
            "sha256": sha,
            "documents": resolved.profile.get("documents"),
            "reference": resolved.profile.get("reference"),
        },
        thresholds=th.provenance(thresholds),
    )
    log.info("quality: profile %s (sha256 %s…), %d statistical rules", resolved.dir, sha[:12], len(thresholds))
    return Prepared(cfg, ship_directory(spark, resolved.dir, f"zhcorpus-profile-{sha[:16]}"), summary)


_screens: dict[tuple[str, str], Screen] = {}


def get_screen(cfg: QualityConfig, shipped: str) -> Screen:
    """Built once per Python worker (the config holds dicts: keyed by its repr)."""
    key = (repr(cfg), shipped)
    if key not in _screens:
        _screens[key] = Screen(cfg, SparkFiles.get(shipped) if shipped else None)
    return _screens[key]


def quality_batch(batch: pa.RecordBatch, screen: Screen) -> pa.RecordBatch:
    """Screen the rows the earlier stages kept; append the signal columns (null elsewhere) and
    mark failures in ``filter`` mode. Only the live rows' texts become Python objects."""
    live = np.flatnonzero(
        pc.and_kleene(pc.equal(batch.column("kind"), rec.RECORD), pc.is_null(batch.column("reason")))
        .fill_null(False)
        .to_numpy(zero_copy_only=False)
    )
    n = batch.num_rows
    signals = {name: np.full(n, np.nan) for name in _appended()}
    out: dict[str, list] = {name: [None] * n for name, _, _ in _OTHER}
    cols = {name: batch.column(name).to_pylist() for name in ("stage", "reason")}
    kept_back = batch.column(CLEAN_FLAG).to_pylist() if CLEAN_FLAG in batch.schema.names else [None] * n
    if len(live):
        got = screen(batch.column("text").take(pa.array(live)))  # Arrow in: the compiled pass reads it in place
        for name in signals:
            signals[name][live] = np.round(got.signals[name], 6)
        for j, i in enumerate(live):
            out[BUCKET][i] = got.buckets[j]
            out[FLAGS][i] = ([kept_back[i]] if kept_back[i] else []) + got.flags[j]
            out[SAFETY][i] = sorted(got.safety[j].items()) or None
            if got.reasons[j]:
                cols["stage"][i], cols["reason"][i] = QUALITY_STAGE, got.reasons[j]
    arrays = [pa.array(cols[f.name], f.type) if f.name in cols else batch.column(f.name) for f in batch.schema]
    schema = batch.schema
    for name, _, arrow in signal_fields():
        if name in signals:
            arrays.append(pa.array(signals[name], arrow, mask=np.isnan(signals[name])))
        else:
            arrays.append(pa.array(out[name], arrow))
        schema = schema.append(pa.field(name, arrow))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


CLEAN_FLAG = "clean_rule"  # annotate mode: the PanGu-α rule a kept document failed, until this stage


def keep_clean_rejections(df: DataFrame) -> DataFrame:
    """Annotate mode: documents the PanGu-α rules rejected (stage "clean") stay documents; their
    reason moves to ``CLEAN_FLAG``, which the quality stage puts first in ``quality_flags``.
    Read-stage rejections (nothing to keep) are untouched."""
    failed = F.col("stage") == "clean"
    return (
        df.withColumn(CLEAN_FLAG, F.when(failed, F.col("reason")))
        .withColumn("reason", F.when(failed, F.lit(None).cast("string")).otherwise(F.col("reason")))
        .withColumn("stage", F.when(failed, F.lit(None).cast("string")).otherwise(F.col("stage")))
    )


def quality_stage(df: DataFrame, prepared: Prepared) -> DataFrame:
    """``df``: marked rows with kind, reason, text, stage. Returns them with ``quality_columns()``
    appended; with the stage off, the columns are appended null."""
    if not prepared.cfg.enabled:
        return df.select("*", *[F.lit(None).cast(t).alias(n) for n, t, _ in signal_fields()])
    schema = T.StructType(list(df.schema.fields) + [T.StructField(n, t) for n, t, _ in signal_fields()])
    cfg, shipped = prepared.cfg, prepared.shipped

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        screen = get_screen(cfg, shipped)
        for batch in batches:
            yield quality_batch(batch, screen)

    out = df.mapInArrow(apply, schema)
    return out.drop(CLEAN_FLAG) if CLEAN_FLAG in df.columns else out


def keep_clean_rejections_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``keep_clean_rejections`` for one Arrow batch: ``CLEAN_FLAG`` appended."""
    failed = pc.fill_null(pc.equal(batch.column("stage"), "clean"), False)
    none = pa.nulls(batch.num_rows, pa.string())
    cols = {
        "reason": pc.if_else(failed, none, batch.column("reason")),
        "stage": pc.if_else(failed, none, batch.column("stage")),
    }
    arrays = [cols.get(f.name, batch.column(f.name)) for f in batch.schema]
    return pa.RecordBatch.from_arrays(
        arrays + [pc.if_else(failed, batch.column("reason"), none)],
        schema=batch.schema.append(pa.field(CLEAN_FLAG, pa.string())),
    )


def quality_summary(records: DataFrame, summary: dict[str, Any]) -> dict[str, Any]:
    """report.json's ``quality``: mode, profile, thresholds with provenance, and every signal's
    distribution for kept and removed documents (one aggregation)."""
    from etl.report.stats import signal_distributions

    extra = [c for c in ("han_ratio", "template_share") if c in records.columns]  # the latter: etl.quality.crawl_repeat
    return {**summary, "distributions": signal_distributions(records, _appended() + extra)}
