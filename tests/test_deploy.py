"""docker-compose.yml, the Dockerfile and the Spark auth scripts, checked without a Docker engine
(none runs on these machines): the parsed YAML and Dockerfile must keep the cluster secure by
default, and deploy/spark-submit.sh is run against a stub spark-submit."""

import os
import re
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SERVICES = {"spark-master", "spark-worker", "ray-head", "ray-worker", "scheduler"}
SPARK_SERVICES = {"spark-master", "spark-worker", "scheduler"}  # hold the Spark secret
RAY_SERVICES = {"ray-head", "ray-worker", "scheduler"}  # hold the Ray token
IMAGE_ROOT = "/opt/zhcorpus/"  # the Dockerfile's WORKDIR: the repo's root inside the image


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _services() -> dict:
    return _compose()["services"]


def _properties(path: Path) -> dict[str, str]:
    """A Java properties file as Spark reads it: key, blanks, value; # lines are comments."""
    props = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            props[key] = value.strip()
    return props


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            instr, _, args = line.partition(" ")
            out.append((instr.upper(), args.strip()))
    return out


def _mounts(svc: dict) -> list[tuple[str, str, str]]:
    """(source, target, mode) of each short-syntax volume."""
    out = []
    for v in svc.get("volumes", []):
        m = re.fullmatch(r"(?P<src>.+?):(?P<dst>/[^:]*)(?::(?P<mode>[a-z,]+))?", v)
        assert m, f"unparsed volume {v}"
        out.append((m["src"], m["dst"], m["mode"] or "rw"))
    return out


def test_five_services_from_one_build():
    services = _services()
    assert set(services) == SERVICES
    assert {s.get("build") for s in services.values()} == {"."}
    assert len({s.get("image") for s in services.values()}) == 1
    assert (ROOT / "Dockerfile").is_file()


def test_ports_bound_to_loopback_only():
    for name, svc in _services().items():
        assert svc.get("network_mode") != "host", name
        for port in svc.get("ports", []):
            if isinstance(port, dict):  # long syntax
                assert port.get("host_ip") == "127.0.0.1", f"{name} publishes {port} beyond loopback"
            else:
                assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"


def test_only_the_uis_are_published():
    published = {name: sorted(str(p).split(":")[-1] for p in svc.get("ports", [])) for name, svc in _services().items()}
    assert published["spark-master"] == ["8080"]  # not 7077: drivers run inside the network
    assert published["ray-head"] == ["8265"]  # not the GCS port 6379
    assert not any(published[n] for n in SERVICES - {"spark-master", "ray-head"})


