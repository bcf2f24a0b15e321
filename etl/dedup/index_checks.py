"""The integrity of a dedup index's files (issue 34): what makes a damaged index a one-line
refusal naming the file, never a half-read index or a traceback. Pure pyarrow, no Spark.

Each file is hashed (sha256) as it is written (``Hashing``, on the way out: nothing is read
back), and its segment's commit record lists every file with its size and sha256
(``checksums``). A lookup, a compaction or a Spark read verifies a file before it reads it
(``verify``, once a process), so a damaged file is refused (``IndexFileError``), never half-read:
a flipped byte in the uncompressed key column would otherwise decode without an error and miss
the duplicates it held. Verifying reads the whole file where a lookup reads the key column of
some row groups (docs/benchmarks.md, 2026-11-28: +0.45 s a night at a million documents).
Segments committed before checksums are read unverified (``etl.dedup.index_legacy`` says so in
the log); any error pyarrow raises on an index file is an ``IndexFileError`` naming it all the same
(``reading``), and one raised in a Spark task is found again on the driver (``raised_in_task``).
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.fs as pafs

from base.errors import Refusal


class IndexFileError(Refusal):
    """A file of the index does not hold what its commit record says: the index is corrupt.
    A ``ValueError``: jobs refuse in one line (exit 2), having changed nothing."""


DAMAGED = (
    "the dedup index is damaged and was not changed: restore the file from a copy of the index, "
    "or rebuild the index from the published corpus"
)
HASH_BLOCK = 8 << 20  # bytes read a call while a file's sha256 is checked


def verify(fs: pafs.FileSystem, path: str, size: int, sha256: str) -> None:
    """Raise ``IndexFileError`` unless ``path`` has ``size`` bytes and that sha256 (read in
    ``HASH_BLOCK`` pieces: memory does not grow with the file). Checked once a process."""
    if (path, size, sha256) in _verified:
        return
    with reading(path):
        h, n = hashlib.sha256(), 0
        with fs.open_input_stream(path) as f:
            while block := f.read(HASH_BLOCK):
                h.update(block)
                n += len(block)
    if n != size:
        raise IndexFileError(f"dedup index file {path} has {n} bytes, its commit record says {size}: {DAMAGED}")
    if h.hexdigest() != sha256:
        raise IndexFileError(f"dedup index file {path} fails its sha256 check (committed as {sha256[:12]}…): {DAMAGED}")
    _verified.add((path, size, sha256))


_verified: set[tuple[str, int, str]] = set()  # files this process has checked (they never change)


def raised_in_task(e: BaseException) -> IndexFileError | None:
    """The ``IndexFileError`` a Spark task raised, from the Python trace in the driver's error."""
    text = str(e)
    at = text.rfind("IndexFileError: ")
    if at < 0:
        return None
    return IndexFileError(text[at + len("IndexFileError: ") :].strip().splitlines()[0])


@contextmanager
def refused_in_tasks():
    """An ``IndexFileError`` raised in a Spark task reaches the driver as a Java error carrying
    the Python trace: raised again here as itself, so a job refuses in one line."""
    try:
        yield
    except Exception as e:
        found = raised_in_task(e)
        if found is None:
            raise
        raise found from e


class reading:
    """Any error pyarrow raises while reading ``path`` (a flipped byte: ``OSError: ZSTD
    decompression failed``; a cut file: ``ArrowInvalid``) -> ``IndexFileError`` naming it."""

    def __init__(self, path: str):
        self.path = path

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if exc is None or isinstance(exc, IndexFileError) or not isinstance(exc, (OSError, pa.ArrowException)):
            return False
        what = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise IndexFileError(f"dedup index file {self.path} cannot be read ({what}): {DAMAGED}") from exc


class Hashing:
    """A write-only file that passes bytes through to ``raw`` and hashes them on the way: the
    checksum of what was written, without reading it back."""

    def __init__(self, raw):
        self.raw, self.sha256, self.size, self.closed = raw, hashlib.sha256(), 0, False

    def write(self, data) -> int:
        data = memoryview(data)
        self.sha256.update(data)
        self.size += len(data)
        self.raw.write(data)
        return len(data)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        self.raw.flush()

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
