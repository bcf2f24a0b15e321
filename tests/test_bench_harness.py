"""The benchmarks' one harness (``bench.harness``, issue 35): what it measures is what it says."""

from __future__ import annotations

import subprocess
import sys
import time

from bench import harness


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
