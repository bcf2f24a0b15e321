"""What every benchmark measures with: CPU time of a call, the CPU and peak memory of the process
tree (the driver, Spark's JVM and its Python workers), Spark's jobs by phase, a free port; and the
one shape of a result file (``write_result``). Wall time is ``time.perf_counter()`` where it is
read; on these shared machines the CPU figures, medians and ratios in one run are what a result
quotes (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import socket
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
# The keys of every result file, in this order (``result_record``).
RESULT_KEYS = ("benchmark", "params", "results", "machine", "started", "seconds", "git")


def cpu_seconds(fn: Callable[[], Any], repeats: int) -> float:
    """The least CPU time of this process over ``repeats`` calls of ``fn`` (the others were
    disturbed by something else)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def free_port() -> int:
    """A TCP port free on the loopback interface now (a server started on it may still race)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- Spark's jobs ---------------------------------------------------------------------------


def next_job_id(spark) -> int:
    """The id the next Spark job will get (ids count up from 0; the status store keeps them with
    the UI off)."""
    it, last = spark.sparkContext._jsc.sc().statusStore().jobsList(None).iterator(), -1
    while it.hasNext():
        last = max(last, it.next().jobId())
    return last + 1


def spark_jobs(spark, first_job: int) -> list[dict]:
    """Spark jobs from ``first_job`` on, grouped by job description (``etl.runtime.progress.
    label_jobs``' phase): jobs, summed job seconds, in the order the phases began. AQE runs each
    shuffle stage of a query as a job of its own, so one action is often several jobs."""
    store = spark.sparkContext._jsc.sc().statusStore()
    it, groups = store.jobsList(None).iterator(), {}
    while it.hasNext():
        j = it.next()
        if j.jobId() < first_job:
            continue
        name = j.description().get() if j.description().isDefined() else "(no description)"
        g = groups.setdefault(name, {"phase": name, "jobs": 0, "seconds": 0.0, "first": j.jobId()})
        g["jobs"] += 1
        if j.submissionTime().isDefined() and j.completionTime().isDefined():
            g["seconds"] += (j.completionTime().get().getTime() - j.submissionTime().get().getTime()) / 1000
        g["first"] = min(g["first"], j.jobId())
    return [{**g, "seconds": round(g["seconds"], 2)} for g in sorted(groups.values(), key=lambda g: g["first"])]


def jobs_by_phase(spark, first_job: int) -> dict[str, int]:
    """``spark_jobs`` as {phase: jobs}, most jobs first."""
    return {g["phase"]: g["jobs"] for g in sorted(spark_jobs(spark, first_job), key=lambda g: -g["jobs"])}


# --- the process tree -----------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = defaultdict(list)
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            kids[ppid].append(int(d))
    return kids


def _descendants(pid: int) -> list[int]:
    kids, out, todo = _children(), [], [pid]
    while todo:
        p = todo.pop()
        out += kids.get(p, [])
        todo += kids.get(p, [])
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _hwm_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _processes() -> dict[str, list[int]]:
    procs = _descendants(os.getpid())
    return {
        "jvm": [p for p in procs if "java" in _cmdline(p).split(" ")[0]],
        "workers": [p for p in procs if "pyspark" in _cmdline(p) and "java" not in _cmdline(p).split(" ")[0]],
        "driver": [os.getpid()],
    }


def _cpu_by_pid() -> dict[int, float]:
    tick, out = os.sysconf("SC_CLK_TCK"), {}
    for pid in [os.getpid(), *_descendants(os.getpid())]:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = sum(int(x) for x in fields[11:13]) / tick  # utime + stime, all threads
    return out


class CpuMeter:
    """CPU seconds used by this process and every process under it (the JVM, the Python workers)
    while the ``with`` block runs: the chain's cost in core-seconds, which contention on a shared
    machine inflates far less than wall time. Sampled every ``interval`` s, so a worker that
    starts and ends between two samples is missed (Spark reuses its workers)."""

    def __init__(self, interval: float = 0.5):
        self.interval, self.seconds = interval, 0.0
        self._stop = threading.Event()

    def _sample(self, seen: dict[int, float], first: dict[int, float]) -> None:
        for pid, cpu in _cpu_by_pid().items():
            first.setdefault(pid, cpu if self._started_before.get(pid) else 0.0)
            seen[pid] = cpu

    def __enter__(self) -> "CpuMeter":
        self._started_before = {pid: True for pid in _cpu_by_pid()}
        self._seen, self._first = {}, {}
        self._sample(self._seen, self._first)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample(self._seen, self._first)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(self._seen, self._first)
        self.seconds = sum(self._seen[p] - self._first[p] for p in self._seen)


def reset_peaks() -> None:
    """Start a new peak (VmHWM) for the driver, the JVM and the Python workers."""
    for pids in _processes().values():
        for p in pids:
            try:
                Path(f"/proc/{p}/clear_refs").write_text("5")
            except OSError:
                pass


def memory_peaks() -> dict[str, float]:
    """Peak resident MB since ``reset_peaks``: Python driver, JVM (driver + local executors), the
    largest Python worker (workers are reused, so this is the peak over the runs they served)."""
    procs = _processes()
    driver = _hwm_mb(os.getpid()) or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "driver_python_mb": round(driver),
        "driver_jvm_mb": round(max(map(_hwm_mb, procs["jvm"]), default=0)),
        "python_worker_mb": round(max(map(_hwm_mb, procs["workers"]), default=0)),
        "python_workers": len(procs["workers"]),
    }


# --- the result file --------------------------------------------------------------------------


def git_state(root: Path = ROOT) -> dict[str, Any] | None:
    """The commit the benchmark ran from, and whether tracked files differed from it (a figure
    from a dirty tree names no commit exactly); None outside a git checkout."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        )
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def machine() -> dict[str, Any]:
    """Cores and load average when the result is written: the load says how shared the machine was."""
    return {"cores": os.cpu_count(), "load": [round(x, 2) for x in os.getloadavg()]}


def result_record(benchmark: str, params: Mapping | argparse.Namespace, results: Any, started: float) -> dict:
    """The one shape of a benchmark's result: ``benchmark`` (its module), ``params`` (its arguments),
    ``results`` (what it measured, its own shape), ``machine``, ``started`` (UTC, ISO 8601, from
    ``time.time()`` at its start), ``seconds`` (wall time since) and ``git`` (``git_state``)."""
    params = vars(params) if isinstance(params, argparse.Namespace) else dict(params)
    return {
        "benchmark": benchmark,
        "params": json.loads(json.dumps(params, default=str)),  # paths and the like as strings
        "results": results,
        "machine": machine(),
        "started": dt.datetime.fromtimestamp(started, dt.timezone.utc).isoformat(timespec="seconds"),
        "seconds": round(time.time() - started, 1),
        "git": git_state(),
    }


def write_result(
    path: str | Path | None, benchmark: str, params: Mapping | argparse.Namespace, results: Any, started: float
) -> dict:
    """Write ``result_record`` as JSON to ``path`` (its folder made; nothing written when None) and
    return it: every benchmark writes its result file through this."""
    record = result_record(benchmark, params, results, started)
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(record, ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8")
    return record


def add_result_arg(parser: argparse.ArgumentParser) -> None:
    """``--result FILE``: where a benchmark that prints its figures also writes its result file."""
    parser.add_argument("--result", type=Path, default=None, help="also write the result here (JSON, bench.harness)")
