"""Do two corpus builds hold the same result? The ledger (per stage, reason and input file, with
the input paths taken relative to their crawl directory) and every shard file byte for byte.

    python -m bench.compare_builds OLD_OUT NEW_OUT      # exit 0 when identical, 1 with the differences
    python -m bench.compare_builds --frames OLD_OUT NEW_OUT   # and documents/, rejected/, duplicates/

Used to show that a refactor or a speed-up changed nothing in what comes out (issues 13 and 14).
``--frames`` also compares the Parquet outputs row for row (sorted by ``doc_id``; every column: the
text, every signal and score): what issue 33's compiled pass is held to against the Python
reference (``ZHCORPUS_DOCPASS=0``).
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


FRAMES = ("documents", "rejected", "duplicates")


def frame_differences(old: Path, new: Path) -> list[str]:
    """The Parquet outputs, each read whole and sorted by its flat columns, compared column by
    column (floats bit for bit, NaN equal to NaN)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    diffs = []
    for name in FRAMES:
        if not (old / name).exists() and not (new / name).exists():
            continue
        a, b = (pq.read_table(out / name) for out in (old, new))
        if a.schema != b.schema or a.num_rows != b.num_rows:
            diffs.append(f"{name}: {a.num_rows} rows of {a.schema} != {b.num_rows} rows of {b.schema}")
            continue
        flat = [c for c in a.column_names if not pa.types.is_nested(a.schema.field(c).type)]
        a, b = (t.sort_by([(c, "ascending") for c in flat]) for t in (a, b))
        for col in a.column_names:
            x, y = a.column(col).combine_chunks(), b.column(col).combine_chunks()
            if x.equals(y):
                continue
            if pa.types.is_floating(x.type):
                nan = pc.and_(pc.is_nan(x).fill_null(False), pc.is_nan(y).fill_null(False))
                same = pc.or_(pc.equal(x, y).fill_null(False), nan)
                same = pc.or_(same, pc.and_(pc.is_null(x), pc.is_null(y)))
                if pc.all(same).as_py():
                    continue
            diffs.append(f"{name}.{col}: the values differ")
    return diffs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="bench.compare_builds", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--frames", action="store_true", help="also documents/, rejected/, duplicates/ row for row")
    args = p.parse_args(argv)
    diffs = differences(args.old, args.new) + (frame_differences(args.old, args.new) if args.frames else [])
    for d in diffs:
        print(d)
    n = len(shard_hashes(args.old))
    what = "ledger, %d shard files%s" % (n, ", " + ", ".join(FRAMES) if args.frames else "")
    print(f"identical: {what}" if not diffs else f"{len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
