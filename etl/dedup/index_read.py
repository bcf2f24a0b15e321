"""Reading a dedup index: a night's band and exact keys looked up in the files of their buckets
only (``etl.dedup.index_files``), and full reads for the tools and tests that want every row.

Where the pyarrow work runs is a strategy, chosen by the size of what it reads
(``IndexConfig.driver_max_rows``): ``DriverEngine`` in this process, ``SparkEngine`` in Spark tasks
that each get a share of the work and its inputs (no shuffle: the keys travel with the tasks).
Compactions use the same two (``etl.dedup.index_write``). A night held in a Spark frame is
routed to the tasks by bucket instead (``IndexReader.touched``, ``exact_found``). Segments of
older layouts are answered by ``etl.dedup.index_legacy``, whichever the engine.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from functools import reduce
from typing import Callable, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import AccumulatorParam
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from etl.dedup import index_checks as ixc
from etl.dedup import index_files as ixf
from etl.dedup.index_files import EXACT, Catalog, ScanStats, Segment
from etl.dedup.index_frames import SegmentFrames, bucket_col
from etl.dedup.index_legacy import LegacyFormats
from etl.dedup.index_log import IndexConfig, IndexLog
from etl.runtime.progress import label_jobs
from filters.dedup.minhash import MinHashParams

EXACT_COLUMNS = ["exact_key", "doc_id"]


def lookup_here(cat: Catalog, parts: np.ndarray, keys: np.ndarray, columns: list[str] | None, stats: ScanStats):
    """Queries of one part looked up in this process: ``columns`` None, band keys answered with
    doc_ids (``ixf.lookup_named``); else the rows' ``columns``."""
    if columns is None:
        return ixf.lookup_named(cat, parts, keys, stats)
    return ixf.lookup(cat, parts, keys, columns, stats)


class Engine(Protocol):
    where: str  # what a lookup or compaction summary reports: driver | spark

    def lookup(
        self, cat: Catalog, parts: np.ndarray, keys: np.ndarray, columns: list[str] | None, stats: ScanStats
    ) -> pa.Table: ...

    def map(self, fn: Callable, units: list, label: str) -> list:
        """``fn(unit)`` (a list) of every unit, concatenated."""


class DriverEngine:
    """pyarrow in this process: up to ``driver_max_rows`` index rows (no job to start)."""

    where = "driver"

    def lookup(self, cat, parts, keys, columns, stats) -> pa.Table:
        return lookup_here(cat, parts, keys, columns, stats)

    def map(self, fn: Callable, units: list, label: str) -> list:
        return [out for u in units for out in fn(u)]


class SparkEngine:
    """pyarrow in Spark tasks, one share of the work each; an ``IndexFileError`` a task raises
    is raised again on the driver."""

    where = "spark"

    def __init__(self, spark: SparkSession):
        self.sc = spark.sparkContext

    def map(self, fn: Callable, units: list, label: str) -> list:
        with label_jobs(self.sc, label), ixc.refused_in_tasks():
            return self.sc.parallelize(units, len(units)).flatMap(fn).collect()

    def lookup(self, cat, parts, keys, columns, stats) -> pa.Table:
        """Each task gets a share of the (part, bucket) groups with their keys."""
        buckets = ixf.bucket_of(keys, cat.route)
        order = np.lexsort((buckets, parts))
        cut = np.flatnonzero((np.diff(parts[order]) != 0) | (np.diff(buckets[order]) != 0)) + 1
        groups = np.split(order, cut)
        n = max(1, min(len(groups), 2 * self.sc.defaultParallelism))
        shares = [(parts[rows], keys[rows]) for rows in (np.concatenate(groups[i::n]) for i in range(n))]
        cat_bc = self.sc.broadcast(cat)

        def task(share):
            st = ScanStats()
            return [(lookup_here(cat_bc.value, share[0], share[1], columns, st), st)]

        results = self.map(task, shares, "dedup: index lookup")
        for _, st in results:
            stats.add(st)
        return pa.concat_tables([t for t, _ in results])


