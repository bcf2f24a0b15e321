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
it lies, never shuffled. Segments of an older layout (``etl.dedup.index_files``: a commit record
without ``layout``) are read by Spark joins until the next compaction, which rewrites them first;
``settings.json``'s ``format_version`` is the newest layout the index holds, so older code
refuses an index it cannot read.

Commit protocol. An append or compaction writes its files, then its commit file (the commit
point), then removes what it replaced. Killed before the commit, it leaves an uncommitted
directory that readers ignore and the next writer removes; killed after it, readers already
ignore the replaced segments and the next writer removes them. One writer at a time: every
append, compaction and retraction holds ``INDEX/.lock`` (``etl.runtime.locks``: created exclusively,
naming its holder; a dead holder on this host is taken over; on S3 a PUT with If-None-Match),
and a second writer is refused with ``IndexLocked`` before it touches anything, since it would
remove the first one's uncommitted directory as a leftover.
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from functools import reduce

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark import AccumulatorParam
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from base.errors import Refusal
from etl.dedup import index_checks as ixc
from etl.dedup import index_files as ixf
from etl.dedup.index_files import DOCS, EXACT, Catalog, FileOptions, IndexFile, ScanStats
from etl.dedup.index_store import HadoopIndexStore, S3IndexStore
from etl.runtime.failpoints import failpoint
from etl.runtime.locks import Lock, Locked
from etl.runtime.progress import label_jobs
from filters.minhash import MinHashParams

log = logging.getLogger("zhcorpus")
FORMAT_VERSION = ixf.LAYOUT  # settings.json's: the newest layout of any segment
# Bytes of a band row on disk (key and doc hash: two incompressible int64): turns target_file_mb
# into rows.
BAND_ROW_BYTES = 16
# The files' columns as Spark reads them (etl.dedup.index_files.SCHEMAS; band files of layouts
# 0 and 1 hold doc_ids); partition columns (band, bucket) come from the paths.
BAND_FILE = "key bigint, doc bigint"
DOCS_FILE = "key bigint, doc_id string"
EXACT_FILE = "exact_key string, doc_id string"
LEGACY_BAND_FILE = "key bigint, doc_id string"


@dataclass(frozen=True)
class IndexConfig:
    """The ``dedup.index`` section: how the index's files are cut and when they are merged."""

    # A (band, bucket) file holds about this many MB; a batch or compaction uses more buckets
    # (powers of two, at most 2**16) as the index grows. Large files keep the file count low;
    # small ones let more tasks share a night's lookup.
    target_file_mb: float = 128.0
    # A refresh compacts once the index holds more than this many segments: a night opens one
    # file per segment for each bucket it touches, so this bounds the files per band and bucket.
    compact_after: int = 4
    # Size-tiered merging: after the smallest segments that must merge, the next segment joins
    # while its documents are at most this many times those already chosen. A large segment is
    # then rewritten only when the small ones have grown to a fraction of it: each row is
    # rewritten O(log(index / night)) times, not once a night.
    tier_ratio: float = 4.0
    # Rows of a row group: a lookup reads a group's keys only if its min/max statistics admit
    # one of the night's keys.
    row_group_rows: int = 65536
    # Lookups, appends and compactions of up to this many index rows run on the driver with
    # pyarrow: a lookup reads ~100 M key rows a second there, while a Spark job costs a second
    # or more before it reads anything (bench.bench_nightly); an append holds its rows in Arrow
    # (~30 bytes a row). Larger ones run in Spark tasks, a share of the buckets each.
    driver_max_rows: int = 20_000_000


class IndexSettingsMismatch(Refusal):
    pass


class IndexLocked(Locked):
    """Another process is writing the index (an append, a compaction, a retraction)."""


class IndexCompacted(RuntimeError):
    """A batch that a compaction has merged cannot be retracted on its own."""


@dataclass(frozen=True)
class Segment:
    name: str
    sequence: int
    kind: str  # batch | compaction
    bits: int
    docs: int  # exact rows: one per indexed document
    files: tuple[IndexFile, ...]
    replaces: tuple[dict, ...] = ()  # {name, sequence} of the segments a compaction merged
    layout: int = FORMAT_VERSION  # ixf's layouts; 0: a batch written before buckets, listed from its directory

    @property
    def legacy(self) -> bool:
        """Of an older layout: read by Spark (``DedupIndex._legacy_frame``) until a compaction rewrites it."""
        return self.layout < FORMAT_VERSION


class _StatsParam(AccumulatorParam):
    def zero(self, value):
        return ScanStats()

    def addInPlace(self, a, b):
        a.add(b)
        return a


