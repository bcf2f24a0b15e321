"""Raw input files -> records (pure Python, no Spark).

``parse_file(path, content, cfg)`` yields one dict per document-candidate record, in the
``RAW_FIELDS`` layout, and finally one ``kind="file"`` row with the file's own counts (records,
skipped non-document WARC records by type, file-level errors). A record that cannot be read
carries ``reason`` (stage ``read``) instead of text, so nothing is lost in silence.

Document candidates: WARC ``response`` records (HTML over HTTP), WET ``conversion`` records
(plain text), JSONL lines. ``warcinfo``/``request``/``metadata``/``revisit``/``resource``
records are not documents; they are counted per file, by type.
"""

from __future__ import annotations

import hashlib
import io
import json
import zlib
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from etl import decode, warc
from etl.warc import WarcBlock, WarcError, open_maybe_gzip

RECORD, FILE = "record", "file"
WARC_FMT, JSONL_FMT, PARQUET_FMT = "warc", "jsonl", "parquet"

RAW_FIELDS = ("kind", "doc_id", "source_file", "offset", "format", "source", "url", "timestamp",
              "title", "text", "reason", "detail", "file_stats")

# read-stage reasons (besides decode.UNDECODABLE/MOJIBAKE and warc.MALFORMED_HEADER/TRUNCATED/CORRUPT_GZIP)
EMPTY = "empty_record"
INVALID_JSON = "invalid_json"
MISSING_TEXT = "missing_text"
NON_HTML = "unsupported_content_type"
HTTP_STATUS = "http_status"
MALFORMED_HTTP = "malformed_http"
TOO_LARGE = "record_too_large"
BAD_CONTENT_ENCODING = "bad_content_encoding"
READER_EXCEPTION = "reader_exception"


@dataclass(frozen=True)
class ReaderConfig:
    # Records above this size are rejected unparsed: a 200 MB "page" is a dump, not a document (ours).
    max_record_bytes: int = 64 << 20
    # Decode checks (ours, measured on the demo crawl): share of U+FFFD among non-ASCII characters,
    # and share of ideographs outside GB2312 + Big5 level 1 among all ideographs.
    max_replacement_ratio: float = 0.05
    max_rare_han_ratio: float = 0.30
    min_han_for_rare_check: int = 20
    # resiliparse main-content extraction drops nav/header/footer boilerplate (see README).
    main_content: bool = True
    # Text kept with a read-stage rejection for audit, in characters.
    rejected_text_max_chars: int = 65536
    # ``source`` for records that do not carry one ("" = the format name: warc, wet, jsonl, parquet).
    default_source: str = ""

    @property
    def limits(self) -> decode.QualityLimits:
        return decode.QualityLimits(self.max_replacement_ratio, self.max_rare_han_ratio, self.min_han_for_rare_check)


def derived_doc_id(path: str, offset: int) -> str:
    """Deterministic 128-bit id from the source file and the record's byte offset."""
    return hashlib.blake2b(f"{path}\0{offset}".encode(), digest_size=16).hexdigest()


def detect_format(path: str) -> str | None:
    name = path.lower().rsplit("/", 1)[-1]
    for suffix in (".gz", ".gzip"):
        name = name.removesuffix(suffix)
    if name.endswith((".warc", ".wet", ".arc")):
        return WARC_FMT
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return JSONL_FMT
    if name.endswith(".parquet"):
        return PARQUET_FMT
    return None


