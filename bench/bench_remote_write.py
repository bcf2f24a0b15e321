"""Writing the corpus outputs to an S3 API against writing them to local disk (issue 34, item 5).

    python -m bench.bench_remote_write [--mb 16] [--repeat 3] [--cores 2] [--scale 1] [--no-build]
                                       [--out out/bench_remote_write]

Input: ``--mb`` MB of plain-text JSONL (People's Daily text, ``bench.bench_split_read.make_jsonl``;
cached). moto's S3 server runs on 127.0.0.1 in its own process, detached from this one so that its
CPU is not counted as the writer's (it is reported on its own). One ``local[--cores]`` Spark session
serves every run; its start-up is timed once and reported apart. A first local build (not counted)
warms the session, trains the tokenizer the later builds reuse, and is the source of the writes.

Measured, local and S3 interleaved (the order swapped each repeat), ``--repeat`` times each, after
one untimed write of each kind (the S3 one pays once per process for what every later write reuses:
boto3's service model in the driver, the AWS SDK and an S3 client in each Python worker; its CPU is
reported apart as ``first_s3_write_cpu_s``):

- ``writers``: the outputs alone. The build's ``documents``, ``rejected`` and ``duplicates`` frames
  (read once and cached in Spark) written by ``publish_output`` (``Staging.write_parquet``: Spark's
  writer through Hadoop; ``S3Staging.write_parquet``: executors through pyarrow's S3 file system,
  sha256 on the way) and its ``shards/`` (copied into the local staging; ``S3Staging.put_tree``), then
  committed (a rename; the commit object). ``--scale N`` writes N copies of those frames (each copy's
  ``doc_id`` suffixed and ``text`` rotated by its number, so no two rows are equal and the copies
  compress as the original does) and ``shards/`` with each file N times as long: the generator
  repeats its pages and dedup removes them, so ``--mb`` hardly changes the output (7 MB from 8 or
  16 MB of input), and at 7 MB a writer run is about a second of fixed costs (job planning,
  requests) more than of bytes;
- ``build`` (unless ``--no-build``): ``etl.corpus.build_corpus`` of the input to a local directory
  and to ``s3://``, everything else equal.

Per run: wall seconds and CPU seconds of this process and every process under it (the Spark JVM,
the Python workers: ``bench.harness.CpuMeter``), so MB/s per core = output MB / CPU seconds,
and the same CPU split by process (``cpu_by_kind``: driver, JVM, Python workers, from snapshots at
the start and the end, children that exited included), which says where a difference lies;
peak RSS of the Python driver, the JVM and the largest Python worker (``harness.memory_peaks``).
The ratio is S3 / local of the medians. Then the reader: the committed output read back in a fresh
process, ``--repeat`` times each: locally with pyarrow, and from the store through
``base.committed`` (Parquet files read and verified in memory; shards fetched into a cache and
verified, the trainer's path); its wall, CPU and peak RSS. Moto is Python: on loopback it, not the
network, bounds the S3 figures. Writes ``OUT/result.json`` and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from bench import harness
from bench.bench_remote_read import BUCKET, _vm
from bench.bench_split_read import make_jsonl
from bench.harness import CpuMeter, free_port

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("documents", "rejected", "duplicates")  # the Parquet outputs; shards/ beside them
SETTINGS = ["tokenizer.vocab_size=8000", "tokenizer.character_coverage=0.995", "shards.num_shards=2"]


def start_detached_server(port: int) -> int:
    """moto_server reparented away from this process (its CPU is not the writer's); returns its pid."""
    import socket

    exe = Path(sys.executable).parent / "moto_server"
    out = subprocess.run(
        ["sh", "-c", f"'{exe}' -H 127.0.0.1 -p {port} >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(out.stdout.strip())
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return pid
        except OSError:
            time.sleep(0.1)
    os.kill(pid, 9)
    raise RuntimeError("moto_server did not start")


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:13]) / os.sysconf("SC_CLK_TCK")


def cpu_by_kind() -> dict[str, float]:
    """CPU seconds so far of the driver, the JVM and the Python workers, each process's reaped
    children included (a Python worker that exits is counted in its daemon)."""
    out = {}
    for kind, pids in harness._processes().items():
        out[kind] = 0.0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            out[kind] += sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime..cstime
    return out


def tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def measured(fn: Callable[[], Any], server: int) -> dict[str, Any]:
    """``fn()`` timed: wall, CPU of this process tree, the server's CPU, peak RSS."""
    harness.reset_peaks()
    srv, kinds = cpu_of(server), cpu_by_kind()
    wall = time.perf_counter()
    with CpuMeter(interval=0.2) as cpu:
        fn()
    return {
        "wall_s": time.perf_counter() - wall,
        "cpu_s": cpu.seconds,
        "cpu_by_kind": {k: v - kinds.get(k, 0.0) for k, v in cpu_by_kind().items()},
        "server_cpu_s": cpu_of(server) - srv,
        "memory": harness.memory_peaks(),
    }


def scaled(df, n: int):
    """``n`` copies of ``df``'s rows, no two equal, in as many partitions as ``df``: copy k's
    ``doc_id`` ends ``-k`` and its ``text`` is rotated by k characters (same length and characters).
    The copies follow one another whole, so a copy of a row is never in the same Parquet page as
    its original (adjacent near-duplicates would compress far better than a corpus does)."""
    from functools import reduce

    from pyspark.sql import functions as F

    if n == 1:
        return df

    def copy(k: int):
        out = df.withColumn("doc_id", F.concat("doc_id", F.lit(f"-{k}")))
        if "text" in df.columns:
            out = out.withColumn("text", F.expr(f"concat(substring(text, {k + 1}), substring(text, 1, {k}))"))
        return out

    return reduce(lambda a, b: a.unionByName(b), [copy(k) for k in range(n)]).coalesce(df.rdd.getNumPartitions())


def scaled_tree(src: Path, dest: Path, n: int) -> Path:
    """``src`` with every file ``n`` times as long (its bytes ``n`` times over; ``src`` itself when
    ``n`` is 1): a larger corpus has larger shards, not more of them (``shards.num_shards``)."""
    if n == 1:
        return src
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for f in sorted(src.iterdir()):
        (dest / f.name).write_bytes(f.read_bytes() * n)
    return dest


def write_outputs(spark, frames: dict, shards: Path, dest: str, s3cfg) -> None:
    from etl.runtime.objstore import publish_output

    with publish_output(dest, True, spark, s3cfg) as out:
        for name, df in frames.items():
            out.write_parquet(name, df)
        if dest.startswith("s3://"):
            out.put_tree("shards", shards)
        else:
            shutil.copytree(shards, out.path("shards").removeprefix("file:"))


def summary(runs: list[dict[str, Any]], mb: float) -> dict[str, Any]:
    wall = statistics.median(r["wall_s"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    mem = {k: max(r["memory"][k] for r in runs) for k in runs[0]["memory"]}
    kinds = runs[0]["cpu_by_kind"]
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "server_cpu_s": round(statistics.median(r["server_cpu_s"] for r in runs), 2),
        "cpu_by_kind": {k: round(statistics.median(r["cpu_by_kind"][k] for r in runs), 2) for k in kinds},
        "mb_s": round(mb / wall, 2),
        "mb_s_per_core": round(mb / cpu, 2),
        "peak_rss_mb": mem,
        "walls": [round(r["wall_s"], 2) for r in runs],
    }


def compare(local: list[dict], s3: list[dict], mb: float) -> dict[str, Any]:
    row = {"output_mb": round(mb, 2), "local": summary(local, mb), "s3": summary(s3, mb)}
    row["ratio_per_core"] = round(row["s3"]["mb_s_per_core"] / row["local"]["mb_s_per_core"], 3)
    row["ratio_wall"] = round(row["s3"]["mb_s"] / row["local"]["mb_s"], 3)
    with_server = mb / (row["s3"]["cpu_s"] + row["s3"]["server_cpu_s"])
    row["ratio_per_core_with_server"] = round(with_server / row["local"]["mb_s_per_core"], 3)
    return row


def interleaved(repeat: int, local: Callable, s3: Callable) -> tuple[list, list]:
    got: dict[str, list] = {"local": [], "s3": []}
    for r in range(repeat):
        order = [("local", local), ("s3", s3)] if r % 2 == 0 else [("s3", s3), ("local", local)]
        for name, fn in order:
            got[name].append(fn())
            print(json.dumps({name: {k: v for k, v in got[name][-1].items() if k != "memory"}}), flush=True)
    return got["local"], got["s3"]


# --- the reader, in a fresh process ------------------------------------------------------------------


def read_child(uri: str, url: str, cache: str) -> dict[str, Any]:
    """Every Parquet part and shard of the committed output ``uri``; peak RSS of the reading alone."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from base import committed as cm
    from base.s3 import S3Access, S3Config

    base_rss = _vm("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    wall, cpu, rows, nbytes = time.perf_counter(), time.process_time(), 0, 0
    if uri.startswith("s3://"):
        fs = S3Access.resolve(S3Config(endpoint_override=url)).filesystem()
        commit = cm.load(uri, fs)
        for part in PARTS:
            for name in (n for n in commit.names(part) if n.endswith(".parquet")):
                data = cm.read_bytes(commit, name, fs)  # verified against the commit
                rows += pq.read_table(pa.BufferReader(data)).num_rows
                nbytes += len(data)
        local = cm.fetch(commit, commit.names("shards"), fs, Path(cache))  # the trainer's cache
        nbytes += tree_bytes(local / "shards")
    else:
        for part in PARTS:
            for f in sorted(Path(uri, part).glob("*.parquet")):
                rows += pq.read_table(f).num_rows
                nbytes += f.stat().st_size
        for f in sorted(Path(uri, "shards").iterdir()):
            nbytes += len(f.read_bytes())
    return {
        "rows": rows,
        "bytes": nbytes,
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "rss_before_mb": base_rss,
        "peak_rss_mb": _vm("VmHWM"),
    }


def measure_read(uri: str, url: str, cache: Path) -> dict[str, Any]:
    shutil.rmtree(cache, ignore_errors=True)
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_remote_write", "--read-child", uri, url, str(cache)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def read_summary(runs: list[dict]) -> dict[str, Any]:
    mb = runs[0]["bytes"] / 1e6
    wall, cpu = statistics.median(r["wall_s"] for r in runs), statistics.median(r["cpu_s"] for r in runs)
    return {
        "mb": round(mb, 2),
        "rows": runs[0]["rows"],
        "wall_s": round(wall, 3),
        "mb_s_per_core": round(mb / cpu, 1),
        "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
        "rss_before_mb": round(max(r["rss_before_mb"] for r in runs), 1),
    }


# --- main ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--read-child"]:
        print(json.dumps(read_child(*argv[1:4])))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mb", type=float, default=16, help="input JSONL, MB")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--scale", type=int, default=1, help="the writers alone write N copies of the outputs")
    p.add_argument("--no-build", dest="build", action="store_false", help="the writers alone")
    p.add_argument("--out", type=Path, default=ROOT / "out" / "bench_remote_write")
    args = p.parse_args(argv)
    started = time.time()

    import logging

    import boto3

    from base.log import setup_logging
    from base.s3 import S3Config
    from etl.corpus import BuildConfig, build_corpus
    from etl.runtime.spark import SparkConfig, session
    from jobs.config import load_config

    setup_logging(logging.WARNING)
    t_start, load_start = time.perf_counter(), os.getloadavg()
    out = args.out
    runs = out / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    src = out / f"in-{args.mb:g}.jsonl"
    make_jsonl(src, int(args.mb * 1e6))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")  # before Spark: workers inherit
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        os.environ.pop(name, None)
    server = start_detached_server(port)
    result: dict[str, Any] = {"cores": args.cores, "input_mb": round(src.stat().st_size / 1e6, 1)}
    try:
        boto3.client(
            "s3", endpoint_url=url, aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1"
        ).create_bucket(Bucket=BUCKET)
        s3cfg = S3Config(endpoint_override=url)
        t0 = time.perf_counter()
        spark = session("bench-remote-write", SparkConfig(master=f"local[{args.cores}]"))
        spark.range(1).count()
        result["spark_start_s"] = round(time.perf_counter() - t0, 1)
        settings = SETTINGS + [f"reader.s3.endpoint_override={url}"]
        warm = runs / "warm"
        t0 = time.perf_counter()
        build_corpus(load_config(BuildConfig, None, settings), [str(src)], str(warm), overwrite=True, spark=spark)
        result["warm_build_s"] = round(time.perf_counter() - t0, 1)

        frames = {name: scaled(spark.read.parquet(str(warm / name)), args.scale).cache() for name in PARTS}
        for df in frames.values():
            df.count()
        shards = scaled_tree(warm / "shards", out / "shards-scaled", args.scale)
        k, written = iter(range(1000)), []

        def writers(kind: str) -> dict:
            dest = f"s3://{BUCKET}/writers-{next(k)}" if kind == "s3" else str(runs / f"writers-{next(k)}")
            written.append(dest)
            return measured(lambda: write_outputs(spark, frames, shards, dest, s3cfg), server)

        writers("local")
        first = writers("s3")
        result["first_s3_write_cpu_s"] = round(first["cpu_s"], 2)
        local, s3 = interleaved(args.repeat, lambda: writers("local"), lambda: writers("s3"))
        last_local = Path([d for d in written if not d.startswith("s3://")][-1])
        mb = (sum(tree_bytes(last_local / n) for n in PARTS) + tree_bytes(last_local / "shards")) / 1e6
        result["writers"] = compare(local, s3, mb)
        result["writers"]["scale"] = args.scale
        print(json.dumps({"writers": result["writers"]}), flush=True)

        if args.build:
            cfg = load_config(BuildConfig, None, settings + [f"tokenizer.model={warm / 'tokenizer'}"])

            def build(kind: str) -> dict:
                dest = f"s3://{BUCKET}/build-{next(k)}" if kind == "s3" else str(runs / f"build-{next(k)}")
                return measured(lambda: build_corpus(cfg, [str(src)], dest, overwrite=True, spark=spark), server)

            local, s3 = interleaved(args.repeat, lambda: build("local"), lambda: build("s3"))
            result["build"] = compare(local, s3, mb)
            print(json.dumps({"build": result["build"]}), flush=True)
        for df in frames.values():
            df.unpersist()
        spark.stop()

        last_s3 = [d for d in written if d.startswith("s3://")][-1]
        reads: dict[str, list] = {"local": [], "s3": []}
        for r in range(args.repeat):
            reads["local"].append(measure_read(str(last_local), url, out / "cache"))
            reads["s3"].append(measure_read(last_s3, url, out / "cache"))
        assert reads["local"][0]["rows"] == reads["s3"][0]["rows"], reads
        result["reader"] = {kind: read_summary(rs) for kind, rs in reads.items()}
    finally:
        os.kill(server, 15)
    result["load_average"] = {"start": [round(x, 1) for x in load_start], "end": [round(x, 1) for x in os.getloadavg()]}
    result["bench_s"] = round(time.perf_counter() - t_start)
    harness.write_result(out / "result.json", "bench.bench_remote_write", args, result, started)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
