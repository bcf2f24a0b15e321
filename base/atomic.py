"""A small local file replaced whole: ``write_atomic(path, text)``.

Written and fsynced under a hidden temporary name beside it, then renamed over it (``os.replace``,
atomic on POSIX): a reader, or a process killed mid-write, sees the old file or the new one, never
a part. ``train``'s checkpoints and metrics, the nightly refresh's pointers and the dedup index's
settings use it; ``etl.runtime.publish`` publishes whole directories and adds Hadoop stores.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def local_path(path: str | os.PathLike) -> str:
    """``path`` as an absolute local path; a ``file:`` or ``file://`` prefix is dropped."""
    return str(Path(str(path).removeprefix("file://").removeprefix("file:")).absolute())


def temporary_name(path: str) -> str:
    """A hidden sibling of ``path``, unique per call: ``DIR/.NAME.tmp-1a2b3c4d``."""
    parent, name = path.rsplit("/", 1)
    return f"{parent}/.{name}.tmp-{uuid.uuid4().hex[:8]}"


def write_synced(path: str, data: bytes) -> None:
    """``data`` to ``path``, flushed to the disk before returning."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Replace the small local file ``path`` (``file:`` prefixes accepted) with ``text`` (UTF-8)."""
    path = local_path(path)
    tmp = temporary_name(path)
    write_synced(tmp, text.encode("utf-8"))
    os.replace(tmp, path)
