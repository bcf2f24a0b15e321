"""Every older format of a dedup index, read in one place until the last index holding it has been
compacted (the removal plan: docs/dedup.md, "Older index formats"). Nothing else in
``etl.dedup`` knows these formats; none is ever written again.

1. Commit records of issue 24 (layout 0): ``{"run", "sequence"}`` only, no ``kind``, ``layout``
   or file list (``record``).
2. Their batches: Spark's ``partitionBy("band")`` files of (key, doc_id), unsorted, listed from
   the batch's directory (``batch_segment``).
3. Segments of layout 1 (d1c9a89 / ef083ea, 2026-11-25; records without ``layout``): bucketed and
   sorted as now, but band files of (key, doc_id) and no ``docs`` part.
4. Commit records without ``checksums`` (before issue 34): their files are read unverified, and
   the log says so once a process (``warn_unverified``).

Segments of layouts 0 and 1 are read by Spark, whole (``frame``), and looked up by joins
(``lookup``); the next compaction rewrites them first, whatever its rule (``DedupIndex.compact``).
An index on S3 never holds them: S3 support came after checksums and layout 2.
"""

from __future__ import annotations

import logging
from functools import reduce

import pyarrow.parquet as pq
from pyspark.sql import DataFrame

from etl.dedup import index_checks as ixc
from etl.dedup import index_files as ixf
from etl.dedup.index_files import EXACT, IndexFile, Segment
from etl.dedup.index_frames import SegmentFrames, touched_prior_rows

log = logging.getLogger("zhcorpus")
LEGACY_BAND_FILE = "key bigint, doc_id string"  # band files of layouts 0 and 1, as Spark reads them


class LegacyFormats:
    """The older formats of one index (module docstring)."""

    def __init__(self, store, frames: SegmentFrames):
        self.store = store  # etl.dedup.index_store's HadoopIndexStore or S3IndexStore
        self.frames = frames
        self.root = store.root
        self._unverified_told: set[str] = set()  # segments without checksums the log has named

    @staticmethod
    def record(rec: dict, file_name: str) -> dict:
        """A commit record with the fields of the current format: without ``layout`` it is of
        layout 1, or 0 without ``kind`` either; a record of layout 0 names its batch ``run``."""
        rec.setdefault("name", rec.get("run") or file_name.removesuffix(".json").split("-", 1)[1])
        rec.setdefault("layout", 1 if "kind" in rec else 0)
        rec.setdefault("kind", "batch")
        return rec

    def batch_segment(self, c: dict) -> Segment:
        """The segment of a layout-0 record: its files listed from the batch's directory, which
        does not change once committed (listed once, kept in the cached record)."""
        if "_files" not in c:
            c["_files"] = tuple(self._batch_files(c["name"]))
        docs = sum(f.rows for f in c["_files"] if f.part == EXACT)
        return Segment(c["name"], c["sequence"], "batch", 0, docs, c["_files"], layout=0)

    def _batch_files(self, run: str) -> list[IndexFile]:
        """Spark's partitionBy("band") files of (key, doc_id) of a layout-0 batch; rows from the
        files' footers."""
        out = []
        fs, root = ixf.filesystem(self.root)
        for part in ("bands", "exact"):
            for rel in self.store.parquet_files(f"batches/{run}/{part}"):
                band = [s for s in rel.split("/") if s.startswith("band=")]
                with ixc.reading(f"{root}/{rel}"):
                    rows = pq.ParquetFile(fs.open_input_file(f"{root}/{rel}")).metadata.num_rows
                out.append(IndexFile(rel, int(band[0][5:]) if band else EXACT, 0, 0, rows))
        return out

    def warn_unverified(self, segs: list[Segment]) -> None:
        """Name, once a process, the live segments committed without checksums."""
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

    def frame(self, s: Segment, part: str) -> DataFrame:
        """(band, key, doc_id) or (exact_key, doc_id) of a segment of layout 0 or 1: both store
        doc_ids in their band files."""
        if part == "bands":
            return self.frames.frame(s, "bands", LEGACY_BAND_FILE).select("band", "key", "doc_id")
        return self.frames.exact(s)

    def union(self, segs: list[Segment], part: str) -> DataFrame:
        """``frame`` of every segment of ``segs`` (all of an older layout), as one frame."""
        return reduce(DataFrame.unionByName, [self.frame(s, part) for s in segs])

    def lookup(self, segs: list[Segment], asked: DataFrame, exact: bool) -> DataFrame:
        """The rows of ``segs`` (of older layouts) that answer ``asked``: (band, key, doc_id) in the
        buckets of its (band, key) rows, or with ``exact`` (exact_key, doc_id) of its exact keys:
        a join over a full read of those segments."""
        if exact:
            return self.union(segs, "exact").join(asked.select("exact_key"), "exact_key", "left_semi")
        return touched_prior_rows(self.union(segs, "bands"), asked.select("band", "key"))
