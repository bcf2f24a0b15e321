"""One way to get a SparkSession: embedded ``local[*]`` when no master is given, the
spark-submit master otherwise; secure defaults either way."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

from pyspark.sql import SparkSession


@dataclass(frozen=True)
class SparkConfig:
    """The ``spark`` section, the same in every Spark job."""

    master: str = ""  # "" = spark-submit's master, or local[*] when run with python -m
    # Bytes of input files packed into one read task. Compressed WARC/JSONL files are never
    # split, so this only decides how many small files share a task; Spark's 128 MB default
    # left 2 tasks for the 29 MB demo crawl on 2 cores, one of them holding the 10 MB line (ours).
    max_partition_bytes: int = 8 << 20
    # Where stages that checkpoint (dedup) write reliable checkpoints on a cluster: a directory
    # on a file system every executor reaches (hdfs://, a shared mount). "" = local checkpoints
    # (executor-local blocks, not fault tolerant), which is only right for local[*] masters.
    checkpoint_dir: str = ""


# Applied to every session we create; a cluster's spark-defaults or --conf can still override.
SECURE_DEFAULTS = {
    "spark.master.rest.enabled": "false",  # the standalone REST submission server has no auth
    "spark.ui.showConsoleProgress": "false",  # our driver log reports progress instead
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionOverwriteMode": "static",
}
LOCAL_DEFAULTS = {
    "spark.driver.host": "127.0.0.1",  # embedded mode listens on loopback only
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.driver.memory": "4g",
}


LOOPBACK_MASTER = re.compile(r"spark://(127\.[0-9.]+|localhost|\[::1\])(:[0-9]+)?")


def cluster_defaults(master: str) -> dict[str, str]:
    """For a driver of a cluster (not ``local``), what it gets unless spark-submit's settings
    (--conf, --properties-file, spark-defaults.conf) or SPARK_LOCAL_IP say otherwise: no web UI
    (it has no login, and binds to every interface), and, for a master on this host's loopback,
    the driver's RPC on 127.0.0.1 too (else Spark binds it to the LAN address)."""
    from pyspark import SparkConf, SparkContext

    if master.startswith("local"):
        return {}
    given: dict[str, str] = {}
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # spark-submit's JVM is up and holds its settings
        SparkContext._ensure_initialized()
        given = dict(SparkConf().getAll())
    master = master or given.get("spark.master", "")
    out = {} if "spark.ui.enabled" in given else {"spark.ui.enabled": "false"}
    if LOOPBACK_MASTER.fullmatch(master) and not os.environ.get("SPARK_LOCAL_IP"):
        out.update({k: "127.0.0.1" for k in ("spark.driver.host", "spark.driver.bindAddress") if k not in given})
    return out


def session(app_name: str, cfg: SparkConfig) -> SparkSession:
    """The session a job described by ``cfg`` runs in."""
    spark = get_spark(app_name, cfg.master or None)
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(cfg.max_partition_bytes))
    return spark


def get_spark(app_name: str, master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """``master=None`` and no spark-submit: ``local[*]``. Executors use this interpreter
    (the project's venv) unless PYSPARK_PYTHON says otherwise."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    # spark-submit starts the driver with a JVM gateway already up and the master in its conf.
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if master or not submitted:
        master = master or "local[*]"
        builder = builder.master(master)
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            for key, value in LOCAL_DEFAULTS.items():
                builder = builder.config(key, value)
    else:
        master = ""
    for key, value in {**SECURE_DEFAULTS, **cluster_defaults(master), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
