"""The personal-data stage (after cleaning, before classification): ``filters.text.pii`` over the
marked rows of ``etl.clean.stage.CLEANED_SCHEMA``, Arrow-batched, one scrubber per Python worker.

Rows are marked, never removed. A row an earlier stage rejected (or a ``kind="file"`` row) passes
through untouched. A document with personal data of a kind whose mode is ``redact`` gets the
kind's placeholder in its text (and title); one with a kind whose mode is ``drop`` gets
``stage="pii"``, ``reason="pii"`` and the kinds in ``detail`` (its text is redacted as well, so
``rejected/`` holds no personal data). The new column ``pii_redacted`` (kind -> spans replaced)
says what was done; null where the stage did not look or found nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Literal

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from etl.read import records as rec
from filters.text import pii

PII_STAGE = PII_REASON = "pii"
PII_COLUMN = "pii_redacted"
PII_FIELD = T.StructField(PII_COLUMN, T.MapType(T.StringType(), T.IntegerType()))
ARROW_PII = pa.map_(pa.string(), pa.int32())


@dataclass(frozen=True)
class PiiConfig:
    # Issue 18: "redact" replaces each span with its kind's placeholder (<PHONE>, <ID_NUMBER>,
    # <BANK_CARD>, <EMAIL>, <IP>), "drop" sends the document to rejected/ (reason pii), "off".
    mode: Literal["redact", "drop", "off"] = "redact"
    # Per-kind overrides of mode, e.g. --set pii.modes.email=off. Kinds: filters.text.pii.KINDS
    # (mobile, landline, id_number, bank_card, email, ipv4, ipv6).
    modes: dict[str, str] = field(default_factory=dict)
    # Only public (globally routable) IP addresses are personal data; 192.168.1.1 in a router
    # manual is not (datatrove PIIFormatter's only_remove_public_ips, default True).
    public_ips_only: bool = True

    def resolved(self) -> dict[str, str]:
        """Every kind's mode; ValueError names a bad kind or mode (call it on the driver)."""
        return pii.resolve_modes(self.mode, self.modes)

    @property
    def enabled(self) -> bool:
        return any(m != pii.OFF for m in self.resolved().values())


_scrubbers: dict[tuple, pii.PiiScrubber] = {}


def get_scrubber(modes: dict[str, str], public_ips_only: bool) -> pii.PiiScrubber:
    """Built once per Python worker (phonenumbers loads its metadata on first use)."""
    key = (tuple(sorted(modes.items())), public_ips_only)
    if key not in _scrubbers:
        _scrubbers[key] = pii.PiiScrubber(modes, public_ips_only)
    return _scrubbers[key]


def pii_batch(batch: pa.RecordBatch, scrubber: pii.PiiScrubber) -> pa.RecordBatch:
    """Columns in, columns out: only text, title, stage, reason and detail can change."""
    cols = {n: batch.column(n).to_pylist() for n in ("kind", "reason", "text", "title", "stage", "detail")}
    redacted: list[Any] = [None] * batch.num_rows
    for i, (kind, reason) in enumerate(zip(cols["kind"], cols["reason"])):
        if kind != rec.RECORD or reason is not None:
            continue
        body = scrubber(cols["text"][i] or "")
        title = scrubber(cols["title"][i]) if cols["title"][i] else None
        counts = dict(body.redacted)
        if title is not None and title.redacted:
            cols["title"][i] = title.text
            for k, n in title.redacted.items():
                counts[k] = counts.get(k, 0) + n
        if not counts:
            continue
        cols["text"][i], redacted[i] = body.text, sorted(counts.items())
        drop = set(body.drop_kinds) | set(title.drop_kinds if title else ())
        if drop:
            cols["stage"][i], cols["reason"][i] = PII_STAGE, PII_REASON
            cols["detail"][i] = ",".join(k for k in pii.KINDS if k in drop)
    arrays = [
        pa.array(cols[n], batch.schema.field(n).type) if n in cols else batch.column(n) for n in batch.schema.names
    ]
    return pa.RecordBatch.from_arrays(
        arrays + [pa.array(redacted, ARROW_PII)], schema=batch.schema.append(pa.field(PII_COLUMN, ARROW_PII))
    )


def pii_stage(df: DataFrame, cfg: PiiConfig) -> DataFrame:
    """``df``: marked rows (``etl.clean.stage.CLEANED_SCHEMA``, or any frame with kind, reason, text,
    title, stage, detail). Returns the same rows with ``pii_redacted`` appended. With every
    kind off, the column is appended null and nothing else is touched."""
    modes = cfg.resolved()
    schema = T.StructType(list(df.schema.fields) + [PII_FIELD])
    if not cfg.enabled:
        return df.withColumn(PII_COLUMN, F.lit(None).cast(PII_FIELD.dataType))
    public_only = cfg.public_ips_only

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        scrubber = get_scrubber(modes, public_only)
        for batch in batches:
            yield pii_batch(batch, scrubber)

    return df.mapInArrow(apply, schema)
