"""The trainer's reads of shards on S3: a local cache (fetched once, verified, memory-mapped) against
byte ranges (one ranged GET per sample), through moto's S3 server on 127.0.0.1 in its own process.

    python -m bench.bench_shard_read [--mb 64] [--samples 2000] [--seq-len 2048]

One shard of random uint16 tokens (``--mb`` of ``.bin``) is published with the commit protocol
(``etl.runtime.objstore``). Measured, in this process:

- cache: ``base.committed.local_manifest`` (download + sha256 of every file, once), then
  ``--samples`` samples of ``seq_len + 1`` tokens at random positions read from the memory map;
- ranges: the same samples, each one ``read_at`` on an open pyarrow S3 file (one GET each).

Prints one JSON object: MB/s of the fetch, samples/s and ms per sample of each way, and the
number of samples after which the cache has paid for its download.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from base import committed as cm
from base.indexed_dataset import IndexedDatasetWriter
from base.s3 import S3Access, S3Config
from bench import harness
from bench.bench_remote_read import start_server
from bench.harness import free_port


def make_shard(root: Path, mb: int, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, 60_000, size=(mb << 20) // 2, dtype=np.uint16)
    with IndexedDatasetWriter(root / "shard-00000", np.uint16) as w:
        for doc in np.array_split(tokens, max(1, len(tokens) // 4096)):
            w.add_document(doc)
    return root / "shard-00000"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=int, default=64)
    p.add_argument("--samples", type=int, default=2000)
    p.add_argument("--seq-len", type=int, default=2048)
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()

    import boto3

    from etl.runtime.objstore import publish_s3

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(port)
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
    try:
        boto3.client(
            "s3", endpoint_url=url, aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1"
        ).create_bucket(Bucket="bench")
        access = S3Access.resolve(S3Config(endpoint_override=url))
        with tempfile.TemporaryDirectory() as tmp:
            shard = make_shard(Path(tmp), args.mb)
            with publish_s3("s3://bench/corpus", True, access) as out:
                for suffix in (".bin", ".idx"):
                    out.put_tree(f"shards/shard-00000{suffix}", str(shard) + suffix)
            nbytes = shard.with_suffix(".bin").stat().st_size
            fs = access.filesystem()
            commit = cm.load("s3://bench/corpus", fs)
            sample = (args.seq_len + 1) * 2
            offsets = np.random.default_rng(1).integers(0, nbytes - sample, args.samples) // 2 * 2

            t0 = time.perf_counter()
            local = cm.fetch(commit, commit.names("shards"), fs, Path(tmp) / "cache") / "shards/shard-00000.bin"
            fetch_s = time.perf_counter() - t0
            mm = np.memmap(local, np.uint16, "r")
            t0 = time.perf_counter()
            total = sum(int(mm[o // 2 : o // 2 + args.seq_len + 1][-1]) for o in offsets)
            cached_s = time.perf_counter() - t0

            f = fs.open_input_file(cm.bucket_key(commit.physical("shards/shard-00000.bin")))
            t0 = time.perf_counter()
            total2 = sum(int(np.frombuffer(f.read_at(sample, int(o)), np.uint16)[-1]) for o in offsets)
            ranged_s = time.perf_counter() - t0
            assert total == total2
    finally:
        server.kill()
    per_cached, per_ranged = cached_s / args.samples, ranged_s / args.samples
    result = {
        "shard_mb": round(nbytes / 2**20, 1),
        "sample_tokens": args.seq_len + 1,
        "fetch_mb_per_s": round(nbytes / 2**20 / fetch_s, 1),
        "fetch_s": round(fetch_s, 2),
        "cached_ms_per_sample": round(per_cached * 1e3, 4),
        "ranged_ms_per_sample": round(per_ranged * 1e3, 2),
        "ranged_over_cached": round(per_ranged / per_cached),
        "samples_to_repay_fetch": round(fetch_s / max(per_ranged - per_cached, 1e-9)),
    }
    print(json.dumps(result, indent=1))
    harness.write_result(args.result, "bench.bench_shard_read", args, result, started)
    return result


if __name__ == "__main__":
    main()
