"""A persistent dedup index: the band keys and exact keys of every document kept so far, so a
nightly run deduplicates new documents against the whole corpus, not only against itself.

Layout (any Hadoop path):

    INDEX/settings.json              the MinHash settings that built it; other settings are refused
    INDEX/batches/<run>/bands/       Parquet (band, key, doc_id), partitioned by band
    INDEX/batches/<run>/exact/       Parquet (exact_key, doc_id)
    INDEX/commits/<seq>-<run>.json   written last, by rename: a batch exists only once committed

A run killed before its commit file leaves an uncommitted batch directory that readers ignore
and the next append removes.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from etl.publish import HadoopStorage, write_atomic

from filters.minhash import MinHashParams

FORMAT_VERSION = 1
BANDS_SCHEMA = "band int, key bigint, doc_id string"  # what etl.dedup.band_rows writes
EXACT_SCHEMA = "exact_key string, doc_id string"


class IndexSettingsMismatch(ValueError):
    pass


class DedupIndex:
    def __init__(self, spark: SparkSession, root: str, params: MinHashParams):
        self.spark = spark
        self._Path = spark._jvm.org.apache.hadoop.fs.Path
        self.root = self._Path(root)
        self.fs = self.root.getFileSystem(spark._jsc.hadoopConfiguration())
        self.params = params.resolved()
        self.storage = HadoopStorage(spark)
        self._check_settings()

    def _check_settings(self) -> None:
        settings = {"format_version": FORMAT_VERSION, **asdict(self.params)}
        path = self._Path(self.root, "settings.json")
        if self.fs.exists(path):
            stored = json.loads(self._read(path))
            if stored != settings:
                diff = {k: (stored.get(k), v) for k, v in settings.items() if stored.get(k) != v}
                raise IndexSettingsMismatch(f"dedup index {self.root} was built with other settings "
                                            f"(index, this run): {diff}; use a new index or the same settings")
        else:
            self.fs.mkdirs(self.root)
            self._write_atomic(path, json.dumps(settings, sort_keys=True))

    def committed(self) -> list[str]:
        commits = self._Path(self.root, "commits")
        if not self.fs.exists(commits):
            return []
        names = sorted(st.getPath().getName() for st in self.fs.listStatus(commits) if st.getPath().getName().endswith(".json"))
        return [n.removesuffix(".json").split("-", 1)[1] for n in names]

    def _batch(self, run: str, part: str) -> str:
        return self._Path(self.root, f"batches/{run}/{part}").toString()

    def bands(self) -> DataFrame | None:
        """(band, key, doc_id) of every committed batch. Each batch is its own partitioned root,
        read with its own ``basePath`` and unioned: Spark refuses several partitioned roots in
        one read (CONFLICTING_DIRECTORY_STRUCTURES, the third night's failure of issue 24)."""
        return self._read_batches("bands", BANDS_SCHEMA)

    def exact(self) -> DataFrame | None:
        return self._read_batches("exact", EXACT_SCHEMA)

    def _read_batches(self, part: str, schema: str) -> DataFrame | None:
        """The schema is given, not inferred: a batch of a night that kept nothing has no files."""
        columns = [c.split()[0] for c in schema.split(",")]
        frames = [self.spark.read.schema(schema).option("basePath", path).parquet(path).select(*columns)
                  for path in (self._batch(r, part) for r in self.committed())]
        return reduce(DataFrame.unionByName, frames) if frames else None

    def append(self, bands: DataFrame, exact: DataFrame, run: str | None = None) -> str:
        """Write a batch (band, key, doc_id) + (exact_key, doc_id), then commit it. ``run``: a
        deterministic batch name (e.g. the corpus version), so that ``retract`` can undo it."""
        runs = set(self.committed())
        if run is not None and run in runs:
            raise ValueError(f"dedup index {self.root} already holds a batch named {run}")
        batches = self._Path(self.root, "batches")
        if self.fs.exists(batches):  # uncommitted leftovers of killed runs
            for st in self.fs.listStatus(batches):
                if st.getPath().getName() not in runs:
                    self.fs.delete(st.getPath(), True)
        run = run or uuid.uuid4().hex[:12]
        bands.select("band", "key", "doc_id").write.partitionBy("band").parquet(self._batch(run, "bands"))
        exact.select("exact_key", "doc_id").write.parquet(self._batch(run, "exact"))
        seq = len(runs)
        self._write_atomic(self._Path(self.root, f"commits/{seq:08d}-{run}.json"),
                           json.dumps({"run": run, "sequence": seq}))
        return run

    def retract(self, run: str) -> bool:
        """Remove a committed batch (a build whose output was never published); the commit file
        goes first, so a crash half-way leaves an uncommitted batch that readers ignore."""
        commits = self._Path(self.root, "commits")
        found = False
        if self.fs.exists(commits):
            for st in self.fs.listStatus(commits):
                name = st.getPath().getName()
                if name.endswith(f"-{run}.json"):
                    self.fs.delete(st.getPath(), False)
                    found = True
        self.fs.delete(self._Path(self.root, f"batches/{run}"), True)
        return found

    def _read(self, path) -> str:
        stream = self.fs.open(path)
        try:
            reader = self.spark._jvm.java.io.BufferedReader(self.spark._jvm.java.io.InputStreamReader(stream, "UTF-8"))
            return "\n".join(iter(reader.readLine, None))
        finally:
            stream.close()

    def _write_atomic(self, path, text: str) -> None:
        write_atomic(path.toString(), text, self.storage)


def touched_prior_rows(prior: DataFrame, new_rows: DataFrame) -> DataFrame:
    """Indexed (band, key, doc_id) rows in buckets some new document falls into."""
    return prior.join(new_rows.select("band", "key").distinct(), ["band", "key"], "left_semi")


def exact_prior_matches(prior_exact: DataFrame, keys: DataFrame) -> DataFrame:
    """New documents whose normalised text is already indexed: (doc_id, duplicate_of)."""
    p = prior_exact.select("exact_key", F.col("doc_id").alias("duplicate_of"))
    return (keys.join(p, "exact_key").where(F.col("doc_id") != F.col("duplicate_of"))  # never a duplicate of itself
            .groupBy("doc_id").agg(F.min("duplicate_of").alias("duplicate_of")))
