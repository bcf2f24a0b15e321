"""Ray clusters on this host, started by deploy/ray-node.sh with token authentication, from a
fresh home directory (marked ``cluster``; in ``make test``).

* A one-host head (``ray-node.sh head``): every socket of every Ray process, sampled while a
  training job runs (docs/clusters.md's step 4, at dp=2), is on 127.0.0.1, torch.distributed's store on
  rank 0 included (train/rendezvous.py binds it to the master address; torch alone binds ``*``).
* A head other nodes join (``cluster-head``) plus a second node (``join``), one CPU each: a
  ``ray job submit`` of ``jobs.train_lm`` at dp=2 (jobs/configs/debug.toml, tiny shards) trains
  with one worker on each node; every bind beyond loopback is one docs/clusters.md's port table names
  (Ray cannot keep a joinable cluster on loopback; that page says so and gives the firewall rule),
  and a Ray worker's only wildcard listener is its worker port (10002-19999), so torch's store
  cannot hide among them.
* A submission without the token, or with another token, is refused (401).
* A layout with more workers than the cluster has CPUs is refused before launch with the reason
  (train/launch_checks.py), instead of Ray retrying the worker group forever.
* Elastic data parallelism (``ray.min_workers``; last, since it stops the second node): a dp=2 run
  that loses its second node for good goes on at dp=1 from the last checkpoint, on the losses of a
  fresh dp=1 run started from that checkpoint.

Nodes are stopped with ``ray-node.sh stop`` (their own session only, never ``ray stop``), then
anything left in their sessions is killed by pid (tests/cluster_fixture.py).
"""

from __future__ import annotations

import json
import os
import random
import re
import secrets
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import shard_fixture
from tests.cluster_fixture import (
    ROOT,
    VENV_BIN,
    Sampler,
    Sessions,
    alive,
    free_port,
    lan_interface,
    readme_binds,
    short_dir,
    watched,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
RAY = str(VENV_BIN / "ray")
NODE = str(ROOT / "deploy/ray-node.sh")
STEPS = 3
TRAIN = [
    "--config",
    "jobs/configs/debug.toml",
    "--set",
    f"train.steps={STEPS}",
    "--set",
    "train.eval_every=0",
    "--set",
    "train.checkpoint_every=0",
    "--set",
    "ray.max_failures=0",
]
SMALL = ["--num-cpus", "1", "--object-store-memory", str(100 << 20)]
WORKER_PORTS = (10002, 19999)  # ray start's --min-worker-port, --max-worker-port defaults (docs/clusters.md)


@dataclass
class RayCluster:
    root: Path
    env: dict[str, str]  # a client with the token
    dashboard: str  # http://127.0.0.1:PORT
    gcs: str
    sessions: Sessions
    sids: dict[str, int]  # node name -> session id


def ray_env(root: Path) -> dict[str, str]:
    """A fresh home (no ~/.ray), the venv first on PATH (job entrypoints run `python`), free
    ports for the metrics servers that otherwise take fixed ones, gloo pointed at a LAN interface."""
    home = root / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "DASHBOARD_", "AUTOSCALER_"))}
    env.update(
        HOME=str(home),
        PATH=f"{VENV_BIN}:{env.get('PATH', '')}",
        DASHBOARD_METRIC_PORT=str(free_port()),
        AUTOSCALER_METRIC_PORT=str(free_port()),
        RAY_NODE_STOP_GRACE="10",
        # The test machine is shared: other work filling its memory must not make Ray's
        # memory monitor kill these few small workers (it acts at 95 % of the machine).
        RAY_memory_monitor_refresh_ms="0",
    )
    if lan := lan_interface():  # gloo as on a host whose name resolves to its LAN address: ray-node.sh head
        env["GLOO_SOCKET_IFNAME"] = lan  # must bring it back to loopback
    return env


