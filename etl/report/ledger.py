"""The ledger of a corpus build: what happened to every input record, per stage, reason and
input file, computed with Spark aggregations over the marked rows (never by collecting data).

Invariant: input records = documents + rejected (+ duplicates, once dedup runs). The input
side is counted by the readers themselves (the ``kind="file"`` rows, one per byte range read,
which must tile each file exactly), the output side from the rows, so a stage that lost or
invented a row breaks the balance and the job fails. Files that could not be read are listed
under ``input.file_errors`` with the bytes they cover; ``run_outcome`` turns that into the exit
code and the one-line summary every job ends with.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from etl.read import records as rec
from etl.report.counts import EDIT_COLUMNS, Counts, count_rows


class LedgerError(RuntimeError):
    """The counts do not balance: a stage lost or invented records."""


def build_ledger(marked: DataFrame, inputs: list[str], counts: Counts | None = None) -> dict[str, Any]:
    """The ledger from ``counts`` (``etl.report.counts.count_rows`` of ``marked``, computed here when
    not given: the grouped aggregation, stage x reason x file, and the sensitive-word categories)
    and one more query (shared doc_ids). ``inputs`` are the files the job read: each must have its
    reader rows, and a file's ranges must tile it exactly."""
    counts = counts if counts is not None else count_rows(marked)
    files: dict[str, dict[str, Any]] = defaultdict(lambda: {"documents": 0, "rejected": 0, "reasons": Counter()})
    by_stage: dict[str, Counter[str]] = defaultdict(Counter)
    transforms: Counter[str] = Counter()
    broken = []
    for g in counts.groups:
        f = files[g["source_file"]]
        if g["kind"] == rec.FILE:
            f["reader"], problem = rec.merge_stats([json.loads(s) for s in g["file_stats"]])
            if problem:
                broken.append(f"{g['source_file']}: {problem}")
            continue
        f.setdefault("format", g["format"])
        if g["reason"] is None:
            f["documents"] += g["n"]
            transforms["documents_converted_t2s"] += g["converted"] or 0
            for c in EDIT_COLUMNS:
                transforms[c] += g[c] or 0
        else:
            f["rejected"] += g["n"]
            f["reasons"][f"{g['stage']}/{g['reason']}"] += g["n"]
            by_stage[g["stage"]][g["reason"]] += g["n"]
    if broken:
        raise LedgerError("the readers' ranges do not cover the files exactly:\n  " + "\n  ".join(broken))
    missing = [f for f in inputs if "reader" not in files.get(f, {})]
    if missing:
        raise LedgerError(f"no reader count for {len(missing)} input file(s), e.g. {missing[:3]}")
    report = _assemble(files, by_stage, transforms, counts.sensitive)
    report["input"]["duplicate_ids"] = duplicate_ids(marked)
    return report


def duplicate_ids(marked: DataFrame) -> dict[str, int]:
    """doc_ids given to more than one input record: ``ids`` shared, ``records_renamed`` (by
    ``etl.read.ids.unique_ids``, which leaves ``renamed_from``), ``records_sharing`` (still shared)."""
    records = marked.where(F.col("kind") == rec.RECORD)
    renamed = {"ids": 0, "records_renamed": 0}
    if "renamed_from" in marked.columns:
        r = (
            records.where(F.col("renamed_from").isNotNull())
            .agg(F.countDistinct("renamed_from").alias("ids"), F.count(F.lit(1)).alias("n"))
            .collect()[0]
        )
        renamed = {"ids": r.ids, "records_renamed": r.n}
    shared = (
        records.groupBy("doc_id")
        .count()
        .where(F.col("count") > 1)
        .agg(F.count(F.lit(1)).alias("ids"), F.sum("count").alias("n"))
        .collect()[0]
    )
    out = {"ids": renamed["ids"] + shared.ids, "records_renamed": renamed["records_renamed"]}
    if shared.ids:
        out["records_sharing"] = shared.n
    return out


