"""A dedup index's commit log: the MinHash settings that built it, the commit records that make
its segments live, the commit point itself, and the writer lock. Where the records are kept
(one file each, or one object on S3) is ``etl.dedup.index_store``'s business; the protocol they
follow is ``etl.dedup.index``'s docstring.
"""

from __future__ import annotations

import json
import uuid
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass

from pyspark.sql import SparkSession

from base.errors import Refusal
from etl.dedup import index_files as ixf
from etl.dedup.index_files import IndexFile, Segment
from etl.dedup.index_legacy import LegacyFormats
from etl.dedup.index_store import HadoopIndexStore, S3IndexStore
from etl.runtime.locks import Lock, Locked
from filters.dedup.minhash import MinHashParams

FORMAT_VERSION = ixf.LAYOUT  # settings.json's: the newest layout of any segment


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


def index_store(spark: SparkSession, root: str, s3=None) -> HadoopIndexStore | S3IndexStore:
    """The store of an index root: ``s3://`` on S3 (``s3``: the job's ``reader.s3`` settings),
    any other path through Hadoop's file system (``etl.dedup.index_store``)."""
    from base.s3 import S3Access, S3Config, is_s3

    if is_s3(root):
        from etl.runtime.paths import refuse_s3a

        refuse_s3a(root, "dedup index")
        return S3IndexStore(root, S3Access.resolve(s3 or S3Config()), IndexLocked)
    return HadoopIndexStore(spark, root)


def stored_params(spark: SparkSession, root: str, s3=None) -> MinHashParams:
    """The MinHash settings an existing index records. FileNotFoundError without settings.json."""
    text = index_store(spark, root, s3).read_text("settings.json")
    if text is None:
        raise FileNotFoundError(f"{root} is not a dedup index (no settings.json)")
    settings = json.loads(text)
    settings.pop("format_version", None)
    return MinHashParams(**settings)


class IndexLog:
    """settings.json and the commit records of one index: which segments are live, the next
    commit, the writer lock, and the removal of what killed writers left."""

    def __init__(self, store: HadoopIndexStore | S3IndexStore, params: MinHashParams, legacy: LegacyFormats):
        self.store = store
        self.root = store.root
        self.params = params  # resolved
        self.legacy = legacy
        self._records: dict[tuple, dict] = {}  # commit records by (file name, length, mtime)
        self._format = FORMAT_VERSION  # settings.json's, raised by the first commit of this layout
        self._check_settings()

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

    def records(self) -> list[dict]:
        """Every commit file's record, by sequence, in the current format (``LegacyFormats.record``).
        A commit file is written once, by rename: records are cached by (name, length, mtime)
        (on S3: by name and the ETag of the object that holds them, ``etl.dedup.index_store``)."""
        out = []
        for name, stamp in self.store.commit_files():
            if stamp not in self._records:
                rec = self.legacy.record(json.loads(self.store.read_commit(name)), name)
                self._records[stamp] = {**rec, "_file": name}
            out.append(self._records[stamp])
        return sorted(out, key=lambda r: r["sequence"])

    def segments(self) -> list[Segment]:
        """The live segments, by sequence: the committed ones no committed compaction replaces."""
        commits = self.records()
        replaced = {r["sequence"] for c in commits for r in c.get("replaces", [])}
        segs = [self._segment(c) for c in commits if c["sequence"] not in replaced]
        self.legacy.warn_unverified(segs)
        return segs

    def _segment(self, c: dict) -> Segment:
        if c["layout"] == 0:
            return self.legacy.batch_segment(c)
        sums = c.get("checksums", {})  # absent: committed before checksums
        files = tuple(
            IndexFile(p, part, bucket, c["bits"], rows, *sums.get(p, (0, ""))) for p, part, bucket, rows in c["files"]
        )
        return Segment(
            c["name"], c["sequence"], c["kind"], c["bits"], c["docs"], files, tuple(c.get("replaces", [])), c["layout"]
        )

    def next_sequence(self) -> int:
        return max((c["sequence"] for c in self.records()), default=-1) + 1

    def writer(self) -> AbstractContextManager[Lock]:
        """``INDEX/.lock`` for one write: held by appends, compactions and retractions (created
        exclusively: O_EXCL on a disk, a create without overwrite on HDFS, If-None-Match on S3)."""
        return self.store.lock(IndexLocked)

    def new_name(self, run: str | None) -> str:
        """The name of the batch a writer holding the lock is about to write (``run``, or a
        random one), after removing what killed writers left."""
        live = {c["name"] for c in self.records()}
        if run is not None and run in live:
            raise ValueError(f"dedup index {self.root} already holds a batch named {run}")
        self.clean_leftovers()
        return run or uuid.uuid4().hex[:12]

    def commit(
        self, name: str, kind: str, bits: int, docs: int, files: list[IndexFile], replaces: list[Segment] = ()
    ) -> None:
        """Write the commit record of a segment whose files are written: the commit point."""
        seq = self.next_sequence()
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

    def clean_leftovers(self) -> None:
        """Remove what killed writers left: replaced segments (commit file first, then files)
        and directories without a commit."""
        commits = self.records()
        replaced = {r["sequence"] for c in commits for r in c.get("replaces", [])}
        for c in commits:
            if c["sequence"] in replaced:
                self.store.remove_commit(c["_file"])
        live = {(c["kind"] == "compaction", c["name"]) for c in commits if c["sequence"] not in replaced}
        for compacted, top in ((False, "batches"), (True, "compacted")):
            for name in self.store.segment_dirs(top):
                if (compacted, name) not in live:
                    self.store.delete_dir(f"{top}/{name}")
