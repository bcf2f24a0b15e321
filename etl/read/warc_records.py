"""WARC/WET records -> rows: HTTP responses (status, content type and encoding, charset, HTML
-> main text) and WET conversions (plain text). Framing is ``etl.read.warc``'s; pure Python."""

from __future__ import annotations

import io
import zlib
from typing import Any, Callable, Iterator

from etl.read import decode
from etl.read.warc import Damaged, Region, WarcBlock, WarcError

EMPTY = "empty_record"
NON_HTML = "unsupported_content_type"
HTTP_STATUS = "http_status"
MALFORMED_HTTP = "malformed_http"
BAD_CONTENT_ENCODING = "bad_content_encoding"
READER_EXCEPTION = "reader_exception"


def warc_rows(items: Iterator[WarcBlock | WarcError | Region | Damaged], state) -> Iterator[dict[str, Any]]:
    """Rows of the document candidates among framed items (``state``: an ``etl.read.rows.RangeState``,
    by duck typing): ``response`` and ``conversion`` records; other record types are counted by type."""
    for item in items:
        if isinstance(item, Region):
            state.region(item.reason, item.length, item.offset)
        elif isinstance(item, Damaged):
            state.damaged(item.offset, item.length, item.reason, item.detail, item.records)
        elif isinstance(item, WarcError):
            yield state.row(
                item.offset, **(_ids(item.headers) if item.headers else {}), reason=item.reason, detail=item.detail
            )
        else:
            wtype = item.headers.get("warc-type", "").lower()
            if wtype == "response":
                yield guarded(lambda: _response(item, state), item.offset, state)
            elif wtype == "conversion":
                yield guarded(lambda: _conversion(item, state), item.offset, state)
            else:
                state.skipped[wtype or "untyped"] += 1


def guarded(parse: Callable[[], dict[str, Any]], offset: int, state) -> dict[str, Any]:
    """One record's parse; an unexpected exception rejects that record, never the job."""
    try:
        return parse()
    except Exception as e:  # noqa: BLE001 - recorded with its type and message, per record
        return state.row(offset, reason=READER_EXCEPTION, detail=f"{type(e).__name__}: {e}"[:300])


def _ids(headers: dict[str, str]) -> dict[str, Any]:
    rid = headers.get("warc-record-id", "").strip().strip("<>") or None
    return {"doc_id": rid, "url": headers.get("warc-target-uri"), "timestamp": headers.get("warc-date")}


def _conversion(item: WarcBlock, state) -> dict[str, Any]:
    ids = _ids(item.headers)
    if not item.block.strip():
        return state.row(item.offset, fmt="wet", **ids, reason=EMPTY)
    dec = decode.decode_bytes(item.block, ["utf-8"], state.cfg.limits, detect=True)
    if dec.reason:
        return state.row(
            item.offset, fmt="wet", **ids, reason=dec.reason, text=item.block[:4096].decode("utf-8", "replace")
        )
    return state.row(item.offset, fmt="wet", **ids, text=dec.text)


def _response(item: WarcBlock, state) -> dict[str, Any]:
    ids = _ids(item.headers)
    cfg = state.cfg
    head, sep, body = item.block.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = item.block.partition(b"\n\n")
    if not sep or not head.startswith(b"HTTP/"):
        return state.row(item.offset, **ids, reason=EMPTY if not item.block.strip() else MALFORMED_HTTP)
    status_line, *header_lines = head.decode("latin-1").splitlines()
    parts = status_line.split()
    status = parts[1] if len(parts) > 1 else ""
    http = {}
    for hl in header_lines:
        name, colon, value = hl.partition(":")
        if colon:
            http[name.strip().lower()] = value.strip()
    if status != "200":
        return state.row(item.offset, **ids, reason=HTTP_STATUS, detail=status[:16])
    ctype = http.get("content-type", "text/html")
    if not any(t in ctype.lower() for t in ("text/html", "application/xhtml", "text/plain")):
        return state.row(item.offset, **ids, reason=NON_HTML, detail=ctype[:100])
    try:
        body = _content_decoded(body, http, cfg.max_record_bytes)
    except (zlib.error, ValueError) as e:
        return state.row(item.offset, **ids, reason=BAD_CONTENT_ENCODING, detail=str(e)[:200])
    if not body.strip():
        return state.row(item.offset, **ids, reason=EMPTY)
    dec = decode.decode_bytes(body, [decode.http_charset(ctype), decode.meta_charset(body)], cfg.limits)
    if dec.reason:
        return state.row(
            item.offset, **ids, reason=dec.reason, detail=ctype[:100], text=body[:4096].decode("utf-8", "replace")
        )
    if "text/plain" in ctype.lower():
        title, text = None, dec.text
    else:
        title, text = decode.html_to_text(dec.text, cfg.main_content)
    if not text.strip():
        return state.row(item.offset, **ids, title=title, reason=EMPTY, detail="no text after HTML extraction")
    return state.row(item.offset, **ids, title=title, text=text, detail=dec.charset)


def _content_decoded(body: bytes, http: dict[str, str], limit: int) -> bytes:
    """Undo chunking and gzip/deflate, inflating at most ``limit`` bytes (a bomb is an error)."""
    if "chunked" in http.get("transfer-encoding", "").lower():
        body = _dechunk(body)
    enc = http.get("content-encoding", "").lower()
    if enc in ("gzip", "x-gzip"):
        return _inflate(body, 47, limit)
    if enc == "deflate":
        try:
            return _inflate(body, 15, limit)
        except zlib.error:
            return _inflate(body, -15, limit)
    if enc and enc != "identity":
        raise ValueError(f"unsupported Content-Encoding {enc}")
    return body


def _inflate(body: bytes, wbits: int, limit: int) -> bytes:
    d = zlib.decompressobj(wbits)
    out = d.decompress(body, limit + 1)
    if len(out) > limit:
        raise ValueError(f"Content-Encoding inflates past reader.max_record_bytes={limit}")
    if not d.eof:
        raise zlib.error("incomplete or truncated stream")
    return out


def _dechunk(body: bytes) -> bytes:
    """Undo HTTP chunked transfer encoding; a body that is not validly chunked is returned as is
    (crawlers often store de-chunked bodies but keep the header)."""
    out, pos = io.BytesIO(), 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            return body
        try:
            size = int(body[pos:eol].split(b";")[0], 16)
        except ValueError:
            return body
        if size == 0:
            return out.getvalue()
        out.write(body[eol + 2 : eol + 2 + size])
        pos = eol + 2 + size + 2
