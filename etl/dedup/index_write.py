"""Writing a dedup index, always under its writer lock: an append (a night's batch), a compaction
(segments merged into one, size-tiered), a retraction (a batch whose build was never published).
Each writes its files, then its commit record (``etl.dedup.index_log``), then removes what it
replaced; the protocol and what a kill at each step leaves: ``etl.dedup.index``'s docstring.
"""

from __future__ import annotations

import logging
import math
import time
from contextlib import contextmanager
from typing import Callable

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from etl.dedup import index_files as ixf
from etl.dedup.index_files import DOCS, EXACT, FileOptions, IndexFile, Segment
from etl.dedup.index_frames import bucket_col
from etl.dedup.index_legacy import LegacyFormats
from etl.dedup.index_log import IndexConfig, IndexLog
from etl.dedup.index_read import engine_for
from etl.runtime.failpoints import failpoint  # the recovery tests replace etl.dedup.index_write.failpoint
from filters.dedup.minhash import MinHashParams

log = logging.getLogger("zhcorpus")
# Bytes of a band row on disk (key and doc hash: two incompressible int64): turns target_file_mb
# into rows.
BAND_ROW_BYTES = 16


class IndexCompacted(RuntimeError):
    """A batch that a compaction has merged cannot be retracted on its own."""


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


class IndexWriter:
    def __init__(
        self,
        spark: SparkSession,
        log: IndexLog,
        legacy: LegacyFormats,
        params: MinHashParams,
        cfg: IndexConfig,
    ):
        self.spark, self.log, self.legacy, self.params, self.cfg = spark, log, legacy, params, cfg
        self.store, self.root, self.access = log.store, log.root, log.store.access

    # --- appends --------------------------------------------------------------------------------

    def append(self, bands: DataFrame, exact: DataFrame, run: str | None = None) -> str:
        """Write a batch (band, key, doc_id) + (exact_key, doc_id), then commit it. ``run``: a
        deterministic batch name (e.g. the corpus version), so that ``retract`` can undo it."""
        return self._append(run, lambda segment: self._write(segment, bands, exact))

    def append_arrow(self, bands: pa.Table, exact: pa.Table, run: str | None = None) -> str:
        """``append`` from Arrow tables on the driver (tools and benchmarks that build rows in numpy)."""

        def write(segment: str) -> tuple[int, int, list[IndexFile]]:
            bits = self._bits(len(exact))
            tables = ixf.segment_tables(bands, exact)
            return len(exact), bits, ixf.write_units(self.root, segment, tables, bits, self._opts(), self.access)

        return self._append(run, write)

    def _append(self, run: str | None, write: Callable[[str], tuple[int, int, list[IndexFile]]]) -> str:
        """Under the lock: name the batch, ``write`` its files (documents, bucket bits, files), commit it."""
        with self.log.writer():
            run = self.log.new_name(run)
            docs, bits, files = write(f"batches/{run}")
            failpoint("index:batch_written")
            self.log.commit(run, "batch", bits, docs, files)
        return run

    def _rows_per_file(self) -> int:
        return max(1, int(self.cfg.target_file_mb * 2**20) // BAND_ROW_BYTES)

    def _bits(self, docs: int) -> int:
        """Bucket bits for a segment of ``docs`` documents: files of about target_file_mb."""
        return min(ixf.MAX_BITS, max(0, math.ceil(math.log2(max(docs, 1) / self._rows_per_file()))))

    def _opts(self) -> FileOptions:
        return FileOptions(max_rows=2 * self._rows_per_file(), row_group_rows=self.cfg.row_group_rows)

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
            rows.withColumn("bucket", bucket_col(rows.columns, bits).cast("int"))
            .repartition(n, "part", "bucket")
            .sortWithinPartitions("part", "bucket")
        )
        task = ixf.write_task(self.root, segment, bits, self._opts(), self.access)
        out = sorted_rows.mapInArrow(task, ixf.WRITTEN_DDL).collect()
        return [IndexFile(**r.asDict()) for r in out]

    # --- compaction -----------------------------------------------------------------------------

    def compact(self, full: bool = False) -> dict | None:
        """Merge segments into one (all of them with ``full``, else ``plan_compaction``'s choice),
        bucketed for its size and sorted by key; commit it; remove the merged segments. Legacy
        segments are rewritten first, whatever the rule. Returns a summary, or None when nothing
        needs merging. A killed compaction is undone or finished by the next writer. Raises
        ``IndexLocked`` while another process writes the index."""
        with self.log.writer():
            return self._compact(full)

    def _compact(self, full: bool) -> dict | None:
        t0 = time.perf_counter()
        self.log.clean_leftovers()
        live = self.log.segments()
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
        name, docs = f"compacted-{self.log.next_sequence():08d}", sum(s.docs for s in chosen)
        bits = self._bits(docs)
        units = ixf.merge_units([f for s in chosen for f in s.files], bits)
        engine = engine_for(self.spark, docs * (self.params.bands + 2), self.cfg)
        checks = {f.path: (f.size, f.sha256) for s in chosen for f in s.files if f.sha256}
        root, segment, opts, access = self.root, f"compacted/{name}", self._opts(), self.access

        def merge(unit):
            part, bucket, inputs = unit
            return ixf.merge_bucket(root, inputs, segment, part, bucket, bits, opts, checks, access)

        with self._undone_on_error(name):
            files = engine.map(merge, units, f"dedup index: compact into {segment}")
        return self._commit_compaction(name, bits, docs, files, chosen, engine.where, t0)

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
        name = f"compacted-{self.log.next_sequence():08d}"
        bands, exact = self.legacy.union(legacy, "bands"), self.legacy.union(legacy, "exact")
        with self._undone_on_error(name):
            docs, bits, files = self._write(f"compacted/{name}", bands, exact)
        return self._commit_compaction(name, bits, docs, files, legacy, "legacy rewrite", t0)

    def _commit_compaction(
        self, name: str, bits: int, docs: int, files: list[IndexFile], chosen: list[Segment], where: str, t0: float
    ) -> dict:
        failpoint("index:compaction_written")
        self.log.commit(name, "compaction", bits, docs, files, chosen)
        failpoint("index:compaction_committed")
        self.log.clean_leftovers()
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

    # --- retraction -----------------------------------------------------------------------------

    def retract(self, run: str) -> bool:
        """Remove a committed batch (a build whose output was never published); the commit file
        goes first, so a crash half-way leaves an uncommitted batch that readers ignore. A batch
        already merged by a compaction raises ``IndexCompacted``."""
        with self.log.writer():
            return self._retract(run)

    def _retract(self, run: str) -> bool:
        commits = self.log.records()
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
