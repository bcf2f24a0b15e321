"""Do two corpus builds hold the same result? The ledger (per stage, reason and input file, with
the input paths taken relative to their crawl directory) and every shard file byte for byte.

    python -m bench.compare_builds OLD_OUT NEW_OUT      # exit 0 when identical, 1 with the differences

Used to show that a refactor or a speed-up changed nothing in what comes out (issues 13 and 14).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

LEDGER_KEYS = (
    "input",
    "documents",
    "rejected",
    "duplicates",
    "duplicates_by_kind",
    "rejected_by_stage",
    "transforms",
    "sensitive_categories",
    "files",
)
CRAWL_DIRS = ("warc", "wet", "jsonl", "parquet")


def _relative(path: str) -> str:
    """``file:/x/y/demo_crawl/warc/part-0.warc.gz`` -> ``warc/part-0.warc.gz``."""
    parts = path.split("/")
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] in CRAWL_DIRS:
            return "/".join(parts[i:])
    return parts[-1]


def ledger(out: Path) -> dict:
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    view = {k: report.get(k) for k in LEDGER_KEYS}
    view["files"] = {_relative(p): f for p, f in (report.get("files") or {}).items()}
    for e in view["input"].get("file_errors", []):
        e["file"] = _relative(e["file"])
    return view


def shard_hashes(out: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((out / "shards").iterdir())}


def differences(old: Path, new: Path) -> list[str]:
    diffs = []
    a, b = ledger(old), ledger(new)
    for key in LEDGER_KEYS:
        if a[key] != b[key]:
            diffs.append(
                f"ledger {key}: {json.dumps(a[key], ensure_ascii=False)[:300]} != "
                f"{json.dumps(b[key], ensure_ascii=False)[:300]}"
            )
    ha, hb = shard_hashes(old), shard_hashes(new)
    for name in sorted(set(ha) | set(hb)):
        if ha.get(name) != hb.get(name):
            diffs.append(f"shards/{name}: {ha.get(name, 'missing')[:16]} != {hb.get(name, 'missing')[:16]}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="bench.compare_builds", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    args = p.parse_args(argv)
    diffs = differences(args.old, args.new)
    for d in diffs:
        print(d)
    n = len(shard_hashes(args.old))
    print("identical: ledger and %d shard files" % n if not diffs else f"{len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
