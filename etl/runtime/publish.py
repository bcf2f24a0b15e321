"""Atomic publishing: one way to make a directory or a small file appear whole or not at all, on
a local disk or any Hadoop file system (HDFS, ``file:``; on object stores a rename is a copy).

    with publish_dir("out/corpus", overwrite=True) as staging:     # commit on success
        frame.write.parquet(staging.path("documents"))
        staging.write_text("report.json", text)
    # an exception: the staging tree is removed, the old version (if any) stays

    with publish_dir("hdfs:///corpus/v42", storage=HadoopStorage(spark)) as staging: ...
    write_atomic("RUN/state.json", text)                             # one file, replaced whole
    put_file(local_path, "hdfs:///corpus/v42.staging-x/shards/shard-00000.bin")  # from an executor

A directory is written under a sibling ``DEST.staging-<run>``; commit renames it to ``DEST``.
Replacing an existing ``DEST`` on a Linux local disk swaps the two trees with one
``renameat2(RENAME_EXCHANGE)`` and then deletes the old tree, so there is no moment without a
version. Where no exchange exists (HDFS, other systems) the old tree is first renamed aside to
``DEST.retired-<run>``; every later publish of ``DEST`` first runs ``recover``, which renames a
retired tree back when a crash came between the two renames. Either way a reader finds the old
or the new version, never neither (``tests/test_publish.py`` kills a publish at each step).

Pure Python plus Hadoop's FileSystem API through an existing SparkSession; no pyspark import
unless a ``HadoopStorage`` is made. The one-file local case is ``base.atomic`` (what ``train/``
uses: no ``etl`` on training workers).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Protocol

from base.atomic import local_path, temporary_name, write_synced
from base.atomic import write_atomic as base_write_atomic
from etl.runtime.failpoints import failpoint

log = logging.getLogger("zhcorpus")
STAGING, RETIRED = ".staging-", ".retired-"
_RENAME_EXCHANGE = 2  # linux/fs.h


class OutputExists(FileExistsError):
    """The destination exists and the caller did not ask to replace it."""


class Storage(Protocol):
    """The few file-system operations publishing needs; paths are strings in the store's syntax."""

    def qualify(self, path: str) -> str: ...
    def exists(self, path: str) -> bool: ...
    def mkdirs(self, path: str) -> None: ...
    def delete(self, path: str) -> None: ...
    def rename(self, src: str, dst: str) -> None: ...
    def exchange(self, a: str, b: str) -> bool: ...  # atomic swap; False when the store cannot
    def siblings(self, path: str) -> list[str]: ...
    def write_bytes(self, path: str, data: bytes) -> None: ...


class LocalStorage:
    """The local file system (``file:`` prefixes accepted)."""

    def qualify(self, path: str) -> str:
        return local_path(path)

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def mkdirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def delete(self, path: str) -> None:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)

    def rename(self, src: str, dst: str) -> None:
        os.rename(src, dst)

    def exchange(self, a: str, b: str) -> bool:
        libc = _libc()
        if libc is None:
            return False
        AT_FDCWD = -100
        if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), _RENAME_EXCHANGE) == 0:
            return True
        err = ctypes.get_errno()
        if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # file system without exchange
            return False
        raise OSError(err, f"renameat2({a}, {b}, RENAME_EXCHANGE): {os.strerror(err)}")

    def siblings(self, path: str) -> list[str]:
        parent = os.path.dirname(path)
        return [os.path.join(parent, n) for n in os.listdir(parent)] if os.path.isdir(parent) else []

    def write_bytes(self, path: str, data: bytes) -> None:
        write_synced(path, data)


class HadoopStorage:
    """Any Hadoop file system, through the JVM of ``spark``."""

    def __init__(self, spark):
        self._Path = spark._jvm.org.apache.hadoop.fs.Path
        self._conf = spark._jsc.hadoopConfiguration()

    def _fs(self, path: str):
        p = self._Path(path)
        return p, p.getFileSystem(self._conf)

    def qualify(self, path: str) -> str:
        p, fs = self._fs(path)
        return fs.makeQualified(p).toString()

    def exists(self, path: str) -> bool:
        p, fs = self._fs(path)
        return bool(fs.exists(p))

    def mkdirs(self, path: str) -> None:
        p, fs = self._fs(path)
        fs.mkdirs(p)

    def delete(self, path: str) -> None:
        p, fs = self._fs(path)
        fs.delete(p, True)

    def rename(self, src: str, dst: str) -> None:
        s, fs = self._fs(src)
        if not fs.rename(s, self._Path(dst)):
            raise OSError(f"rename {src} -> {dst} failed")

    def exchange(self, a: str, b: str) -> bool:
        return False

    def siblings(self, path: str) -> list[str]:
        p, fs = self._fs(path)
        parent = p.getParent()
        if parent is None or not fs.exists(parent):
            return []
        return [st.getPath().toString() for st in fs.listStatus(parent)]

    def write_bytes(self, path: str, data: bytes) -> None:
        p, fs = self._fs(path)
        stream = fs.create(p, True)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()


def storage_for(path: str, spark=None) -> Storage:
    """Local storage for plain and ``file:`` paths without a session; Hadoop's otherwise."""
    if spark is None:
        if "://" in path and not path.startswith("file:"):
            raise ValueError(f"{path}: a Hadoop path needs a SparkSession to publish through")
        return LocalStorage()
    return HadoopStorage(spark)


