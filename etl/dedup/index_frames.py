"""A dedup index as Spark sees it: a segment's parts read whole as frames, the bucket of a row
as a Spark column, and the joins of new keys with indexed rows. Lookups read only the files a
night needs (``etl.dedup.index_read``); these full reads serve ``DedupIndex.bands`` / ``exact``,
the segments of older layouts (``etl.dedup.index_legacy``) and the driver-side dedup's tests.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from etl.dedup import index_checks as ixc
from etl.dedup import index_files as ixf
from etl.dedup.index_files import DOCS, EXACT, IndexFile, Segment
from etl.runtime.progress import label_jobs

# The files' columns as Spark reads them (etl.dedup.index_files.SCHEMAS); partition columns
# (band, bucket) come from the paths.
BAND_FILE = "key bigint, doc bigint"
DOCS_FILE = "key bigint, doc_id string"
EXACT_FILE = "exact_key string, doc_id string"


class SegmentFrames:
    """Parts (bands, exact, docs) of committed segments read by Spark, each file verified
    against its commit record first."""

    def __init__(self, spark: SparkSession, store):
        self.spark = spark
        self.store = store  # etl.dedup.index_store's HadoopIndexStore or S3IndexStore
        self.root = store.root
        self.access = store.access

    def frame(self, s: Segment, part: str, schema: str) -> DataFrame:
        """A part of a segment with the partition columns (band, bucket) of its paths: the files
        its commit lists (a task killed while writing one leaves a temporary file beside it that
        a read of the directory would take for Parquet), the directory for layout 0, whose
        commit lists none."""
        base = self.store.uri(f"{s.directory}/{part}")
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

    def named_bands(self, s: Segment) -> DataFrame:
        """(band, key, doc_id) of a segment of this layout: its band rows joined with its doc_ids."""
        docs = self.frame(s, "docs", DOCS_FILE).select(F.col("key").alias("doc"), "doc_id")
        rows = self.frame(s, "bands", BAND_FILE).select("band", "key", "doc")
        return rows.join(docs, "doc").select("band", "key", "doc_id")

    def exact(self, s: Segment) -> DataFrame:
        """(exact_key, doc_id) of a segment (every layout stores them alike)."""
        return self.frame(s, "exact", EXACT_FILE).select("exact_key", "doc_id")

    def _store_frame(self, files: list[IndexFile], part: str, schema: str) -> DataFrame:
        """``frame`` on S3: the committed files read by the executors through pyarrow
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
        with label_jobs(sc, "dedup index: verify files"), ixc.refused_in_tasks():
            sc.parallelize(files, min(len(files), 2 * sc.defaultParallelism)).foreach(check)


def bucket_col(columns: list[str], bits: int) -> Column:
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
