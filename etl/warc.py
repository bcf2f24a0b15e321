"""Fault-tolerant WARC framing over a (possibly gzip-compressed) byte stream.

warcio's ``ArchiveIterator`` stops at the first damaged record. A crawl of tens of terabytes
always has some, so framing is done here: read a header block, take ``Content-Length`` bytes,
and on a malformed header resynchronise at the next line that starts a WARC record. Header
lines are parsed with warcio's ``StatusAndHeadersParser``. A gzip stream that ends early
(truncated last member) or is corrupt ends the file with an error for the record in flight.
"""

from __future__ import annotations

import gzip
import io
import zlib
from dataclasses import dataclass

from warcio.statusandheaders import StatusAndHeadersParser, StatusAndHeadersParserException

MAX_HEADER_BYTES = 1 << 16
_WARC_START = (b"WARC/1.0", b"WARC/1.1", b"WARC/0.")

MALFORMED_HEADER = "malformed_warc_header"
TRUNCATED = "truncated_record"
CORRUPT_GZIP = "corrupt_gzip"


@dataclass
class WarcBlock:
    offset: int  # byte offset of the record's header in the (decompressed) stream
    headers: dict[str, str]  # WARC headers, names lower-cased
    block: bytes


@dataclass
class WarcError:
    offset: int
    reason: str
    detail: str


class CountingReader:
    """Tracks the decompressed position and turns gzip failures into one exception type."""

    def __init__(self, raw: io.BufferedIOBase):
        self._raw = raw
        self.pos = 0

    def readline(self, limit: int = -1) -> bytes:
        line = self._guard(self._raw.readline, limit)
        self.pos += len(line)
        return line

    def read(self, n: int) -> bytes:
        data = self._guard(self._raw.read, n)
        self.pos += len(data)
        return data

    @staticmethod
    def _guard(fn, arg):
        try:
            return fn(arg)
        except EOFError as e:
            raise StreamBroken(TRUNCATED, f"compressed stream ended early: {e}") from e
        except (gzip.BadGzipFile, zlib.error, OSError) as e:
            raise StreamBroken(CORRUPT_GZIP, str(e)) from e


class StreamBroken(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def open_maybe_gzip(content: bytes) -> io.BufferedIOBase:
    buf = io.BytesIO(content)
    if content[:2] == b"\x1f\x8b":
        # GzipFile's own buffer hands out what it decompressed before a truncation; an outer
        # BufferedReader would discard that prefix when the EOFError comes.
        return gzip.GzipFile(fileobj=buf, mode="rb")
    return buf


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


def iter_warc(content: bytes):
    """Yield ``WarcBlock`` for each record and ``WarcError`` for each one that cannot be framed."""
    stream = CountingReader(open_maybe_gzip(content))
    start = 0
    try:
        line = stream.readline(MAX_HEADER_BYTES)
        while line:
            start = stream.pos - len(line)
            if not line.strip():
                line = stream.readline(MAX_HEADER_BYTES)
                continue
            if not line.startswith(_WARC_START):
                yield WarcError(start, MALFORMED_HEADER, "bytes outside any record")
                line = yield from _resync(stream)
                continue
            lines, size = [line], len(line)
            while True:
                nxt = stream.readline(MAX_HEADER_BYTES)
                if not nxt:
                    yield WarcError(start, TRUNCATED, "stream ended inside the WARC header")
                    return
                if not nxt.strip():
                    break
                lines.append(nxt)
                size += len(nxt)
                if size > MAX_HEADER_BYTES:
                    break
            try:
                headers = _parse_headers(lines)
                length = int(headers["content-length"])
                if length < 0:
                    raise ValueError("negative Content-Length")
            except (KeyError, ValueError, StatusAndHeadersParserException) as e:
                yield WarcError(start, MALFORMED_HEADER, f"{type(e).__name__}: {e}"[:200])
                line = yield from _resync(stream)
                continue
            block = stream.read(length)
            if len(block) < length:
                yield WarcError(start, TRUNCATED, f"block has {len(block)} of {length} bytes")
                return
            yield WarcBlock(start, headers, block)
            start = stream.pos
            line = stream.readline(MAX_HEADER_BYTES)
    except StreamBroken as e:
        yield WarcError(start, e.reason, e.detail)


def _resync(stream: CountingReader):
    """Skip to the next line that starts a WARC record; return it (b"" at end of stream)."""
    while True:
        line = stream.readline(MAX_HEADER_BYTES)
        if not line or line.startswith(_WARC_START):
            return line
    yield  # pragma: no cover - makes this a generator usable with ``yield from``
