"""The user's paths, checked before any work is done.

Input is sacred: an output (or any directory a job writes) must not equal, contain or lie inside
an input, whatever ``--overwrite`` says, after resolving symlinks, ``file:`` prefixes, ``..``
and trailing slashes (a refused output was about to delete the crawl, or to be read back as input
by the next run). The output's parent must be writable: the check creates and removes a probe
directory there, so a read-only disk or a missing permission is reported in one line before
hours of reading, not as a Java trace at the end. Every refusal is one line, with the fix.

Paths on other file systems (``hdfs://``, ``s3://``) are compared as normalised URIs (no
symlinks there; ``s3a://`` is the same store as ``s3://``); their permissions are the store's to
check when the job writes (on S3, the writer's lock is the first write: ``etl.runtime.objstore``).
An ``s3a://`` output is refused in one line that names ``s3://``: pyspark ships no Hadoop S3
connector, and outputs on S3 are written through pyarrow with their own commit protocol.
"""

from __future__ import annotations

import os
import posixpath
import tempfile
from urllib.parse import urlsplit

from base.errors import Refusal

_GLOB = set("*?[{")


class PathRefused(Refusal):
    """A path the job will not use; the message is one line and says what to do instead."""


class OutputOverlapsInput(PathRefused):
    """The output equals, contains or lies inside an input."""


class OutputNotWritable(PermissionError):
    """Nothing can be created where the output goes."""


class NoInputFiles(FileNotFoundError):
    """An input directory or glob holds no readable (non-hidden) file."""


def normalise(path: str | os.PathLike) -> tuple[str, str]:
    """(file system, absolute path) with symlinks resolved for local paths (``""`` = local)."""
    s = os.fspath(path)
    parts = urlsplit(s)
    if parts.scheme in ("", "file") or len(parts.scheme) == 1:  # a Windows drive letter is local too
        local = s[len("file:") :] if parts.scheme == "file" else s
        if local.startswith("//"):
            local = urlsplit("file:" + local).path
        return "", os.path.realpath(_glob_root(local))
    root = posixpath.normpath(_glob_root(parts.path) or "/")
    scheme = "s3" if parts.scheme.lower() == "s3a" else parts.scheme
    return f"{scheme}://{parts.netloc}", root


def refuse_s3a(path: str | os.PathLike, what: str = "output") -> None:
    """An ``s3a://`` path to be written: the one-line refusal that names ``s3://``."""
    s = os.fspath(path)
    if urlsplit(s).scheme.lower() == "s3a":
        raise PathRefused(
            f"refusing {what} {s}: s3a:// needs Hadoop's S3 connector, which pyspark does not ship; "
            f"write it as {'s3://' + s.split('://', 1)[1]} (pyarrow, committed by _commit.json: docs/storage.md)"
        )


def _glob_root(path: str) -> str:
    """The directory part of a glob before its first pattern character (the path itself if none)."""
    out = []
    for part in path.split("/"):
        if _GLOB & set(part):
            break
        out.append(part)
    return "/".join(out) or ("/" if path.startswith("/") else ".")


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def check_output(output: str | os.PathLike, inputs: list[str | os.PathLike], what: str = "output") -> None:
    """Refuse ``output`` if it overlaps any input or is ``s3a://``; then check its parent is writable."""
    refuse_s3a(output, what)
    fs, out = normalise(output)
    for inp in inputs:
        ifs, path = normalise(inp)
        if ifs != fs:
            continue
        if out == path:
            relation = "is"
        elif _inside(out, path):
            relation = "lies inside"
        elif _inside(path, out):
            relation = "contains"
        else:
            continue
        raise OutputOverlapsInput(
            f"refusing {what} {os.fspath(output)}: it {relation} the input {os.fspath(inp)} "
            f"(inputs are never written or deleted; choose a {what} outside every input)"
        )
    if fs == "":
        check_writable(out, what)


def check_writable(path: str, what: str = "output") -> None:
    """The nearest existing ancestor of ``path`` must be a directory we can create things in."""
    parent = os.path.dirname(path.rstrip("/")) or "/"
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise OutputNotWritable(f"{what} {path} is not writable: {parent} is not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".zhcorpus-probe-", dir=parent))
    except OSError as e:
        raise OutputNotWritable(
            f"{what} {path} is not writable: cannot create anything in {parent} ({e.strerror or e})"
        ) from None


def check_job_paths(inputs: list[str], output: str, *also_written: str | None) -> None:
    """What every job calls first: the output (and any other directory it writes, such as a dedup
    index) checked against the inputs. Raises ``PathRefused`` or ``OutputNotWritable``."""
    check_output(output, inputs)
    for path in also_written:
        if path:
            check_output(path, inputs, what="directory")
