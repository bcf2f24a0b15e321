"""Bounded, position-tracking reads over one input file: plain bytes or a chain of gzip members.

Every read is bounded by the caller's limit (``reader.max_record_bytes``, a header limit, a
chunk), never by a number taken from the input, so a header declaring 1 TiB costs nothing.
Gzip is inflated member by member with ``zlib`` in chunks of at most ``CHUNK`` output bytes
(a decompression bomb is read like any other large stream). The stream knows where each
member starts, so a reader can resynchronise at the next member; a corrupt member raises
``StreamBroken`` once and ``recover()`` goes on at the next gzip header found in the raw bytes.

``pos`` is the offset in the decompressed stream (the file offset for plain files), which is
what record offsets and derived doc_ids are built from.
"""

from __future__ import annotations

import zlib
from bisect import bisect_right
from typing import BinaryIO

CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"
_MEMBER_START = b"\x1f\x8b\x08"  # magic + deflate: what a member header starts with

TRUNCATED = "truncated_record"
CORRUPT_GZIP = "corrupt_gzip"


class StreamBroken(Exception):
    """The compressed stream ended early (``TRUNCATED``) or is corrupt (``CORRUPT_GZIP``)."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class _Inflater:
    """Concatenated gzip members -> decompressed chunks; records where each member starts."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self._pending = b""  # raw bytes not yet given to a decompressor
        self._d = None  # decompressor of the member in progress
        self._eof = False
        self.out = 0  # decompressed bytes produced so far
        self.member_starts: list[int] = []

    def _raw_more(self) -> bytes:
        data = self._raw.read(CHUNK)
        if not data:
            self._eof = True
        return data

    def _start_member(self) -> bool:
        """At a member boundary: False at the end of the input."""
        while len(self._pending) < 3 and not self._eof:
            self._pending += self._raw_more()
        self._pending = self._pending.lstrip(b"\x00")  # zero padding after the last member is allowed
        if not self._pending:
            return False
        if not self._pending.startswith(_MEMBER_START):
            raise StreamBroken(CORRUPT_GZIP, "bytes after a gzip member are not a gzip member")
        self._d = zlib.decompressobj(31)
        self.member_starts.append(self.out)
        return True

    def read(self) -> bytes:
        """The next non-empty chunk, b"" at the end; raises ``StreamBroken``."""
        while True:
            if self._d is None and not self._start_member():
                return b""
            d = self._d
            data = d.unconsumed_tail or self._pending or self._raw_more()
            self._pending = b""
            if not data and not d.unconsumed_tail:
                self._d = None
                raise StreamBroken(TRUNCATED, "compressed stream ended inside a gzip member")
            try:
                out = d.decompress(data, CHUNK)
            except zlib.error as e:
                self._d = None
                raise StreamBroken(CORRUPT_GZIP, f"corrupt gzip member: {e}") from e
            if d.eof:
                self._pending, self._d = d.unused_data, None
            if out:
                self.out += len(out)
                return out

    def recover(self) -> bool:
        """After ``StreamBroken``: skip to the next gzip member header in the raw bytes."""
        self._d = None
        while True:
            i = self._pending.find(_MEMBER_START, 1)
            if i >= 0:
                self._pending = self._pending[i:]
                return True
            if self._eof:
                self._pending = b""
                return False
            self._pending = self._pending[-2:] + self._raw_more()


