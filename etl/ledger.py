"""The ledger of a corpus build: what happened to every input record, per stage, reason and
input file, computed with Spark aggregations over the marked rows (never by collecting data).

Invariant: input records = documents + rejected (+ duplicates, once dedup runs). The input
side is counted by the readers themselves (the ``kind="file"`` rows), the output side from
the rows, so a stage that lost or invented a row breaks the balance and the job fails.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from etl import records as rec

EDIT_COLUMNS = ("symbols_removed", "nav_lines_removed", "dup_paragraphs_removed")


class LedgerError(RuntimeError):
    """The counts do not balance: a stage lost or invented records."""


def build_ledger(marked: DataFrame, inputs: list[str]) -> dict[str, Any]:
    """One grouped aggregation (stage x reason x file) plus one over sensitive-word categories.
    ``inputs`` are the files the job read: each non-Parquet one must have its reader's count."""
    groups = (marked.groupBy("kind", "source_file", "format", "stage", "reason")
              .agg(F.count(F.lit(1)).alias("n"),
                   *[F.sum(c).alias(c) for c in EDIT_COLUMNS],
                   F.sum(F.col("converted").cast("int")).alias("converted"),
                   F.first("file_stats", ignorenulls=True).alias("file_stats"))
              .collect())
    files: dict[str, dict[str, Any]] = defaultdict(lambda: {"documents": 0, "rejected": 0, "reasons": Counter()})
    by_stage: dict[str, Counter[str]] = defaultdict(Counter)
    transforms: Counter[str] = Counter()
    for g in groups:
        f = files[g.source_file]
        if g.kind == rec.FILE:
            f["reader"] = json.loads(g.file_stats)
            continue
        f.setdefault("format", g.format)
        if g.reason is None:
            f["documents"] += g.n
            transforms["documents_converted_t2s"] += g.converted or 0
            for c in EDIT_COLUMNS:
                transforms[c] += g[c] or 0
        else:
            f["rejected"] += g.n
            f["reasons"][f"{g.stage}/{g.reason}"] += g.n
            by_stage[g.stage][g.reason] += g.n
    missing = [f for f in inputs if rec.detect_format(f) != rec.PARQUET_FMT and "reader" not in files.get(f, {})]
    if missing:
        raise LedgerError(f"no reader count for {len(missing)} input file(s), e.g. {missing[:3]}")
    return _assemble(files, by_stage, transforms, _sensitive_counts(marked))


def _sensitive_counts(marked: DataFrame) -> dict[str, dict[str, int]]:
    rows = (marked.where(F.col("kind") == rec.RECORD)
            .select(F.explode("sensitive_hits").alias("category", "terms"),
                    F.when(F.col("reason").isNull(), "kept").otherwise("dropped").alias("outcome"))
            .groupBy("category", "outcome").count().collect())
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for r in rows:
        out[r.category][f"documents_{r.outcome}"] = r["count"]
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


def _assemble(files, by_stage, transforms, sensitive) -> dict[str, Any]:
    file_report, unbalanced = {}, []
    totals = Counter()
    skipped: Counter[str] = Counter()
    file_errors: list[dict[str, Any]] = []
    for path in sorted(files):
        f = files[path]
        reader = f.get("reader")
        out_n = f["documents"] + f["rejected"]
        # Parquet rows are counted from the data (no per-file reader row): every row is a record.
        seen = reader["records"] if reader else out_n
        if seen != out_n:
            unbalanced.append(f"{path}: reader saw {seen}, stages emitted {out_n}")
        entry = {"format": (reader or {}).get("format", f.get("format")), "records": seen,
                 "documents": f["documents"], "rejected": f["rejected"],
                 "reasons": dict(sorted(f["reasons"].items()))}
        if reader:
            entry.update(bytes=reader["bytes"], skipped=reader["skipped"], errors=reader["errors"])
            skipped.update(reader["skipped"])
            file_errors += [{"file": path, **e} for e in reader["errors"]]
            totals["bytes"] += reader["bytes"]
        file_report[path] = entry
        totals["records"] += seen
        totals["documents"] += f["documents"]
        totals["rejected"] += f["rejected"]
    if unbalanced:
        raise LedgerError("ledger does not balance:\n  " + "\n  ".join(unbalanced))
    report = {
        "input": {"files": len(file_report), "records": totals["records"], "bytes": totals["bytes"],
                  "skipped_non_document_records": dict(sorted(skipped.items())), "file_errors": file_errors},
        "documents": totals["documents"],
        "rejected": totals["rejected"],
        "duplicates": 0,
        "balanced": totals["records"] == totals["documents"] + totals["rejected"],
        "rejected_by_stage": {stage: {"total": sum(c.values()), "reasons": dict(sorted(c.items()))}
                              for stage, c in sorted(by_stage.items())},
        "transforms": dict(sorted(transforms.items())),
        "sensitive_categories": sensitive,
        "files": file_report,
    }
    if not report["balanced"]:
        raise LedgerError(f"ledger does not balance: {totals}")
    return report


def add_duplicates(report: dict[str, Any], duplicates_by_file: dict[str, dict[str, int]], documents_written: int) -> None:
    """Move the dedup stage's duplicates out of the cleaning ledger's documents, per file and in
    total, and check input = documents + rejected + duplicates against the documents written.
    ``duplicates_by_file``: source_file -> {kind: count}."""
    by_kind: Counter[str] = Counter()
    for path, kinds in duplicates_by_file.items():
        if path not in report["files"]:
            raise LedgerError(f"duplicates from a file the ledger never saw: {path}")
        entry, n = report["files"][path], sum(kinds.values())
        entry["documents"] -= n
        entry["duplicates"] = n
        by_kind.update(kinds)
    total = sum(by_kind.values())
    report["documents"] -= total
    report["duplicates"] = total
    report["duplicates_by_kind"] = dict(sorted(by_kind.items()))
    inp = report["input"]["records"]
    report["balanced"] = inp == report["documents"] + report["rejected"] + total
    if not report["balanced"] or report["documents"] != documents_written:
        raise LedgerError(f"ledger does not balance after dedup: {inp} in, {report['documents']} documents "
                          f"({documents_written} written), {report['rejected']} rejected, {total} duplicates")
