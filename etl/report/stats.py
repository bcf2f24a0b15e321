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
    b = F.when(F.col(column) > 0, F.floor(F.log10(F.col(column)) * BINS_PER_DECADE)).otherwise(F.lit(-1)).cast("int")
    rows = (
        df.select(F.coalesce(F.col(by), F.lit("unknown")).alias("group"), b.alias("bin"))
        .groupBy("group", "bin")
        .count()
        .collect()
    )
    out: dict[str, dict[int, int]] = {}
    for r in rows:
        out.setdefault(r.group, {})[r.bin] = r["count"]
    return {
        "bins_per_decade": BINS_PER_DECADE,
        "by_source": {g: dict(sorted(c.items())) for g, c in sorted(out.items())},
    }


def cluster_sizes(duplicates: DataFrame) -> dict[int, int]:
    """Cluster size (kept document + its duplicates) -> number of clusters of that size."""
    rows = (
        duplicates.groupBy("duplicate_of").agg((F.count(F.lit(1)) + 1).alias("size")).groupBy("size").count().collect()
    )
    return {r.size: r["count"] for r in sorted(rows, key=lambda r: r.size)}


QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)  # a box plot's whiskers, box and median


def signal_distributions(records: DataFrame, signals: list[str]) -> dict[str, Any]:
    """Each quality signal's quantiles ``QUANTILES`` for the documents kept and for those removed
    (by any stage after the signals were computed), from one grouped aggregation:
    ``{"quantiles", "kept": {"documents", signal: [...]}, "removed": {...}}``. Rows without
    signals (rejected before the quality stage, file rows) are left out."""
    screened = records.where(F.col(signals[0]).isNotNull() | F.col("quality_flags").isNotNull())
    aggs = [F.percentile_approx(s, list(QUANTILES), 1000).alias(s) for s in signals]
    rows = (
        screened.groupBy(F.col("reason").isNull().alias("kept"))
        .agg(F.count(F.lit(1)).alias("documents"), *aggs)
        .collect()
    )
    out: dict[str, Any] = {"quantiles": list(QUANTILES)}
    for r in rows:
        group = {"documents": r["documents"]}
        group.update({s: [round(float(v), 6) for v in r[s]] if r[s] else None for s in signals})
        out["kept" if r["kept"] else "removed"] = group
    return out
