"""The distributions a corpus report plots, as small aggregates computed by Spark (never the
data itself on the driver): log-binned histograms per source and duplicate-cluster sizes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

BINS_PER_DECADE = 10  # log10 bins: 1-10 chars is one decade, so 10^(k/10) .. 10^((k+1)/10)


def log_bin(column: str) -> Column:
    """Bin k of a positive value v: 10^(k/B) <= v < 10^((k+1)/B), B = ``BINS_PER_DECADE``; -1 for
    zero, negative and null values."""
    return F.when(F.col(column) > 0, F.floor(F.log10(F.col(column)) * BINS_PER_DECADE)).otherwise(F.lit(-1)).cast("int")


def log_bins(values: np.ndarray) -> np.ndarray:
    """``log_bin`` of integers, in numpy (int64 in, int64 out), exactly: k is the largest integer
    with 10^k <= v^B, checked in Python integers for each distinct value. Spark's double
    arithmetic gives the same k for every v < 10^10: 10^(k/B) is then an integer power of ten or
    at least 1.5e-11 (relative) away from every integer, far beyond a double's rounding."""
    values = np.asarray(values, dtype=np.int64)
    distinct, inverse = np.unique(values, return_inverse=True)
    bins = np.full(len(distinct), -1, dtype=np.int64)
    for i, v in enumerate(distinct.tolist()):
        if v > 0:
            k, power = int(math.floor(math.log10(v) * BINS_PER_DECADE)), v**BINS_PER_DECADE
            while 10**k > power:
                k -= 1
            while 10 ** (k + 1) <= power:
                k += 1
            bins[i] = k
    return bins[inverse.reshape(-1)]


def log_histogram(df: DataFrame, column: str, by: str = "source") -> dict[str, Any]:
    """{"bins_per_decade", "by_source": {source: {bin: count}}} where bin k holds values in
    [10^(k/B), 10^((k+1)/B)); zero and negative values go to bin -1."""
    rows = (
        df.select(F.coalesce(F.col(by), F.lit("unknown")).alias("group"), log_bin(column).alias("bin"))
        .groupBy("group", "bin")
        .count()
        .collect()
    )
    out: dict[str, dict[int, int]] = {}
    for r in rows:
        out.setdefault(r.group, {})[r.bin] = r["count"]
    return histogram(out)


def histogram(counts: dict[str, dict[int, int]]) -> dict[str, Any]:
    """``log_histogram``'s shape from {group: {bin: count}} counted elsewhere (groups, bins sorted)."""
    return {
        "bins_per_decade": BINS_PER_DECADE,
        "by_source": {g: dict(sorted(c.items())) for g, c in sorted(counts.items())},
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
