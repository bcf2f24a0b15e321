"""The counts report.json needs from the marked rows, in one Spark query (issue 33: a build's fixed
costs): the ledger's groups (kind x file x format x stage x reason, with the transforms' sums and
the readers' file stats), the sensitive-word categories of the records kept and dropped, the kinds
of personal data redacted, and the UTF-8 bytes of text kept and rejected (what the output files
are sized by).

Each was a query of its own: five queries, about 0.2-0.3 s each on 2 cores whatever the input's
size, paid by every build and every night. Here each part is a projection of the rows to one
shape (a tag, five string keys, counts and sums, the file stats), the parts are unioned and one
``groupBy`` aggregates them: one shuffle, one result of a few hundred rows at most (a group per
input file and reason, per category, per kind). The numbers are the ones each query gave
(``tests/test_build_corpus.py``'s ledgers, ``tests/test_pii.py``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from etl.clean.pii import PII_COLUMN, PII_STAGE, PiiConfig
from etl.read import records as rec
from filters.text import pii

EDIT_COLUMNS = ("symbols_removed", "nav_lines_removed", "dup_paragraphs_removed")
_KEYS = ("k1", "k2", "k3", "k4", "k5")
_SUMS = ("v1", "v2", "v3", "v4", "v5")
LEDGER, SENSITIVE, PII_KINDS, PII_DOCUMENTS, TEXT_BYTES = "ledger", "sensitive", "pii", "pii_documents", "bytes"


@dataclass(frozen=True)
class Counts:
    """``count_rows``'s result."""

    # the ledger's: kind, source_file, format, stage, reason, n, the edits, converted, file_stats
    groups: list[dict[str, Any]]
    sensitive: dict[str, dict[str, int]]  # category -> {"documents_dropped", "documents_kept"}
    pii_kinds: list[tuple[str, bool, int, int]]  # (kind, dropped, documents, spans)
    pii_documents: dict[bool, int]  # dropped -> documents holding personal data
    text_bytes: tuple[int, int]  # UTF-8 bytes of the documents' text, of the rejected records'


def _part(rows: DataFrame, tag: str, keys: list[Column], sums: list[Column], stats: Column | None = None) -> DataFrame:
    """``rows`` in the union's shape: tag, k1..k5 (strings), n (1 a row), v1..v5 (longs), file_stats."""
    keys = keys + [F.lit(None)] * (len(_KEYS) - len(keys))
    sums = sums + [F.lit(None)] * (len(_SUMS) - len(sums))
    return rows.select(
        F.lit(tag).alias("tag"),
        *[k.cast("string").alias(name) for k, name in zip(keys, _KEYS)],
        F.lit(1).cast("long").alias("n"),
        *[v.cast("long").alias(name) for v, name in zip(sums, _SUMS)],
        (stats if stats is not None else F.lit(None)).cast("string").alias("file_stats"),
    )


def count_rows(rows: DataFrame) -> Counts:
    """Every count of ``Counts`` over the marked rows (``kind``, ``source_file``, ``format``, ``stage``,
    ``reason``, ``text``, the cleaning stage's edits, ``file_stats``; ``sensitive_hits`` and the
    personal-data column where present), in one query."""
    records = rows.where(F.col("kind") == rec.RECORD)
    kept = F.col("reason").isNull()
    parts = [
        _part(
            rows,
            LEDGER,
            [F.col(c) for c in ("kind", "source_file", "format", "stage", "reason")],
            [F.col(c) for c in EDIT_COLUMNS] + [F.col("converted").cast("int")],
            F.col("file_stats"),
        ),
        _part(records, TEXT_BYTES, [kept], [F.octet_length("text")]),
    ]
    if "sensitive_hits" in rows.columns:
        hits = records.select(F.explode("sensitive_hits").alias("category", "terms"), kept.alias("kept"))
        parts.append(_part(hits, SENSITIVE, [F.col("category"), F.col("kept")], []))
    if PII_COLUMN in rows.columns:
        found = records.where(F.col(PII_COLUMN).isNotNull())
        dropped = F.coalesce(F.col("stage") == PII_STAGE, F.lit(False))
        parts.append(_part(found, PII_DOCUMENTS, [dropped], []))
        spans = found.select(F.explode(PII_COLUMN).alias("pii_kind", "spans"), dropped.alias("dropped"))
        parts.append(_part(spans, PII_KINDS, [F.col("pii_kind"), F.col("dropped")], [F.col("spans")]))
    union = parts[0]
    for p in parts[1:]:
        union = union.unionByName(p)
    sums = [F.sum(v).alias(v) for v in ("n", *_SUMS)]
    got = union.groupBy("tag", *_KEYS).agg(*sums, F.collect_list("file_stats").alias("file_stats")).collect()
    return _assemble([r.asDict() for r in got])


def _assemble(got: list[dict[str, Any]]) -> Counts:
    groups, pii_kinds = [], []
    sensitive: dict[str, dict[str, int]] = defaultdict(dict)
    pii_documents: dict[bool, int] = {}
    text_bytes = {"true": 0, "false": 0}
    for r in got:
        tag = r["tag"]
        if tag == LEDGER:
            groups.append(
                {
                    **dict(zip(("kind", "source_file", "format", "stage", "reason"), (r[k] for k in _KEYS))),
                    "n": r["n"],
                    **dict(zip(EDIT_COLUMNS, (r[v] for v in _SUMS))),
                    "converted": r["v4"],
                    "file_stats": r["file_stats"],
                }
            )
        elif tag == TEXT_BYTES:
            text_bytes[r["k1"]] = int(r["v1"] or 0)
        elif tag == SENSITIVE:
            sensitive[r["k1"]][f"documents_{'kept' if r['k2'] == 'true' else 'dropped'}"] = r["n"]
        elif tag == PII_DOCUMENTS:
            pii_documents[r["k1"] == "true"] = r["n"]
        elif tag == PII_KINDS:
            pii_kinds.append((r["k1"], r["k2"] == "true", r["n"], int(r["v1"] or 0)))
    return Counts(
        groups,
        {k: dict(sorted(v.items())) for k, v in sorted(sensitive.items())},
        pii_kinds,
        pii_documents,
        (text_bytes["true"], text_bytes["false"]),
    )


def pii_summary(counts: Counts, cfg: PiiConfig) -> dict[str, Any]:
    """What report.json says of personal data: ``{"modes": {kind: mode}, "public_ips_only",
    "documents_redacted", "documents_dropped", "kinds": {kind: {"documents", "spans",
    "documents_dropped"}}}``. A document counts as redacted when the stage changed it and did not
    drop it (a later stage may still drop it)."""
    kinds: dict[str, dict[str, int]] = defaultdict(lambda: {"documents": 0, "spans": 0, "documents_dropped": 0})
    for kind, dropped, documents, spans in counts.pii_kinds:
        k = kinds[kind]
        if dropped:
            k["documents_dropped"] += documents
        else:
            k["documents"] += documents
            k["spans"] += spans
    return {
        "modes": cfg.resolved(),
        "public_ips_only": cfg.public_ips_only,
        "documents_redacted": counts.pii_documents.get(False, 0),
        "documents_dropped": counts.pii_documents.get(True, 0),
        "kinds": {k: dict(kinds[k]) for k in pii.KINDS if k in kinds},
    }
