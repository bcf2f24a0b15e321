"""A job that starts its own Ray keeps every socket on 127.0.0.1 (train/launch.py; issue 24).

* ``python -m jobs.train_lm`` without an address, at dp=2 (the tiny debug model, shards written by
  hand as tests/test_cluster_ray.py writes them), with the dashboard on;
* the proxy judge's start-up (``train.proxy.init_ray``, what ``jobs.judge_rules`` runs before its
  proxy trainings) followed by two tasks that each set up a one-rank gloo group as a proxy run
  does, and sleep.

Each runs as the leader of a session of its own; the listening sockets of every process of that
session (GCS, raylet, agents, dashboard, metrics exporters, workers, torch's store, the driver)
are sampled while it runs (tests/cluster_fixture.py) and must all be on loopback. The metrics
exporters get free ports (DASHBOARD_METRIC_PORT, AUTOSCALER_METRIC_PORT), so another Ray on this
machine holding the default ones cannot hide them. The jobs' environment points gloo at a LAN
interface (GLOO_SOCKET_IFNAME), which is where gloo listens on a host whose name resolves to its
LAN address (this one's resolves to 127.0.0.1); the local Ray must bring it back to loopback.
Before train/launch.py both runs listened on every interface and on the host's address.
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.cluster_fixture import ROOT, Sampler, Sessions, free_port, lan_interface, short_dir, watched
from tests.test_cluster_ray import TRAIN, write_shards

pytestmark = pytest.mark.slow
# A job's Ray: the processes every local start has (the driver and torch's store come on top).
RAY_CORE = {"gcs_server", "raylet", "dashboard agent", "runtime env agent", "ray worker"}
PROXY_PROBE = """
import time, ray
from train.proxy import ProxyRaySection, init_ray

def run(seconds):  # what train.proxy.train_one sets up: a one-rank gloo group
    import torch.distributed as dist
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    time.sleep(seconds)
    dist.destroy_process_group()
    return ray.util.get_node_ip_address()

init_ray(ProxyRaySection())
run = ray.remote(num_cpus=1)(run)
print("workers on", sorted(set(ray.get([run.remote(4), run.remote(4)]))))
"""


@pytest.fixture
def ray_root():
    """A short temporary root for Ray's session directory (sockets: AF_UNIX paths are short), and
    an environment without any address of another Ray, with free ports for the metrics servers."""
    root = short_dir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "DASHBOARD_", "AUTOSCALER_"))}
    metrics = {"DASHBOARD_METRIC_PORT": free_port(), "AUTOSCALER_METRIC_PORT": free_port()}
    env.update(
        {k: str(v) for k, v in metrics.items()},
        RAY_TMPDIR=str(root),
        RAY_memory_monitor_refresh_ms="0",
        PYTHONPATH=str(ROOT),
    )
    if lan := lan_interface():
        env["GLOO_SOCKET_IFNAME"] = lan
    with watched(root, remove=True):  # Ray's session logs in the report of a failing test
        yield root, env, metrics


def sampled_run(argv: list[str], env: dict[str, str], timeout: float = 240):
    """``argv`` in a session of its own, sampled every half second; every process of the session
    is stopped afterwards. Returns (the run, the listeners seen)."""
    sessions = Sessions()
    sampler = Sampler(sessions)
    try:
        run = sampler.run(argv, every=0.5, env=env, cwd=ROOT, timeout=timeout, start_new_session=True)
    finally:
        sessions.stop()
    return run, sampler.seen


def beyond_loopback(seen) -> list[str]:
    return sorted(f"{s.component} pid {s.pid} {s.proto} {s.address}:{s.port}" for s in seen if s.kind != "loopback")


def test_train_lm_with_its_own_ray_listens_on_loopback_only(ray_root):
    root, env, metrics = ray_root
    argv = [
        sys.executable,
        "-m",
        "jobs.train_lm",
        *TRAIN,
        "--set",
        "train.steps=2",
        "--set",
        "parallel.dp=2",
        "--data",
        str(write_shards(root / "shards")),
        "--output",
        str(root / "run"),
    ]
    run, seen = sampled_run(argv, env)
    assert run.returncode == 0 and (root / "run" / "metrics.jsonl").exists(), run.stderr[-5000:]
    components = {s.component for s in seen}
    assert RAY_CORE | {"dashboard", "ray job driver"} <= components, components
    ports = {s.port for s in seen}
    assert set(metrics.values()) <= ports, f"the metrics exporters were not seen: {sorted(ports)}"
    beyond = beyond_loopback(seen)
    assert not beyond, "train_lm's own Ray listened beyond loopback: " + ", ".join(beyond)


def test_proxy_judge_start_up_listens_on_loopback_only(ray_root):
    root, env, metrics = ray_root
    run, seen = sampled_run([sys.executable, "-c", PROXY_PROBE], env)
    assert run.returncode == 0, run.stderr[-5000:]
    assert "workers on ['127.0.0.1']" in run.stdout, run.stdout
    components = {s.component for s in seen}
    assert RAY_CORE <= components, components
    assert metrics["AUTOSCALER_METRIC_PORT"] in {s.port for s in seen}, "the autoscaler's metrics were not seen"
    beyond = beyond_loopback(seen)
    assert not beyond, "the proxy judge's Ray listened beyond loopback: " + ", ".join(beyond)
