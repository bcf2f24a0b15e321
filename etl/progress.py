"""Driver-side progress for long Spark jobs: one log line every few seconds with the active
stage, its tasks, and the records/bytes the readers have reported (accumulators, updated as
tasks finish; the exact counts come from the ledger, these are for humans watching)."""

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
            log.info("%s | %s | %s records read, %.1f MB (%.0f rec/s, %.2f MB/s) | %.0fs",
                     label, tasks, f"{recs:,}", mb, recs / dt, mb / dt, dt)

    thread = threading.Thread(target=loop, name="progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=1)
