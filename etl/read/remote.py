"""Object storage for the readers: ``s3://`` (and ``s3a://``, its Hadoop spelling) through
pyarrow's S3 file system, listed on the driver and read on the executors in byte ranges.

The driver resolves everything an executor needs once (``S3Access.resolve``, ``base.s3``: the
settings and credentials are shared with the writers of outputs on a store and the trainer's
shard cache), from ``reader.s3`` and the standard AWS environment. A problem that would fail every task (no
credentials, a missing bucket, access denied) is an ``S3Refused`` raised by ``list_files``
before any work: the job's one-line refusal, exit 2.

An executor opens a range with ``open_input``: a seekable file object over ranged GETs whose
read-ahead starts small after each seek (a sniff of the first bytes costs one small request)
and doubles up to ``reader.s3.read_ahead_bytes`` on sequential reads, so a record never costs
a round trip and memory stays one buffer per open file. Connection errors are retried by the
AWS SDK (``retries``); what still fails is an ``OSError``, which the reader turns into that
file's error, not the run's.
"""

from __future__ import annotations

import fnmatch
import io

from base.s3 import SCHEMES, S3Access, S3Config, S3Refused, is_s3, split  # noqa: F401 - the readers' names for them

_GLOB = set("*?[{")


class S3BucketMissing(FileNotFoundError):
    """An input names a bucket that does not exist on the endpoint."""


def list_files(uri: str, access: S3Access) -> list[tuple[str, int]]:
    """(uri, size) of the objects at ``uri``: one object, every object under it taken as a
    prefix directory (recursively), or those a glob matches (``*``, ``?`` and ``[]`` within one
    path segment; a matched directory brings its objects). Names keep ``uri``'s scheme. Raises
    ``S3BucketMissing`` for a missing bucket and ``S3Refused`` for denied access."""
    return [(name, size) for name, size, _ in list_objects(uri, access)]


def list_objects(uri: str, access: S3Access) -> list[tuple[str, int, int]]:
    """``list_files`` with each object's last-modified time (ns since the epoch; S3 keeps
    seconds or milliseconds): (uri, size, mtime_ns), sorted by uri."""
    from pyarrow import fs as pafs

    scheme, bucket, key = split(uri)
    fs = access.filesystem()
    glob = bool(_GLOB & set(key))
    root = key.split("/")
    root = "/".join(root[: next(i for i, s in enumerate(root) if _GLOB & set(s))]) if glob else key.rstrip("/")
    with _refusals(uri, access):
        info = fs.get_file_info(f"{bucket}/{root}") if root else None
        if info is not None and info.type == pafs.FileType.File and not glob:
            return [(uri, info.size, info.mtime_ns or 0)]
        found = fs.get_file_info(pafs.FileSelector(f"{bucket}/{root}", recursive=True, allow_not_found=True))
    objects = [(f.path, f.size, f.mtime_ns or 0) for f in found if f.type == pafs.FileType.File]
    if not objects:
        with _refusals(uri, access):  # a missing bucket lists as empty under a missing prefix
            if fs.get_file_info(bucket).type == pafs.FileType.NotFound:
                raise S3BucketMissing(f"input bucket does not exist on {access.endpoint or 'AWS'}: {uri}")
    if glob:
        pattern = key.split("/")
        objects = [
            (p, n, t)
            for p, n, t in objects
            if all(fnmatch.fnmatchcase(s, g) for s, g in zip(p.split("/")[1:], pattern))
            and len(p.split("/")) > len(pattern)
        ]
    objects.sort()
    if objects:  # listing may be allowed where reading is not (s3:ListBucket without s3:GetObject)
        with _refusals(uri, access):
            _probe(fs, *objects[0][:2])
    return [(f"{scheme}://{p}", n, t) for p, n, t in objects]