class _FileState:
    def __init__(self, path: str, fmt: str, size: int, cfg: ReaderConfig):
        self.path, self.fmt, self.size, self.cfg = path, fmt, size, cfg
        self.records = 0
        self.skipped: Counter[str] = Counter()
        self.errors: list[dict[str, Any]] = []

    def row(self, offset: int, *, doc_id: str | None = None, fmt: str | None = None, source: str | None = None,
            url: str | None = None, timestamp: str | None = None, title: str | None = None,
            text: str | None = None, reason: str | None = None, detail: str | None = None) -> dict[str, Any]:
        fmt = fmt or self.fmt
        if reason is not None and text is not None:
            text = text[: self.cfg.rejected_text_max_chars]
        row = {
            "kind": RECORD, "doc_id": decode.sanitize(doc_id) or derived_doc_id(self.path, offset),
            "source_file": self.path, "offset": offset, "format": fmt,
            "source": decode.sanitize(source) or self.cfg.default_source or fmt,
            "url": decode.sanitize(url), "timestamp": decode.sanitize(timestamp), "title": decode.sanitize(title),
            "text": decode.sanitize(text), "reason": reason, "detail": decode.sanitize(detail), "file_stats": None,
        }
        self.records += 1
        return row

    def summary(self) -> dict[str, Any]:
        stats = {"format": self.fmt, "bytes": self.size, "records": self.records,
                 "skipped": dict(sorted(self.skipped.items())), "errors": self.errors}
        return {**{k: None for k in RAW_FIELDS}, "kind": FILE, "source_file": self.path, "format": self.fmt,
                "file_stats": json.dumps(stats, sort_keys=True)}


def parse_file(path: str, content: bytes, cfg: ReaderConfig) -> Iterator[dict[str, Any]]:
    fmt = detect_format(path)
    state = _FileState(path, fmt or "unknown", len(content), cfg)
    if fmt == WARC_FMT:
        yield from _warc_records(content, state)
    elif fmt == JSONL_FMT:
        yield from _jsonl_records(content, state)
    else:
        state.errors.append({"offset": 0, "reason": "unsupported_format", "detail": path})
    yield state.summary()


# --- WARC / WET ---------------------------------------------------------------------------

def _warc_records(content: bytes, state: _FileState) -> Iterator[dict[str, Any]]:
    saw_record = False
    for item in warc.iter_warc(content):
        if isinstance(item, WarcError):
            if not saw_record and item.reason != warc.TRUNCATED:
                # Nothing framed yet: not a WARC at all (or corrupt from byte 0). A file-level error.
                state.errors.append({"offset": item.offset, "reason": item.reason, "detail": item.detail})
                if item.reason == warc.CORRUPT_GZIP:
                    return
                continue
            yield state.row(item.offset, reason=item.reason, detail=item.detail)
            continue
        saw_record = True
        wtype = item.headers.get("warc-type", "").lower()
        if wtype == "response":
            yield _guarded(lambda: _response(item, state), item.offset, state)
        elif wtype == "conversion":
            yield _guarded(lambda: _conversion(item, state), item.offset, state)
        else:
            state.skipped[wtype or "untyped"] += 1


def _guarded(parse: Callable[[], dict[str, Any]], offset: int, state: _FileState) -> dict[str, Any]:
    """One record's parse; an unexpected exception rejects that record, never the job."""
    try:
        return parse()
    except Exception as e:  # noqa: BLE001 - recorded with its type and message, per record
        return state.row(offset, reason=READER_EXCEPTION, detail=f"{type(e).__name__}: {e}"[:300])


def _warc_ids(item: WarcBlock) -> dict[str, Any]:
    rid = item.headers.get("warc-record-id", "").strip().strip("<>") or None
    return {"doc_id": rid, "url": item.headers.get("warc-target-uri"), "timestamp": item.headers.get("warc-date")}


def _conversion(item: WarcBlock, state: _FileState) -> dict[str, Any]:
    ids = _warc_ids(item)
    if len(item.block) > state.cfg.max_record_bytes:
        return state.row(item.offset, fmt="wet", **ids, reason=TOO_LARGE, detail=str(len(item.block)))
    if not item.block.strip():
        return state.row(item.offset, fmt="wet", **ids, reason=EMPTY)
    dec = decode.decode_bytes(item.block, ["utf-8"], state.cfg.limits, detect=True)
    if dec.reason:
        return state.row(item.offset, fmt="wet", **ids, reason=dec.reason,
                         text=item.block[:4096].decode("utf-8", "replace"))
    return state.row(item.offset, fmt="wet", **ids, text=dec.text)


