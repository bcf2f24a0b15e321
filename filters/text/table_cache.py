"""Per-code-point tables kept on disk between processes (issue 33: a build's fixed costs).

Several modules build a table over all 1,114,112 code points from Python's Unicode database
(``filters.text.chars.char_table``, the fluency model's NFKC tables, the classifiers' word
classes): about 2 s of every fresh Python worker's first batch, paid again by every Spark
worker of every build and every nightly run. ``disk_cached(name)`` keeps a table builder's result
in ``cache_dir()`` as an ``.npz`` (arrays only, read with ``allow_pickle=False``) under a key of
what it depends on:

- the Python version and its Unicode database (``unicodedata.unidata_version``), numpy's major version;
- the bytes of every module of the ``filters`` package (a table's builder reads constants of other
  modules: any change to any of them builds every table again, once).

A table that cannot be read (missing, truncated, another key) is built and written again; a cache
directory that cannot be written (a read-only home on a cluster's executors) only costs the build.
``ZHCORPUS_TABLE_CACHE=0`` turns the cache off; ``ZHCORPUS_CACHE_DIR`` moves it.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import sys
import unicodedata
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np

from base.atomic import temporary_name

log = logging.getLogger("zhcorpus")

ENV_OFF = "ZHCORPUS_TABLE_CACHE"  # "0": always build
ENV_DIR = "ZHCORPUS_CACHE_DIR"
Tables = TypeVar("Tables", np.ndarray, tuple)


def cache_dir() -> Path:
    """``$ZHCORPUS_CACHE_DIR``, else ``$XDG_CACHE_HOME/zhcorpus``, else ``~/.cache/zhcorpus``; tables/ under it."""
    root = os.environ.get(ENV_DIR) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "zhcorpus"
    )
    return Path(root) / "tables"


@functools.lru_cache(maxsize=1)
def fingerprint() -> str | None:
    """What the tables depend on, hashed (None: the package is not on a file system, e.g. a zip)."""
    package = Path(__file__).resolve().parents[1]  # filters/
    files = sorted(package.rglob("*.py"))
    if not files:
        return None
    h = hashlib.sha256()
    h.update(f"{sys.version_info[:3]} {unicodedata.unidata_version} numpy {np.__version__.split('.')[0]}".encode())
    for f in files:
        h.update(str(f.relative_to(package)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:24]


def disk_cached(name: str) -> Callable[[Callable[[], Tables]], Callable[[], Tables]]:
    """Decorate a builder of one array or a tuple of arrays (no arguments): its result is read from
    ``cache_dir()/NAME-KEY.npz`` when there, else built and written there."""

    def wrap(build: Callable[[], Tables]) -> Callable[[], Tables]:
        @functools.wraps(build)
        def get() -> Tables:
            key = fingerprint() if os.environ.get(ENV_OFF, "1") != "0" else None
            if key is None:
                return build()
            path = cache_dir() / f"{name}-{key}.npz"
            got = _read(path)
            if got is not None:
                return got
            value = build()
            _write(path, value)
            return value

        return get

    return wrap


def _read(path: Path) -> np.ndarray | tuple | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = [z[f"a{i}"] for i in range(int(z["n"]))]
            return arrays[0] if bool(z["single"]) else tuple(arrays)
    except OSError as e:  # not there, or no such directory: nothing cached
        if not isinstance(e, (FileNotFoundError, NotADirectoryError, PermissionError)):
            log.warning("table cache %s is unreadable (%s): building it again", path, e)
        return None
    except Exception as e:  # truncated, or not ours: build it again
        log.warning("table cache %s is unreadable (%s): building it again", path, e)
        return None


def _write(path: Path, value: np.ndarray | tuple) -> None:
    single = isinstance(value, np.ndarray)
    arrays = [value] if single else list(value)
    tmp = temporary_name(str(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:  # written whole under a hidden name, then renamed: readers never see a part
            np.savez(f, n=len(arrays), single=single, **{f"a{i}": a for i, a in enumerate(arrays)})
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        log.debug("table cache %s not written: %s", path, e)
        try:
            os.unlink(tmp)
        except OSError:
            pass
