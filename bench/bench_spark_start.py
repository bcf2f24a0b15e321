"""Time from ``deploy/spark-submit.sh`` to the first finished task, per shipped env archive.

Each round submits a one-task-per-executor probe (it imports the project's Spark stages and their
dependencies from the shipped env, as a real stage does) once per archive, in turn, so that a
noisy machine weighs on every archive alike; it prints the medians and each archive's ratio to the
first (the anchor), and each executor's fetch + unpack of the archive, read from the worker's logs.

    python -m bench.bench_spark_start --master spark://127.0.0.1:7077 --work-dir $RUN/spark-work \\
        --archives old/zhcorpus-env.tar.gz dist/zhcorpus-env.tar.gz [--rounds 3]

Needs a running standalone cluster (docs/clusters.md, "One host, from a fresh home") and
SPARK_AUTH_SECRET_FILE; two executors of one core each are asked for.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from bench import harness

ROOT = Path(__file__).resolve().parent.parent
PROBE = """from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("bench-spark-start").getOrCreate()
def probe(_):
    import etl.clean.stage, filters.text.segment  # the project and its dependencies, from the shipped env
    return etl.clean.stage.__file__
print(spark.sparkContext.parallelize(range(2), 2).map(probe).collect())
spark.stop()
"""
STAMP = re.compile(r"^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d) ")


def stamp(line: str) -> float:
    return datetime.strptime(STAMP.match(line)[1], "%y/%m/%d %H:%M:%S").timestamp()


def submit(master: str, archive: Path, probe: Path) -> dict:
    """One submission; seconds to the first started and finished task, and the app id."""
    argv = [
        str(ROOT / "deploy/spark-submit.sh"),
        "--master",
        master,
        "--archives",
        f"{archive}#env",
        "--conf",
        "spark.pyspark.python=./env/bin/python",
        "--conf",
        f"spark.pyspark.driver.python={sys.executable}",
        "--conf",
        "spark.executor.cores=1",
        "--conf",
        "spark.executor.memory=768m",
        str(probe),
    ]
    t0 = time.time()
    run = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    lines = run.stderr.splitlines()
    first = lambda what: next(stamp(x) for x in lines if what in x and STAMP.match(x))  # noqa: E731
    app = re.search(r"app-\d+-\d+", run.stderr)
    return {
        "rc": run.returncode,
        "started": first("Starting task") - t0,
        "finished": first("Finished task") - t0,
        "total": time.time() - t0,
        "app": app[0] if app else None,
    }


def executor_archive_seconds(work_dir: Path, app: str) -> list[float]:
    """Per executor: from fetching the archive to its first task (fetch + unpack)."""
    out = []
    for log in sorted((work_dir / app).glob("*/stderr")):
        lines = log.read_text(errors="replace").splitlines()
        fetch = next((stamp(x) for x in lines if "Fetching spark://" in x and STAMP.match(x)), None)
        task = next((stamp(x) for x in lines if "Got assigned task" in x and STAMP.match(x)), None)
        if fetch and task:
            out.append(task - fetch)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--master", required=True)
    p.add_argument("--archives", nargs="+", type=Path, required=True, help="the first is the anchor")
    p.add_argument("--work-dir", type=Path, help="the worker's --work-dir, for per-executor archive times")
    p.add_argument("--rounds", type=int, default=3)
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.py"
        probe.write_text(PROBE)
        runs: dict[Path, list[dict]] = {a: [] for a in args.archives}
        for _ in range(args.rounds):
            for archive in args.archives:
                runs[archive].append(submit(args.master, archive, probe))
    anchor = statistics.median(r["finished"] for r in runs[args.archives[0]])
    result = {}
    for archive, rs in runs.items():
        finished = statistics.median(r["finished"] for r in rs)
        per_exec = [
            s for r in rs if args.work_dir and r["app"] for s in executor_archive_seconds(args.work_dir, r["app"])
        ]
        result[str(archive)] = {
            "mib": round(archive.stat().st_size / 2**20, 1),
            "first_task_s": round(finished, 1),
            "vs_anchor": round(finished / anchor, 2),
            "executor_archive_s": round(statistics.median(per_exec), 1) if per_exec else None,
            "runs": rs,
        }
        print(
            f"{archive} ({archive.stat().st_size / 2**20:.1f} MiB): first task finished after {finished:.0f} s "
            f"(median of {len(rs)}; {finished / anchor:.2f}x the anchor), started after "
            f"{statistics.median(r['started'] for r in rs):.0f} s"
            + (
                f"; executor fetch + unpack {statistics.median(per_exec):.0f} s (median of {len(per_exec)})"
                if per_exec
                else ""
            )
            + f"; exit codes {sorted({r['rc'] for r in rs})}"
        )
    print("load:", open("/proc/loadavg").read().split()[:3])
    harness.write_result(args.result, "bench.bench_spark_start", args, result, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
