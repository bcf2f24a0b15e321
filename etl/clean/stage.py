"""The cleaning stage: PanGu-α §3.1.1 rules and the sensitive-word filter over ``RAW_SCHEMA``
rows, Arrow-batched (``clean_batch``: columns, not row dicts), one ``filters.pangu.pipeline.Cleaner``
per Python worker.

Rows are marked, never removed: a dropped document keeps its row with ``stage="clean"`` and
its ``reason``; read-stage rejections pass through with ``stage="read"``.
"""

from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from etl.read import records as rec
from etl.read.readers import ARROW_RAW, RAW_SCHEMA
from filters.pangu.config import RulesConfig
from filters.pangu.pipeline import Cleaner

READ_STAGE, CLEAN_STAGE = "read", "clean"

_EXTRA = [
    ("stage", T.StringType(), pa.string()),
    ("n_chars", T.IntegerType(), pa.int32()),
    ("han_ratio", T.DoubleType(), pa.float64()),
    ("sensitive_hits", T.MapType(T.StringType(), T.IntegerType()), pa.map_(pa.string(), pa.int32())),
    ("symbols_removed", T.IntegerType(), pa.int32()),
    ("nav_lines_removed", T.IntegerType(), pa.int32()),
    ("dup_paragraphs_removed", T.IntegerType(), pa.int32()),
    ("converted", T.BooleanType(), pa.bool_()),
    # filled by etl.classify.stage when models are configured
    ("spam_prob", T.DoubleType(), pa.float64()),
    ("quality_score", T.DoubleType(), pa.float64()),
]
CLEANED_SCHEMA = T.StructType(list(RAW_SCHEMA.fields) + [T.StructField(n, t) for n, t, _ in _EXTRA])
ARROW_CLEANED = pa.schema(list(ARROW_RAW) + [pa.field(n, a) for n, _, a in _EXTRA])

_cleaners: dict[RulesConfig, Cleaner] = {}


def get_cleaner(cfg: RulesConfig) -> Cleaner:
    """Built once per Python worker process (automata, OpenCC), reused by every batch."""
    if cfg not in _cleaners:
        _cleaners[cfg] = Cleaner(cfg)
    return _cleaners[cfg]


def clean_row(row: dict[str, Any], cleaner: Cleaner) -> dict[str, Any]:
    """One row as a dict: the reference ``clean_batch`` is tested against (and for callers that
    hold rows)."""
    out = {**row, **{n: None for n, _, _ in _EXTRA}}
    if row["kind"] != rec.RECORD:
        return out
    if row["reason"] is not None:
        out["stage"] = READ_STAGE
        return out
    c = cleaner(row["text"], row["title"])
    out.update(
        text=c.text,
        reason=c.reason,
        stage=None if c.keep else CLEAN_STAGE,
        n_chars=c.stats.visible,
        han_ratio=round(c.stats.han_ratio, 4),
        sensitive_hits=list(c.sensitive_hits.items()),
        symbols_removed=c.symbols_removed,
        nav_lines_removed=c.nav_lines_removed,
        dup_paragraphs_removed=c.dup_paragraphs_removed,
        converted=c.converted,
    )
    return out


def clean_batch(batch: pa.RecordBatch, cleaner: Cleaner) -> pa.RecordBatch:
    """``ARROW_RAW`` batch -> ``ARROW_CLEANED`` batch, column by column: only kind, reason, text
    and title become Python objects; the other raw columns pass through as Arrow arrays."""
    kinds, reasons = batch.column("kind").to_pylist(), batch.column("reason").to_pylist()
    texts, titles = batch.column("text").to_pylist(), batch.column("title").to_pylist()
    extra: dict[str, list] = {n: [None] * batch.num_rows for n, _, _ in _EXTRA}
    changed = False
    for i, kind in enumerate(kinds):
        if kind != rec.RECORD:
            continue
        if reasons[i] is not None:
            extra["stage"][i] = READ_STAGE
            continue
        c = cleaner(texts[i], titles[i])
        changed = True
        texts[i], reasons[i] = c.text, c.reason
        extra["stage"][i] = None if c.keep else CLEAN_STAGE
        extra["n_chars"][i], extra["han_ratio"][i] = c.stats.visible, round(c.stats.han_ratio, 4)
        extra["sensitive_hits"][i] = list(c.sensitive_hits.items())
        extra["symbols_removed"][i], extra["nav_lines_removed"][i] = c.symbols_removed, c.nav_lines_removed
        extra["dup_paragraphs_removed"][i], extra["converted"][i] = c.dup_paragraphs_removed, c.converted
    columns = []
    for field in ARROW_RAW:
        if changed and field.name in ("text", "reason"):
            columns.append(pa.array(texts if field.name == "text" else reasons, field.type))
        else:
            col = batch.column(field.name)
            columns.append(col if col.type == field.type else col.cast(field.type))
    columns += [pa.array(extra[n], a) for n, _, a in _EXTRA]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_CLEANED)


def clean_stage(raw: DataFrame, cfg: RulesConfig) -> DataFrame:
    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        cleaner = get_cleaner(cfg)
        for batch in batches:
            yield clean_batch(batch, cleaner)

    return raw.mapInArrow(apply, CLEANED_SCHEMA)
