"""The classification stage (after the rules, before dedup): fastText spam probability and
GPT-3-style quality score for every document the rules kept; drops get ``stage="classify"``
and reason ``spam`` or ``low_quality``.

Model directories are shipped to executors with ``SparkContext.addFile`` and verified by sha256
on the driver before the job starts (a wrong or corrupted model is a clear error up front) and
again when each Python worker loads them, once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import SparkFiles
from pyspark.sql import DataFrame, SparkSession

from etl.read import records as rec
from etl.runtime.ship import ship_directory
from filters import docpass
from filters.classifiers.classify import PREPROCESS_HMM, TextClassifier, pareto_keep, preprocess, preprocess_batch
from filters.classifiers.crawl import CrawlModelConfig
from filters.text.segment import DEFAULT_ENGINE, REFERENCE, Segmenter, audit_failure, audited, get_segmenter

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
    # Segmentation engine for preprocessing (filters.text.segment): "" = the default (rjieba), "jieba" =
    # the pure-Python reference. A model recording another engine loads only if the parity holds.
    segment_engine: str = ""
    # ~1 document in N (by doc_id hash) is also preprocessed with jieba; any difference stops the
    # job (filters.text.segment.audited; ~1 % more time at 1,000). 0 = no audit.
    segment_audit_every: int = 1000
    # The crawl's own spam model, trained per build on what the rules removed against what they
    # kept (etl/classify/crawl_model.py; it needs no model above)
    crawl: CrawlModelConfig = field(default_factory=CrawlModelConfig)

    @property
    def enabled(self) -> bool:
        return bool(self.spam_model or self.quality_model)


@dataclass(frozen=True)
class ShippedModels:
    """What the executors need: the shipped directory names and the verified checksums."""

    spam_dir: str
    spam_sha256: str
    quality_dir: str
    quality_sha256: str
    cfg: ClassifyConfig


def ship_models(spark: SparkSession, cfg: ClassifyConfig) -> ShippedModels:
    """Verify on the driver, then distribute. Raises ``filters.classifiers.classify.ModelError``."""
    shipped = {}
    for kind, path, pin in (
        ("spam", cfg.spam_model, cfg.spam_sha256),
        ("quality", cfg.quality_model, cfg.quality_sha256),
    ):
        if not path:
            shipped[kind] = ("", "")
            continue
        model = TextClassifier(path, pin or None, cfg.segment_engine or None)
        sha = model.meta["sha256"]
        shipped[kind] = (ship_directory(spark, path, f"zhcorpus-{kind}-{sha[:16]}"), sha)
    return ShippedModels(*shipped["spam"], *shipped["quality"], cfg)


_loaded: dict[tuple[str, str, str], TextClassifier] = {}


def loaded_model(name: str, sha: str, engine: str) -> TextClassifier | None:
    """The shipped model ``name`` (None for ""), loaded once per Python worker."""
    if not name:
        return None
    key = (name, sha, engine)
    if key not in _loaded:
        _loaded[key] = TextClassifier(SparkFiles.get(name), sha, engine or None)
    return _loaded[key]


_SCORED = ("spam_prob", "quality_score", "stage", "reason")  # the columns classification may set


def classify_batch(
    batch: pa.RecordBatch,
    spam: TextClassifier | None,
    quality: TextClassifier | None,
    cfg: ClassifyConfig,
    drop: bool = True,
) -> pa.RecordBatch:
    """Score the rows the earlier stages kept; mark drops (``drop=False``: score only). Other rows
    pass unchanged. Only the
    texts of those rows and the four scored columns become Python objects; every other column
    passes through as Arrow."""
    live = np.flatnonzero(
        pc.and_kleene(pc.equal(batch.column("kind"), rec.RECORD), pc.is_null(batch.column("reason")))
        .fill_null(False)
        .to_numpy(zero_copy_only=False)
    )
    if not len(live) or not (spam or quality):
        return batch
    texts = batch.column("text").take(pa.array(live))
    lines = classifier_lines(texts, (spam or quality).segmenter)  # once, for both models
    _audit(batch, live, texts, lines, (spam or quality).segmenter, cfg.segment_audit_every)
    spam_p = spam.positive_prob(lines, preprocessed=True) if spam else None
    quality_p = quality.positive_prob(lines, preprocessed=True) if quality else None
    spam_t = cfg.spam_threshold if cfg.spam_threshold >= 0 else (spam.threshold if spam else 1.0)
    quality_t = cfg.quality_threshold if cfg.quality_threshold >= 0 else (quality.threshold if quality else 0.0)
    cols = {name: batch.column(name).to_pylist() for name in _SCORED}
    doc_ids = batch.column("doc_id").take(pa.array(live)).to_pylist() if cfg.quality_rule == "pareto" else None
    for j, i in enumerate(live):
        if spam_p is not None:
            cols["spam_prob"][i] = p = round(float(spam_p[j]), 5)
            if p >= spam_t and drop:
                cols["stage"][i], cols["reason"][i] = CLASSIFY_STAGE, SPAM
                continue
        if quality_p is not None:
            cols["quality_score"][i] = score = round(float(quality_p[j]), 5)
            keep = (
                pareto_keep(doc_ids[j], score, cfg.pareto_alpha, cfg.pareto_seed)
                if doc_ids is not None
                else score >= quality_t
            )
            if not keep and drop:
                cols["stage"][i], cols["reason"][i] = CLASSIFY_STAGE, LOW_QUALITY
    schema = batch.schema
    return pa.RecordBatch.from_arrays(
        [pa.array(cols[f.name], type=f.type) if f.name in cols else batch.column(f.name) for f in schema], schema=schema
    )


def classifier_lines(texts: pa.Array, segmenter: Segmenter) -> list[str]:
    """``filters.classifiers.classify.preprocess`` of each text: with the default engine (HMM on, as the
    models were built) one compiled pass over each text's prose (``filters.docpass``, the same
    lines), else ``preprocess_batch`` with ``segmenter``."""
    if segmenter.engine == DEFAULT_ENGINE and segmenter.hmm == PREPROCESS_HMM and docpass.enabled():
        try:
            return docpass.classifier_lines(texts)
        except (pa.ArrowException, UnicodeEncodeError):  # a lone surrogate: no UTF-8
            pass
    return preprocess_batch(texts.to_pylist(), segmenter=segmenter)


def _audit(
    batch: pa.RecordBatch, live: np.ndarray, texts: pa.Array, lines: list[str], segmenter: Segmenter, every: int
) -> None:
    """The audited documents' preprocessing (``lines``, what the models read) again with the jieba
    engine: equal, or the job stops."""
    if not every or (segmenter.engine == REFERENCE and not docpass.enabled()):
        return
    reference = get_segmenter(REFERENCE, segmenter.hmm)
    for j, key in enumerate(batch.column("doc_id").take(pa.array(live)).to_pylist()):
        if key is not None and audited(key, every):
            expected = preprocess(texts[j].as_py(), segmenter=reference)
            if expected != lines[j]:
                raise audit_failure("classification", key, expected, lines[j], segmenter)


def classify_stage(df: DataFrame, shipped: ShippedModels, drop: bool = True) -> DataFrame:
    """``df`` must already carry nullable ``spam_prob`` and ``quality_score`` columns.
    ``drop=False``: every document is scored and none is marked (annotate mode)."""

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        spam = loaded_model(shipped.spam_dir, shipped.spam_sha256, shipped.cfg.segment_engine)
        quality = loaded_model(shipped.quality_dir, shipped.quality_sha256, shipped.cfg.segment_engine)
        for batch in batches:
            yield classify_batch(batch, spam, quality, shipped.cfg, drop)

    return df.mapInArrow(apply, df.schema)
