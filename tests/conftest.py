import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent  # importable as the project root: pythonpath in pyproject.toml
# quality.profile's default "auto" would take make demo's profile from the checkout when there is one:
# no test may depend on whether make demo ran (filters/quality/screen.py AUTO_PROFILE_ENV; jobs the tests start
# inherit it). Tests of "auto" set it themselves.
os.environ["ZHCORPUS_AUTO_PROFILE"] = ""


@pytest.fixture(scope="session")
def spark():
    """One local[2] session for the whole run (starting Spark takes ~15 s here)."""
    from etl.runtime.spark import get_spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = get_spark("zhcorpus-tests", "local[2]", {"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test (setup, call or teardown) of a cluster gets the last lines of its daemons'
    logs in its report (tests/cluster_fixture.py: ``watched``, ``failure_logs``)."""
    outcome = yield
    report = outcome.get_result()
    fixture = sys.modules.get("tests.cluster_fixture")  # imported only by tests that start daemons
    if fixture is not None and report.failed:
        text = fixture.failure_logs()
        if text:
            report.sections.append(("daemon logs (last lines)", text))