def plan_compaction(docs: list[int], limit: int, ratio: float) -> list[int]:
    """Indices of the segments (their document counts ``docs``) one compaction merges so that at
    most ``limit`` remain: the smallest that must merge, then each next-smallest segment while it
    holds at most ``ratio`` times the documents chosen so far. [] when there are ``limit`` or fewer."""
    if len(docs) <= max(limit, 1):
        return []
    order = sorted(range(len(docs)), key=lambda i: (docs[i], i))
    take = order[: max(2, len(docs) - limit + 1)]
    chosen = sum(docs[i] for i in take)
    for i in order[len(take) :]:
        if docs[i] > ratio * max(chosen, 1):
            break
        take.append(i)
        chosen += docs[i]
    return sorted(take)


def index_store(spark: SparkSession, root: str, s3=None) -> HadoopIndexStore | S3IndexStore:
    """The store of an index root: ``s3://`` on S3 (``s3``: the job's ``reader.s3`` settings),
    any other path through Hadoop's file system (``etl.dedup.index_store``)."""
    from base.s3 import S3Access, S3Config, is_s3

    if is_s3(root):
        from etl.runtime.paths import refuse_s3a

        refuse_s3a(root, "dedup index")
        return S3IndexStore(root, S3Access.resolve(s3 or S3Config()), IndexLocked)
    return HadoopIndexStore(spark, root)


