"""Bounded, position-tracking reads over one input file: plain bytes or a chain of gzip members.

Every read is bounded by the caller's limit (``reader.max_record_bytes``, a header limit, a
chunk), never by a number taken from the input, so a header declaring 1 TiB costs nothing.
Gzip is inflated member by member with ``zlib`` in chunks of at most ``CHUNK`` output bytes
(a decompression bomb is read like any other large stream). The stream knows where each
member starts, so a reader can resynchronise at the next member; a corrupt member raises
``StreamBroken`` once and ``recover()`` goes on at the next gzip member found in the raw bytes
(one whose first bytes inflate), saying which raw bytes it skipped (``Stream.skipped``). A
member's output reaches the reader only once its CRC is checked, unless it is over ``CHUNK``.

``pos`` is the offset in the decompressed stream (the file offset for plain files), which is
what record offsets and derived doc_ids are built from.
"""

from __future__ import annotations

import zlib
from bisect import bisect_right
from dataclasses import dataclass
from typing import BinaryIO

CHUNK = 1 << 20
FEED = 1 << 16  # compressed bytes given to zlib a call: output before a damage is kept
TRIAL = 1 << 16  # compressed bytes a member header found after damage must inflate to be taken
SALVAGE_FEED = 256  # compressed bytes a call when a corrupt member is inflated again up to its damage
GZIP_MAGIC = b"\x1f\x8b"
_MEMBER_START = b"\x1f\x8b\x08"  # magic + deflate: what a member header starts with

TRUNCATED = "truncated_record"
CORRUPT_GZIP = "corrupt_gzip"


