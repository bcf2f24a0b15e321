import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def spark():
    """One local[2] session for the whole run (starting Spark takes ~15 s here)."""
    from etl.spark import get_spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = get_spark("zhcorpus-tests", "local[2]", {"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()
