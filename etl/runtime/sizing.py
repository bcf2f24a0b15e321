"""How many tasks read the inputs, and how many files an output is written as (issue 24).

Both rules have Spark's shape and keep every core busy with about two tasks per core:

- **Reading.** ``read_capacity``: the bytes one read task takes, counting ``OPEN_COST`` per file
  or range on top of its bytes (Spark's ``spark.sql.files.openCostInBytes``): the split, raised
  until the whole input is about two tasks per core, never above ``reader.split_bytes`` (Spark's
  ``maxSplitBytes = min(maxPartitionBytes, max(openCostInBytes, bytes / cores))``). ``pack``
  cuts the small ranges, in their order, into that many tasks of about equal cost. 3,000
  one-record files are then 4 tasks on 2 cores instead of 1,000.
- **Writing.** ``output_files``: an output frame becomes ``ceil(bytes / output.target_file_bytes)``
  files, and no fewer than ``output.tasks_per_core`` × cores tasks write it (fewer when it has
  fewer partitions), so that small data is a few files and the stage that writes it still uses
  every core. ``sized`` applies it with ``coalesce`` (no shuffle: rows keep their order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pyspark.sql import DataFrame

# What a task pays per file or range beyond its bytes, counted in bytes. Measured here (2 cores,
# bench/bench_small_files.py inputs, etl.read.records.parse_range in one process): 3,000 one-record
# JSONL files took 0.7-1.8 s more than the same 1.5 MB in one file, 0.2-0.6 ms a file, while a byte
# costs ~0.5 us: a file open costs about 1 KB of reading. 64 KiB leaves room for slower disks
# (network mounts) and for the per-range reader row every later stage carries. Spark's 4 MB
# (openCostInBytes) is priced against its JVM scan, ~100x cheaper per byte than ours.
OPEN_COST = 64 << 10


@dataclass(frozen=True)
class OutputConfig:
    """The ``output`` section: the size of the Parquet files a corpus job writes (documents/,
    rejected/, duplicates/ of the dedup job)."""

    # Bytes of text per output file. 256 MiB: Hive's hive.merge.size.per.task (256 MB) and what
    # Databricks' file-size autotuning picks for tables under 2.56 TB; large enough that a TB of
    # text is a few thousand files, small enough that a reader splits the table over many cores.
    target_file_bytes: int = 256 << 20
    # Small outputs are written by this many tasks per core (fewer when the frame has fewer
    # partitions): Spark's tuning guide recommends 2-3 tasks per CPU core.
    tasks_per_core: int = 2


def read_capacity(costs: list[int], split: int, limit: int, parallelism: int) -> int:
    """Bytes one read task takes: ``split``, raised until the ranges (``costs``: bytes plus
    ``OPEN_COST`` each) fill about two tasks per core, never above ``limit`` (``split_bytes``)."""
    per_task = -(-sum(costs) // max(1, 2 * parallelism))
    return max(split, min(limit, per_task))


def pack(costs: list[int], capacity: int) -> list[list[int]]:
    """Indices of ``costs`` grouped into tasks, order kept: a cost of at least ``capacity / 2``
    is a task of its own; the others are cut into ``ceil(total / capacity)`` contiguous packs of
    about equal cost (each pack closes once it reaches its share). Deterministic."""
    alone = [i for i, c in enumerate(costs) if c >= capacity // 2]
    small = [i for i, c in enumerate(costs) if c < capacity // 2]
    total = sum(costs[i] for i in small)
    k = max(1, -(-total // max(1, capacity)))
    packs: list[list[int]] = [[] for _ in range(k)]
    done = 0
    for i in small:
        # the pack whose share of ``total`` holds this range's middle byte
        packs[min(k - 1, (2 * done + costs[i]) * k // (2 * max(1, total)))].append(i)
        done += costs[i]
    return [[i] for i in alone] + [p for p in packs if p]


def output_files(nbytes: int, parallelism: int, cfg: OutputConfig) -> int:
    """Files to write ``nbytes`` of output as: ``ceil(nbytes / target_file_bytes)``, at least
    ``tasks_per_core`` × ``parallelism`` (a frame with fewer partitions keeps its own count)."""
    return max(1, math.ceil(nbytes / max(1, cfg.target_file_bytes)), cfg.tasks_per_core * parallelism)


def sized(df: DataFrame, nbytes: int, cfg: OutputConfig) -> DataFrame:
    """``df`` in ``output_files`` partitions, by ``coalesce``: partitions are joined, never split
    (a frame with fewer is unchanged), nothing is shuffled, and rows keep their order."""
    return df.coalesce(output_files(nbytes, df.sparkSession.sparkContext.defaultParallelism, cfg))