def test_containers_do_not_run_as_root():
    for name, svc in _services().items():
        user = str(svc.get("user", ""))
        assert user and user.split(":")[0] not in ("0", "root"), name
        assert not svc.get("privileged"), name
        assert svc.get("cap_drop") == ["ALL"], name
        assert "no-new-privileges:true" in svc.get("security_opt", []), name
    users = [args for instr, args in _dockerfile() if instr == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")


def test_input_mounted_read_only():
    services = _services()
    for name, svc in services.items():
        for source, target, mode in _mounts(svc):
            assert "docker.sock" not in source, name
            if target == "/data/input":
                assert mode == "ro", f"{name} mounts the crawl {mode}"
    readers = {n for n, s in services.items() if any(t == "/data/input" for _, t, _ in _mounts(s))}
    assert {"spark-worker", "scheduler"} <= readers  # executors read it; the refresh driver lists it


def test_spark_auth_on_and_rest_server_off():
    conf = _properties(ROOT / "jobs" / "configs" / "spark-cluster.conf")
    assert conf["spark.authenticate"] == "true"
    assert conf["spark.master.rest.enabled"] == "false"
    assert not any(k.startswith("spark.authenticate.secret") for k in conf)  # the secret is never in git
    from etl.runtime.spark import SECURE_DEFAULTS

    assert SECURE_DEFAULTS["spark.master.rest.enabled"] == "false"


def test_spark_services_take_the_secret_from_a_file():
    compose, services = _compose(), _services()
    assert "file" in compose["secrets"]["spark_auth_secret"]
    auth = (ROOT / "deploy" / "spark-auth.sh").read_text()
    assert "${SPARK_AUTH_SECRET_FILE:-/run/secrets/spark_auth_secret}" in auth
    assert "jobs/configs/spark-cluster.conf" in auth
    for name in SPARK_SERVICES:
        svc = services[name]
        assert "spark_auth_secret" in svc.get("secrets", []), name
        assert (
            svc["environment"].get("SPARK_AUTH_SECRET_FILE", "/run/secrets/spark_auth_secret")
            == "/run/secrets/spark_auth_secret"
        ), name
    for name in ("spark-master", "spark-worker"):
        assert services[name]["command"][0] == "deploy/spark-daemon.sh", name  # daemons start through the auth script
    for name in SERVICES - SPARK_SERVICES:
        assert "spark_auth_secret" not in services[name].get("secrets", []), name


def test_ray_services_use_token_auth_from_a_file():
    compose, services = _compose(), _services()
    assert "file" in compose["secrets"]["ray_auth_token"]
    for name in RAY_SERVICES:
        svc = services[name]
        assert svc["environment"]["RAY_AUTH_MODE"] == "token", name
        assert svc["environment"]["RAY_AUTH_TOKEN_PATH"] == "/run/secrets/ray_auth_token", name
        assert "ray_auth_token" in svc["secrets"], name
    for name in SERVICES - RAY_SERVICES:
        assert "ray_auth_token" not in services[name].get("secrets", []), name


def test_secret_files_stay_out_of_git_and_the_image():
    for name, secret in _compose()["secrets"].items():
        path = (ROOT / secret["file"]).resolve()
        assert path.parent == ROOT / "deploy" / "secrets", name
        if shutil.which("git") and (ROOT / ".git").exists():
            ignored = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=ROOT)
            assert ignored.returncode == 0, f"{secret['file']} is not git-ignored"
    assert "deploy/secrets" in (ROOT / ".dockerignore").read_text().split()
    assert (ROOT / "deploy" / "secrets" / "README.md").is_file()


def test_files_referenced_by_compose_and_dockerfile_exist():
    for name, svc in _services().items():
        program = svc["command"][0]
        if "/" in program:
            path = ROOT / program.removeprefix(IMAGE_ROOT)
            assert path.is_file() and os.access(path, os.X_OK), f"{name}: {program}"
    for instr, args in _dockerfile():
        if instr == "COPY":
            for src in args.split()[:-1]:
                assert (ROOT / src).exists(), f"COPY {src}"
        if instr == "HEALTHCHECK":
            script = re.search(r'CMD \["([^"]+)"', args).group(1)
            assert (ROOT / script.removeprefix(IMAGE_ROOT)).is_file()


def test_dockerfile_bakes_in_no_secret_and_fetches_nothing_unpinned():
    instructions = _dockerfile()
    assert instructions[0][0] == "FROM" and instructions[0][1].startswith("python:3.11-slim")
    for instr, args in instructions:
        assert not (instr == "ADD" and re.search(r"https?://", args)), args
        if instr in ("ENV", "ARG"):
            assert not re.search(r"(SECRET|TOKEN|PASSWORD|PASSWD|API_KEY)\w*\s*=", args, re.I), args
        if instr == "RUN":
            for pip in re.findall(r"pip install[^&]*", args):
                assert "--no-cache-dir" in pip, pip
    run = " ".join(a for i, a in instructions if i == "RUN")
    assert "openjdk-17-jre-headless" in run
    assert "--index-url https://download.pytorch.org/whl/cpu" in run and "-c requirements.lock" in run
    assert any(i == "HEALTHCHECK" for i, _ in instructions)


def test_dockerignore_keeps_the_context_small_and_clean():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "data", "out", "dist", "build", "deploy/secrets"} <= ignored


# -- deploy/spark-submit.sh against a stub spark-submit ------------------------------------------

STUB = """#!/usr/bin/env bash
# records what spark-submit.sh ran: the argv, then the properties file's content and mode
printf '%s\\n' "$@" > "$STUB_DIR/argv"
conf=$(sed -n '/--properties-file/{n;p;}' "$STUB_DIR/argv")
cp "$conf" "$STUB_DIR/conf"
stat -c %a "$conf" > "$STUB_DIR/mode"
echo "$conf" > "$STUB_DIR/conf_path"
exit "${STUB_RC:-0}"
"""


