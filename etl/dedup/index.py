"""A persistent dedup index: the band keys and exact keys of every document kept so far, so a
nightly run deduplicates new documents against the whole corpus, not only against itself.

Layout (a local or HDFS path, or ``s3://bucket/prefix``; the files themselves are read and
written with pyarrow, see ``etl.dedup.index_files`` for their format; the rest goes through
``etl.dedup.index_store``):

    INDEX/settings.json                  the MinHash settings that built it; other settings are refused
    INDEX/batches/<run>/                 a batch: one build's survivors (bands/band=B/bucket=K/,
                                         exact/bucket=K/, docs/bucket=K/)
    INDEX/compacted/<name>/              a compacted segment: several batches merged, same layout
    INDEX/commits/<seq>-<name>.json      written last, by rename: a segment exists only once committed;
                                         it lists the segment's files, their layout (and, for a
                                         compaction, the segments it replaces)
    INDEX/commits.json                   on S3, instead: every record in one object, each commit a
                                         conditional PUT of its next version (If-Match)

Batches and compacted segments are both *segments*. The live segments are the committed ones
that no committed compaction replaces. Each is cut into 2**bits buckets by key (bits from its
size and ``IndexConfig.target_file_mb``), so a night looks up each of its keys in one file per
segment, and a night's side is routed to those files by the same hash: the index is read where
it lies, never shuffled. Segments of an older layout (``etl.dedup.index_legacy``) are read by
Spark joins until the next compaction, which rewrites them first; ``settings.json``'s
``format_version`` is the newest layout the index holds, so older code refuses an index it
cannot read.

Commit protocol. An append or compaction writes its files, then its commit file (the commit
point), then removes what it replaced. Killed before the commit, it leaves an uncommitted
directory that readers ignore and the next writer removes; killed after it, readers already
ignore the replaced segments and the next writer removes them. One writer at a time: every
append, compaction and retraction holds ``INDEX/.lock`` (``etl.runtime.locks``: created exclusively,
naming its holder; a dead holder on this host is taken over; on S3 a PUT with If-None-Match),
and a second writer is refused with ``IndexLocked`` before it touches anything, since it would
remove the first one's uncommitted directory as a leftover.

The modules, one concern each (``DedupIndex`` below composes them for its callers):

    index_log      settings.json, the commit records, the live segments, the commit point, the lock
    index_read     lookups (the engine, driver or Spark tasks, a strategy chosen by size), full reads
    index_write    appends, compaction, retraction
    index_legacy   every older format, until the removal plan in docs/dedup.md drops it
    index_frames   a segment's parts as Spark frames; the bucket column
    index_files    the files themselves (pyarrow alone), ``index_checks`` their checksums,
    index_store    where the small files and the lock live (a Hadoop file system or S3)
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from etl.dedup.index_files import Catalog, Segment
from etl.dedup.index_frames import SegmentFrames, exact_prior_matches, touched_prior_rows
from etl.dedup.index_legacy import LegacyFormats
from etl.dedup.index_log import (
    FORMAT_VERSION,
    IndexConfig,
    IndexLocked,
    IndexLog,
    IndexSettingsMismatch,
    index_store,
    stored_params,
)
from etl.dedup.index_read import IndexReader
from etl.dedup.index_write import IndexCompacted, IndexWriter, plan_compaction
from filters.dedup.minhash import MinHashParams

__all__ = [
    "FORMAT_VERSION",
    "DedupIndex",
    "IndexCompacted",
    "IndexConfig",
    "IndexLocked",
    "IndexSettingsMismatch",
    "Segment",
    "exact_prior_matches",
    "index_store",
    "plan_compaction",
    "touched_prior_rows",
]


class DedupIndex:
    """One index root, its log, reader and writer (``etl.dedup.index_log``, ``index_read``,
    ``index_write``), behind the methods the jobs, stages, tools and tests call."""

    def __init__(self, spark: SparkSession, root: str, params: MinHashParams, cfg: IndexConfig | None = None, s3=None):
        """``root``: a local, HDFS or ``s3://bucket/prefix`` path; ``s3``: the store's settings
        (``base.s3.S3Config``, the job's ``reader.s3``) for an index on S3."""
        self.spark = spark
        self.store = index_store(spark, root, s3)
        self.root = self.store.root
        self.access = self.store.access  # None off S3: pyarrow reaches the files from the root
        self.params = params.resolved()
        self.cfg = cfg or IndexConfig()
        frames = SegmentFrames(spark, self.store)
        legacy = LegacyFormats(self.store, frames)
        self.log = IndexLog(self.store, self.params, legacy)
        self.reader = IndexReader(spark, self.log, frames, legacy, self.params, self.cfg)
        self.writer = IndexWriter(spark, self.log, legacy, self.params, self.cfg)

    @classmethod
    def existing(cls, spark: SparkSession, root: str, cfg: IndexConfig | None = None, s3=None) -> "DedupIndex":
        """An index that exists, opened with the MinHash settings it records (tools that do not
        compute signatures: compaction, inspection). FileNotFoundError without settings.json."""
        return cls(spark, root, stored_params(spark, root, s3), cfg, s3)

    # --- the log ---------------------------------------------------------------------------------

    def segments(self) -> list[Segment]:
        """The live segments, by sequence."""
        return self.log.segments()

    def committed(self) -> list[str]:
        """Names of the live segments (batch runs and compactions), by sequence."""
        return [s.name for s in self.log.segments()]

    # --- reading ---------------------------------------------------------------------------------

    @property
    def last_lookup(self) -> dict:
        """What the latest lookup read (ScanStats fields, seconds, where)."""
        return self.reader.last_lookup

    def catalog(self, segments: list[Segment] | None = None) -> Catalog:
        return self.reader.catalog(segments)

    def describe(self) -> dict:
        return self.reader.describe()

    def bands(self) -> DataFrame | None:
        return self.reader.bands()

    def exact(self) -> DataFrame | None:
        return self.reader.exact()

    def touched_arrow(self, rows: pa.Table) -> pa.Table:
        return self.reader.touched_arrow(rows)

    def exact_arrow(self, exact_keys: pa.Array | pa.ChunkedArray) -> pa.Table:
        return self.reader.exact_arrow(exact_keys)

    def touched(self, rows: DataFrame) -> DataFrame:
        return self.reader.touched(rows)

    def exact_found(self, keys: DataFrame) -> DataFrame:
        return self.reader.exact_found(keys)

    def lookup_summary(self) -> dict:
        return self.reader.lookup_summary()

    # --- writing (each under INDEX/.lock) -------------------------------------------------------

    def append(self, bands: DataFrame, exact: DataFrame, run: str | None = None) -> str:
        return self.writer.append(bands, exact, run)

    def append_arrow(self, bands: pa.Table, exact: pa.Table, run: str | None = None) -> str:
        return self.writer.append_arrow(bands, exact, run)

    def compact(self, full: bool = False) -> dict | None:
        return self.writer.compact(full)

    def retract(self, run: str) -> bool:
        return self.writer.retract(run)
