"""``report.json``, assembled in one place from the phases' summaries, with the corpus ledger's
balance checked once: every input record is in exactly one of documents / rejected / duplicates,
per input file and in total, and the shards hold exactly the documents."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from etl.report.ledger import LedgerError, add_duplicates
from filters.pangu.config import RulesConfig


@dataclass
class DedupSummary:
    """What the dedup phase tells the report."""

    duplicates_by_file: dict[str, dict[str, int]]  # source_file -> {kind: count}
    documents_written: int
    minhash: dict[str, Any]
    largest_clusters: list[dict]
    verification: dict[str, Any] | None = None
    index: dict[str, Any] | None = None
    run: dict[str, Any] | None = None  # how the stage ran: candidate edges, where components ran, seconds per phase


@dataclass
class ShardSummary:
    """What the tokenize + shards phase tells the report."""

    manifest: str
    tokenizer: str
    tokenizer_sha256: str
    vocab_size: int
    dtype: str
    num_shards: int
    documents: int
    total_tokens: int
    tokens_per_source: dict[str, int]


@dataclass
class Laps:
    """Seconds per phase, in order."""

    t0: float = field(default_factory=time.monotonic)
    seconds: dict[str, float] = field(default_factory=dict)

    def lap(self, name: str) -> None:
        self.seconds[name] = round(time.monotonic() - self.t0 - sum(self.seconds.values()), 2)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.t0


def resources(rules: RulesConfig, models: dict[str, Any]) -> dict[str, Any]:
    """The word lists (built on the driver: a bad list fails before any work) and models a run used."""
    from filters.pangu.pipeline import Cleaner

    cleaner = Cleaner(rules)
    out: dict[str, Any] = {
        "lists": {
            "sensitive": {"versions": cleaner.sensitive.versions, "sha256": cleaner.sensitive.fingerprint},
            "advertisement": {"versions": cleaner.ads.versions, "sha256": cleaner.ads.fingerprint},
        }
    }
    if models:
        out["models"] = models
    return out


def assemble(
    ledger: dict[str, Any],
    *,
    job: dict[str, Any],
    config: dict[str, Any],
    resources: dict[str, Any],
    dedup: DedupSummary | None = None,
    dropped_after_dedup: dict[str, int] | None = None,
    shards: ShardSummary | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole report; raises ``LedgerError`` when the counts do not balance.
    ``dropped_after_dedup``: source_file -> survivors of dedup that decontamination dropped."""
    from etl.decontaminate.stage import add_to_ledger

    report = dict(ledger)
    if dedup is not None:
        dropped = dropped_after_dedup or {}
        add_duplicates(report, dedup.duplicates_by_file, dedup.documents_written + sum(dropped.values()))
        add_to_ledger(report, dropped)
        report["dedup"] = {
            k: v
            for k, v in asdict(dedup).items()
            if k not in ("duplicates_by_file", "documents_written") and v is not None
        }
    if shards is not None:
        report["shards"] = asdict(shards)
    report.update(extra or {})
    for kind, n in ((report.get("pii") or {}).get("kinds") or {}).items():  # redactions are transforms
        report.setdefault("transforms", {})[f"pii_{kind}_spans_redacted"] = n["spans"]
    elapsed = job.pop("elapsed_s")
    report["job"] = {
        **job,
        "elapsed_s": round(elapsed, 2),
        "mb_per_s": round(report["input"]["bytes"] / 1e6 / elapsed, 3) if elapsed else None,
    }
    report.update(resources)
    report["config"] = config
    check_balance(report)
    if dedup is not None and report["documents"] != dedup.documents_written:
        raise LedgerError(f"the ledger has {report['documents']} documents, {dedup.documents_written} were written")
    return report


def check_balance(report: dict[str, Any]) -> None:
    inp, docs = report["input"]["records"], report["documents"]
    total = docs + report["rejected"] + report.get("duplicates", 0)
    report["balanced"] = inp == total
    if not report["balanced"]:
        raise LedgerError(
            f"ledger does not balance: {inp} records in, {docs} documents + {report['rejected']} "
            f"rejected + {report.get('duplicates', 0)} duplicates = {total}"
        )
    if "shards" in report and report["shards"]["documents"] != docs:
        raise LedgerError(f"shards hold {report['shards']['documents']} documents, the ledger {docs}")


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The ledger as a few human lines (driver log / make demo)."""
    inp = report["input"]
    lines = [
        f"input  {inp['records']:>9,} records from {inp['files']} files ({inp['bytes'] / 1e6:.1f} MB)",
        f"kept   {report['documents']:>9,} documents",
        f"dropped{report['rejected']:>9,} records",
    ]
    for stage, s in report["rejected_by_stage"].items():
        for reason, n in sorted(s["reasons"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  {stage:>6} {reason:<26}{n:>8,}")
    if report.get("duplicates"):
        lines.append(
            f"duplicates{report['duplicates']:>6,} "
            f"({', '.join(f'{k} {v:,}' for k, v in report['duplicates_by_kind'].items())})"
        )
    if inp["skipped_non_document_records"]:
        lines.append(f"not documents (WARC record types): {inp['skipped_non_document_records']}")
    if inp["file_errors"]:
        lines.append(f"file-level errors: {len(inp['file_errors'])}")
    if "shards" in report:
        sh = report["shards"]
        lines.append(
            f"shards {sh['num_shards']} pairs, {sh['total_tokens']:,} tokens (<eod> included), "
            f"per source {sh['tokens_per_source']}"
        )
    lines.append(f"balanced: {report['balanced']}  ({report['job']['elapsed_s']} s, {report['job']['mb_per_s']} MB/s)")
    return lines