class DedupIndex:
    def __init__(self, spark: SparkSession, root: str, params: MinHashParams, cfg: IndexConfig | None = None, s3=None):
        """``root``: a local, HDFS or ``s3://bucket/prefix`` path; ``s3``: the store's settings
        (``base.s3.S3Config``, the job's ``reader.s3``) for an index on S3."""
        self.spark = spark
        self.store = index_store(spark, root, s3)
        self.root = self.store.root
        self.access = self.store.access  # None off S3: pyarrow reaches the files from the root
        self.params = params.resolved()
        self.cfg = cfg or IndexConfig()
        self.last_lookup: dict = {}  # what the latest lookup read (ScanStats fields, seconds, where)
        self._records: dict[tuple, dict] = {}  # commit records by (file name, length, mtime)
        self._format = FORMAT_VERSION  # settings.json's, raised by the first commit of this layout
        self._unverified_told: set[str] = set()  # segments without checksums the log has named
        self._check_settings()

    @classmethod
    def existing(cls, spark: SparkSession, root: str, cfg: IndexConfig | None = None, s3=None) -> "DedupIndex":
        """An index that exists, opened with the MinHash settings it records (tools that do not
        compute signatures: compaction, inspection). FileNotFoundError without settings.json."""
        text = index_store(spark, root, s3).read_text("settings.json")
        if text is None:
            raise FileNotFoundError(f"{root} is not a dedup index (no settings.json)")
        settings = json.loads(text)
        settings.pop("format_version", None)
        return cls(spark, root, MinHashParams(**settings), cfg, s3)

    def _check_settings(self) -> None:
        """Refuse other MinHash settings, and an index with segments of a newer layout than this
        code reads; older layouts are read (each commit record names its own)."""
        settings = asdict(self.params)
        text = self.store.read_text("settings.json")
        if text is not None:
            stored = json.loads(text)
            self._format = stored.pop("format_version", 1)
            if self._format > FORMAT_VERSION:
                raise IndexSettingsMismatch(
                    f"dedup index {self.root} holds segments of layout {self._format}; this "
                    f"code reads layouts up to {FORMAT_VERSION}: run a newer version"
                )
            if stored != settings:
                diff = {k: (stored.get(k), v) for k, v in settings.items() if stored.get(k) != v}
                raise IndexSettingsMismatch(
                    f"dedup index {self.root} was built with other settings "
                    f"(index, this run): {diff}; use a new index or the same settings"
                )
        else:
            self.store.create_settings(json.dumps({"format_version": FORMAT_VERSION, **settings}, sort_keys=True))

    # --- segments -------------------------------------------------------------------------------

    def _commits(self) -> list[dict]:
        """Every commit file's record, by sequence. A record without ``layout`` is of layout 1
        (d1c9a89), or 0 without ``kind`` either (issue 24's batches). A commit file is written
        once, by rename: records are cached by (name, length, mtime) (on S3: by name and the
        ETag of the object that holds them, ``etl.dedup.index_store``)."""
        out = []
        for name, stamp in self.store.commit_files():
            if stamp not in self._records:
                rec = json.loads(self.store.read_commit(name))
                rec.setdefault("name", rec.get("run") or name.removesuffix(".json").split("-", 1)[1])
                rec.setdefault("layout", 1 if "kind" in rec else 0)
                rec.setdefault("kind", "batch")
                self._records[stamp] = {**rec, "_file": name}
            out.append(self._records[stamp])
        return sorted(out, key=lambda r: r["sequence"])

    def segments(self) -> list[Segment]:
        """The live segments, by sequence."""
        commits = self._commits()
        replaced = {r["sequence"] for c in commits for r in c.get("replaces", [])}
        segs = [self._segment(c) for c in commits if c["sequence"] not in replaced]
        unverified = [s.name for s in segs if not all(f.sha256 for f in s.files)]
        if unverified and set(unverified) - self._unverified_told:
            self._unverified_told.update(unverified)
            log.warning(
                "dedup index %s: %d segment(s) committed without checksums (%s): their files are read "
                "but not verified; a compaction that merges them writes checksums "
                "(python -m jobs.compact_index --index %s rewrites every segment)",
                self.root,
                len(unverified),
                ", ".join(unverified[:5]) + (", …" if len(unverified) > 5 else ""),
                self.root,
            )
        return segs

    def _segment(self, c: dict) -> Segment:
        if c["layout"] == 0:  # read by Spark (_legacy_frame) until a compaction rewrites it
            if "_files" not in c:  # a committed batch's directory does not change: listed once
                c["_files"] = tuple(self._legacy_files(c["name"]))
            docs = sum(f.rows for f in c["_files"] if f.part == EXACT)
            return Segment(c["name"], c["sequence"], "batch", 0, docs, c["_files"], layout=0)
        sums = c.get("checksums", {})  # absent: committed before checksums
        files = tuple(
            IndexFile(p, part, bucket, c["bits"], rows, *sums.get(p, (0, ""))) for p, part, bucket, rows in c["files"]
        )
        return Segment(
            c["name"], c["sequence"], c["kind"], c["bits"], c["docs"], files, tuple(c.get("replaces", [])), c["layout"]
        )

    def _legacy_files(self, run: str) -> list[IndexFile]:
        """A batch of layout 0: Spark's partitionBy("band") files of (key, doc_id), unsorted,
        listed from its directory; rows from the files' footers."""
        out = []
        fs, root = ixf.filesystem(self.root)
        for part in ("bands", "exact"):
            for rel in self.store.parquet_files(f"batches/{run}/{part}"):
                band = [s for s in rel.split("/") if s.startswith("band=")]
                with ixc.reading(f"{root}/{rel}"):
                    rows = pq.ParquetFile(fs.open_input_file(f"{root}/{rel}")).metadata.num_rows
                out.append(IndexFile(rel, int(band[0][5:]) if band else EXACT, 0, 0, rows))
        return out

    def committed(self) -> list[str]:
        """Names of the live segments (batch runs and compactions), by sequence."""
        return [s.name for s in self.segments()]

    def catalog(self, segments: list[Segment] | None = None) -> Catalog:
        """The files lookups and compactions read with pyarrow (every segment but legacy ones)."""
        segs = self.segments() if segments is None else segments
        return Catalog.of(self.root, [f for s in segs if not s.legacy for f in s.files], self.access)

    def describe(self) -> dict:
        """Segments, files, documents, and the most files any (part, bucket) lookup opens."""
        segs = self.segments()
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

    # --- reading as tables ----------------------------------------------------------------------

    def bands(self) -> DataFrame | None:
        """(band, key, doc_id) of every live segment, as one frame (a full read and a join with
        the doc_ids: lookups use ``touched``). Each segment's parts are read with their own
        ``basePath``: Spark refuses several partitioned roots in one read."""
        frames = []
        for s in self.segments():
            if s.legacy:
                frames.append(self._legacy_frame(s, "bands"))
            elif any(f.part >= 0 for f in s.files):
                docs = self._frame(s, "docs", DOCS_FILE).select(F.col("key").alias("doc"), "doc_id")
                rows = self._frame(s, "bands", BAND_FILE).select("band", "key", "doc")
                frames.append(rows.join(docs, "doc").select("band", "key", "doc_id"))
        return reduce(DataFrame.unionByName, frames) if frames else None

    def exact(self) -> DataFrame | None:
        """(exact_key, doc_id) of every live segment."""
        frames = [
            self._legacy_frame(s, "exact")
            if s.legacy
            else self._frame(s, "exact", EXACT_FILE).select("exact_key", "doc_id")
            for s in self.segments()
            if any(f.part == EXACT for f in s.files)
        ]
        return reduce(DataFrame.unionByName, frames) if frames else None

    def _frame(self, s: Segment, part: str, schema: str) -> DataFrame:
        """A part (bands, exact, docs) of a segment read by Spark, with the partition columns
        (band, bucket) of its paths: the files its commit lists (a task killed while writing one
        leaves a temporary file beside it that a read of the directory would take for Parquet),
        the directory for layout 0, whose commit lists none."""
        base = self.store.uri(f"{self._dir(s)}/{part}")
        if s.layout == 0:
            return self.spark.read.schema(schema).option("basePath", base).parquet(base)
        want = {"exact": EXACT, "docs": DOCS}.get(part)
        paths = [self.store.uri(f.path) for f in s.files if (f.part == want if want is not None else f.part >= 0)]
        if not paths:
            return self.spark.createDataFrame([], schema + (", band int" if part == "bands" else ""))
        self._verify_in_tasks([f for f in s.files if f.sha256 and self.store.uri(f.path) in paths])
        if self.access is not None:
            return self._store_frame([f for f in s.files if self.store.uri(f.path) in paths], part, schema)
        return self.spark.read.schema(schema).option("basePath", base).parquet(*paths)

    def _store_frame(self, files: list[IndexFile], part: str, schema: str) -> DataFrame:
        """``_frame`` on S3: the committed files read by the executors through pyarrow
        (``etl.runtime.s3frames``), each band's with its ``band`` column (Spark would take it from
        the paths)."""
        from etl.runtime.s3frames import read_frame

        if part != "bands":
            return read_frame(self.spark, [self.store.uri(f.path) for f in files], self.access).select(
                *[c.split()[0] for c in schema.split(", ")]
            )
        frames = [
            read_frame(self.spark, [self.store.uri(f.path) for f in files if f.part == b], self.access)
            .select("key", "doc")
            .withColumn("band", F.lit(b))
            for b in sorted({f.part for f in files})
        ]
        return reduce(DataFrame.unionByName, frames)

    def _verify_in_tasks(self, files: list[IndexFile]) -> None:
        """Check ``files`` against their commit record before Spark reads them whole (a Spark
        read of a damaged file is a Java trace, or no error at all): a task a few files."""
        if not files:
            return
        root, access = self.root, self.access

        def check(f: IndexFile) -> None:
            fs, base = ixf.filesystem(root, access)
            ixc.verify(fs, f"{base}/{f.path}", f.size, f.sha256)

        sc = self.spark.sparkContext
        with label_jobs(sc, "dedup index: verify files"), _refused_in_tasks():
            sc.parallelize(files, min(len(files), 2 * sc.defaultParallelism)).foreach(check)

    def _legacy_frame(self, s: Segment, part: str) -> DataFrame:
        """(band, key, doc_id) or (exact_key, doc_id) of a segment of layout 0 or 1: both store
        doc_ids in their band files."""
        if part == "bands":
            return self._frame(s, "bands", LEGACY_BAND_FILE).select("band", "key", "doc_id")
        return self._frame(s, "exact", EXACT_FILE).select("exact_key", "doc_id")

    @staticmethod
    def _dir(s: Segment) -> str:
        return f"compacted/{s.name}" if s.kind == "compaction" else f"batches/{s.name}"

    # --- lookups --------------------------------------------------------------------------------

    def touched_arrow(self, rows: pa.Table) -> pa.Table:
        """Indexed (band, key, doc_id) rows in the buckets of ``rows`` (band, key): the night's
        candidate lookup (``ixf.lookup_named``), on the driver or in Spark tasks by index size."""
        segs, stats, t0 = self.segments(), ScanStats(), time.perf_counter()
        parts = rows.column("band").to_numpy().astype(np.int32)
        out, where = self._lookup_arrow(segs, parts, rows.column("key").to_numpy(), None, stats)
        out = out.rename_columns(["band", "key", "doc_id"])
        if any(s.legacy for s in segs):
            out = pa.concat_tables(
                [out, self._legacy_touched(segs, self.spark.createDataFrame(rows)).toArrow().cast(out.schema)]
            )
        self.last_lookup = {**asdict(stats), "seconds": round(time.perf_counter() - t0, 4), "where": where}
        return out

    def exact_arrow(self, exact_keys: pa.Array | pa.ChunkedArray) -> pa.Table:
        """Indexed (exact_key, doc_id) rows whose exact key is among ``exact_keys``."""
        segs, stats, t0 = self.segments(), ScanStats(), time.perf_counter()
        keys = ixf.exact_hash(exact_keys)
        found, where = self._lookup_arrow(
            segs, np.full(len(keys), EXACT, np.int32), keys, ["exact_key", "doc_id"], stats
        )
        out = found.filter(pc.is_in(found.column("exact_key"), value_set=pa.array(exact_keys))).select(
            ["exact_key", "doc_id"]
        )
        legacy = [s for s in segs if s.legacy]
        if legacy:
            asked = self.spark.createDataFrame(pa.table({"exact_key": exact_keys}))
            extra = reduce(DataFrame.unionByName, [self._legacy_frame(s, "exact") for s in legacy])
            out = pa.concat_tables([out, extra.join(asked, "exact_key", "left_semi").toArrow().cast(out.schema)])
        self.last_lookup = {**asdict(stats), "seconds": round(time.perf_counter() - t0, 4), "where": where}
        return out

    def _lookup_arrow(
        self, segs: list[Segment], parts: np.ndarray, keys: np.ndarray, columns: list[str] | None, stats: ScanStats
    ) -> tuple[pa.Table, str]:
        """Driver-held queries of one part (``columns`` None: bands, answered with doc_ids) looked
        up on the driver, or, above ``driver_max_rows`` rows of that part, in Spark tasks that each
        get a share of the (part, bucket) groups with their keys: no shuffle, the keys travel
        with the tasks."""
        cat = self.catalog(segs)
        size = sum(s.docs for s in segs if not s.legacy) * (self.params.bands if columns is None else 1)
        if size <= self.cfg.driver_max_rows or not len(keys):
            return self._lookup_here(cat, parts, keys, columns, stats), "driver"
        buckets = ixf.bucket_of(keys, cat.route)
        order = np.lexsort((buckets, parts))
        cut = np.flatnonzero((np.diff(parts[order]) != 0) | (np.diff(buckets[order]) != 0)) + 1
        groups = np.split(order, cut)
        sc = self.spark.sparkContext
        n = max(1, min(len(groups), 2 * sc.defaultParallelism))
        shares = [(parts[rows], keys[rows]) for rows in (np.concatenate(groups[i::n]) for i in range(n))]
        cat_bc = sc.broadcast(cat)
        lookup_here = self._lookup_here

        def task(share):
            st = ScanStats()
            return [(lookup_here(cat_bc.value, share[0], share[1], columns, st), st)]

        with label_jobs(sc, "dedup: index lookup"), _refused_in_tasks():
            results = sc.parallelize(shares, n).flatMap(task).collect()
        for _, st in results:
            stats.add(st)
        return pa.concat_tables([t for t, _ in results]), "spark"

    @staticmethod
    def _lookup_here(
        cat: Catalog, parts: np.ndarray, keys: np.ndarray, columns: list[str] | None, stats: ScanStats
    ) -> pa.Table:
        if columns is None:
            return ixf.lookup_named(cat, parts, keys, stats)
        return ixf.lookup(cat, parts, keys, columns, stats)

    def touched(self, rows: DataFrame) -> DataFrame:
        """``touched_arrow`` for a night too large to collect: (band, key, doc_id), found by
        Spark tasks, each reading the index files of the buckets its share of ``rows`` falls in."""
        segs = self.segments()
        night = rows.select(F.col("band").cast("int").alias("part"), F.col("key")).distinct()
        found = self._lookup_spark(segs, night, None, self._new_lookup_stats())
        out = found.select(F.col("part").alias("band"), "key", "doc_id")
        return out.unionByName(self._legacy_touched(segs, rows)) if any(s.legacy for s in segs) else out

    def exact_found(self, keys: DataFrame) -> DataFrame:
        """Indexed (exact_key, doc_id) rows whose exact key is in ``keys.exact_key``; a key's
        first 16 hex digits find it, the caller's join on exact_key confirms it."""
        segs = self.segments()
        night = keys.select(F.lit(EXACT).alias("part"), "exact_key").distinct()
        out = self._lookup_spark(segs, night, ["exact_key", "doc_id"], self._new_lookup_stats()).select(
            "exact_key", "doc_id"
        )
        for s in segs:
            if s.legacy:
                out = out.unionByName(
                    self._legacy_frame(s, "exact").join(night.select("exact_key"), "exact_key", "left_semi")
                )
        return out

    def _new_lookup_stats(self):
        sc = self.spark.sparkContext
        acc = sc.accumulator(ScanStats(), _StatsParam())
        self.last_lookup = {"where": "spark", "stats": acc}
        return acc

    def _lookup_spark(self, segs: list[Segment], night: DataFrame, columns: list[str] | None, acc) -> DataFrame:
        """Route ``night`` (part, key | exact_key) by (part, bucket) to tasks that read only the
        files of their buckets (``ixf.lookup``): the night's side is shuffled, the index is not.
        The tasks' ScanStats arrive in ``acc`` once the result is computed."""
        cat = self.catalog(segs)
        route = cat.route
        sc = self.spark.sparkContext
        n = max(1, min((self.params.bands + 2) << route, 2 * sc.defaultParallelism))
        schema = "part int, key bigint, " + ", ".join(f"{c} string" for c in columns or ["doc_id"])
        routed = night.withColumn("bucket", _bucket_col(night.columns, route)).repartition(n, "part", "bucket")
        return routed.mapInArrow(ixf.lookup_task(sc.broadcast(cat), columns, acc), schema)

    def _legacy_touched(self, segs: list[Segment], rows: DataFrame) -> DataFrame:
        """Band rows of legacy segments in the night's buckets: a join over their full read."""
        legacy = reduce(DataFrame.unionByName, [self._legacy_frame(s, "bands") for s in segs if s.legacy])
        return touched_prior_rows(legacy, rows.select("band", "key"))

    def lookup_summary(self) -> dict:
        """``last_lookup`` with the Spark tasks' accumulated statistics read out."""
        out = dict(self.last_lookup)
        if "stats" in out:
            out.update(asdict(out.pop("stats").value))
        return out

    # --- writing --------------------------------------------------------------------------------

    def _rows_per_file(self) -> int:
        return max(1, int(self.cfg.target_file_mb * 2**20) // BAND_ROW_BYTES)

    def _bits(self, docs: int) -> int:
        """Bucket bits for a segment of ``docs`` documents: files of about target_file_mb."""
        return min(ixf.MAX_BITS, max(0, math.ceil(math.log2(max(docs, 1) / self._rows_per_file()))))

    def _opts(self) -> FileOptions:
        return FileOptions(max_rows=2 * self._rows_per_file(), row_group_rows=self.cfg.row_group_rows)

    def append(self, bands: DataFrame, exact: DataFrame, run: str | None = None) -> str:
        """Write a batch (band, key, doc_id) + (exact_key, doc_id), then commit it. ``run``: a
        deterministic batch name (e.g. the corpus version), so that ``retract`` can undo it."""
        with self._writer():
            run = self._new_name(run)
            docs, bits, files = self._write(f"batches/{run}", bands, exact)
            failpoint("index:batch_written")
            self._commit(run, "batch", bits, docs, files)
        return run

    def append_arrow(self, bands: pa.Table, exact: pa.Table, run: str | None = None) -> str:
        """``append`` from Arrow tables on the driver (tools and benchmarks that build rows in numpy)."""
        with self._writer():
            run = self._new_name(run)
            bits = self._bits(len(exact))
            files = ixf.write_units(
                self.root, f"batches/{run}", ixf.segment_tables(bands, exact), bits, self._opts(), self.access
            )
            failpoint("index:batch_written")
            self._commit(run, "batch", bits, len(exact), files)
        return run

    def _writer(self) -> AbstractContextManager[Lock]:
        """``INDEX/.lock`` for one write: held by appends, compactions and retractions (created
        exclusively: O_EXCL on a disk, a create without overwrite on HDFS, If-None-Match on S3)."""
        return self.store.lock(IndexLocked)

    def _new_name(self, run: str | None) -> str:
        live = {c["name"] for c in self._commits()}
        if run is not None and run in live:
            raise ValueError(f"dedup index {self.root} already holds a batch named {run}")
        self._clean_leftovers()
        return run or uuid.uuid4().hex[:12]

    def _write(self, segment: str, bands: DataFrame, exact: DataFrame) -> tuple[int, int, list[IndexFile]]:
        """(documents, bucket bits, files) of a segment written from frames: on the driver when
        small (one job collects it), else by Spark tasks, one (part, bucket) at a time."""
        local_docs = min(self.cfg.driver_max_rows // self.params.bands, 2**31 - 2)  # limit() takes an int
        head = exact.select("exact_key", "doc_id").limit(local_docs + 1).toArrow()  # one job, not a count and a collect
        if len(head) <= local_docs:
            bits = self._bits(len(head))
            tables = ixf.segment_tables(bands.select("band", "key", "doc_id").toArrow(), head)
            return len(head), bits, ixf.write_units(self.root, segment, tables, bits, self._opts(), self.access)
        docs = exact.count()
        bits = self._bits(docs)
        doc_hex = F.md5(F.col("doc_id"))  # etl.dedup.index_files.doc_hash's hex digits
        parts = [
            bands.select(F.col("band").alias("part"), "key", doc_hex.alias("doc_hex")),
            exact.select(F.lit(EXACT).alias("part"), "exact_key", "doc_id"),
            exact.select(F.lit(DOCS).alias("part"), doc_hex.alias("doc_hex"), "doc_id"),
        ]
        return docs, bits, [f for rows in parts for f in self._write_spark(segment, rows, bits)]

    def _write_spark(self, segment: str, rows: DataFrame, bits: int) -> list[IndexFile]:
        """Rows (part, key | exact_key | doc_hex, ...) written by Spark tasks: partitioned and
        sorted by (part, bucket) first, so each task writes one bucket at a time."""
        n = max(1, min((self.params.bands + 2) << bits, 4 * self.spark.sparkContext.defaultParallelism))
        sorted_rows = (
            rows.withColumn("bucket", _bucket_col(rows.columns, bits).cast("int"))
            .repartition(n, "part", "bucket")
            .sortWithinPartitions("part", "bucket")
        )
        task = ixf.write_task(self.root, segment, bits, self._opts(), self.access)
        out = sorted_rows.mapInArrow(task, ixf.WRITTEN_DDL).collect()
        return [IndexFile(**r.asDict()) for r in out]

    def _commit(
        self, name: str, kind: str, bits: int, docs: int, files: list[IndexFile], replaces: list[Segment] = ()
    ) -> None:
        seq = self._next_sequence()
        record = {
            "name": name,
            "run": name,
            "sequence": seq,
            "kind": kind,
            "layout": FORMAT_VERSION,
            "bits": bits,
            "docs": docs,
            "files": [[f.path, f.part, f.bucket, f.rows] for f in files],
            "checksums": {f.path: [f.size, f.sha256] for f in files},  # verified before each read
            "replaces": [{"name": s.name, "sequence": s.sequence} for s in replaces],
        }
        if self._format < FORMAT_VERSION:  # before the first segment of this layout: older code now refuses the index
            self.store.write_text(
                "settings.json", json.dumps({"format_version": FORMAT_VERSION, **asdict(self.params)}, sort_keys=True)
            )
            self._format = FORMAT_VERSION
        self.store.add_commit(f"{seq:08d}-{name}.json", json.dumps(record))  # the commit point

    def _next_sequence(self) -> int:
        return max((c["sequence"] for c in self._commits()), default=-1) + 1

    # --- compaction -----------------------------------------------------------------------------

    def compact(self, full: bool = False) -> dict | None:
        """Merge segments into one (all of them with ``full``, else ``plan_compaction``'s choice),
        bucketed for its size and sorted by key; commit it; remove the merged segments. Legacy
        segments are rewritten first, whatever the rule. Returns a summary, or None when nothing
        needs merging. A killed compaction is undone or finished by the next writer. Raises
        ``IndexLocked`` while another process writes the index."""
        with self._writer():
            return self._compact(full)

    def _compact(self, full: bool) -> dict | None:
        t0 = time.perf_counter()
        self._clean_leftovers()
        live = self.segments()
        legacy = [s for s in live if s.legacy]
        if legacy:
            return self._rewrite_legacy(legacy, t0)
        if full:
            chosen = live if len(live) > 1 else []
        else:
            chosen = [
                live[i] for i in plan_compaction([s.docs for s in live], self.cfg.compact_after, self.cfg.tier_ratio)
            ]
        if not chosen:
            return None
        name, docs = f"compacted-{self._next_sequence():08d}", sum(s.docs for s in chosen)
        bits = self._bits(docs)
        units = ixf.merge_units([f for s in chosen for f in s.files], bits)
        where = "driver" if docs * (self.params.bands + 2) <= self.cfg.driver_max_rows else "spark"
        checks = {f.path: (f.size, f.sha256) for s in chosen for f in s.files if f.sha256}
        with self._undone_on_error(name):
            files = self._merge(units, f"compacted/{name}", bits, where, checks)
        return self._commit_compaction(name, bits, docs, files, chosen, where, t0)

    @contextmanager
    def _undone_on_error(self, name: str):
        """A compaction that fails before its commit (a damaged input file) removes what it
        wrote: the index is left as it was, not for the next writer to tidy."""
        try:
            yield
        except Exception:
            self.store.delete_dir(f"compacted/{name}")
            raise

    def _rewrite_legacy(self, legacy: list[Segment], t0: float) -> dict:
        """Legacy segments (read by Spark) rewritten as one segment of this layout."""
        name = f"compacted-{self._next_sequence():08d}"
        bands = reduce(DataFrame.unionByName, [self._legacy_frame(s, "bands") for s in legacy])
        exact = reduce(DataFrame.unionByName, [self._legacy_frame(s, "exact") for s in legacy])
        with self._undone_on_error(name):
            docs, bits, files = self._write(f"compacted/{name}", bands, exact)
        return self._commit_compaction(name, bits, docs, files, legacy, "legacy rewrite", t0)

    def _commit_compaction(
        self, name: str, bits: int, docs: int, files: list[IndexFile], chosen: list[Segment], where: str, t0: float
    ) -> dict:
        failpoint("index:compaction_written")
        self._commit(name, "compaction", bits, docs, files, chosen)
        failpoint("index:compaction_committed")
        self._clean_leftovers()
        log.info(
            "dedup index: compacted %d segments (%d documents) into %s, %d files", len(chosen), docs, name, len(files)
        )
        return {
            "segment": name,
            "merged": [s.name for s in chosen],
            "documents": docs,
            "bucket_bits": bits,
            "files_read": sum(len(s.files) for s in chosen),
            "files_written": len(files),
            "where": where,
            "seconds": round(time.perf_counter() - t0, 3),
        }

    def _merge(
        self,
        units: list[tuple[int, int, list[str]]],
        segment: str,
        bits: int,
        where: str,
        checks: dict[str, tuple[int, str]],
    ) -> list[IndexFile]:
        root, opts, access = self.root, self._opts(), self.access

        def merge(unit):
            part, bucket, inputs = unit
            return ixf.merge_bucket(root, inputs, segment, part, bucket, bits, opts, checks, access)

        if where == "driver":
            return [f for u in units for f in merge(u)]
        with label_jobs(self.spark.sparkContext, f"dedup index: compact into {segment}"), _refused_in_tasks():
            return self.spark.sparkContext.parallelize(units, len(units)).flatMap(merge).collect()

    def _clean_leftovers(self) -> None:
        """Remove what killed writers left: replaced segments (commit file first, then files)
        and directories without a commit."""
        commits = self._commits()
        replaced = {r["sequence"] for c in commits for r in c.get("replaces", [])}
        for c in commits:
            if c["sequence"] in replaced:
                self.store.remove_commit(c["_file"])
        live = {(c["kind"] == "compaction", c["name"]) for c in commits if c["sequence"] not in replaced}
        for compacted, top in ((False, "batches"), (True, "compacted")):
            for name in self.store.segment_dirs(top):
                if (compacted, name) not in live:
                    self.store.delete_dir(f"{top}/{name}")

    def retract(self, run: str) -> bool:
        """Remove a committed batch (a build whose output was never published); the commit file
        goes first, so a crash half-way leaves an uncommitted batch that readers ignore. A batch
        already merged by a compaction raises ``IndexCompacted``."""
        with self._writer():
            return self._retract(run)

    def _retract(self, run: str) -> bool:
        commits = self._commits()
        merged_into = [c["name"] for c in commits if any(r["name"] == run for r in c.get("replaces", []))]
        if merged_into:
            raise IndexCompacted(
                f"dedup index {self.root}: batch {run} was merged into {merged_into[0]}; "
                "it cannot be retracted on its own (rebuild the index from the corpus)"
            )
        found = False
        for c in commits:
            if c["name"] == run and c["kind"] != "compaction":
                self.store.remove_commit(c["_file"])
                found = True
        self.store.delete_dir(f"batches/{run}")
        return found


@contextmanager
def _refused_in_tasks():
    """An ``IndexFileError`` raised in a Spark task reaches the driver as a Java error carrying
    the Python trace: raised again here as itself, so a job refuses in one line."""
    try:
        yield
    except Exception as e:
        found = ixc.raised_in_task(e)
        if found is None:
            raise
        raise found from e


def _bucket_col(columns: list[str], bits: int) -> Column:
    """Spark's ``ixf.bucket_of``: the top ``bits`` bits of ``key`` (unsigned), or of the first 4
    hex digits of ``exact_key`` / ``doc_hex`` (the top bits of their 64-bit hash)."""
    if not bits:
        return F.lit(0)
    if "key" in columns:
        return F.shiftrightunsigned("key", 64 - bits)
    hexes = "exact_key" if "exact_key" in columns else "doc_hex"
    return F.shiftright(F.conv(F.substring(hexes, 1, 4), 16, 10).cast("int"), 16 - bits)


def touched_prior_rows(prior: DataFrame, new_rows: DataFrame) -> DataFrame:
    """Indexed (band, key, doc_id) rows in buckets some new document falls into (a join over a
    full read of the index; ``DedupIndex.touched`` reads only the files the night needs)."""
    return prior.join(new_rows.select("band", "key").distinct(), ["band", "key"], "left_semi")


def exact_prior_matches(prior_exact: DataFrame, keys: DataFrame) -> DataFrame:
    """New documents whose normalised text is already indexed: (doc_id, duplicate_of).
    ``prior_exact``: indexed (exact_key, doc_id) rows, all of them or those a lookup found."""
    p = prior_exact.select("exact_key", F.col("doc_id").alias("duplicate_of"))
    return (
        keys.join(p, "exact_key")
        .where(F.col("doc_id") != F.col("duplicate_of"))  # never a duplicate of itself
        .groupBy("doc_id")
        .agg(F.min("duplicate_of").alias("duplicate_of"))
    )