def _assemble(files, by_stage, transforms, sensitive) -> dict[str, Any]:
    file_report, unbalanced = {}, []
    totals = Counter()
    skipped: Counter[str] = Counter()
    regions: dict[str, Counter[str]] = defaultdict(Counter)
    file_errors: list[dict[str, Any]] = []
    duplicate_inputs: dict[str, list[str]] = {}
    for path in sorted(files):
        f = files[path]
        reader = f["reader"]
        out_n = f["documents"] + f["rejected"]
        if reader["records"] != out_n:
            unbalanced.append(f"{path}: reader saw {reader['records']}, stages emitted {out_n}")
        entry = {
            "format": reader["format"],
            "records": reader["records"],
            "documents": f["documents"],
            "rejected": f["rejected"],
            "reasons": dict(sorted(f["reasons"].items())),
            "bytes": reader["bytes"],
            "ranges": reader["ranges"],
            "skipped": reader["skipped"],
            "errors": reader["errors"],
        }
        if reader["regions"]:
            entry["regions"] = reader["regions"]
        if reader.get("also_named"):  # the file was named more than once and read once
            entry["also_named"] = reader["also_named"]
            duplicate_inputs[path] = reader["also_named"]
        for reason, r in reader["regions"].items():
            regions[reason].update(r)
        skipped.update(reader["skipped"])
        file_errors += [{"file": path, **e} for e in reader["errors"]]
        file_report[path] = entry
        totals.update(
            bytes=reader["bytes"], records=reader["records"], documents=f["documents"], rejected=f["rejected"]
        )
    if unbalanced:
        raise LedgerError("ledger does not balance:\n  " + "\n  ".join(unbalanced))
    report = {
        "input": {
            "files": len(file_report),
            "records": totals["records"],
            "bytes": totals["bytes"],
            "skipped_non_document_records": dict(sorted(skipped.items())),
            "file_errors": file_errors,
            "unframed_regions": {k: dict(v) for k, v in sorted(regions.items())},
            "duplicate_inputs": duplicate_inputs,
        },
        "documents": totals["documents"],
        "rejected": totals["rejected"],
        "duplicates": 0,
        "balanced": totals["records"] == totals["documents"] + totals["rejected"],
        "rejected_by_stage": {
            stage: {"total": sum(c.values()), "reasons": dict(sorted(c.items()))}
            for stage, c in sorted(by_stage.items())
        },
        "transforms": dict(sorted(transforms.items())),
        "sensitive_categories": sensitive,
        "files": file_report,
    }
    if not report["balanced"]:
        raise LedgerError(f"ledger does not balance: {totals}")
    return report


def add_duplicates(
    report: dict[str, Any], duplicates_by_file: dict[str, dict[str, int]], documents_written: int
) -> None:
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
        raise LedgerError(
            f"ledger does not balance after dedup: {inp} in, {report['documents']} documents "
            f"({documents_written} written), {report['rejected']} rejected, {total} duplicates"
        )


EXIT_OK, EXIT_FILE_ERRORS, EXIT_NOTHING_READ = 0, 1, 4


def run_outcome(report: dict[str, Any]) -> tuple[int, str]:
    """(exit code, one-line summary) of a finished run: 0 every file read; 1 some files (or parts
    of files) could not be read; 4 no input file could be read at all (all file-level errors)."""
    inp = report["input"]
    errors = inp.get("file_errors") or []
    bad = sorted({e["file"] for e in errors})
    reasons = ", ".join(f"{r} {n}" for r, n in sorted(Counter(e["reason"] for e in errors).items()))
    if inp["files"] and inp["records"] == 0 and len(bad) == inp["files"]:
        return EXIT_NOTHING_READ, (
            f"no input file could be read: {len(bad)} files, every one a file-level error "
            f"({reasons}); see input.file_errors in report.json"
        )
    if bad:
        return EXIT_FILE_ERRORS, (
            f"done with file errors: {len(bad)} of {inp['files']} input files could not be "
            f"read in full ({reasons}); {inp['records']:,} records read from the rest"
        )
    return EXIT_OK, f"done: {inp['records']:,} records from {inp['files']} files"
