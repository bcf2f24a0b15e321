"""What a Spark stage materialises mid-run, made to survive a lost executor on a cluster.

``DataFrame.localCheckpoint()`` keeps its blocks on the executors and cuts the lineage, so Spark
cannot recompute them: losing an executor afterwards fails the job (Spark documents it as not
fault tolerant). On a cluster a stage therefore checkpoints reliably, ``DataFrame.checkpoint()``
into a directory on a file system every executor reaches (``SparkConfig.checkpoint_dir``, the
``spark`` section), and refuses to start without one; ``localCheckpoint`` is used only with a
``local``/``local[N]`` master, where driver and executors are one process anyway.

A checkpoint costs a Spark job of its own: stages checkpoint only where a loop would otherwise
grow the lineage (connected-component rounds) and otherwise ``persist``, which keeps the lineage
and so is recomputed, not lost, when an executor goes.

    with Checkpoints(spark, cfg.spark.checkpoint_dir, "dedup") as cp:
        result = dedup(docs, cfg.dedup, index, checkpoints=cp)
        result.duplicates.write.parquet(...)     # frames read the checkpoints until the block ends
    # the run's checkpoint directory is deleted and its persisted frames released here
"""

from __future__ import annotations

import logging
import uuid

from pyspark.sql import DataFrame, SparkSession

from base.errors import Refusal

log = logging.getLogger("zhcorpus")


class CheckpointConfigError(Refusal):
    """A cluster run with nowhere reliable to checkpoint."""


def is_local_master(master: str) -> bool:
    """``local`` or ``local[N]`` / ``local[*]`` / ``local[N, F]``: one JVM. ``local-cluster[...]``
    starts real executor processes, so it counts as a cluster."""
    return master == "local" or master.startswith("local[")


class Checkpoints:
    """The checkpoints and persisted frames of one stage run (a context manager); see the module
    docstring. ``checkpoint_dir``: the ``spark.checkpoint_dir`` setting ("" is fine locally)."""

    def __init__(self, spark: SparkSession, checkpoint_dir: str = "", stage: str = "stage"):
        self.spark = spark
        self.master = spark.sparkContext.master
        self.local = is_local_master(self.master)
        if not self.local and not checkpoint_dir:
            raise CheckpointConfigError(
                f"{stage} runs on master {self.master} and needs a reliable checkpoint directory that every "
                "executor can reach (local checkpoints are lost with their executor): set spark.checkpoint_dir, "
                "e.g. --set spark.checkpoint_dir=hdfs:///tmp/zhcorpus-checkpoints"
            )
        self.stage = stage
        self.root = checkpoint_dir.rstrip("/")
        self.run_dir: str | None = None  # this run's directory under root (cluster only)
        self.checkpoints = 0
        self._persisted: list[DataFrame] = []

    def __enter__(self) -> "Checkpoints":
        if not self.local:
            app = self.spark.sparkContext.applicationId
            self.run_dir = f"{self.root}/{self.stage}-{app}-{uuid.uuid4().hex[:8]}"
            self.spark.sparkContext.setCheckpointDir(self.run_dir)  # Spark adds a UUID directory below
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def checkpoint(self, df: DataFrame) -> DataFrame:
        """``df`` materialised with its lineage cut (one Spark job): reliably on a cluster."""
        if not self.local and self.run_dir is None:
            raise RuntimeError("Checkpoints used outside its with-block on a cluster")
        self.checkpoints += 1
        return df.localCheckpoint() if self.local else df.checkpoint()

    def persist(self, df: DataFrame) -> DataFrame:
        """``df`` cached (memory, then disk) by the first action that needs it, lineage kept;
        released when the run ends."""
        self._persisted.append(df.persist())
        return df

    def close(self) -> None:
        """Release the persisted frames and delete this run's checkpoint directory."""
        for df in self._persisted:
            df.unpersist()
        self._persisted.clear()
        if self.run_dir is not None:
            jvm = self.spark.sparkContext._jvm
            path = jvm.org.apache.hadoop.fs.Path(self.run_dir)
            fs = path.getFileSystem(self.spark.sparkContext._jsc.hadoopConfiguration())
            if fs.exists(path) and not fs.delete(path, True):
                log.warning("could not delete the checkpoint directory %s", self.run_dir)
            self.run_dir = None
