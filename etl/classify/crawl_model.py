"""The crawl's own spam model (``filters.classifiers.crawl``) as a Spark stage, after read → clean →
quality → classify and the template rule, on the marked rows.

1. One query counts the pages with text the rules removed for a reason that is evidence of spam
   (``CrawlModelConfig.not_evidence`` aside) and the pages they kept. Too few of either: no model,
   said in the log and in report.json (``models.crawl``).
2. A sample of each side (a hash of the page's identity, at most ``max_docs``, each cut to
   ``max_chars``) is preprocessed on the executors as the classifiers preprocess
   (``etl.classify.stage.classifier_lines``) and collected to the driver with its fold.
3. The driver trains one model a fold (``filters.classifiers.crawl.train_folds``), joined by the
   profile's reference sample on the kept side, and ships them.
4. The kept pages' text goes through one more Python pass that scores each with the model of the
   other fold; the pages at or over ``threshold`` come back (a few) and are joined to the rows:
   ``stage="classify"``, ``reason="crawl_spam"``, ``detail`` the probability (``annotate`` mode: a
   flag).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
from pyspark import SparkFiles, StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from base.artifact import sha256_file
from etl.classify.stage import CLASSIFY_STAGE, classifier_lines
from etl.read import records as rec
from etl.read.ids import BROADCAST_MAX
from etl.runtime.ship import ship_directory
from filters.classifiers.classify import PREPROCESS_HMM
from filters.classifiers.crawl import (
    FOLDS,
    KEPT,
    REMOVED,
    SAMPLE_FILE,
    CrawlModelConfig,
    reference_sample,
    removed_probs,
    train_folds,
)
from filters.text.segment import get_segmenter

log = logging.getLogger("zhcorpus")

CRAWL_SPAM = "crawl_spam"
PROB = "_crawl_prob"
_RANGE = 1 << 31


def _identity() -> Column:
    return F.xxhash64("source_file", "offset")


def _fold() -> Column:
    return F.pmod(_identity(), F.lit(FOLDS)).cast("int")


def _draw(seed: int) -> Column:
    """A uniform draw in [0, 1) fixed by the page's identity and ``seed``."""
    return F.pmod(F.xxhash64("source_file", "offset", F.lit(seed)), F.lit(_RANGE)) / F.lit(float(_RANGE))


def _flags() -> Column:
    """``quality_flags``, empty where null."""
    return F.coalesce("quality_flags", F.array().cast("array<string>"))


def _has_text() -> Column:
    return (F.col("kind") == rec.RECORD) & F.col("text").isNotNull()


def evidence(cfg: CrawlModelConfig, mode: str) -> Column:
    """A page the rules removed for a reason that is evidence of spam (``annotate``: flagged)."""
    if mode == "annotate":
        flagged = F.exists(_flags(), lambda f: ~f.isin(*cfg.not_evidence))
        return _has_text() & flagged
    stages = ("clean", "quality", CLASSIFY_STAGE)
    removed = F.col("stage").isin(*stages) & ~F.col("reason").isin(*cfg.not_evidence)
    return _has_text() & F.coalesce(removed, F.lit(False))  # a kept page's null stage: no evidence


def kept(cfg: CrawlModelConfig, mode: str) -> Column:
    """A page the rules kept (``annotate``: one with no flag, as ``filter`` would have kept it)."""
    if mode == "annotate":
        return _has_text() & F.col("reason").isNull() & (F.coalesce(F.size("quality_flags"), F.lit(0)) <= 0)
    return _has_text() & F.col("reason").isNull()


@dataclass
class CrawlPass:
    """``crawl_model_stage``'s result: the rows, the scored pages the caller unpersists once it has
    persisted the rows, and report.json's ``models.crawl``."""

    rows: DataFrame
    summary: dict
    flagged: DataFrame | None = None
    broadcast: bool = False  # ``flagged`` is small: ``rows`` joins it by broadcast, cheap to repeat

    def unpersist(self) -> None:
        if self.flagged is not None:
            self.flagged.unpersist()


def _lines_schema(extra: list[T.StructField]) -> T.StructType:
    return T.StructType([T.StructField("source_file", T.StringType()), T.StructField("offset", T.LongType()), *extra])


def _preprocess(engine: str):
    """A mapInArrow function: (source_file, offset, ..., text) -> the same with ``line`` for ``text``."""

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        segmenter = get_segmenter(engine or None, PREPROCESS_HMM)
        for b in batches:
            lines = classifier_lines(b.column("text"), segmenter) if b.num_rows else []
            yield b.drop_columns(["text"]).append_column("line", pa.array(lines, pa.string()))

    return apply


