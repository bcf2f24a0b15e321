"""deploy/ray-node.sh against a stub ``ray``: the token (created mode 600, refused when others can
read it), the loopback-only one-host head, and stopping exactly the node's own session. The real
Ray clusters are tests/test_cluster_ray.py."""

import os
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


RAY_STUB = """#!/usr/bin/env bash
printf '%s\\n' "$@" > "$STUB_DIR/ray-argv"
env | grep -E '^RAY_' | sort > "$STUB_DIR/ray-env"
sleep 300 > /dev/null 2>&1 &  # a daemon of the node, as ray start leaves behind
echo $! > "$STUB_DIR/daemon"
"""


@pytest.fixture
def stub_ray(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ray").write_text(RAY_STUB)
    (tmp_path / "bin" / "ray").chmod(0o755)
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(
        PATH=f"{tmp_path / 'bin'}:{env['PATH']}",
        HOME=str(tmp_path / "home"),
        STUB_DIR=str(tmp_path),
        RAY_NODE_STOP_GRACE="2",
    )
    return tmp_path, env


def _free_ports() -> list[str]:
    """--option=PORT for every port ray-node.sh checks, all free (the defaults may be taken)."""
    out = []
    for name in ("port", "dashboard-port", "ray-client-server-port", "dashboard-agent-listen-port"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            out.append(f"--{name}={s.getsockname()[1]}")
    return out


def _node(env, *args):
    return subprocess.run(
        [str(ROOT / "deploy" / "ray-node.sh"), *args], env=env, capture_output=True, text=True, timeout=30
    )


def test_ray_node_head_is_loopback_only_and_stops_only_its_own_session(stub_ray):
    tmp, env = stub_ray
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)  # not started by ray-node.sh
    try:
        run = _node(env, "head", str(tmp / "head"), "--num-cpus", "2", *_free_ports())
        assert run.returncode == 0, run.stderr
        token = tmp / "home" / ".ray" / "auth_token"
        assert stat.S_IMODE(token.stat().st_mode) == 0o600 and len(token.read_text()) == 64
        argv = (tmp / "ray-argv").read_text().splitlines()
        assert argv[:2] == ["start", "--temp-dir"] and {
            "--head",
            "--node-ip-address=127.0.0.1",
            "--dashboard-host=127.0.0.1",
            "--num-cpus",
        } <= set(argv)
        ray_env = (tmp / "ray-env").read_text().splitlines()
        assert "RAY_AUTH_MODE=token" in ray_env and "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" in ray_env
        daemon = int((tmp / "daemon").read_text())
        assert os.getsid(daemon) == int((tmp / "head" / "node.sid").read_text())
        assert _node(env, "head", str(tmp / "head"), *_free_ports()).returncode != 0  # still running: not twice
        assert _node(env, "stop", str(tmp / "head")).returncode == 0
        time.sleep(0.5)
        state = Path(f"/proc/{daemon}/stat")
        assert not state.exists() or state.read_text().rsplit(")", 1)[1].split()[0] == "Z"
        assert bystander.poll() is None  # another session's process is left alone
    finally:
        bystander.kill()
        bystander.wait()


def test_ray_node_cluster_modes_and_token_checks(stub_ray):
    tmp, env = stub_ray
    token = tmp / "home" / ".ray" / "auth_token"
    token.parent.mkdir()
    token.write_text("x" * 64)
    token.chmod(0o644)  # what `ray get-auth-token --generate` leaves
    run = _node(env, "cluster-head", str(tmp / "head"), *_free_ports())
    assert run.returncode != 0 and "readable by other users" in run.stderr
    token.chmod(0o600)
    try:
        assert (
            _node(env, "join", str(tmp / "node"), "10.0.0.1:6379", "--num-cpus", "1", _free_ports()[-1]).returncode == 0
        )
        argv = (tmp / "ray-argv").read_text().splitlines()
        assert "--address=10.0.0.1:6379" in argv and "--head" not in argv
        assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0" not in (tmp / "ray-env").read_text()  # a joinable cluster
    finally:
        _node(env, "stop", str(tmp / "node"))
    assert token.read_text() == "x" * 64  # an existing token is kept


def test_ray_node_refuses_a_port_another_process_serves(stub_ray):
    tmp, env = stub_ray
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = [p for p in _free_ports() if not p.startswith("--dashboard-agent-listen-port")]
        run = _node(env, "head", str(tmp / "head"), *ports, "--dashboard-agent-listen-port", str(port))
    assert run.returncode != 0 and f"port {port} (--dashboard-agent-listen-port) is taken" in run.stderr
    assert not (tmp / "ray-argv").exists()  # ray start never ran