@pytest.fixture
def stub_submit(tmp_path):
    stub = tmp_path / "spark-submit"
    stub.write_text(STUB)
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    secret = tmp_path / "secret"
    secret.write_text("ab" * 32 + "\n")
    secret.chmod(0o600)
    env = {
        **os.environ,
        "SPARK_SUBMIT": str(stub),
        "STUB_DIR": str(tmp_path),
        "SPARK_AUTH_SECRET_FILE": str(secret),
        "TMPDIR": str(tmp_path),
    }
    return tmp_path, env


def _submit(env, *args):
    return subprocess.run(
        [str(ROOT / "deploy" / "spark-submit.sh"), *args], env=env, capture_output=True, text=True, timeout=30
    )


def test_spark_submit_passes_the_secret_in_a_private_file(stub_submit):
    tmp, env = stub_submit
    run = _submit(env, "--master", "spark://spark-master:7077", "jobs/clean.py", "--input", "x")
    assert run.returncode == 0, run.stderr
    argv = (tmp / "argv").read_text().splitlines()
    assert argv[0] == "--properties-file" and argv[2:] == [
        "--master",
        "spark://spark-master:7077",
        "jobs/clean.py",
        "--input",
        "x",
    ]
    assert "ab" * 32 not in "\n".join(argv)  # not on the command line, where ps shows it
    conf = _properties(tmp / "conf")
    assert conf["spark.authenticate.secret"] == "ab" * 32
    assert conf["spark.authenticate"] == "true" and conf["spark.master.rest.enabled"] == "false"
    assert (tmp / "mode").read_text().strip() == "600"
    assert not Path((tmp / "conf_path").read_text().strip()).exists()  # removed when the driver exits


def test_spark_submit_returns_the_drivers_exit_status(stub_submit):
    _, env = stub_submit
    assert _submit({**env, "STUB_RC": "3"}, "app.py").returncode == 3


@pytest.mark.parametrize("content", ["", "short", "x" * 40 + "\\n", " " + "a" * 40])
def test_spark_submit_refuses_a_missing_or_unusable_secret(stub_submit, content):
    tmp, env = stub_submit
    (tmp / "secret").write_text(content)
    run = _submit(env, "app.py")
    assert run.returncode != 0 and "spark-auth:" in run.stderr
    assert not (tmp / "argv").exists()  # spark-submit never started
    run = _submit({**env, "SPARK_AUTH_SECRET_FILE": str(tmp / "absent")}, "app.py")
    assert run.returncode != 0 and "cannot read" in run.stderr


def test_driver_ui_off_and_daemons_bind_to_their_host():
    conf = _properties(ROOT / "jobs" / "configs" / "spark-cluster.conf")
    assert conf["spark.ui.enabled"] == "false"  # the driver's UI (4040) has no login
    services = _services()
    for name in ("spark-master", "spark-worker"):
        assert services[name]["environment"]["SPARK_LOCAL_IP"] == services[name]["hostname"], name


# -- deploy/spark-daemon.sh against a stub spark-class --------------------------------------------

CLASS_STUB = """#!/usr/bin/env bash
printf '%s\\n' "$@" > "$STUB_DIR/argv"
printf '%s' "${_SPARK_AUTH_SECRET:-}" > "$STUB_DIR/secret_env"
printf '%s' "${SPARK_LOCAL_IP:-}" > "$STUB_DIR/local_ip"
"""


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


@pytest.fixture
def stub_class(stub_submit):
    tmp, env = stub_submit
    (tmp / "bin").mkdir()
    stub = tmp / "bin" / "spark-class"
    stub.write_text(CLASS_STUB)
    stub.chmod(0o755)
    env = {
        k: v
        for k, v in env.items()
        if not k.startswith(("SPARK_HOME", "SPARK_LOCAL_IP", "SPARK_MASTER_", "SPARK_WORKER_"))
    }
    env["PATH"] = f"{tmp / 'bin'}:{env['PATH']}"
    return tmp, env


def _daemon(env, *args):
    return subprocess.run(
        [str(ROOT / "deploy" / "spark-daemon.sh"), *args], env=env, capture_output=True, text=True, timeout=30
    )