class Stream:
    """Buffered reads with a position, over a plain (seekable) file or gzip members."""

    def __init__(self, raw: BinaryIO, compressed: bool, start: int = 0):
        self._raw = raw
        assert start == 0 or not compressed, "a gzip stream is read from its start"
        raw.seek(start)
        self._inflater = _Inflater(raw) if compressed else None
        self._buf = b""
        self._i = 0
        self._base = start  # stream position of _buf[0]
        self._error: StreamBroken | None = None
        self.compressed = compressed

    @property
    def pos(self) -> int:
        return self._base + self._i

    # --- filling -----------------------------------------------------------------------------

    def _next_chunk(self) -> bytes:
        """The next raw or inflated chunk (b"" at the end); a stored error is raised here, once."""
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        return self._inflater.read() if self._inflater else self._raw.read(CHUNK)

    def _extend(self) -> bool:
        """Append one chunk to the unread bytes; False at the end."""
        chunk = self._next_chunk()
        if not chunk:
            return False
        self._base += self._i
        self._buf = self._buf[self._i :] + chunk
        self._i = 0
        return True

    def _extend_quietly(self) -> bool:
        try:
            return self._extend()
        except StreamBroken as e:
            self._error = e
            return False

    def recover(self) -> bool:
        """Go on after ``StreamBroken``: at the next gzip member (False: nothing left)."""
        self._error = None
        self._base += len(self._buf)
        self._buf, self._i = b"", 0
        return bool(self._inflater) and self._inflater.recover()

    # --- reading -----------------------------------------------------------------------------

    def readline(self, limit: int) -> bytes:
        """Up to and including the next b"\\n", at most ``limit`` bytes (b"" at the end)."""
        out: list[bytes] = []
        got = 0
        while True:
            stop = min(len(self._buf), self._i + limit - got)
            j = self._buf.find(b"\n", self._i, stop)
            if j >= 0:
                out.append(self._take(j + 1 - self._i))
                return b"".join(out)
            piece = self._take(stop - self._i)
            out.append(piece)
            got += len(piece)
            if got >= limit:
                return b"".join(out)
            try:
                more = self._extend()
            except StreamBroken as e:
                e.partial = b"".join(out)  # the unfinished line: a record in flight, or nothing
                raise
            if not more:
                return b"".join(out)

    def read(self, n: int) -> bytes:
        """At most ``n`` bytes (fewer only at the end); ``n`` must come from configuration."""
        if len(self._buf) - self._i >= n:
            return self._take(n)
        out = [self._take(len(self._buf) - self._i)]
        got = len(out[0])
        while got < n:
            self._base += len(self._buf)
            self._buf, self._i = b"", 0
            chunk = self._next_chunk()
            if not chunk:
                break
            take = min(len(chunk), n - got)
            self._buf, self._i = chunk, take
            out.append(chunk[:take])
            got += take
        return b"".join(out)

    def peek(self, n: int) -> bytes:
        """The next ``n`` bytes without consuming them; an error is kept for the next read."""
        while len(self._buf) - self._i < n and self._extend_quietly():
            pass
        return self._buf[self._i : self._i + n]

    def _take(self, n: int) -> bytes:
        out = self._buf[self._i : self._i + n]
        self._i += n
        return out

    def skip_line(self, chunk: int = CHUNK) -> int:
        """Consume through the next b"\\n" (or the end), in bounded pieces; returns the bytes."""
        n = 0
        while True:
            part = self.readline(chunk)
            n += len(part)
            if not part or part.endswith(b"\n"):
                return n

    # --- moving ------------------------------------------------------------------------------

    def seek(self, pos: int) -> None:
        """Anywhere in a plain file; within the buffered bytes (or forward) in a gzip stream."""
        if self._base <= pos <= self._base + len(self._buf):
            self._i = pos - self._base
        elif self._inflater is None:
            self._raw.seek(pos)
            self._buf, self._i, self._base = b"", 0, pos
        elif pos > self.pos:
            self.skip(pos - self.pos)
        else:
            raise ValueError(f"cannot seek back to {pos} in a gzip stream (buffer starts at {self._base})")

    def unread(self, data: bytes) -> None:
        """Put back bytes just read (a rejected record's block), so the reader can rescan them."""
        n = len(data)
        if self._i >= n:
            self._i -= n
        else:
            self._base = self.pos - n
            self._buf = data + self._buf[self._i :]
            self._i = 0

    def skip(self, n: int) -> int:
        """Discard up to ``n`` bytes without holding them; returns how many were skipped."""
        done = 0
        while done < n:
            have = len(self._buf) - self._i
            if have == 0:
                if self._inflater is None:  # plain file: seek, clamped to its end
                    here = self.pos
                    end = self._raw.seek(0, 2)
                    self.seek(min(here + n - done, end))
                    return done + self.pos - here
                if not self._extend():
                    return done
                continue
            step = min(have, n - done)
            self._i += step
            done += step
        return done

    def at_member_start(self, pos: int) -> bool:
        return self._inflater is not None and pos in self._member_set()

    def _member_set(self) -> set[int]:
        starts = self._inflater.member_starts
        return set(starts[-64:]) if len(starts) > 64 else set(starts)

    def skip_to_next_member(self, after: int) -> None:
        """Move to the first gzip member starting after ``after`` (the end if none)."""
        starts = self._inflater.member_starts
        while True:
            k = bisect_right(starts, max(after, self._base - 1))
            if k < len(starts):
                self.seek(starts[k])
                return
            self._base += len(self._buf)
            self._buf, self._i = b"", 0
            if not self._extend():
                return
