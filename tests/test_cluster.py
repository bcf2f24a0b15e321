"""A Spark standalone cluster on this host, started by the project's own scripts, with
authentication on (marked ``cluster``; in ``make test``).

* ``deploy/spark-daemon.sh`` starts a master and a worker on 127.0.0.1 (free ports, secret from a
  mode-600 file); ``deploy/spark-submit.sh`` submits ``jobs/build_corpus.py`` on a small crawl
  (tests/crawl_fixture.py) to two executors, with the project shipped as the ``--py-files`` zip of
  deploy/spark_package.py and executors that cannot import what their shipped env leaves out
  (torch, ray, matplotlib, scipy, ...). Dedup runs its connected components on Spark with reliable
  checkpoints into ``spark.checkpoint_dir``; once the first is written, one executor JVM is killed
  (SIGKILL). The output must still equal a ``local[*]`` build of the same input: documents,
  rejected, duplicates, shard manifest (sha256 of every file), tokenizer, report ledger.
* Every socket the master, worker, driver and executors listened on during the build is on
  loopback; no copy of the secret is left in TMPDIR, and it is on no command line.
* A driver with a wrong secret is refused and the wrapper says "authentication failed" and exits
  77 long before Spark's own minute of retries.

Every process is stopped by pid at teardown (tests/cluster_fixture.py), also when a test fails.
The Ray half is tests/test_cluster_ray.py.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests import crawl_fixture
from tests.cluster_fixture import ROOT, VENV_BIN, Sampler, Sessions, alive, free_port, watched
from tests.deploy_fixture import load_deploy_module

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
spark_package = load_deploy_module("spark_package")

AUTH_FAILED = 77
NOT_WIRED = "needs a reliable checkpoint directory"  # etl.dedup.checkpoints.CheckpointConfigError
# The crawl fixture without part-0.jsonl (its 10 MB line is test_build_corpus's business): WARC
# gzip and plain, WET, JSONL gzip, Parquet and a corrupt gzip, ~25 KB.
INPUTS = [
    "crawl-0.warc.gz",
    "crawl-1.warc",
    "crawl-2.warc.wet.gz",
    "part-1.jsonl.gz",
    "part-2.parquet",
    "broken.warc.gz",
]
# dedup.driver_max_docs=0, driver_max_edges=0: groups, candidate edges and connected components on
# Spark, one reliable checkpoint per components round.
OVERRIDES = [
    "tokenizer.vocab_size=1300",  # the six files' ~100 lines need ~980 characters at 0.98 coverage
    "tokenizer.character_coverage=0.98",
    "shards.num_shards=3",
    "dedup.driver_max_edges=0",
    "dedup.driver_max_docs=0",
]
# Two executors of one core on the one worker; the local test session's shuffle partitions.
CONF = ["spark.executor.cores=1", "spark.executor.memory=768m", "spark.sql.shuffle.partitions=4"]
# Executors' Python: the venv's, with the packages deploy/spark_package.py leaves out of their env
# made unimportable (a build that needs one fails), and a mark that this ran.
SITECUSTOMIZE = """import os, sys
ABSENT = set({absent!r})
class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"{{name}} is not in the executors' env (deploy/spark_package.py)", name=name)
sys.meta_path.insert(0, _Absent())
open(os.path.join({marks!r}, str(os.getpid())), "w").close()
"""


@dataclass
class SparkCluster:
    root: Path
    master: str
    env: dict[str, str]
    secret: str
    sessions: Sessions
    logs: Path


def wait_for(log: Path, pattern: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    # Timeouts here guard against hangs only: on the shared 2-core test machine at load ~80 a JVM
    # took 2 minutes to start and a one-line app 5 (stress runs of 2026-11-25).
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and re.search(pattern, log.read_text(errors="replace")):
            return
        if proc.poll() is not None:
            pytest.fail(f"{proc.args[:2]} exited {proc.returncode} before '{pattern}':\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    pytest.fail(f"no '{pattern}' in {log} after {timeout} s:\n{log.read_text()[-3000:]}")


def spark_env(root: Path, secret_file: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_LOCAL", "PYSPARK_GATEWAY"))}
    (root / "tmp").mkdir()
    env.update(
        PATH=f"{VENV_BIN}:{env.get('PATH', '')}",
        SPARK_AUTH_SECRET_FILE=str(secret_file),
        TMPDIR=str(root / "tmp"),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-cluster")
    secret = secrets.token_hex(32)
    secret_file = root / "secret"
    secret_file.write_text(secret + "\n")
    secret_file.chmod(0o600)
    env, sessions, logs = spark_env(root, secret_file), Sessions(), root / "logs"
    logs.mkdir()
    port = free_port()
    with watched(root):  # its logs (logs/, work/'s executor logs) in the report of a failing test
        try:
            master = sessions.popen(
                [
                    str(ROOT / "deploy/spark-daemon.sh"),
                    "master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(free_port()),
                ],
                env,
                logs / "master.log",
            )
            wait_for(logs / "master.log", r"I have been elected leader", master)
            worker = sessions.popen(
                [
                    str(ROOT / "deploy/spark-daemon.sh"),
                    "worker",
                    f"spark://127.0.0.1:{port}",
                    "--cores",
                    "2",
                    "--memory",
                    "2g",
                    "--work-dir",
                    str(root / "work"),
                    "--webui-port",
                    str(free_port()),
                ],
                env,
                logs / "worker.log",
            )
            wait_for(logs / "worker.log", r"Successfully registered with master", worker)
            yield SparkCluster(root, f"spark://127.0.0.1:{port}", env, secret, sessions, logs)
        finally:
            sessions.stop()
            assert not alive(sessions.pids()), "processes of the Spark cluster outlived the teardown"


def submit(
    cluster: SparkCluster, *args: str, sampler: Sampler | None = None, env: dict | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """deploy/spark-submit.sh --master MASTER ARGS, the driver in a session of its own."""
    argv = [str(ROOT / "deploy/spark-submit.sh"), "--master", cluster.master, *args]
    sampler = sampler or Sampler(cluster.sessions)
    return sampler.run(argv, env=env or cluster.env, cwd=ROOT, timeout=timeout, start_new_session=True)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> list[str]:
    root = tmp_path_factory.mktemp("crawl")
    crawl_fixture.build(root)
    crawl_fixture.write_copies(root)  # duplicates for dedup to find on the cluster
    return [str(root / name) for name in [*INPUTS, crawl_fixture.COPIES]]


def executor_python(root: Path) -> Path:
    """A Python for executors that cannot import what their shipped env lacks."""
    site, marks = root / "executor-site", root / "executor-marks"
    site.mkdir(exist_ok=True)
    marks.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(
        SITECUSTOMIZE.format(absent=sorted(spark_package.ABSENT_MODULES), marks=str(marks))
    )
    exe = root / "executor-python"
    exe.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    exe.chmod(0o755)
    return exe


def build_argv(cluster: SparkCluster, crawl: list[str], out: Path, checkpoints: Path) -> list[str]:
    """spark-submit arguments of jobs/build_corpus.py with the project as the shipped zip."""
    zip_path = cluster.root / "zhcorpus-py.zip"
    if not zip_path.exists():
        spark_package.build_zip(ROOT, zip_path)
    pythons = [f"spark.pyspark.python={executor_python(cluster.root)}", f"spark.pyspark.driver.python={sys.executable}"]
    conf = [a for c in [*CONF, *pythons] for a in ("--conf", c)]
    return [
        "--py-files",
        str(zip_path),
        *conf,
        "jobs/build_corpus.py",
        "--input",
        *crawl,
        "--output",
        str(out),
        *[a for o in OVERRIDES for a in ("--set", o)],
        "--set",
        f"spark.checkpoint_dir={checkpoints}",
    ]


def executor_pids(cluster: SparkCluster) -> list[int]:
    out = []
    for pid in cluster.sessions.pids():
        try:
            if b"CoarseGrainedExecutorBackend" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            pass
    return out


@pytest.fixture(scope="module")
def cluster_build(cluster, crawl):
    """The build submitted to the cluster. Once dedup has written its first reliable checkpoint,
    one of the two executor JVMs gets SIGKILL; the listening sockets of every process of the
    cluster and the driver are sampled while it runs."""
    out, checkpoints, log = cluster.root / "build", cluster.root / "checkpoints", cluster.logs / "build.log"
    argv = [
        str(ROOT / "deploy/spark-submit.sh"),
        "--master",
        cluster.master,
        *build_argv(cluster, crawl, out, checkpoints),
    ]
    with open(log, "wb") as f:
        driver = subprocess.Popen(
            argv, env=cluster.env, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )
    cluster.sessions.adopt(driver.pid)
    sampler, killed, deadline = Sampler(cluster.sessions), None, time.monotonic() + 900
    while driver.poll() is None and time.monotonic() < deadline:
        sampler.sample()
        if killed is None and any(p.stat().st_size for p in checkpoints.rglob("part-*")):
            executors = executor_pids(cluster)
            assert len(executors) == 2, executors
            killed = executors[0]
            os.kill(killed, 9)
        time.sleep(0.5)
    if driver.poll() is None:
        driver.kill()
        pytest.fail(f"the build did not finish in 900 s:\n{log.read_text()[-3000:]}")
    text = log.read_text(errors="replace")
    unwired = driver.returncode == 2 and NOT_WIRED in text
    assert unwired or driver.returncode == 1, text[-5000:]  # 1: done, with unreadable files (broken.warc.gz)
    return {"out": out, "sampler": sampler, "log": text, "killed": killed, "unwired": unwired}


def built(cluster_build) -> dict:
    """The cluster build, which must have finished. One known gap is reported as such (XFAIL with
    the reason, in every run's summary), not hidden: the build's dedup phase not yet handing
    spark.checkpoint_dir to etl.dedup.checkpoints.Checkpoints, so on a cluster it refuses to run."""
    if cluster_build["unwired"]:
        pytest.xfail(
            "etl/phases.dedup_phase does not pass spark.checkpoint_dir to etl.dedup.checkpoints.Checkpoints yet: "
            "a build on a cluster refuses to dedup (issue 15, item 7)"
        )
    return cluster_build


@pytest.fixture(scope="module")
def local_build(spark, crawl, tmp_path_factory):
    from etl.corpus import BuildConfig, build_corpus
    from jobs.build_corpus import DEFAULT_CONFIG
    from jobs.config import load_config

    out = tmp_path_factory.mktemp("local-build") / "build"
    build_corpus(load_config(BuildConfig, DEFAULT_CONFIG, OVERRIDES), crawl, str(out), spark=spark)
    return out


def rows(out: Path, name: str) -> list[dict]:
    return sorted(pq.read_table(out / name).to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def same_output(got: Path, want: Path) -> None:
    for name in ("documents", "rejected", "duplicates"):
        assert rows(got, name) == rows(want, name), name
    assert len(rows(got, "duplicates")) > 0 and len(rows(got, "documents")) > 0
    manifest = json.loads((got / "shards/manifest.json").read_text())
    assert manifest == json.loads((want / "shards/manifest.json").read_text())  # sha256 of every shard file
    for f in sorted((want / "tokenizer").iterdir()):
        assert (got / "tokenizer" / f.name).read_bytes() == f.read_bytes(), f.name
    report, ref = (ledger(d) for d in (got, want))
    assert report == ref


def ledger(out: Path) -> dict:
    """report.json without what differs by where and how fast it ran: the job's timings and
    master, every "seconds" (per phase), and the spark section of the config (the cluster run's
    checkpoint directory)."""

    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "seconds"}
        return [strip(v) for v in node] if isinstance(node, list) else node

    report = json.loads((out / "report.json").read_text())
    report.pop("job")
    report["config"].pop("spark")
    return strip(report)


def test_cluster_build_equals_local_build(cluster, cluster_build, request):
    """Identical output although an executor died mid-dedup (see the next test)."""
    out = built(cluster_build)["out"]
    same_output(out, request.getfixturevalue("local_build"))  # built only when there is something to compare
    assert json.loads((cluster_build["out"] / "report.json").read_text())["job"]["spark_master"] == cluster.master
    assert list((cluster.root / "executor-marks").iterdir()), "the executors did not run the blocking Python"


def test_an_executor_was_killed_after_a_reliable_checkpoint(cluster_build):
    assert built(cluster_build)["killed"], "the build ended before dedup wrote a checkpoint: nothing was killed"
    log = cluster_build["log"]
    assert re.search(r"Lost executor \d+|Executor \S+ removed|is now EXITED", log), (
        "the driver never noticed the lost executor"
    )


def test_every_spark_socket_is_on_loopback(cluster_build):
    seen = cluster_build["sampler"].seen
    components = {s.component for s in seen}
    # The sample must have caught the executors and the driver, not only the daemons.
    assert {"spark master", "spark worker", "spark driver", "spark executor"} <= components, components
    beyond = sorted(f"{s.component} {s.proto} {s.address}:{s.port}" for s in seen if s.kind != "loopback")
    assert not beyond, "Spark listened beyond loopback: " + ", ".join(beyond)


def test_the_secret_is_in_no_file_and_no_command_line(cluster, cluster_build):
    left = [
        p for p in (cluster.root / "tmp").rglob("*") if p.is_file() and cluster.secret in p.read_text(errors="replace")
    ]
    assert not left, f"copies of the secret left behind: {left}"
    for pid in cluster.sessions.pids():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        assert cluster.secret.encode() not in cmdline, f"the secret is on the command line of pid {pid}"


def test_wrong_secret_fails_fast_with_authentication_failed(cluster):
    wrong = cluster.root / "wrong-secret"
    wrong.write_text(secrets.token_hex(32) + "\n")
    wrong.chmod(0o600)
    app = cluster.root / "count.py"
    app.write_text(
        "from pyspark.sql import SparkSession\nprint(SparkSession.builder.getOrCreate().range(10).count())\n"
    )
    t0 = time.monotonic()
    run = submit(cluster, str(app), env={**cluster.env, "SPARK_AUTH_SECRET_FILE": str(wrong)}, timeout=300)
    elapsed = time.monotonic() - t0
    assert run.returncode == AUTH_FAILED, run.stderr[-3000:]
    assert "authentication failed" in run.stderr
    assert "10\n" not in run.stdout  # the job never ran
    # Spark itself gives up only after 3 registration attempts 20 s apart ("All masters are
    # unresponsive"); the wrapper stops the driver at the first refused handshake, so the driver
    # logs one attempt. Counted, not timed: on a loaded machine the JVM's and Python's start-up
    # alone took 39 s of a 45 s bound (stress runs of 2026-11-25).
    attempts = run.stderr.count("Connecting to master")
    assert attempts == 1 and "All masters are unresponsive" not in run.stderr, (
        f"{attempts} registration attempts in {elapsed:.0f} s:\n{run.stderr[-3000:]}"
    )


def test_a_session_defaults_to_no_driver_ui_on_a_cluster(cluster):
    """etl.runtime.spark.get_spark under spark-submit, with settings that leave the UI to it."""
    conf = cluster.root / "no-ui-setting.conf"
    conf.write_text(
        "\n".join(
            line
            for line in (ROOT / "jobs/configs/spark-cluster.conf").read_text().splitlines()
            if not line.startswith("spark.ui.enabled")
        )
    )
    app = cluster.root / "session.py"
    app.write_text(
        "import sys\nsys.path.insert(0, %r)\nfrom etl.runtime.spark import get_spark\n"
        "spark = get_spark('probe')\nprint('ui', spark.sparkContext.uiWebUrl, spark.range(3).count())\n" % str(ROOT)
    )
    sampler = Sampler(cluster.sessions)
    run = submit(cluster, str(app), sampler=sampler, env={**cluster.env, "SPARK_CLUSTER_CONF": str(conf)}, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ui None 3" in run.stdout
    assert not [s for s in sampler.seen if s.kind != "loopback"]
