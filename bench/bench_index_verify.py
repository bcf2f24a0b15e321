"""What verifying the dedup index's files costs (issue 34): a night's lookup with every file it
opens checked against its commit record's sha256, against the same lookup with the files taken
as checked (the anchor: the lookup before checksums), and the append that writes the sums.

    python -m bench.bench_index_verify [--docs 1000000] [--night 10000] [--repeats 3]

The index: ``--docs`` documents of synthetic keys (random 64-bit band keys, random digests) in
one segment, the default MinHash settings (16 bands) and file size (``dedup.index``); the night:
``--night`` documents whose keys are new, looked up as a nightly run does (exact keys, then band
keys with the doc_ids they name), on the driver. Files are in the page cache for both (one
untimed round first): what is measured is hashing, not the disk. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench import harness
from etl.dedup import index_checks as ixc
from etl.dedup.index import DedupIndex
from etl.dedup.stage import DedupConfig


def _tables(rng: np.random.Generator, prefix: str, n: int, bands: int) -> tuple[pa.Table, pa.Table]:
    ids = [f"{prefix}-{i:09d}" for i in range(n)]
    band = pa.table(
        {
            "band": pa.array(np.tile(np.arange(bands, dtype=np.int32), n)),
            "key": pa.array(rng.integers(-(2**63), 2**63 - 1, n * bands, dtype=np.int64)),
            "doc_id": pa.array(np.repeat(ids, bands)),
        }
    )
    exact = pa.table({"exact_key": [hashlib.sha256(i.encode()).hexdigest() for i in ids], "doc_id": ids})
    return band, exact


def _night(index: DedupIndex, band: pa.Table, exact: pa.Table) -> float:
    t0 = time.perf_counter()
    index.exact_arrow(exact.column("exact_key"))
    index.touched_arrow(band.select(["band", "key"]))
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    from etl.runtime.spark import get_spark

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--night", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    harness.add_result_arg(ap)
    args = ap.parse_args(argv)
    started = time.time()
    spark = get_spark("bench-index-verify", "local[1]")
    params = DedupConfig().minhash.resolved()
    rng = np.random.default_rng(34)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "index"
        index = DedupIndex(spark, str(root), params)
        band, exact = _tables(rng, "old", args.docs, params.bands)
        t0 = time.perf_counter()
        index.append_arrow(band, exact, "base")
        append_s = time.perf_counter() - t0
        files = [f for s in index.segments() for f in s.files]
        total = sum(f.size for f in files)
        t0 = time.perf_counter()
        for f in files:
            hashlib.sha256((root / f.path).read_bytes()).digest()
        hash_s = time.perf_counter() - t0
        night = _tables(rng, "new", args.night, params.bands)
        checked = {(f"{root}/{f.path}", f.size, f.sha256) for f in files}
        _night(index, *night)  # warm-up: the page cache, pyarrow, numpy
        verified, trusted = [], []
        for _ in range(args.repeats):
            ixc._verified.clear()
            verified.append(_night(index, *night))
            ixc._verified.update(checked)  # the anchor: every file already checked
            trusted.append(_night(index, *night))
    out = {
        "docs": args.docs,
        "night": args.night,
        "index_files": len(files),
        "index_mb": round(total / 2**20, 1),
        "append_s": round(append_s, 2),
        "sha256_of_every_file_s": round(hash_s, 3),
        "lookup_verified_s": round(statistics.median(verified), 3),
        "lookup_trusted_s": round(statistics.median(trusted), 3),
        "verify_over_trusted": round(statistics.median(verified) / statistics.median(trusted), 2),
    }
    print(json.dumps(out, indent=2))
    harness.write_result(args.result, "bench.bench_index_verify", args, out, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
