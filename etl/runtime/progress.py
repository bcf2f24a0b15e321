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


@contextmanager
def report_progress(sc: SparkContext, counters: Counters, label: str, every_s: float = 10.0):
    stop = threading.Event()
    t0 = time.monotonic()

    def loop() -> None:
        while not stop.wait(every_s):
            tracker = sc.statusTracker()
            stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            tasks = ", ".join(f"stage {s.stageId} {s.name.split(' at ')[0]}: {s.numCompletedTasks}/{s.numTasks} tasks"
                              for s in stages if s is not None) or "between stages"
            dt = time.monotonic() - t0
            recs, mb = counters.records.value, counters.bytes.value / 1e6
            ranges = f"{counters.ranges.value}/{counters.ranges_total} ranges, " if counters.ranges_total else ""
            log.info("%s | %s | %s%s records read, %.1f MB (%.0f rec/s, %.2f MB/s) | %.0fs",
                     label, tasks, ranges, f"{recs:,}", mb, recs / dt, mb / dt, dt)

    thread = threading.Thread(target=loop, name="progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1)
