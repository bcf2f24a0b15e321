"""Build what a Spark cluster needs to run the corpus jobs (``make spark-package``):

    dist/zhcorpus-py.zip       the project for ``--py-files``: etl/ filters/ jobs/ train/ and the
                               data files they read (filters/resources/, jobs/configs/, sensitive_words/)
    dist/zhcorpus-env.tar.gz   a venv packed with venv-pack for ``--archives ...#env``: the
                               Spark-side dependencies (fasttext, jieba, OpenCC, pyahocorasick,
                               pyarrow, pandas, ...) pinned by requirements.lock, plus the project
                               source under env/zhcorpus/ (on sys.path through a relative .pth)

The venv leaves out pyspark, ray and torch (1.5 GB installed): executors import pyspark from the
cluster's own Spark (``$SPARK_HOME/python/lib/pyspark.zip``), and ray/torch belong to the trainer,
which runs on Ray, not on Spark executors. venv-pack does not ship the interpreter: the cluster's
nodes need Python 3.11 at the path this build's base interpreter has (``dist/zhcorpus-env.json``
records it); build inside the cluster's image to get that for free.

The venv under build/spark-env is reused while pyproject.toml, requirements.lock and this file
are unchanged; the project copy and the archive are redone on every run.

    python deploy/spark_package.py [--dist dist] [--build build]
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

log = logging.getLogger("zhcorpus")
ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("etl", "filters", "jobs", "train")
DATA_DIRS = ("sensitive_words",)  # read through paths relative to the packages (filters/keywords.py)
# Not in the executors' venv; see the module docstring.
EXCLUDED = {"pyspark", "ray", "torch"}
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


def spark_requirements(pyproject: Path) -> list[str]:
    """The project's runtime dependencies minus EXCLUDED, as written in pyproject.toml."""
    deps = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    name = lambda req: req.split("[")[0].split("=")[0].split("<")[0].split(">")[0].strip().lower()  # noqa: E731
    missing = EXCLUDED - {name(d) for d in deps}
    if missing:
        raise SystemExit(f"pyproject.toml no longer lists {sorted(missing)}: update EXCLUDED in {__file__}")
    return [d for d in deps if name(d) not in EXCLUDED]


def env_key(root: Path) -> str:
    h = hashlib.sha256()
    for f in (root / "pyproject.toml", root / "requirements.lock", Path(__file__)):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def build_env(root: Path, env: Path) -> None:
    """A fresh venv with the Spark-side dependencies, pinned by requirements.lock (cached by env_key)."""
    stamp = env / f".zhcorpus-env-{env_key(root)}"
    if stamp.exists():
        log.info("reusing %s (dependencies unchanged)", env)
        return
    shutil.rmtree(env, ignore_errors=True)
    venv.EnvBuilder(with_pip=True, symlinks=True).create(env)
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--no-cache-dir", "-q"]
    subprocess.run([*pip, "-c", str(root / "requirements.lock"), *spark_requirements(root / "pyproject.toml"),
                    VENV_PACK], check=True)
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
    subprocess.run([str(env / "bin" / "venv-pack"), "-p", str(env), "-o", str(tmp), "-q"], check=True)
    tmp.chmod(0o644)
    tmp.replace(out)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dist", type=Path, default=ROOT / "dist")
    p.add_argument("--build", type=Path, default=ROOT / "build")
    args = p.parse_args(argv)
    args.dist.mkdir(parents=True, exist_ok=True)
    zip_path, env_path = args.dist / "zhcorpus-py.zip", args.dist / "zhcorpus-env.tar.gz"

    t0 = time.time()
    n = build_zip(ROOT, zip_path)
    log.info("%s: %d files, %.1f KiB", zip_path, n, zip_path.stat().st_size / 1024)
    env = args.build / "spark-env"
    build_env(ROOT, env)
    t1 = time.time()
    install_project(ROOT, env)
    pack_env(env, env_path)
    t2 = time.time()
    base = subprocess.run([str(env / "bin" / "python"), "-c", "import sys; print(sys._base_executable)"],
                          check=True, capture_output=True, text=True).stdout.strip()
    meta = {"python": base, "python_version": sys.version.split()[0], "excluded": sorted(EXCLUDED),
            "env_key": env_key(ROOT), "bytes": env_path.stat().st_size}
    (args.dist / "zhcorpus-env.json").write_text(json.dumps(meta, indent=2) + "\n")
    log.info("%s: %.1f MiB (venv %.0f s, copy + pack %.0f s); executors need %s (Python %s)", env_path,
             env_path.stat().st_size / 2**20, t1 - t0, t2 - t1, base, meta["python_version"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
