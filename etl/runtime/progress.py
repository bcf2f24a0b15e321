"""Driver-side progress for long Spark jobs: one log line every few seconds with the active
stage, its tasks, the input ranges read so far and the records/bytes the readers have reported
(accumulators, updated as each range's task finishes; the exact counts come from the ledger,
these are for humans watching)."""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager

from pyspark import SparkContext

log = logging.getLogger("zhcorpus")


class Counters:
    """Accumulators a stage function adds to from the executors."""

    def __init__(self, sc: SparkContext):
        self.records = sc.accumulator(0)
        self.bytes = sc.accumulator(0)
        self.ranges = sc.accumulator(0)  # input byte ranges read (etl.read.readers: a file is one or more)
        self.ranges_total = 0  # set on the driver when the read is planned


# The phase the driver is in, kept on its SparkContext object for the progress thread: Spark's job
# description is a JVM thread-local, which the reporting thread cannot read, and its stage names are
# call sites ("$anonfun$withThreadLocalCaptured$1", "collect at corpus.py:88").
PHASE_ATTR = "_zhcorpus_phase"


@contextmanager
def label_jobs(sc: SparkContext, name: str):
    """The Spark jobs started inside are ``name``'s: their description in the Spark UI, and the
    phase the progress lines name. Nested labels restore the outer one on exit."""
    outer = getattr(sc, PHASE_ATTR, None)
    sc.setJobDescription(name)
    setattr(sc, PHASE_ATTR, name)
    try:
        yield
    finally:
        sc.setJobDescription(outer)
        setattr(sc, PHASE_ATTR, outer)


def progress_line(sc: SparkContext, label: str) -> str:
    """What runs now, in our words: the phase (``label_jobs``) and the active stages' tasks."""
    tracker = sc.statusTracker()
    stages = [s for s in (tracker.getStageInfo(i) for i in tracker.getActiveStageIds()) if s is not None]
    phase = getattr(sc, PHASE_ATTR, None) or label
    if not stages:
        return f"{phase}: between jobs"
    tasks = ", ".join(f"{s.numCompletedTasks}/{s.numTasks}" for s in sorted(stages, key=lambda s: s.stageId))
    return f"{phase}: {tasks} tasks"


@contextmanager
def report_progress(sc: SparkContext, counters: Counters, label: str, every_s: float = 10.0):
    """A log line every ``every_s`` seconds while the block runs: ``label``, the phase and its
    tasks, the input read so far."""
    stop = threading.Event()
    t0 = time.monotonic()

    def loop() -> None:
        while not stop.wait(every_s):
            tasks = progress_line(sc, label)
            dt = time.monotonic() - t0
            recs, mb = counters.records.value, counters.bytes.value / 1e6
            ranges = f"{counters.ranges.value}/{counters.ranges_total} ranges, " if counters.ranges_total else ""
            log.info(
                "%s | %s | %s%s records read, %.1f MB (%.0f rec/s, %.2f MB/s) | %.0fs",
                label,
                tasks,
                ranges,
                f"{recs:,}",
                mb,
                recs / dt,
                mb / dt,
                dt,
            )

    thread = threading.Thread(target=loop, name="progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1)