def node(mode: str, temp_dir: Path, env: dict, *args: str) -> int:
    """deploy/ray-node.sh MODE TEMP_DIR ARGS; returns the node's session id."""
    run = subprocess.run([NODE, mode, str(temp_dir), *args], env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return int((temp_dir / "node.sid").read_text())


def stop(cluster: RayCluster) -> None:
    for name in reversed(list(cluster.sids)):
        subprocess.run([NODE, "stop", str(cluster.root / name)], env=cluster.env, timeout=60)
    killed = cluster.sessions.stop()
    assert not alive(cluster.sessions.pids()), "Ray processes outlived the teardown"
    assert not killed, f"ray-node.sh stop left processes behind: {killed}"


def submit(
    cluster: RayCluster,
    *entrypoint: str,
    sampler: Sampler | None = None,
    env: dict | None = None,
    working_dir: bool = False,
    timeout: float = 420,
) -> subprocess.CompletedProcess:
    argv = [
        RAY,
        "job",
        "submit",
        "--address",
        cluster.dashboard,
        *(["--working-dir", str(ROOT)] if working_dir else []),
        "--",
        *entrypoint,
    ]
    return (sampler or Sampler(cluster.sessions)).run(
        argv, env=env or {**cluster.env, "RAY_AUTH_MODE": "token"}, cwd=ROOT, timeout=timeout
    )


def write_shards(root: Path) -> Path:
    rng = random.Random(5)
    docs = [
        (
            rng.randrange(2),
            rng.choice(["news", "web"]),
            [rng.randrange(1, 60) for _ in range(rng.randint(20, 60))] + [0],
        )
        for _ in range(120)
    ]
    return shard_fixture.write_corpus(root, docs, 2, ["news", "web"], eod_id=0, vocab_size=1001)


def cluster_nodes_sids(sampler: Sampler, output: str, sids: dict[str, int]) -> set[str]:
    """The nodes (by session) whose processes ran the RayTrainWorkers named in ``output``."""
    pids = {int(p) for p in re.findall(r"RayTrainWorker pid=(\d+)", output)}
    by_sid = {sid: name for name, sid in sids.items()}
    return {by_sid.get(sampler.sid_of.get(pid), "?") for pid in pids}


# --- one host, loopback only ----------------------------------------------------------------------


def test_one_host_head_listens_on_loopback_only():
    root = short_dir()
    env, sessions = ray_env(root), Sessions()
    dashboard = free_port()
    cluster = RayCluster(root, env, f"http://127.0.0.1:{dashboard}", "", sessions, {})
    with watched(root, remove=True):  # Ray's session logs in the report of a failing test
        try:
            sid = node(
                "head",
                root / "head",
                env,
                "--port",
                str(free_port()),
                "--dashboard-port",
                str(dashboard),
                "--ray-client-server-port",
                str(free_port()),
                "--dashboard-agent-listen-port",
                str(free_port()),
                "--num-cpus",
                "2",
                *SMALL[2:],
            )
            cluster.sids["head"] = sid
            sessions.adopt(sid)
            token = Path(env["HOME"]) / ".ray" / "auth_token"
            assert oct(token.stat().st_mode & 0o777) == "0o600"
            sampler = Sampler(sessions)
            run = submit(
                cluster,
                "python",
                "-m",
                "jobs.train_lm",
                *TRAIN,
                "--set",
                "parallel.dp=2",
                "--data",
                str(write_shards(root / "shards")),
                "--output",
                str(root / "run"),
                sampler=sampler,
                working_dir=True,
            )
            out = run.stdout + run.stderr
            assert run.returncode == 0 and (root / "run" / "metrics.jsonl").exists(), out[-5000:]
            components = {s.component for s in sampler.seen}
            assert {"gcs_server", "raylet", "dashboard", "dashboard agent", "ray worker"} <= components, components
            # torch.distributed's store on rank 0 too: no exception (train/rendezvous.py)
            beyond = sorted(
                f"{s.component} pid {s.pid} {s.address}:{s.port}" for s in sampler.seen if s.kind != "loopback"
            )
            assert not beyond, "the one-host head listened beyond loopback: " + ", ".join(beyond)
        finally:
            stop(cluster)


# --- a head plus a second node --------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_nodes():
    root = short_dir()
    env, sessions = ray_env(root), Sessions()
    gcs, dashboard = free_port(), free_port()
    cluster = RayCluster(root, env, f"http://127.0.0.1:{dashboard}", f"127.0.0.1:{gcs}", sessions, {})
    with watched(root, remove=True):  # Ray's session logs in the report of a failing test
        try:
            cluster.sids["head"] = node(
                "cluster-head",
                root / "head",
                env,
                "--port",
                str(gcs),
                "--dashboard-port",
                str(dashboard),
                "--ray-client-server-port",
                str(free_port()),
                "--dashboard-agent-listen-port",
                str(free_port()),
                *SMALL,
            )
            sessions.adopt(cluster.sids["head"])
            cluster.sids["node"] = node(
                "join", root / "node", env, cluster.gcs, "--dashboard-agent-listen-port", str(free_port()), *SMALL
            )
            sessions.adopt(cluster.sids["node"])
            yield cluster
        finally:
            stop(cluster)


@pytest.fixture(scope="module")
def training(two_nodes, tmp_path_factory):
    root = tmp_path_factory.mktemp("ray-training")
    shards, run_dir = write_shards(root / "shards"), root / "run"
    sampler = Sampler(two_nodes.sessions)
    run = submit(
        two_nodes,
        "python",
        "-m",
        "jobs.train_lm",
        *TRAIN,
        "--set",
        "parallel.dp=2",
        "--data",
        str(shards),
        "--output",
        str(run_dir),
        sampler=sampler,
        working_dir=True,
    )
    return {"run": run, "run_dir": run_dir, "sampler": sampler, "shards": shards}


def test_training_job_runs_one_worker_on_each_node(two_nodes, training):
    run = training["run"]
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-3000:]
    rows = [json.loads(line) for line in (training["run_dir"] / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    assert all(r["loss"] == r["loss"] and 0 < r["loss"] < 20 for r in rows)  # finite and sane
    events = [json.loads(line) for line in (training["run_dir"] / "events.jsonl").read_text().splitlines()]
    assert events[0]["event"] == "start" and events[0]["world_size"] == 2 and events[-1]["event"] == "finish"
    nodes = cluster_nodes_sids(training["sampler"], run.stdout + run.stderr, two_nodes.sids)
    assert nodes == {"head", "node"}, nodes


def test_every_bind_beyond_loopback_is_named_in_the_readme(two_nodes, training):
    named = readme_binds()
    assert named, "no '| Ray process' table in docs/clusters.md"
    seen = training["sampler"].seen
    assert {"gcs_server", "raylet", "dashboard agent", "ray worker"} <= {s.component for s in seen}
    unnamed = sorted(
        {
            f"{s.component} on {s.kind} {s.address}:{s.port}"
            for s in seen
            if s.kind != "loopback" and (s.component, s.kind) not in named
        }
    )
    assert not unnamed, "binds beyond loopback that docs/clusters.md does not name: " + "; ".join(unnamed)
    # The table's row: a Ray worker listens on all interfaces on its worker port only. Anything
    # else there (torch.distributed's store, as torch binds it: *:ephemeral) is a bind it does not name.
    extra = sorted(
        f"pid {s.pid} {s.proto} {s.address}:{s.port}"
        for s in seen
        if s.component == "ray worker" and s.kind == "wildcard" and not WORKER_PORTS[0] <= s.port <= WORKER_PORTS[1]
    )
    assert not extra, "Ray workers listening on all interfaces beyond their worker port: " + "; ".join(extra)


def test_submission_without_the_token_is_refused(two_nodes):
    bare_home = two_nodes.root / "bare-home"
    bare_home.mkdir(exist_ok=True)
    no_token = {**two_nodes.env, "HOME": str(bare_home)}
    run = submit(two_nodes, "python", "-c", "print('ran')", env=no_token, timeout=300)
    assert run.returncode != 0 and "ran" not in run.stdout
    assert "Unauthorized" in run.stdout + run.stderr
    other = two_nodes.root / "other-token"
    other.write_text(secrets.token_hex(32))
    other.chmod(0o600)
    run = submit(
        two_nodes,
        "python",
        "-c",
        "print('ran')",
        timeout=300,
        env={**no_token, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(other)},
    )
    assert run.returncode != 0 and "ran" not in run.stdout
    assert "Invalid authentication token" in run.stdout + run.stderr
    with pytest.raises(urllib.error.HTTPError) as e:  # the job API itself, no client library
        urllib.request.urlopen(f"{two_nodes.dashboard}/api/jobs/", timeout=30)
    assert e.value.code == 401


def test_more_workers_than_cpus_is_refused_before_launch(two_nodes, training):
    run = submit(
        two_nodes,
        "python",
        "-m",
        "jobs.train_lm",
        *TRAIN,
        "--set",
        "parallel.tp=2",
        "--set",
        "parallel.dp=2",
        "--data",
        str(training["shards"]),
        "--output",
        str(training["run_dir"].parent / "too-big"),
        working_dir=True,
        timeout=300,
    )  # without the check: retried forever, TimeoutExpired
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-3000:]
    assert "cannot launch" in out and "needs 4 Ray workers of 1 CPU each" in out and "room for 2" in out, out[-3000:]
    assert not (training["run_dir"].parent / "too-big" / "metrics.jsonl").exists()


# --- elastic data parallelism (last in the module: it stops the second node for good) -------------

ELASTIC_STEPS = 24
ELASTIC = [
    "--config",
    "jobs/configs/debug.toml",
    "--set",
    f"train.steps={ELASTIC_STEPS}",
    "--set",
    "train.eval_every=0",
    "--set",
    "train.checkpoint_every=4",
    "--set",
    "train.keep_checkpoints=0",
    "--set",
    "ray.max_failures=2",
]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_elastic_run_goes_on_with_one_worker_when_a_node_is_lost(two_nodes, training, tmp_path):
    """dp=2 with ray.min_workers=1, one worker per node; the second node is stopped mid-run and
    never comes back: Ray Train V2 restarts the group with the one worker the head has room for,
    which resumes from the last complete checkpoint at dp=1 and finishes. Its losses after the
    change equal those of a fresh dp=1 run resumed from that checkpoint."""
    run_dir, shards = tmp_path / "elastic", training["shards"]
    done: list[subprocess.CompletedProcess] = []
    job = threading.Thread(
        target=lambda: done.append(
            submit(
                two_nodes,
                "python",
                "-m",
                "jobs.train_lm",
                *ELASTIC,
                "--set",
                "parallel.dp=2",
                "--set",
                "ray.min_workers=1",
                "--set",
                "ray.resize_interval_s=5",
                "--set",
                "ray.worker_start_timeout_s=30",  # Ray's 60 s wait for the lost node's worker, halved
                "--data",
                str(shards),
                "--output",
                str(run_dir),
                working_dir=True,
                timeout=480,
            )
        )
    )
    job.start()
    deadline = time.monotonic() + 300
    while not (run_dir / "metrics.jsonl").exists() or len(_jsonl(run_dir / "metrics.jsonl")) < 6:
        assert job.is_alive() and time.monotonic() < deadline, done[0].stdout[-4000:] if done else "no progress"
        time.sleep(0.2)
    subprocess.run([NODE, "stop", str(two_nodes.root / "node")], env=two_nodes.env, timeout=60, check=True)
    job.join(500)
    assert done and done[0].returncode == 0, (done[0].stdout[-6000:] + done[0].stderr[-2000:]) if done else "hung"
    events = _jsonl(run_dir / "events.jsonl")
    assert events[0]["event"] == "start" and events[0]["world_size"] == 2 and events[0]["layout"]["dp"] == 2
    resumed = [e for e in events if e["event"] == "resume"]
    assert resumed and resumed[-1]["world_size"] == 1 and resumed[-1]["layout"]["dp"] == 1, events
    assert events[-1] == {**events[-1], "event": "finish", "step": ELASTIC_STEPS}
    changed_at = resumed[-1]["step"]
    assert 0 < changed_at < ELASTIC_STEPS, events
    rows = _jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == list(range(1, ELASTIC_STEPS + 1))

    # The reference: a fresh run at dp=1 in a RUN_DIR holding only the checkpoint the change resumed from.
    ref = tmp_path / "reference"
    name = f"step-{changed_at:07d}"
    shutil.copytree(run_dir / "checkpoints" / name, ref / "checkpoints" / name)
    run = submit(
        two_nodes,
        "python",
        "-m",
        "jobs.train_lm",
        *ELASTIC,
        "--set",
        "parallel.dp=1",
        "--data",
        str(shards),
        "--output",
        str(ref),
        working_dir=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
    after = {r["step"]: r["loss"] for r in rows if r["step"] > changed_at}
    expected = {r["step"]: r["loss"] for r in _jsonl(ref / "metrics.jsonl") if r["step"] > changed_at}
    assert sorted(after) == sorted(expected) == list(range(changed_at + 1, ELASTIC_STEPS + 1))
    assert max(abs(after[s] - expected[s]) for s in after) <= 1e-6, (after, expected)