def _probe(fs, path: str, size: int) -> None:
    """One byte of one object (a 1-byte ranged GET), so that a store refusing every read is a
    refusal before any work, not one ``unreadable`` error per file."""
    with fs.open_input_file(path) as f:
        if size:
            f.read_at(1, 0)


# How a 403 reads in pyarrow's errors: the SDK's error names (pyarrow spells them ACCESS_DENIED,
# INVALID_ACCESS_KEY_ID, ...), S3's error codes, and the status of a response without a body.
_DENIED = (
    "ACCESS_DENIED",
    "AccessDenied",
    "INVALID_ACCESS_KEY_ID",
    "InvalidAccessKeyId",
    "SIGNATURE_DOES_NOT_MATCH",
    "SignatureDoesNotMatch",
    "EXPIRED_TOKEN",
    "ExpiredToken",
    "INVALID_CLIENT_TOKEN_ID",
    "InvalidToken",
    "HTTP status 403",
    "status code: 403",
    "Forbidden",
)


class _refusals:
    """OSError of a listing -> the refusal it means (missing bucket, access denied)."""

    def __init__(self, uri: str, access: S3Access):
        self.uri, self.where = uri, access.endpoint or "AWS"

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or not isinstance(exc, OSError):
            return False
        text = str(exc)
        if "NO_SUCH_BUCKET" in text or "NoSuchBucket" in text:
            raise S3BucketMissing(f"input bucket does not exist on {self.where}: {self.uri}") from exc
        if any(s in text for s in _DENIED):
            raise S3Refused(
                f"access denied listing {self.uri} on {self.where}: check the credentials "
                f"and the bucket policy ({text.splitlines()[0][:200]})"
            ) from exc
        return False


def open_input(where: str, access: S3Access | None):
    """A readable, seekable binary file: ``where`` is an OS path, or an s3 URI read through
    ``access`` with growing read-ahead (``ReadAhead``)."""
    if not is_s3(where):
        return open(where, "rb")  # noqa: SIM115 - the caller closes it
    if access is None:
        raise OSError(f"no S3 settings to open {where}")
    _, bucket, key = split(where)
    return ReadAhead(access.filesystem().open_input_file(f"{bucket}/{key}"), access.cfg.read_ahead_bytes)


class ReadAhead(io.RawIOBase):
    """A seekable reader over a pyarrow RandomAccessFile (one ranged GET a ``read_at``). Bytes
    come from one buffer; a miss fetches ``max(asked, window)`` bytes, where the window starts at
    ``FIRST`` after a seek outside the buffer and doubles on each sequential miss up to ``most``.
    So sniffing a header costs 64 KiB, and a long scan costs one request per ``most`` bytes."""

    FIRST = 64 << 10

    def __init__(self, raw, most: int):
        super().__init__()
        self._raw, self._most, self._size = raw, max(most, self.FIRST), raw.size()
        self._pos, self._buf, self._buf_at, self._window = 0, b"", 0, self.FIRST

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, n: int = -1) -> bytes:
        n = self._size - self._pos if n is None or n < 0 else min(n, max(0, self._size - self._pos))
        if n <= 0:
            return b""
        at = self._pos - self._buf_at
        if not 0 <= at or at + n > len(self._buf):
            self._fill(n)
            at = self._pos - self._buf_at
        out = self._buf[at : at + n]
        self._pos += len(out)
        return out

    def readinto(self, b) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def _fill(self, n: int) -> None:
        """The buffer from ``_pos``: the unread tail kept, the rest fetched in one request."""
        sequential = self._buf_at <= self._pos <= self._buf_at + len(self._buf)
        self._window = min(self._window * 2, self._most) if sequential else self.FIRST
        keep = self._buf[self._pos - self._buf_at :] if sequential else b""
        want = max(n, self._window) - len(keep)
        fetched = self._raw.read_at(min(want, self._size - self._pos - len(keep)), self._pos + len(keep))
        self._buf, self._buf_at = keep + fetched, self._pos

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()