def engine_for(spark: SparkSession, rows: int, cfg: IndexConfig) -> Engine:
    """The driver for work over up to ``cfg.driver_max_rows`` index rows, else Spark tasks."""
    return DriverEngine() if rows <= cfg.driver_max_rows else SparkEngine(spark)


class _StatsParam(AccumulatorParam):
    def zero(self, value):
        return ScanStats()

    def addInPlace(self, a, b):
        a.add(b)
        return a


class IndexReader:
    def __init__(
        self,
        spark: SparkSession,
        log: IndexLog,
        frames: SegmentFrames,
        legacy: LegacyFormats,
        params: MinHashParams,
        cfg: IndexConfig,
    ):
        self.spark, self.log, self.frames, self.legacy = spark, log, frames, legacy
        self.params, self.cfg = params, cfg
        self.root, self.access = log.root, frames.access
        self.last_lookup: dict = {}  # what the latest lookup read (ScanStats fields, seconds, where)

    def catalog(self, segments: list[Segment] | None = None) -> Catalog:
        """The files lookups and compactions read with pyarrow (every segment but legacy ones)."""
        segs = self.log.segments() if segments is None else segments
        return Catalog.of(self.root, [f for s in segs if not s.legacy for f in s.files], self.access)

    def describe(self) -> dict:
        """Segments, files, documents, and the most files any (part, bucket) lookup opens."""
        segs = self.log.segments()
        cat = self.catalog(segs)
        per_bucket = 0
        for part in {f.part for s in segs for f in s.files}:
            counts = np.zeros(1 << cat.route, np.int64)
            for (p, bits, bucket), paths in cat.files.items():
                if p == part:
                    width = 1 << (cat.route - bits)
                    counts[bucket * width : (bucket + 1) * width] += len(paths)
            per_bucket = max(per_bucket, int(counts.max()))
        return {
            "segments": len(segs),
            "files": sum(len(s.files) for s in segs),
            "documents": sum(s.docs for s in segs),
            "bucket_bits": cat.route,
            "max_files_per_bucket": per_bucket,
        }

    # --- full reads -----------------------------------------------------------------------------

    def bands(self) -> DataFrame | None:
        """(band, key, doc_id) of every live segment, as one frame (a full read and a join with
        the doc_ids: lookups use ``touched``). Each segment's parts are read with their own
        ``basePath``: Spark refuses several partitioned roots in one read."""
        frames = []
        for s in self.log.segments():
            if s.legacy:
                frames.append(self.legacy.frame(s, "bands"))
            elif any(f.part >= 0 for f in s.files):
                frames.append(self.frames.named_bands(s))
        return reduce(DataFrame.unionByName, frames) if frames else None

    def exact(self) -> DataFrame | None:
        """(exact_key, doc_id) of every live segment."""
        frames = [self.frames.exact(s) for s in self.log.segments() if any(f.part == EXACT for f in s.files)]
        return reduce(DataFrame.unionByName, frames) if frames else None

    # --- lookups of keys held on the driver -----------------------------------------------------

    def touched_arrow(self, rows: pa.Table) -> pa.Table:
        """Indexed (band, key, doc_id) rows in the buckets of ``rows`` (band, key): the night's
        candidate lookup (``ixf.lookup_named``), on the driver or in Spark tasks by index size."""
        parts = rows.column("band").to_numpy().astype(np.int32)
        return self._lookup_arrow(parts, rows.column("key").to_numpy(), None, lambda: self.spark.createDataFrame(rows))

    def exact_arrow(self, exact_keys: pa.Array | pa.ChunkedArray) -> pa.Table:
        """Indexed (exact_key, doc_id) rows whose exact key is among ``exact_keys``."""
        keys = ixf.exact_hash(exact_keys)
        return self._lookup_arrow(
            np.full(len(keys), EXACT, np.int32),
            keys,
            exact_keys,
            lambda: self.spark.createDataFrame(pa.table({"exact_key": exact_keys})),
        )

    def _lookup_arrow(
        self, parts: np.ndarray, keys: np.ndarray, exact_keys, asked: Callable[[], DataFrame]
    ) -> pa.Table:
        """One lookup of driver-held queries of one part: band keys (``exact_keys`` None), or
        exact keys, found by their first 16 hex digits and confirmed against ``exact_keys``.
        ``asked``: the queries as a frame, made only for segments of an older layout."""
        segs, stats, t0 = self.log.segments(), ScanStats(), time.perf_counter()
        columns = None if exact_keys is None else EXACT_COLUMNS
        size = sum(s.docs for s in segs if not s.legacy) * (self.params.bands if columns is None else 1)
        engine = engine_for(self.spark, size if len(keys) else 0, self.cfg)
        found = engine.lookup(self.catalog(segs), parts, keys, columns, stats)
        if exact_keys is None:
            out = found.rename_columns(["band", "key", "doc_id"])
        else:
            out = found.filter(pc.is_in(found.column("exact_key"), value_set=pa.array(exact_keys))).select(columns)
        old = [s for s in segs if s.legacy]
        if old:
            extra = self.legacy.lookup(old, asked(), exact=exact_keys is not None)
            out = pa.concat_tables([out, extra.toArrow().cast(out.schema)])
        self.last_lookup = {**asdict(stats), "seconds": round(time.perf_counter() - t0, 4), "where": engine.where}
        return out

    # --- lookups of keys in a Spark frame -------------------------------------------------------

    def touched(self, rows: DataFrame) -> DataFrame:
        """``touched_arrow`` for a night too large to collect: (band, key, doc_id), found by
        Spark tasks, each reading the index files of the buckets its share of ``rows`` falls in."""
        night = rows.select(F.col("band").cast("int").alias("part"), F.col("key")).distinct()
        return self._lookup_frame(night, None, rows)

    def exact_found(self, keys: DataFrame) -> DataFrame:
        """Indexed (exact_key, doc_id) rows whose exact key is in ``keys.exact_key``; a key's
        first 16 hex digits find it, the caller's join on exact_key confirms it."""
        night = keys.select(F.lit(EXACT).alias("part"), "exact_key").distinct()
        return self._lookup_frame(night, EXACT_COLUMNS, night)

    def _lookup_frame(self, night: DataFrame, columns: list[str] | None, asked: DataFrame) -> DataFrame:
        """Route ``night`` (part, key | exact_key) by (part, bucket) to tasks that read only the
        files of their buckets (``ixf.lookup_task``): the night's side is shuffled, the index is
        not. (band, key, doc_id) rows, or ``columns``; ``asked``: the queries as the legacy
        segments' joins take them. The tasks' ScanStats arrive in ``last_lookup`` once the
        result is computed."""
        segs = self.log.segments()
        cat = self.catalog(segs)
        sc = self.spark.sparkContext
        acc = sc.accumulator(ScanStats(), _StatsParam())
        self.last_lookup = {"where": "spark", "stats": acc}
        n = max(1, min((self.params.bands + 2) << cat.route, 2 * sc.defaultParallelism))
        schema = "part int, key bigint, " + ", ".join(f"{c} string" for c in columns or ["doc_id"])
        routed = night.withColumn("bucket", bucket_col(night.columns, cat.route)).repartition(n, "part", "bucket")
        found = routed.mapInArrow(ixf.lookup_task(sc.broadcast(cat), columns, acc), schema)
        out = found.select(F.col("part").alias("band"), "key", "doc_id") if columns is None else found.select(*columns)
        old = [s for s in segs if s.legacy]
        return out.unionByName(self.legacy.lookup(old, asked, exact=columns is not None)) if old else out

    def lookup_summary(self) -> dict:
        """``last_lookup`` with the Spark tasks' accumulated statistics read out."""
        out = dict(self.last_lookup)
        if "stats" in out:
            out.update(asdict(out.pop("stats").value))
        return out
