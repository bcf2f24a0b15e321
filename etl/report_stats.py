"""The distributions a corpus report plots, as small aggregates computed by Spark (never the
data itself on the driver): log-binned histograms per source and duplicate-cluster sizes."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

BINS_PER_DECADE = 10  # log10 bins: 1-10 chars is one decade, so 10^(k/10) .. 10^((k+1)/10)


def log_histogram(df: DataFrame, column: str, by: str = "source") -> dict[str, Any]:
    """{"bins_per_decade", "by_source": {source: {bin: count}}} where bin k holds values in
    [10^(k/B), 10^((k+1)/B)); zero and negative values go to bin -1."""
    b = (F.when(F.col(column) > 0, F.floor(F.log10(F.col(column)) * BINS_PER_DECADE)).otherwise(F.lit(-1))
         .cast("int"))
    rows = (df.select(F.coalesce(F.col(by), F.lit("unknown")).alias("group"), b.alias("bin"))
            .groupBy("group", "bin").count().collect())
    out: dict[str, dict[int, int]] = {}
    for r in rows:
        out.setdefault(r.group, {})[r.bin] = r["count"]
    return {"bins_per_decade": BINS_PER_DECADE,
            "by_source": {g: dict(sorted(c.items())) for g, c in sorted(out.items())}}


def cluster_sizes(duplicates: DataFrame) -> dict[int, int]:
    """Cluster size (kept document + its duplicates) -> number of clusters of that size."""
    rows = (duplicates.groupBy("duplicate_of").agg((F.count(F.lit(1)) + 1).alias("size"))
            .groupBy("size").count().collect())
    return {r.size: r["count"] for r in sorted(rows, key=lambda r: r.size)}
