"""Exact, fault-tolerant WARC framing over an ``etl.read.streams.Stream``.

warcio's ``ArchiveIterator`` stops at the first damaged record; a crawl of tens of terabytes
always has some, so framing is done here (warcio parses the header lines). A record is a
``WARC/1.x`` line, header lines, a blank line, ``Content-Length`` bytes, then ``\\r\\n\\r\\n`` and
the next record or the end. The length is believed only when the bytes after the block say so:

- declared length over ``reader.max_record_bytes``: the record is rejected (``record_too_large``)
  without reading it; a plain file is skipped by seeking and checked, otherwise the reader
  resynchronises;
- the block runs past the end of the stream: ``truncated_record``, resynchronise;
- the block is not followed by a record boundary (length too long or too short): the record is
  rejected (``malformed_warc_header``), resynchronise.

Resynchronising: in a ``.warc.gz`` whose record started a gzip member, at the next member;
otherwise at the next line that starts with ``WARC/`` after the rejected record's header. The
bytes skipped belong to the rejected record. Bytes between records that no header claims are a
``Region`` (counted, never a record). So a record's block never holds another record's bytes,
and every intact record after a damaged one is still read.

A corrupt gzip member is skipped to the next member that inflates (``etl.read.streams``): the
record in flight and every record whose header the member inflated before its damage are
rejected (``corrupt_gzip``), and the compressed bytes skipped are a ``Damaged`` item with the
count of those records. Regions and damaged bytes are the file's errors (``etl.read.rows``).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Callable, Iterator

from warcio.statusandheaders import StatusAndHeadersParser, StatusAndHeadersParserException

from etl.read.streams import CHUNK, CORRUPT_GZIP, TRUNCATED, Stream, StreamBroken

MAX_HEADER_BYTES = 1 << 16
_WARC_START = (b"WARC/1.0", b"WARC/1.1", b"WARC/0.")
_BOUNDARY_PEEK = 64

MALFORMED_HEADER = "malformed_warc_header"
TOO_LARGE = "record_too_large"
__all__ = [
    "CORRUPT_GZIP",
    "TRUNCATED",
    "MALFORMED_HEADER",
    "TOO_LARGE",
    "WarcBlock",
    "WarcError",
    "Region",
    "Damaged",
    "iter_warc",
]


@dataclass
class WarcBlock:
    offset: int  # byte offset of the record's header in the (decompressed) stream
    headers: dict[str, str]  # WARC headers, names lower-cased
    block: bytes


@dataclass
class WarcError:
    """A record that was rejected (its headers when they could be parsed)."""

    offset: int
    reason: str
    detail: str
    headers: dict[str, str] | None = None


@dataclass
class Damaged:
    """Bytes of the file as stored (compressed) that were skipped to get past damage, and the
    records known to lie in them (rejected with ``reason``, each a ``WarcError`` before this)."""

    offset: int
    length: int
    reason: str
    detail: str
    records: int


@dataclass
class Region:
    """Bytes outside any record (or a broken stream between records): counted, not a record."""

    offset: int
    length: int
    reason: str


def iter_warc(
    stream: Stream, max_record_bytes: int, end: int | None = None, read_blocks: bool = True
) -> Iterator[WarcBlock | WarcError | Region | Damaged]:
    """Items whose first byte lies before ``end`` (None: to the end). With ``read_blocks=False``
    (plain files only) blocks are skipped, not read: the same decisions, for planning splits."""
    while True:
        start = stream.pos
        if end is not None and start >= end:
            return
        in_record = False
        try:
            line = stream.readline(MAX_HEADER_BYTES)
            if not line:
                return
            if not line.strip():
                continue
            if not line.startswith(_WARC_START):
                stream.unread(line)
                yield Region(start, _scan_to_record(stream), MALFORMED_HEADER)
                continue
            in_record = True
            item, header_end = _frame(stream, start, line, max_record_bytes, read_blocks)
            in_record = False
            yield item
            if header_end is not None:
                _resync(stream, start, header_end)
        except StreamBroken as e:
            partial = getattr(e, "partial", b"")
            known = in_record or partial.startswith(_WARC_START)
            if known:
                yield WarcError(start, e.reason, e.detail)
            lost = [WarcError(at, e.reason, e.detail) for at in _lost_starts(e, partial, in_record)]
            yield from lost
            more = stream.recover()
            if stream.skipped is not None:
                s = stream.skipped
                yield Damaged(s.offset, s.length, e.reason, e.detail, int(known) + len(lost))
            elif not known:
                yield Region(start, len(partial), e.reason)
            if not more:
                return


def _lost_starts(e: StreamBroken, partial: bytes, in_record: bool) -> list[int]:
    """Stream offsets of the records that begin in what a corrupt member inflated before its
    damage (``e.salvage``): known to be lost, so rejected, not read."""
    data, out = e.salvage, []
    if not data:
        return out
    if not in_record and not partial and data.startswith(_WARC_START):
        out.append(e.salvage_at)
    i = data.find(b"\nWARC/")
    while i >= 0:
        if data.startswith(_WARC_START, i + 1):
            out.append(e.salvage_at + i + 1)
        i = data.find(b"\nWARC/", i + 1)
    return out


def _frame(
    stream: Stream, start: int, first: bytes, limit: int, read_blocks: bool
) -> tuple[WarcBlock | WarcError, int | None]:
    """One record from its first line; the second value is where to resynchronise from
    (None: the stream is at the next record)."""
    lines, size = [first], len(first)
    while True:
        nxt = stream.readline(MAX_HEADER_BYTES)
        if not nxt:
            return WarcError(start, TRUNCATED, "stream ended inside the WARC header"), None
        if not nxt.strip():
            break
        lines.append(nxt)
        size += len(nxt)
        if size > MAX_HEADER_BYTES:
            return WarcError(start, MALFORMED_HEADER, f"WARC header over {MAX_HEADER_BYTES} bytes"), stream.pos
    header_end = stream.pos
    try:
        headers = _parse_headers(lines)
        length = int(headers["content-length"])
        if length < 0:
            raise ValueError("negative Content-Length")
    except (KeyError, ValueError, StatusAndHeadersParserException) as e:
        return WarcError(start, MALFORMED_HEADER, f"{type(e).__name__}: {e}"[:200]), header_end
    if length > limit:
        too_large = WarcError(
            start, TOO_LARGE, f"declares {length} bytes, over reader.max_record_bytes={limit}", headers
        )
        if (
            not stream.compressed
            and stream.skip(length) == length
            and _at_boundary(stream, lambda: _skipped_holds_record_start(stream, header_end, length))
        ):
            return too_large, None  # a plain file: skipped by seeking, and the next record is there
        return too_large, header_end
    block = stream.read(length) if read_blocks else b""
    got = len(block) if read_blocks else stream.skip(length)
    if got < length:
        error = WarcError(start, TRUNCATED, f"declares {length} bytes, the stream ends after {got}", headers)
    elif not _at_boundary(
        stream,
        (lambda: _holds_record_start(block))
        if read_blocks
        else (lambda: _skipped_holds_record_start(stream, header_end, length)),
    ):
        error = WarcError(
            start, MALFORMED_HEADER, f"Content-Length {length} does not end at a record boundary", headers
        )
    else:
        return WarcBlock(start, headers, block), None
    stream.unread(block) if read_blocks else stream.seek(header_end)
    return error, header_end


def _at_boundary(stream: Stream, swallowed: Callable[[], bool]) -> bool:
    """After a block: only CR/LF then the next record or the end of the stream; or the record
    terminator ``\r\n\r\n`` (stray bytes may follow: a region) when the block holds no record
    start (a length too long by exactly a header would otherwise swallow it)."""
    ahead = stream.peek(_BOUNDARY_PEEK)
    rest = ahead.lstrip(b"\r\n")
    if not rest or rest.startswith(_WARC_START):
        return True
    return ahead.startswith(b"\r\n\r\n") and not swallowed()


def _holds_record_start(block: bytes) -> bool:
    return any(b"\r\n\r\n" + s in block for s in _WARC_START)


def _skipped_holds_record_start(stream: Stream, start: int, length: int) -> bool:
    """``_holds_record_start`` for a block that was skipped (plain files): read back in pieces."""
    end, here, tail = start + length, stream.pos, b""
    stream.seek(start)
    try:
        while stream.pos < end:
            piece = tail + stream.read(min(CHUNK, end - stream.pos))
            if _holds_record_start(piece):
                return True
            tail = piece[-(4 + 8) :]
        return False
    finally:
        stream.seek(here)


def _resync(stream: Stream, start: int, header_end: int) -> None:
    """After a rejected record: the next gzip member if the record began one, else the next
    ``WARC/`` line after its header."""
    if stream.at_member_start(start):
        stream.skip_to_next_member(start)
        return
    stream.seek(header_end)
    _scan_to_record(stream)


def _scan_to_record(stream: Stream) -> int:
    """Consume bytes up to the next line that starts a WARC record (or the end); their count."""
    n, line_start = 0, True
    while True:
        if line_start and stream.peek(8).startswith(_WARC_START):
            return n
        piece = stream.readline(MAX_HEADER_BYTES)
        if not piece:
            return n
        n += len(piece)
        line_start = piece.endswith(b"\n")


def _parse_headers(lines: list[bytes]) -> dict[str, str]:
    for line in lines[1:]:
        if b":" not in line and not line[:1].isspace():  # neither "Name: value" nor a continuation
            raise ValueError(f"header line without a colon: {line[:60]!r}")
    text = b"".join(lines).decode("utf-8", "replace")
    parsed = StatusAndHeadersParser(["WARC/1.0", "WARC/1.1", "WARC/0.17", "WARC/0.18"]).parse(io.StringIO(text))
    headers: dict[str, str] = {}
    for name, value in parsed.headers:
        if not name or name != name.strip() or " " in name:
            raise ValueError(f"bad header name {name!r}")
        headers[name.lower()] = value
    return headers


def record_starts(stream: Stream, max_record_bytes: int, every: int) -> list[int]:
    """Positions in a plain WARC file where a reader may start and frame exactly as a reader
    from byte 0 would (an item's first byte), about ``every`` bytes apart. Reads headers only."""
    cuts, nxt = [], every
    for item in iter_warc(stream, max_record_bytes, read_blocks=False):
        if item.offset >= nxt:
            cuts.append(item.offset)
            nxt = item.offset + every
    return cuts
