"""The first phase of every corpus job: read → clean → classify, as marked rows.

Rows are marked, never removed (a repeated input ``id`` is renamed, ``etl/read/ids.py``, never merged): every input
record comes out as one row with ``reason`` null
(a document) or set (a rejection, with its ``stage``), plus one ``kind="file"`` row per input file
with the reader's own counts, from which the ledger is built. ``DOCUMENT_COLUMNS`` and
``REJECTED_COLUMNS`` are the output contract of ``documents/`` and ``rejected/``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from etl.classify.crawl_model import crawl_model_stage
from etl.classify.stage import ClassifyConfig, ShippedModels, classify_batch, loaded_model, ship_models
from etl.clean.pii import ARROW_PII, PII_COLUMN, PII_FIELD, PiiConfig, get_scrubber, pii_batch
from etl.clean.stage import CLEANED_SCHEMA, clean_batch, get_cleaner
from etl.quality.crawl_repeat import (
    KEY_FIELDS,
    CrawlRepeatConfig,
    ReferenceKeys,
    crawl_repeat_stage,
    reference_keys,
    reference_spans,
    with_keys_batch,
)
from etl.quality.crawl_repeat import SHARE as TEMPLATE_SHARE
from etl.quality.stage import (
    CLEAN_FLAG,
    Prepared,
    QualityConfig,
    get_screen,
    keep_clean_rejections_batch,
    prepare,
    quality_batch,
    quality_columns,
    signal_fields,
)
from etl.read import records as rec
from etl.read.ids import unique_ids
from etl.read.readers import Then, read_raw
from etl.report.counts import count_rows
from etl.runtime.objstore import read_parquet
from etl.runtime.progress import Counters, label_jobs
from filters.pangu.config import RulesConfig

_SIGNALS = tuple(quality_columns())  # han_ratio, a signal too, is the cleaning stage's column
DOCUMENT_COLUMNS = (
    "doc_id",
    "text",
    "source",
    "url",
    "timestamp",
    "title",
    "n_chars",
    "han_ratio",
    "sensitive_hits",
    "pii_redacted",
    "spam_prob",
    "quality_score",
    *_SIGNALS,
    TEMPLATE_SHARE,
    "source_file",
    "renamed_from",
)
REJECTED_COLUMNS = (
    "doc_id",
    "stage",
    "reason",
    "detail",
    "text",
    "source",
    "url",
    "spam_prob",
    "quality_score",
    "han_ratio",
    *_SIGNALS,
    TEMPLATE_SHARE,
    "source_file",
    "offset",
    "renamed_from",
)


@dataclass
class Marked:
    """The phase's output: every row marked, persisted (the ledger, the documents and the
    rejections all read it), and the input files it covers."""

    rows: DataFrame
    files: list[str]
    models: dict  # the models scored with: {"spam": {"dir", "sha256"}, "quality": {...}} (empty: none)
    quality: dict  # the quality stage's mode, profile and thresholds with their provenance
    cached: DataFrame  # what is persisted (``rows`` may add the doc_id renaming on top of it)
    # this input's template key counts (key, texts), persisted, when the caller keeps them (the nightly)
    template_counts: DataFrame | None = None
    held: tuple[DataFrame, ...] = ()  # other persisted frames ``rows`` reads (the crawl model's verdicts)

    def records(self) -> DataFrame:
        return self.rows.where(F.col("kind") == rec.RECORD)

    def documents(self) -> DataFrame:
        return self.records().where(F.col("reason").isNull()).select(*DOCUMENT_COLUMNS)

    def rejected(self) -> DataFrame:
        return self.records().where(F.col("reason").isNotNull()).select(*REJECTED_COLUMNS)

    def text_bytes(self) -> tuple[int, int]:
        """UTF-8 bytes of text in the documents and in the rejected records, what their output files
        are sized by (``etl.runtime.sizing``): ``etl.report.counts.count_rows`` of the persisted rows
        (a build takes them from the counts it makes for its report)."""
        return count_rows(self.rows).text_bytes

    def unpersist(self) -> None:
        self.cached.unpersist()
        for frame in self.held:
            frame.unpersist()
        if self.template_counts is not None:
            self.template_counts.unpersist()


@dataclass(frozen=True)
class Marking:
    """What the fused pass needs on the executors (``marking``)."""

    rules: RulesConfig
    pii: PiiConfig
    quality: Prepared
    classify: ShippedModels | None  # None: no classification
    template: CrawlRepeatConfig | None = None  # the template rule's keys, cut here (None: rule off)
    reference: ReferenceKeys | None = None  # keys the template rule never counts


def mark_batch(batch: pa.RecordBatch, m: Marking) -> pa.RecordBatch:
    """One raw batch through clean, personal data, quality and classify: the batch the chained
    stages give (``clean_stage``, ``keep_clean_rejections`` in annotate mode, ``pii_stage``,
    ``quality_stage``, ``classify_stage``); run in the Python worker that holds every resource."""
    b = clean_batch(batch, get_cleaner(m.rules))
    if m.quality.cfg.mode == "annotate":
        b = keep_clean_rejections_batch(b)
    if m.pii.enabled:
        b = pii_batch(b, get_scrubber(m.pii.resolved(), m.pii.public_ips_only))
    else:
        b = b.append_column(PII_COLUMN, pa.nulls(b.num_rows, ARROW_PII))
    if m.quality.cfg.enabled:
        b = quality_batch(b, get_screen(m.quality.cfg, m.quality.shipped))
    else:
        for name, _, arrow in signal_fields():
            b = b.append_column(name, pa.nulls(b.num_rows, arrow))
    if CLEAN_FLAG in b.schema.names:
        b = b.drop_columns([CLEAN_FLAG])
    s = m.classify
    if s is not None:
        b = classify_batch(
            b,
            loaded_model(s.spam_dir, s.spam_sha256, s.cfg.segment_engine),
            loaded_model(s.quality_dir, s.quality_sha256, s.cfg.segment_engine),
            s.cfg,
            drop=m.quality.cfg.mode == "filter",
        )  # annotate mode: scores only
    if m.template is not None:
        b = with_keys_batch(b, m.template, reference_keys(m.reference))
    return b


def marking(m: Marking) -> Then:
    """The fused pass as what the reading task does next (``etl.read.readers.Then``): read →
    clean → personal data → quality → classify in one Python worker, a record crossing into
    Python once (its raw batch is never handed back to the JVM to be handed on)."""
    m.pii.resolved()  # a bad kind or mode fails here, on the driver, before any work
    schema = T.StructType(
        list(CLEANED_SCHEMA.fields)
        + [PII_FIELD]
        + [T.StructField(n, t) for n, t, _ in signal_fields()]
        + (list(KEY_FIELDS) if m.template is not None else [])
    )
    return Then(lambda batch: mark_batch(batch, m), schema)


def mark_stage(raw: DataFrame, m: Marking) -> DataFrame:
    """``raw`` (``etl.read.readers.RAW_SCHEMA``) -> the marked rows of read → clean → personal data →
    quality → classify, in one ``mapInArrow``: rows cross into Python once instead of four
    times, and one Python worker per task holds every resource (a worker Spark hands a stage it
    has not run before builds that stage's tables and models: four stages, four times). The
    build fuses it into the reading task instead (``marking``)."""
    then = marking(m)
    return raw.mapInArrow(then, then.schema)


def read_clean_classify(
    spark: SparkSession,
    inputs: list[str],
    reader: rec.ReaderConfig,
    rules: RulesConfig,
    pii: PiiConfig,
    quality: QualityConfig,
    classify: ClassifyConfig,
    counters: Counters,
    template_history: list[str] | None = None,
) -> Marked:
    """read → clean → personal data → quality → classify. Models and the reference profile are
    verified on the driver before anything is read (``ModelError``, ``ProfileError``). In the
    quality stage's ``annotate`` mode nothing that has text is dropped: the PanGu-α rules' and the
    quality rules' failures are ``quality_flags``, the classifiers score without dropping.
    ``template_history``: Parquet directories of earlier inputs' template key counts (the
    nightly's versions), added to this input's; given (even empty), this input's counts are kept
    in ``Marked.template_counts``."""
    shipped = ship_models(spark, classify) if classify.enabled else None
    screened = prepare(spark, quality)
    template = quality.template if quality.enabled and quality.template.enabled else None
    reference = None
    if template is not None:  # crawl-level template repetition (etl.quality.crawl_repeat): keys cut as text is read
        reference, spans = reference_spans(spark, screened.cfg.profile, quality.template, screened.shipped)
        screened.summary["template"] = {**asdict(quality.template), **spans}
    # read, clean, personal data, quality, classify, template keys in one pass (``marking``); in
    # annotate mode a failed PanGu-α rule becomes a flag
    m = Marking(rules, pii, screened, shipped, template, reference)
    marked, files = read_raw(spark, inputs, reader, counters, then=marking(m))
    models = (
        {}
        if shipped is None
        else {
            "spam": {"dir": classify.spam_model, "sha256": shipped.spam_sha256},
            "quality": {"dir": classify.quality_model, "sha256": shipped.quality_sha256, "rule": classify.quality_rule},
        }
    )
    cached = marked.persist(StorageLevel.MEMORY_AND_DISK)
    if template is not None:  # an aggregation over every record with text
        prior = read_parquet(spark, template_history, reader.s3) if template_history else None  # s3: committed
        with label_jobs(spark.sparkContext, "read, clean, classify, template repetition"):
            done = crawl_repeat_stage(
                cached, quality.template, quality.mode, reference, prior, keep_counts=template_history is not None
            )
            repeated = done.rows.persist(StorageLevel.MEMORY_AND_DISK)
            repeated.count()  # materialised before the per-document pass's rows are let go
        cached.unpersist()
        done.unpersist_shares()
        cached, rows, template_counts = repeated, repeated, done.counts
    else:  # the cache itself is what ``Marked.unpersist`` lets go (a frame derived from it holds none)
        rows, template_counts = cached.withColumn(TEMPLATE_SHARE, F.lit(None).cast("double")), None
    held: tuple[DataFrame, ...] = ()
    if classify.crawl.enabled:  # the crawl's own spam model: trained on this crawl's removals
        with label_jobs(spark.sparkContext, "read, clean, classify, crawl model"):
            crawl = crawl_model_stage(
                spark, rows, classify.crawl, quality.mode, screened.cfg.profile, classify.segment_engine
            )
            if crawl.flagged is not None and crawl.broadcast:  # a few pages: every read joins them again
                rows, held = crawl.rows, (crawl.flagged,)
            elif crawl.flagged is not None:
                judged = crawl.rows.persist(StorageLevel.MEMORY_AND_DISK)
                judged.count()  # materialised before the rows it was made from are let go
                cached.unpersist()
                crawl.unpersist()
                cached, rows = judged, judged
        models = {**models, "crawl": crawl.summary}
    # repeated input ids made unique (etl/read/ids.py)
    return Marked(unique_ids(rows), files, models, screened.summary, cached, template_counts, held)
