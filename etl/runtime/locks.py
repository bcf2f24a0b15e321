"""Writer locks: a file created exclusively that names its holder (pid, host, start time).

A lock left by a dead process on this host is taken over; a live holder, or one on another host
(whose processes cannot be checked from here), is refused with ``Locked``: one line naming the
file and its holder. Held by the nightly refresh on its corpus (``CORPUS_ROOT/.lock``,
``etl.nightly``) and by every writer of a dedup index (``INDEX/.lock``, ``etl.dedup.index``),
which may lie on any Hadoop file system.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Protocol

log = logging.getLogger("zhcorpus")


class Locked(RuntimeError):
    """Another process holds the lock."""


class LockFiles(Protocol):
    def create(self, path: str, text: str) -> bool: ...  # False when the file exists
    def read(self, path: str) -> str: ...  # OSError when it does not
    def remove(self, path: str) -> None: ...


class LocalFiles:
    """Lock files on a POSIX file system: ``O_EXCL`` makes their creation atomic."""

    def create(self, path: str, text: str) -> bool:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return True

    def read(self, path: str) -> str:
        return Path(path).read_text(encoding="utf-8", errors="replace")

    def remove(self, path: str) -> None:
        Path(path).unlink(missing_ok=True)


class HadoopFiles:
    """Lock files on a Hadoop file system, through the JVM of ``spark``. ``create`` without
    overwrite is atomic on HDFS; on an object store (s3a) it is a check and then a write, so two
    writers that start within the same moment can both pass."""

    def __init__(self, spark):
        self._jvm = spark._jvm
        self._conf = spark._jsc.hadoopConfiguration()

    def _fs(self, path: str):
        p = self._jvm.org.apache.hadoop.fs.Path(path)
        return p, p.getFileSystem(self._conf)

    def create(self, path: str, text: str) -> bool:
        from py4j.protocol import Py4JJavaError

        p, fs = self._fs(path)
        try:
            stream = fs.create(p, False)
        except Py4JJavaError:
            if fs.exists(p):
                return False
            raise
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()
        return True

    def read(self, path: str) -> str:
        p, fs = self._fs(path)
        if not fs.exists(p):
            raise FileNotFoundError(path)
        stream = fs.open(p)
        try:
            return self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()

    def remove(self, path: str) -> None:
        p, fs = self._fs(path)
        fs.delete(p, False)


class Lock:
    """``path`` created exclusively while the with-block runs. ``holder`` words the refusal
    ("another refresh holds PATH: ..."); ``error`` is the ``Locked`` subclass it raises."""

    def __init__(self, path: str | Path, holder: str, files: LockFiles | None = None, error: type[Locked] = Locked):
        self.path = str(path)
        self.holder = holder
        self.files = files or LocalFiles()
        self.error = error
        self.held = False

    def __enter__(self) -> "Lock":
        me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()})
        for _ in range(2):
            if self.files.create(self.path, me):
                self.held = True
                return self
            if not self._stale():
                try:
                    holder = self.files.read(self.path)
                except OSError:
                    holder = "(gone since)"
                raise self.error(
                    f"{self.holder} holds {self.path}: {holder}; "
                    "wait for it, or remove the file if that process is gone"
                ) from None
            log.warning("removing stale lock %s", self.path)
            self.files.remove(self.path)
        raise self.error(f"could not take {self.path}")

    def _stale(self) -> bool:
        try:
            holder = json.loads(self.files.read(self.path))
        except (OSError, ValueError):
            return False  # being written right now, or unreadable: not ours to judge
        if holder.get("host") != socket.gethostname():
            return False
        try:
            os.kill(int(holder["pid"]), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def __exit__(self, *exc) -> None:
        if self.held:
            self.files.remove(self.path)
            self.held = False
