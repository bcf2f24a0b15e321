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
    # The JIT of the JVM a local job starts (a local master: that JVM runs the tasks too). In a fresh
    # JVM HotSpot's C2 compiler spends about 25 CPU-s on a build's Spark and generated code whatever
    # the input's size: on 2 cores a third of a small build. C1 alone (-XX:TieredStopAtLevel=1)
    # compiles ~8x cheaper and its code runs slower (docs/benchmarks.md, "2026-11-29"), so a large
    # build amortises C2: "auto" starts C1 alone when the job's local inputs total under jit_c1_below_mb, else the
    # tiered default; "c1" and "tiered" always. A nightly's batch, the demo and a test are small.
    # spark-submit's driver and a cluster's executors are started by spark-submit: set their JVM
    # options there (--driver-java-options, spark.executor.extraJavaOptions).
    jit: str = "auto"
    jit_c1_below_mb: int = 64  # C1 alone 1.30x, 1.21x, 1.18x at 8.5, 34, 67 MB (bench.bench_jit, 2 cores)

    def __post_init__(self):
        if self.jit not in JIT_MODES:
            raise ValueError(f"spark.jit must be one of {JIT_MODES}, not {self.jit!r}")


JIT_MODES = ("auto", "c1", "tiered")
C1_ONLY = "-XX:TieredStopAtLevel=1"


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


def session(app_name: str, cfg: SparkConfig, inputs: list[str] | None = None) -> SparkSession:
    """The session a job described by ``cfg`` runs in; ``inputs``: the paths it will read, which
    size a local JVM's JIT (``SparkConfig.jit``)."""
    known = cfg.jit == "auto" and inputs is not None
    options = java_options(cfg, local_bytes(inputs, stop_at=cfg.jit_c1_below_mb << 20) if known else None)
    local = {"spark.driver.extraJavaOptions": options} if options else None
    spark = get_spark(app_name, cfg.master or None, local_conf=local)
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(cfg.max_partition_bytes))
    return spark


def java_options(cfg: SparkConfig, input_bytes: int | None) -> str:
    """The JVM options of a local session for ``cfg.jit`` and the job's local input bytes (None:
    unknown, e.g. on a store): C1 alone, or "" (HotSpot's tiered default)."""
    small = input_bytes is not None and input_bytes < cfg.jit_c1_below_mb << 20
    return C1_ONLY if cfg.jit == "c1" or (cfg.jit == "auto" and small) else ""


def local_bytes(paths: list[str], stop_at: int | None = None) -> int | None:
    """Bytes of the local files under ``paths`` (files, or directories walked; hidden and ``_``
    files left out, as the readers leave them); None when one is not a local path or not there.
    ``stop_at``: return as soon as the total reaches it (a crawl of millions of files is not
    walked to learn that it is large)."""
    total = 0
    for p in paths:
        if stop_at is not None and total >= stop_at:
            return total
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", p) and not p.startswith("file://"):
            return None
        path = p.removeprefix("file://").removeprefix("file:")
        if os.path.isfile(path):
            total += os.path.getsize(path)
        elif os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
                total += sum(os.path.getsize(os.path.join(root, f)) for f in files if not f.startswith((".", "_")))
                if stop_at is not None and total >= stop_at:
                    return total
        else:
            return None
    return total


def get_spark(
    app_name: str,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    local_conf: dict[str, str] | None = None,
) -> SparkSession:
    """``master=None`` and no spark-submit: ``local[*]``. Executors use this interpreter
    (the project's venv) unless PYSPARK_PYTHON says otherwise. ``local_conf``: settings for a
    local master only (the JVM this call starts)."""
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
            for key, value in {**LOCAL_DEFAULTS, **(local_conf or {})}.items():
                builder = builder.config(key, value)
    else:
        master = ""
    for key, value in {**SECURE_DEFAULTS, **cluster_defaults(master), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