def crawl_model_stage(
    spark: SparkSession, rows: DataFrame, cfg: CrawlModelConfig, mode: str, profile_dir: str, engine: str = ""
) -> CrawlPass:
    """``rows``: the marked rows (persisted). Returns them with the pages the crawl model removes
    marked (``filter``) or flagged (``annotate``), and the summary for report.json."""
    summary: dict = asdict(cfg)
    if not cfg.enabled:
        return CrawlPass(rows, summary)
    is_removed, is_kept = evidence(cfg, mode), kept(cfg, mode)
    side = F.when(is_removed, F.lit(REMOVED)).when(is_kept, F.lit(KEPT))
    n = rows.agg(  # one global aggregate: no shuffle
        F.count(F.when(is_removed, 1)).alias(REMOVED), F.count(F.when(is_kept, 1)).alias(KEPT)
    ).first()
    n_removed, n_kept = n[REMOVED], n[KEPT]
    summary.update(removed_pages=n_removed, kept_pages=n_kept)
    if n_removed < cfg.min_removed or n_kept < cfg.min_kept:
        why = (
            f"{n_removed} pages removed as spam-like and {n_kept} kept; it needs {cfg.min_removed} and {cfg.min_kept}"
            f" (classify.crawl.min_removed, min_kept)"
        )
        log.info("classify.crawl: no crawl model: %s", why)  # a small crawl: expected, not a fault
        return CrawlPass(rows, {**summary, "trained": False, "why": why})
    # every judged page preprocessed once, on the executors: the training sample and the scoring
    # both read these lines
    schema = _lines_schema(
        [
            T.StructField("label", T.StringType()),
            T.StructField("fold", T.IntegerType()),
            T.StructField("line", T.StringType()),
        ]
    )
    judged = rows.where(side.isNotNull()).select(
        "source_file",
        "offset",
        side.alias("label"),
        _fold().alias("fold"),
        F.substring("text", 1, cfg.max_chars).alias("text"),
    )
    lines = judged.mapInArrow(_preprocess(engine), schema).persist(StorageLevel.MEMORY_AND_DISK)
    rate = F.when(F.col("label") == REMOVED, min(1.0, cfg.max_docs / n_removed)).otherwise(
        min(1.0, cfg.max_docs / n_kept)
    )
    got = (
        lines.where(_draw(cfg.seed) < rate)
        .select("source_file", "offset", "label", "fold", "line")
        .toArrow()
        .sort_by([("source_file", "ascending"), ("offset", "ascending")])
    )
    reference, ref_summary = reference_sample(profile_dir, cfg.reference_docs)
    if not reference and cfg.reference_docs > 0:
        log.warning(
            "classify.crawl: the profile %r has no reference sample (%s): the kept side is the crawl's alone;"
            " rebuild the profile with jobs.train_fluency",
            profile_dir,
            SAMPLE_FILE,
        )
    segmenter = get_segmenter(engine or None, PREPROCESS_HMM)
    ref_lines = classifier_lines(pa.array(reference, pa.string()), segmenter) if reference else []
    work = Path(tempfile.mkdtemp(prefix="zhcorpus-crawl-model-"))
    try:
        trained = train_folds(
            got.column("line").to_pylist(),
            got.column("label").to_pylist(),
            got.column("fold").to_pylist(),
            ref_lines,
            cfg,
            work / "models",
        )
        shas = [sha256_file(work / "models" / f"fold{f}.bin") for f in range(FOLDS)]
        shipped = ship_directory(spark, work / "models", f"zhcorpus-crawl-{shas[0][:8]}{shas[1][:8]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary.update(trained=True, folds=trained, sha256=shas, reference_sample=ref_summary)
    log.info("classify.crawl: trained on %s", trained)
    threshold = cfg.threshold

    def score(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import fasttext

        from base.artifact import require_sha256 as verify

        fasttext.FastText.eprint = lambda *a, **k: None
        root = Path(SparkFiles.get(shipped))
        models = []
        for f, sha in enumerate(shas):
            verify(root / f"fold{f}.bin", sha, None)
            models.append(fasttext.load_model(str(root / f"fold{f}.bin")))
        for b in batches:
            p = removed_probs(models, b.column("line").to_pylist(), b.column("fold").to_numpy())
            hit = np.flatnonzero(p >= threshold)
            yield pa.RecordBatch.from_arrays(
                [b.column("source_file").take(pa.array(hit)), b.column("offset").take(pa.array(hit)), pa.array(p[hit])],
                ["source_file", "offset", PROB],
            )

    live = lines.where(F.col("label") == KEPT).select("source_file", "offset", "fold", "line")
    flagged = live.mapInArrow(score, _lines_schema([T.StructField(PROB, T.DoubleType())]))
    flagged = flagged.persist(StorageLevel.MEMORY_AND_DISK)
    n_flagged = flagged.count()
    lines.unpersist()
    summary["removed"] = n_flagged
    log.info("classify.crawl: %d of %d kept pages at or over %.2f", n_flagged, n_kept, threshold)
    small = n_flagged <= BROADCAST_MAX
    out = rows.join(F.broadcast(flagged) if small else flagged, ["source_file", "offset"], "left")
    hit = F.col(PROB).isNotNull() & is_kept
    columns = rows.columns
    if mode == "filter":
        cols = {
            "stage": F.when(hit, F.lit(CLASSIFY_STAGE)).otherwise(F.col("stage")),
            "reason": F.when(hit, F.lit(CRAWL_SPAM)).otherwise(F.col("reason")),
            "detail": F.when(hit, F.format_string("crawl model P(removed) %.3f", F.col(PROB))).otherwise(
                F.col("detail")
            ),
        }
    else:
        cols = {
            "quality_flags": F.when(hit, F.concat(_flags(), F.array(F.lit(CRAWL_SPAM)))).otherwise(
                F.col("quality_flags")
            )
        }
    return CrawlPass(out.withColumns(cols).select(*columns), summary, flagged, small)