class Staging:
    """Where a publication is written before it is committed."""

    access = None  # base.s3.S3Access of a staging on an object store (etl.runtime.objstore); None here

    def __init__(self, storage: Storage, root: str):
        self.storage, self.root = storage, root

    def path(self, name: str) -> str:
        """Where a component (``documents``, ``report.json`` ...) goes before the commit."""
        return f"{self.root}/{name}"

    def write_text(self, name: str, text: str) -> None:
        self.storage.write_bytes(self.path(name), text.encode("utf-8"))

    def delete(self, name: str) -> None:
        """Remove an intermediate component before the commit."""
        self.storage.delete(self.path(name))

    def write_parquet(self, name: str, df) -> None:
        """``df`` as the Parquet directory ``name`` (Spark's writer, through Hadoop)."""
        df.write.parquet(self.path(name))

    def read_parquet(self, spark, name: str):
        return spark.read.parquet(self.path(name))

    def adopt(self, name: str) -> None:
        """A file written under ``path(name)`` by someone else: nothing to record on a file system
        (an object store's staging records it for its commit: ``etl.runtime.objstore``)."""

    def record(self, name: str, size: int, sha256: str) -> None:
        """As ``adopt``, with the size and sha256 known."""


@contextmanager
def publish_dir(dest: str, overwrite: bool = False, storage: Storage | None = None) -> Iterator[Staging]:
    """Stage a directory, then commit it as ``dest`` when the block ends without an exception.
    An existing ``dest`` is replaced only with ``overwrite`` (else ``OutputExists``, before any work)."""
    storage = storage or LocalStorage()
    dest = storage.qualify(dest).rstrip("/")
    recover(dest, storage)
    if storage.exists(dest) and not overwrite:
        raise OutputExists(f"{dest} already exists; pass --overwrite to replace it")
    run = uuid.uuid4().hex[:12]
    staging = Staging(storage, dest + STAGING + run)
    storage.mkdirs(staging.root)
    try:
        yield staging
        failpoint("publish:staged")
        _commit(storage, staging.root, dest, run)
    except BaseException:
        storage.delete(staging.root)
        raise


def _commit(storage: Storage, staging: str, dest: str, run: str) -> None:
    if not storage.exists(dest):
        storage.rename(staging, dest)
    elif storage.exchange(staging, dest):
        failpoint("publish:exchanged")
        storage.delete(staging)  # the old version, under the staging name now
    else:
        retired = dest + RETIRED + run
        storage.rename(dest, retired)
        failpoint("publish:retired")
        storage.rename(staging, dest)
        failpoint("publish:renamed")
        storage.delete(retired)
    log.info("published %s", dest)


def recover(dest: str, storage: Storage) -> None:
    """Undo what a killed publish of ``dest`` left: staging trees are removed; a retired tree is
    renamed back when ``dest`` is missing (the crash came between the two renames), else removed."""
    dest = dest.rstrip("/")
    name = dest.rsplit("/", 1)[-1]
    leftovers = [p for p in storage.siblings(dest) if p.rstrip("/").rsplit("/", 1)[-1].startswith(name + ".")]
    for path in sorted(leftovers):
        base = path.rstrip("/").rsplit("/", 1)[-1]
        if base.startswith(name + RETIRED) and not storage.exists(dest):
            log.warning("restoring %s from %s left by an interrupted publish", dest, path)
            storage.rename(path, dest)
        elif base.startswith((name + STAGING, name + RETIRED)):
            log.info("removing leftover %s", path)
            storage.delete(path)


def write_atomic(path: str | Path, text: str, storage: Storage | None = None) -> None:
    """Replace the small file ``path`` whole: written to a hidden temporary name, then renamed
    over it. On the local disk this is ``base.atomic.write_atomic`` (atomic on POSIX); on Hadoop
    stores an existing file is deleted first."""
    if storage is None or isinstance(storage, LocalStorage):
        base_write_atomic(path, text)
        return
    path = storage.qualify(str(path))
    tmp = temporary_name(path)
    storage.write_bytes(tmp, text.encode("utf-8"))
    if storage.exists(path):
        storage.delete(path)
    storage.rename(tmp, path)


_libc_handle: ctypes.CDLL | None | bool = False


def _libc() -> ctypes.CDLL | None:
    global _libc_handle
    if _libc_handle is False:
        try:
            lib = ctypes.CDLL(None, use_errno=True)
            lib.renameat2  # glibc >= 2.28
            _libc_handle = lib
        except (OSError, AttributeError):
            _libc_handle = None
    return _libc_handle  # type: ignore[return-value]


def put_file(local: str | Path, dest_uri: str, access=None) -> None:
    """Copy a local file to ``dest_uri`` (any ``pyarrow.fs`` URI or path: executors have no
    SparkSession) under a temporary name, then rename it: a retried or speculative task never
    leaves a half-written file under the final name. With ``access`` (``base.s3.S3Access``),
    ``dest_uri`` is an ``s3://`` key written in one upload (an object appears whole or not at all)."""
    import pyarrow.fs as pafs

    if access is not None:
        from etl.runtime.s3frames import upload

        upload(local, dest_uri, access)
        return

    fs, dest = pafs.FileSystem.from_uri(dest_uri)
    partial = f"{dest}.{uuid.uuid4().hex[:8]}.partial"
    pafs.copy_files(str(local), partial, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs)
    fs.move(partial, dest)
