"""docker-compose.yml checked statically (no Docker engine on these machines)."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _services():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def test_expected_services_from_one_image():
    services = _services()
    assert {"spark-master", "spark-worker", "ray-head", "ray-worker"} <= set(services)
    assert {s.get("build") for s in services.values()} == {"."}


def test_ports_bound_to_loopback_only():
    for name, svc in _services().items():
        for port in svc.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"


def test_not_root_input_read_only_ray_token_auth():
    for name, svc in _services().items():
        assert svc.get("user") and not str(svc["user"]).startswith("0"), name
        assert not svc.get("privileged"), name
        inputs = [v for v in svc["volumes"] if "/data/input" in v]
        assert inputs and all(v.endswith(":ro") for v in inputs), name
        if name.startswith("ray"):
            assert svc["environment"]["RAY_AUTH_MODE"] == "token"


def test_spark_rest_submission_server_off():
    conf = (ROOT / "jobs" / "configs" / "spark-cluster.conf").read_text().split()
    assert conf[conf.index("spark.master.rest.enabled") + 1] == "false"
    from etl.spark import SECURE_DEFAULTS

    assert SECURE_DEFAULTS["spark.master.rest.enabled"] == "false"
