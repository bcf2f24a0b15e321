"""Progress lines a user can read (issue 25): they name our phases, never Spark's call sites
(``$anonfun$withThreadLocalCaptured$1``, ``collect at corpus.py:88``)."""

from __future__ import annotations

import logging
import time

from etl.runtime.progress import PHASE_ATTR, Counters, label_jobs, report_progress


def _slow(batches):
    for b in batches:
        time.sleep(0.4)
        yield b


def test_progress_lines_name_the_phase_not_spark_internals(spark, caplog):
    sc = spark.sparkContext
    df = spark.range(0, 1000, numPartitions=4)
    with caplog.at_level(logging.INFO, logger="zhcorpus"):
        with report_progress(sc, Counters(sc), "build", every_s=0.2):
            with label_jobs(sc, "dedup: signatures"):
                df.mapInArrow(_slow, df.schema).count()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("build |")]
    assert lines
    assert any("| dedup: signatures: " in line and " tasks |" in line for line in lines), lines
    assert not any("$anonfun" in line or " at " in line.split("|")[1] for line in lines), lines


def test_labels_nest_and_restore(spark):
    sc = spark.sparkContext
    with label_jobs(sc, "dedup"):
        with label_jobs(sc, "dedup: components round 1"):
            assert getattr(sc, PHASE_ATTR) == "dedup: components round 1"
            assert sc.getLocalProperty("spark.job.description") == "dedup: components round 1"
        assert getattr(sc, PHASE_ATTR) == "dedup"
        assert sc.getLocalProperty("spark.job.description") == "dedup"
    assert getattr(sc, PHASE_ATTR) is None and sc.getLocalProperty("spark.job.description") is None