def _response(item: WarcBlock, state: _FileState) -> dict[str, Any]:
    ids = _warc_ids(item)
    cfg = state.cfg
    if len(item.block) > cfg.max_record_bytes:
        return state.row(item.offset, **ids, reason=TOO_LARGE, detail=str(len(item.block)))
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
        body = _content_decoded(body, http)
    except (zlib.error, ValueError) as e:
        return state.row(item.offset, **ids, reason=BAD_CONTENT_ENCODING, detail=str(e)[:200])
    if not body.strip():
        return state.row(item.offset, **ids, reason=EMPTY)
    dec = decode.decode_bytes(body, [decode.http_charset(ctype), decode.meta_charset(body)], cfg.limits)
    if dec.reason:
        return state.row(item.offset, **ids, reason=dec.reason, detail=ctype[:100],
                         text=body[:4096].decode("utf-8", "replace"))
    if "text/plain" in ctype.lower():
        title, text = None, dec.text
    else:
        title, text = decode.html_to_text(dec.text, cfg.main_content)
    if not text.strip():
        return state.row(item.offset, **ids, title=title, reason=EMPTY, detail="no text after HTML extraction")
    return state.row(item.offset, **ids, title=title, text=text, detail=dec.charset)


def _content_decoded(body: bytes, http: dict[str, str]) -> bytes:
    if "chunked" in http.get("transfer-encoding", "").lower():
        body = _dechunk(body)
    enc = http.get("content-encoding", "").lower()
    if enc in ("gzip", "x-gzip"):
        return zlib.decompress(body, wbits=47)
    if enc == "deflate":
        try:
            return zlib.decompress(body)
        except zlib.error:
            return zlib.decompress(body, wbits=-15)
    if enc and enc != "identity":
        raise ValueError(f"unsupported Content-Encoding {enc}")
    return body


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
        out.write(body[eol + 2: eol + 2 + size])
        pos = eol + 2 + size + 2


# --- JSONL --------------------------------------------------------------------------------

def _jsonl_records(content: bytes, state: _FileState) -> Iterator[dict[str, Any]]:
    stream = warc.CountingReader(open_maybe_gzip(content))
    while True:
        offset = stream.pos
        try:
            line = stream.readline()
        except warc.StreamBroken as e:
            if offset == 0:
                state.errors.append({"offset": 0, "reason": e.reason, "detail": e.detail})
            else:
                yield state.row(offset, reason=e.reason, detail=e.detail)
            return
        if not line:
            return
        if not line.strip():
            continue
        yield _guarded(lambda: _jsonl_row(line, offset, state), offset, state)


def _jsonl_row(line: bytes, offset: int, state: _FileState) -> dict[str, Any]:
    if len(line) > state.cfg.max_record_bytes:
        return state.row(offset, reason=TOO_LARGE, detail=str(len(line)))
    raw_text = line.decode("utf-8", errors="replace")
    try:
        obj = json.loads(raw_text)
    except ValueError as e:
        return state.row(offset, reason=INVALID_JSON, detail=str(e)[:200], text=decode.sanitize(raw_text))
    if not isinstance(obj, dict):
        return state.row(offset, reason=INVALID_JSON, detail=f"not an object: {type(obj).__name__}",
                         text=decode.sanitize(raw_text))
    return _object_row(obj, offset, state)


def parquet_row(r: dict[str, Any], cfg: ReaderConfig) -> dict[str, Any]:
    """A Parquet row (path, row_index, id, url, source, timestamp, text) as a record."""
    return _object_row(r, r["row_index"], _FileState(r["path"], PARQUET_FMT, 0, cfg))


def _object_row(obj: dict[str, Any], offset: int, state: _FileState) -> dict[str, Any]:
    meta = {"doc_id": _opt_str(obj.get("id")), "source": _opt_str(obj.get("source")),
            "url": _opt_str(obj.get("url")), "timestamp": _opt_str(obj.get("timestamp"))}
    text = obj.get("text")
    if text is None:
        return state.row(offset, **meta, reason=MISSING_TEXT)
    if not isinstance(text, str):
        return state.row(offset, **meta, reason=MISSING_TEXT, detail=f"text is {type(text).__name__}")
    text = decode.sanitize(text)
    if not text.strip():
        return state.row(offset, **meta, reason=EMPTY)
    problem = decode.quality_problem(text, state.cfg.limits)
    if problem:
        return state.row(offset, **meta, reason=problem, text=text)
    return state.row(offset, **meta, text=text)


def _opt_str(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