# 127.0.0.2 is loopback too (ports checked fast), yet not the default SPARK_LOCAL_IP
@pytest.mark.parametrize(
    "args, local_ip",
    [
        (["master", "--host", "127.0.0.2", "--port", "PORT", "--webui-port", "PORT"], "127.0.0.2"),
        (["worker", "spark://127.0.0.1:7077", "--webui-port", "PORT"], "127.0.0.1"),
    ],
)
def test_spark_daemon_hands_the_secret_over_in_its_environment(stub_class, args, local_ip):
    tmp, env = stub_class
    args = [_free_port() if a == "PORT" else a for a in args]  # Spark's defaults may be taken on this host
    run = _daemon(env, *args)
    assert run.returncode == 0, run.stderr
    argv = (tmp / "argv").read_text().splitlines()
    assert argv[1:3] == ["--properties-file", str(ROOT / "jobs" / "configs" / "spark-cluster.conf")]
    assert argv[3:] == args[1:]
    assert (tmp / "secret_env").read_text() == "ab" * 32
    assert (tmp / "local_ip").read_text() == local_ip
    leftovers = [
        p
        for p in tmp.rglob("*")
        if p.is_file() and "ab" * 32 in p.read_text(errors="replace") and p.name not in ("secret", "secret_env")
    ]
    assert not leftovers, leftovers  # no copy of the secret: nothing to leave behind in TMPDIR


@pytest.mark.parametrize("role, option", [("master", "--port"), ("master", "--webui-port"), ("worker", "--webui-port")])
def test_spark_daemon_refuses_a_port_another_process_serves(stub_class, role, option):
    tmp, env = stub_class
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        ports = {"--port": _free_port(), "--webui-port": _free_port(), option: port}
        target = [] if role == "master" else ["spark://127.0.0.1:7077"]
        run = _daemon(env, role, *target, *(a for kv in ports.items() for a in kv))
    # Spark would silently move to the next port; a worker pointed at :7077 would find another master
    assert run.returncode != 0 and f"port {port} ({option}) on 127.0.0.1 is taken" in run.stderr
    assert not (tmp / "argv").exists()  # spark-class never ran


@pytest.mark.parametrize(
    "master, local_ip",
    [
        ("spark://127.0.0.1:7077", "127.0.0.1"),
        ("local[2]", "127.0.0.1"),
        ("spark://localhost:7077", "127.0.0.1"),
        ("spark://10.0.0.5:7077", ""),
    ],
)
def test_spark_submit_binds_the_driver_to_loopback_for_a_loopback_master(stub_submit, master, local_ip):
    tmp, env = stub_submit
    (tmp / "spark-submit").write_text(
        STUB.replace("exit ", 'printf "%s" "${SPARK_LOCAL_IP:-}" > "$STUB_DIR/local_ip"\nexit ')
    )
    env = {k: v for k, v in env.items() if k != "SPARK_LOCAL_IP"}
    assert _submit(env, "--master", master, "app.py").returncode == 0
    assert (tmp / "local_ip").read_text() == local_ip


REFUSED_STUB = """#!/usr/bin/env bash
sleep 60 > /dev/null &  # a child that keeps the driver's stderr open after the driver is gone
echo $! > "$STUB_DIR/child"
echo $$ > "$STUB_DIR/pid"
echo "26/11/23 21:09:28 INFO AuthClientBootstrap: New auth protocol failed, trying SASL." >&2
echo "26/11/23 21:09:28 ERROR TransportClientFactory: Exception while bootstrapping client after 292 ms" >&2
wait
"""


def test_spark_submit_fails_fast_when_the_master_refuses_the_secret(stub_submit):
    tmp, env = stub_submit
    (tmp / "spark-submit").write_text(REFUSED_STUB)
    run = _submit(env, "--master", "spark://127.0.0.1:7077", "app.py")  # 30 s timeout: the stub sleeps 60
    assert run.returncode == 77
    assert "authentication failed" in run.stderr and "Exception while bootstrapping client" in run.stderr
    os.kill(int((tmp / "child").read_text()), 15)
    assert not Path(f"/proc/{(tmp / 'pid').read_text().strip()}").exists()  # the driver was stopped
    assert not list(tmp.glob("spark-auth.*")) and not list(tmp.glob("spark-submit.*"))
