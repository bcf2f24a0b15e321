"""The classification stage (after the rules, before dedup): fastText spam probability and
GPT-3-style quality score for every document the rules kept; drops get ``stage="classify"``
and reason ``spam`` or ``low_quality``.

Model directories are shipped to executors with ``SparkContext.addFile`` and verified by sha256
on the driver before the job starts (a wrong or corrupted model is a clear error up front) and
again when each Python worker loads them, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Literal

import pyarrow as pa
from pyspark import SparkFiles
from pyspark.sql import DataFrame, SparkSession

from etl import records as rec
from etl.ship import ship_directory
from filters.classify import TextClassifier, pareto_keep, preprocess

CLASSIFY_STAGE = "classify"
SPAM, LOW_QUALITY = "spam", "low_quality"


@dataclass(frozen=True)
class ClassifyConfig:
    spam_model: str = ""  # model directory from jobs.train_classifier; "" = no spam filtering
    spam_sha256: str = ""  # optional pin: refuse any other model.bin
    # Drop when spam_prob >= this; < 0 = the threshold chosen on held-out data at training.
    spam_threshold: float = -1.0
    quality_model: str = ""  # "" = no quality scoring
    quality_sha256: str = ""
    # PanGu-α: keep documents whose score passes a threshold. GPT-3 App. A: keep iff
    # np.random.pareto(alpha) > 1 - score, with the draw seeded by doc_id (deterministic).
    quality_rule: Literal["threshold", "pareto"] = "threshold"
    quality_threshold: float = -1.0  # < 0 = the model's chosen threshold
    pareto_alpha: float = 9.0  # GPT-3 App. A
    pareto_seed: int = 0

    @property
    def enabled(self) -> bool:
        return bool(self.spam_model or self.quality_model)


@dataclass(frozen=True)
class _Shipped:
    """What the executors need: the shipped directory names and the verified checksums."""
    spam_dir: str
    spam_sha256: str
    quality_dir: str
    quality_sha256: str
    cfg: ClassifyConfig


def ship_models(spark: SparkSession, cfg: ClassifyConfig) -> _Shipped:
    """Verify on the driver, then distribute. Raises ``filters.classify.ModelError``."""
    shipped = {}
    for kind, path, pin in (("spam", cfg.spam_model, cfg.spam_sha256), ("quality", cfg.quality_model, cfg.quality_sha256)):
        if not path:
            shipped[kind] = ("", "")
            continue
        model = TextClassifier(path, pin or None)
        sha = model.meta["sha256"]
        shipped[kind] = (ship_directory(spark, path, f"zhcorpus-{kind}-{sha[:16]}"), sha)
    return _Shipped(*shipped["spam"], *shipped["quality"], cfg)


_loaded: dict[tuple[str, str], TextClassifier] = {}


def _model(name: str, sha: str) -> TextClassifier | None:
    if not name:
        return None
    key = (name, sha)
    if key not in _loaded:
        _loaded[key] = TextClassifier(SparkFiles.get(name), sha)
    return _loaded[key]


def classify_batch(batch: pa.RecordBatch, spam: TextClassifier | None, quality: TextClassifier | None,
                   cfg: ClassifyConfig) -> pa.RecordBatch:
    """Score the rows the earlier stages kept; mark drops. Other rows pass unchanged."""
    rows = batch.to_pylist()
    live = [i for i, r in enumerate(rows) if r["kind"] == rec.RECORD and r["reason"] is None]
    lines = [preprocess(rows[i]["text"]) for i in live]  # once, for both models
    spam_p = spam.positive_prob(lines, preprocessed=True) if spam else None
    quality_p = quality.positive_prob(lines, preprocessed=True) if quality else None
    spam_t = cfg.spam_threshold if cfg.spam_threshold >= 0 else (spam.threshold if spam else 1.0)
    quality_t = cfg.quality_threshold if cfg.quality_threshold >= 0 else (quality.threshold if quality else 0.0)
    for j, i in enumerate(live):
        r = rows[i]
        if spam_p is not None:
            r["spam_prob"] = round(float(spam_p[j]), 5)
            if r["spam_prob"] >= spam_t:
                r["stage"], r["reason"] = CLASSIFY_STAGE, SPAM
                continue
        if quality_p is not None:
            score = round(float(quality_p[j]), 5)
            r["quality_score"] = score
            keep = (pareto_keep(r["doc_id"], score, cfg.pareto_alpha, cfg.pareto_seed) if cfg.quality_rule == "pareto"
                    else score >= quality_t)
            if not keep:
                r["stage"], r["reason"] = CLASSIFY_STAGE, LOW_QUALITY
    return pa.RecordBatch.from_pylist(rows, schema=batch.schema)


def classify_stage(df: DataFrame, shipped: _Shipped) -> DataFrame:
    """``df`` must already carry nullable ``spam_prob`` and ``quality_score`` columns."""
    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        spam = _model(shipped.spam_dir, shipped.spam_sha256)
        quality = _model(shipped.quality_dir, shipped.quality_sha256)
        for batch in batches:
            yield classify_batch(batch, spam, quality, shipped.cfg)

    return df.mapInArrow(apply, df.schema)
