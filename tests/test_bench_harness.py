"""The benchmarks' one harness (``bench.harness``, issue 35): what it measures is what it says."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench import harness
from tests.test_docs import ROOT, benchmarks


def test_cpu_seconds_is_the_least_of_the_repeats():
    calls = iter([0.05, 0.0, 0.05])

    def spin():
        end = time.process_time() + next(calls)
        while time.process_time() < end:
            pass

    assert harness.cpu_seconds(spin, 3) < 0.03


def test_cpu_meter_counts_the_children_too():
    """A child process's CPU is the chain's cost as much as the driver's (Spark's JVM and Python
    workers are children): a child that spins 0.6 s is in the meter, a sleeping one is not."""
    spin = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\ntime.sleep(0.3)"
    with harness.CpuMeter(interval=0.1) as busy:
        subprocess.run([sys.executable, "-c", spin], check=True)
    with harness.CpuMeter(interval=0.1) as idle:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.9)"], check=True)
    assert busy.seconds >= 0.5 and idle.seconds < 0.3, (busy.seconds, idle.seconds)


def test_spark_jobs_are_counted_by_phase(spark):
    from etl.runtime.progress import label_jobs

    sc = spark.sparkContext
    first = harness.next_job_id(spark)
    with label_jobs(sc, "bench: one"):
        spark.range(10).count()
    with label_jobs(sc, "bench: two"):
        spark.range(10).collect()
        spark.range(5).collect()
    groups = harness.spark_jobs(spark, first)
    assert [g["phase"] for g in groups] == ["bench: one", "bench: two"]
    assert harness.next_job_id(spark) - first == sum(g["jobs"] for g in groups)
    assert harness.jobs_by_phase(spark, first)["bench: two"] >= 2


def test_free_port_can_be_bound():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", harness.free_port()))


def test_write_result_has_the_one_shape(tmp_path):
    args = argparse.Namespace(mb=5, documents=Path("out/demo/corpus/documents"))
    started = time.time() - 2.0
    record = harness.write_result(tmp_path / "sub" / "r.json", "bench.bench_x", args, {"mb_per_s": 11.1}, started)
    assert json.loads((tmp_path / "sub" / "r.json").read_text(encoding="utf-8")) == record
    assert tuple(record) == harness.RESULT_KEYS
    assert record["benchmark"] == "bench.bench_x" and record["results"] == {"mb_per_s": 11.1}
    assert record["params"] == {"mb": 5, "documents": "out/demo/corpus/documents"}
    assert record["machine"]["cores"] == os.cpu_count() and len(record["machine"]["load"]) == 3
    assert abs(dt.datetime.fromisoformat(record["started"]).timestamp() - started) < 1 and record["seconds"] >= 2.0
    head = subprocess.run(["git", "-C", str(harness.ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert record["git"]["commit"] == head.stdout.strip() and len(record["git"]["commit"]) == 40
    assert harness.write_result(None, "bench.bench_x", {}, [], started)["params"] == {}  # nothing written


def test_git_state_says_when_the_tree_differs_from_its_commit(tmp_path):
    assert harness.git_state(tmp_path) is None  # not a checkout
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "f").write_text("a")
    subprocess.run([*git, "add", "f"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    clean = harness.git_state(tmp_path)
    (tmp_path / "f").write_text("b")
    assert clean["dirty"] is False and harness.git_state(tmp_path) == {"commit": clean["commit"], "dirty": True}


def test_every_benchmark_writes_its_result_through_the_harness():
    """Every benchmark and evaluation that make reaches (tests/test_docs.py walks bench/) writes
    its result file with ``harness.write_result``: one shape for every result."""
    found = benchmarks()
    assert len(found) > 20
    missing = [m for m in found.values() if "write_result(" not in (ROOT / (m.replace(".", "/") + ".py")).read_text()]
    assert not missing, f"benchmarks that write their result some other way: {missing}"