class StreamBroken(Exception):
    """The compressed stream ended early (``TRUNCATED``) or is corrupt (``CORRUPT_GZIP``).
    ``salvage``: what the corrupt member inflated before the damage, never handed out as data
    (its records are lost, and counted); it lies at ``salvage_at`` in the decompressed stream."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail
        self.salvage, self.salvage_at = b"", 0


@dataclass
class Skipped:
    """Bytes ``[offset, offset + length)`` of the file as stored (compressed) that the reader
    skipped to get past damage: a corrupt member (from its header to the next member that
    inflates), or bytes between members that are no member."""

    offset: int
    length: int


class _Inflater:
    """Concatenated gzip members -> decompressed chunks; records where each member starts.

    Compressed bytes are given to zlib ``FEED`` at a time (a view, never a copy). A member's
    output is held until its CRC is checked; what a corrupt member inflated before its damage is
    the error's ``salvage``, which tells the reader the records it held (known, and rejected).
    After a corrupt member, ``recover`` rescans the raw file from the member's second byte for a
    member header whose first ``TRIAL`` compressed bytes inflate without error: a header-like
    triple inside deflate data is no member, a real one is taken however damaged the one before."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self._buf = b""  # raw bytes read; _buf[_p:] not yet given to a decompressor
        self._p = 0
        self._at = raw.tell()  # raw offset of _buf[_p]
        self._d = None  # decompressor of the member in progress
        self._eof = False
        self.out = 0  # decompressed bytes handed out (and salvaged) so far
        self.member_starts: list[int] = []
        self._member_at = 0  # raw offset of the member in progress
        self._member_out = 0  # its decompressed bytes handed out
        self._damage_at: int | None = None  # raw offset where the damage begins; None: nothing to skip
        self._error: StreamBroken | None = None  # raised by the next read (after the bytes before it)

    def _more(self) -> None:
        data = self._raw.read(CHUNK)
        if not data:
            self._eof = True
        self._buf, self._p = self._buf[self._p :] + data, 0

    def _start_member(self) -> bool:
        """At a member boundary: False at the end of the input."""
        begin = self._at
        while True:
            while len(self._buf) - self._p < 3 and not self._eof:
                self._more()
            while self._p < len(self._buf) and self._buf[self._p] == 0:  # zero padding after the last member
                self._p += 1
                self._at += 1
            if self._p < len(self._buf) or self._eof:
                break
        if self._p == len(self._buf):
            return False
        if not self._buf.startswith(_MEMBER_START, self._p):  # zero bytes before them are no padding either
            self._damage_at = begin
            raise StreamBroken(CORRUPT_GZIP, f"bytes at {begin} after a gzip member are not a gzip member")
        self._d = zlib.decompressobj(31)
        self._member_at, self._member_out = self._at, 0
        self.member_starts.append(self.out)
        return True

    def _feed(self) -> memoryview:
        """The next ``FEED`` raw bytes of the member in progress (no copy)."""
        if self._p == len(self._buf) and not self._eof:
            self._more()
        data = memoryview(self._buf)[self._p : self._p + FEED]
        self._p += len(data)
        self._at += len(data)
        return data

    def read(self) -> bytes:
        """The next non-empty chunk, b"" at the end; raises ``StreamBroken``. A member's output
        is handed out once its CRC is checked (at its end), or in pieces of ``CHUNK`` when it is
        larger; a corrupt member's output not yet handed out travels with the error
        (``StreamBroken.salvage``): bytes that cannot be trusted, which only say what was lost."""
        if self._error is not None:
            err, self._error = self._error, None
            raise err
        held: list[bytes] = []
        size = 0
        while True:
            if self._d is None:
                if held:  # a member ended: its CRC checked
                    break
                if not self._start_member():
                    return b""
            d = self._d
            data = d.unconsumed_tail or self._feed()
            if not data:
                self._d, self._damage_at = None, None  # every byte was inflated: nothing to skip
                err = StreamBroken(TRUNCATED, "compressed stream ended inside a gzip member")
                if held:  # no CRC to check them against: handed out, as a plain file's last bytes
                    self._error = err
                    break
                raise err
            try:
                out = d.decompress(data, CHUNK)
            except zlib.error as e:
                self._d, self._damage_at = None, self._member_at
                err = StreamBroken(CORRUPT_GZIP, f"corrupt gzip member at byte {self._member_at} of the file: {e}")
                err.salvage, err.salvage_at = self._salvage(held), self.out
                self.out += len(err.salvage)
                raise err from e
            if d.eof:  # what was fed past the member's end is the next member's: the tail of the fed bytes
                self._p -= len(d.unused_data)
                self._at -= len(d.unused_data)
                self._d = None
            if out:
                held.append(out)
                size += len(out)
                if size >= CHUNK:
                    break
        out = b"".join(held)
        self.out += len(out)
        self._member_out += len(out)
        return out

    def _salvage(self, held: list[bytes]) -> bytes:
        """What the corrupt member inflates before its damage and was not handed out: zlib
        gives nothing of a call that fails, so a member none of which was handed out is inflated
        again from its start in ``SALVAGE_FEED`` pieces (the member is then under ``CHUNK``)."""
        if self._member_out:
            return b"".join(held)
        self._raw.seek(self._member_at)
        d, out, n = zlib.decompressobj(31), [], 0
        while n < 2 * CHUNK and not d.eof:
            piece = self._raw.read(SALVAGE_FEED)
            if not piece:
                break
            try:
                out.append(d.decompress(piece))
            except zlib.error:
                break
            n += len(out[-1])
        return b"".join(out)

    def recover(self) -> tuple[bool, Skipped | None]:
        """After ``StreamBroken``: (more to read, the raw bytes skipped). A truncated member
        skips nothing (there is nothing after it); a corrupt one is skipped to the next member."""
        self._d, start, self._damage_at, self._error = None, self._damage_at, None, None
        if start is None:
            return False, None
        found = self._scan(start + 1)
        end = found if found is not None else self._raw.seek(0, 2)
        self._raw.seek(end)
        self._buf, self._p, self._at, self._eof = b"", 0, end, found is None
        return found is not None, Skipped(start, end - start)

    def _scan(self, start: int) -> int | None:
        """Raw offset of the first member header at or after ``start`` that inflates (``TRIAL``)."""
        buf_at, buf = start, b""
        self._raw.seek(start)
        while True:
            i = buf.find(_MEMBER_START)
            while i >= 0:
                if self._inflates(buf_at + i):
                    return buf_at + i
                i = buf.find(_MEMBER_START, i + 1)
            self._raw.seek(buf_at + len(buf))
            more = self._raw.read(CHUNK)
            if not more:
                return None
            keep = buf[-(len(_MEMBER_START) - 1) :]
            buf_at, buf = buf_at + len(buf) - len(keep), keep + more

    def _inflates(self, at: int) -> bool:
        self._raw.seek(at)
        data, d = self._raw.read(TRIAL), zlib.decompressobj(31)
        try:
            while data and not d.eof:
                d.decompress(data, CHUNK)
                data = d.unconsumed_tail
        except zlib.error:
            return False
        return True


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
        self.skipped: Skipped | None = None  # set by recover()

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
        """Go on after ``StreamBroken``: at the next gzip member (False: nothing left).
        ``skipped`` then says which raw bytes were passed over (None: none)."""
        self._error = None
        self._buf, self._i = b"", 0
        self.skipped = None
        if self._inflater is None:
            return False
        more, self.skipped = self._inflater.recover()
        self._base = self._inflater.out  # past the salvage too: later offsets never meet its records'
        return more

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
