"""Raw input files -> records (pure Python, no Spark).

A file is read as one or more byte ranges (``Range``). ``parse_range`` yields one dict per
document-candidate record whose first byte lies in the range, in the ``RAW_FIELDS`` layout, then
one ``kind="file"`` row with that range's counts; ``merge_stats`` joins a file's ranges and
checks they tile it exactly. ``parse_file(path, content, cfg)`` reads bytes in memory as one
range. A record that cannot be read carries ``reason`` (stage ``read``) instead of text, so
nothing is lost in silence. A file that cannot be read at all (empty, not gzip though named so,
UTF-16, binary, corrupt Parquet, unreadable) is one file-level error covering its bytes; it
never produces records and never stops the other files.

Document candidates: WARC ``response`` records (HTML over HTTP), WET ``conversion`` records
(plain text), JSONL lines, Parquet rows. ``warcinfo``/``request``/``metadata``/``revisit``/
``resource`` records are not documents; they are counted per file, by type.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator

from etl.read import decode, remote, warc
from etl.read.streams import GZIP_MAGIC, Stream, StreamBroken
from etl.read.warc_records import EMPTY, READER_EXCEPTION, guarded, warc_rows  # noqa: F401 - re-exported reasons

RECORD, FILE = "record", "file"
WARC_FMT, JSONL_FMT, PARQUET_FMT = "warc", "jsonl", "parquet"

RAW_FIELDS = ("kind", "doc_id", "source_file", "offset", "format", "source", "url", "timestamp",
              "title", "text", "reason", "detail", "file_stats")

# read-stage record reasons (besides decode.UNDECODABLE/MOJIBAKE, the warc.* framing reasons and
# etl.read.warc_records' HTTP reasons)
INVALID_JSON = "invalid_json"
MISSING_TEXT = "missing_text"
TOO_LARGE = warc.TOO_LARGE
# file-level reasons: the whole file (its ``bytes``) could not be read
EMPTY_FILE = "empty_file"
NOT_GZIP = "not_gzip"  # named *.gz but not gzip
UTF16 = "utf16_unsupported"  # JSONL in UTF-16 (BOM or NUL bytes on one parity)
NOT_TEXT = "not_text"  # JSONL that is binary (NUL or control bytes)
CORRUPT_PARQUET = "corrupt_parquet"
NO_TEXT_COLUMN = "no_text_column"
UNREADABLE = "unreadable"  # the file could not be opened or read (I/O error)
FILE_TOO_LARGE = "file_too_large"  # over Spark's binaryFile limit on a file system Python cannot read
UNSUPPORTED_FORMAT = "unsupported_format"

UTF8_BOM = b"\xef\xbb\xbf"
log = logging.getLogger("zhcorpus")
HEAD_BYTES = 4096


@dataclass(frozen=True)
class ReaderConfig:
    # Records above this size are rejected unread: a 200 MB "page" is a dump, not a document
    # (ours). It also bounds every read: no read is sized by a number taken from the input.
    max_record_bytes: int = 64 << 20
    # Decode checks (ours, measured on the demo crawl): share of U+FFFD among non-ASCII characters,
    # and share of ideographs outside GB2312 + Big5 level 1 among all ideographs.
    max_replacement_ratio: float = 0.05
    max_rare_han_ratio: float = 0.30
    min_han_for_rare_check: int = 20
    # resiliparse main-content extraction drops nav/header/footer boilerplate (docs/cleaning.md).
    main_content: bool = True
    # Text kept with a read-stage rejection for audit, in characters.
    rejected_text_max_chars: int = 65536
    # ``source`` for records that do not carry one ("" = the format name: warc, wet, jsonl, parquet).
    default_source: str = ""
    # Uncompressed JSONL/WARC/WET and Parquet are read as byte ranges of about this size, one
    # Spark task each, so one big file keeps every core busy (0 = one task per file). Spark's own
    # default split is 128 MB (spark.sql.files.maxPartitionBytes); ours is smaller because a byte
    # costs ~100x more here than in a plain scan (bench/bench_split_read.py).
    split_bytes: int = 64 << 20
    # Ranges are made smaller, down to this, until there are 2 per core (Spark's rule, with
    # spark.sql.files.openCostInBytes = 4 MB as the floor).
    min_split_bytes: int = 4 << 20
    # After reading, spread the records over 2 partitions per core (a hash of file and offset)
    # when the read had fewer tasks than that, or a file that cannot be split (gzip) is larger
    # than split_bytes: later stages then use every core.
    rebalance: bool = True
    # Read file: paths in Python (byte ranges, bounded memory, no size limit). s3:// and s3a://
    # are always read so (etl.read.remote); other file systems (hdfs://) go through Spark's
    # binaryFile: whole files, under 2 GiB each.
    local_reads: bool = True
    # Object storage: endpoint, region, addressing, timeouts, read-ahead (etl.read.remote, docs/storage.md).
    s3: remote.S3Config = field(default_factory=remote.S3Config)

    @property
    def limits(self) -> decode.QualityLimits:
        return decode.QualityLimits(self.max_replacement_ratio, self.max_rare_han_ratio, self.min_han_for_rare_check)


@dataclass(frozen=True)
class Range:
    """Bytes [start, end) of one file: the records whose first byte lies there."""
    path: str  # the file as the job names it (``source_file``)
    fmt: str
    size: int
    start: int
    end: int
    local: str | None = None  # where Python opens it: an OS path or an s3 URI (None: the bytes are given)
    aligned: bool = False  # start is known to begin a record (WARC ranges come from a walk)


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


def named_gzip(path: str) -> bool:
    return path.lower().endswith((".gz", ".gzip"))


class RangeState:
    """Rows and counts of one range."""

    def __init__(self, rng: Range, cfg: ReaderConfig):
        self.rng, self.path, self.fmt, self.cfg = rng, rng.path, rng.fmt or "unknown", cfg
        self.records = 0
        self.skipped: Counter[str] = Counter()
        self.errors: list[dict[str, Any]] = []
        self.regions: dict[str, dict[str, int]] = {}

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

    def file_error(self, reason: str, detail: str, nbytes: int | None = None, offset: int = 0) -> None:
        """A file-level error; whole-file ones are reported by the range that starts the file."""
        if nbytes is None and self.rng.start != 0:
            return
        self.errors.append({"offset": offset, "reason": reason, "detail": detail[:300],
                            "bytes": self.rng.size if nbytes is None else nbytes})

    def region(self, reason: str, nbytes: int) -> None:
        r = self.regions.setdefault(reason, {"count": 0, "bytes": 0})
        r["count"] += 1
        r["bytes"] += nbytes

    def stats(self) -> dict[str, Any]:
        return {"format": self.fmt, "size": self.rng.size, "range": [self.rng.start, self.rng.end],
                "bytes": self.rng.end - self.rng.start, "records": self.records,
                "skipped": dict(sorted(self.skipped.items())), "errors": self.errors,
                "regions": dict(sorted(self.regions.items()))}


def file_row(path: str, stats: dict[str, Any]) -> dict[str, Any]:
    return {**{k: None for k in RAW_FIELDS}, "kind": FILE, "source_file": path, "format": stats["format"],
            "file_stats": json.dumps(stats, sort_keys=True)}


def error_row(path: str, fmt: str | None, size: int, reason: str, detail: str) -> dict[str, Any]:
    """The reader row of a file read by nobody (empty, unsupported, too large): one error."""
    state = RangeState(Range(path, fmt or "unknown", size, 0, size), ReaderConfig())
    state.file_error(reason, detail)
    return file_row(path, state.stats())


# --- reading ------------------------------------------------------------------------------

def parse_file(path: str, content: bytes, cfg: ReaderConfig) -> Iterator[dict[str, Any]]:
    """A file given as bytes, read as one range; the last row carries the file's merged stats."""
    rng = Range(path, detect_format(path) or "unknown", len(content), 0, len(content))
    stats = None
    for row in parse_range(rng, cfg, content):
        if row["kind"] == FILE:
            stats = json.loads(row["file_stats"])
        else:
            yield row
    merged, problem = merge_stats([stats])
    assert problem is None, problem
    yield file_row(path, merged)


def parse_range(rng: Range, cfg: ReaderConfig, content: bytes | None = None,
                s3: remote.S3Access | None = None) -> Iterator[dict[str, Any]]:
    """The records of one range, then its ``kind="file"`` row. Never raises for bad input.
    ``s3`` opens ranges whose ``local`` is an s3 URI (``etl.read.remote``)."""
    state = RangeState(rng, cfg)
    try:
        yield from _read_range(rng, cfg, content, state, s3)
    except OSError as e:  # the file vanished or a disk failed: this file's error, not the run's
        state.file_error(UNREADABLE, f"{type(e).__name__}: {e}", rng.end - rng.start, rng.start)
    except Exception as e:  # noqa: BLE001 - never the run's failure; the rows so far are counted
        log.warning("reader failed in %s [%d, %d)", rng.path, rng.start, rng.end, exc_info=True)
        state.file_error(READER_EXCEPTION, f"{type(e).__name__}: {e}", rng.end - rng.start, rng.start)
    yield file_row(rng.path, state.stats())


def _read_range(rng: Range, cfg: ReaderConfig, content: bytes | None, state: RangeState,
                s3: remote.S3Access | None) -> Iterator[dict[str, Any]]:
    if rng.fmt not in (WARC_FMT, JSONL_FMT, PARQUET_FMT):
        state.file_error(UNSUPPORTED_FORMAT, rng.path)
        return
    if rng.size == 0:
        state.file_error(EMPTY_FILE, "the file has no bytes")
        return
    try:
        fh: BinaryIO = io.BytesIO(content) if content is not None else remote.open_input(rng.local, s3)
    except OSError as e:
        state.file_error(UNREADABLE, f"{type(e).__name__}: {e}")
        return
    with fh:
        if rng.fmt == PARQUET_FMT:
            from etl.read.parquet_records import parquet_rows

            yield from parquet_rows(fh, state)
            return
        compressed, problem = sniff(fh, rng)
        if problem:
            state.file_error(*problem)
            return
        if compressed and rng.start != 0:
            return  # a compressed file is read whole by the range that starts it
        stream = Stream(fh, compressed, 0 if compressed else rng.start)
        end = None if compressed else rng.end
        if rng.fmt == WARC_FMT:
            assert rng.start == 0 or rng.aligned, "uncompressed WARC ranges start at a record (readers.plan)"
            yield from warc_rows(warc.iter_warc(stream, cfg.max_record_bytes, end), state)
        else:
            yield from _jsonl_rows(stream, rng.start != 0 and not compressed and not rng.aligned, end, state)


def sniff(fh: BinaryIO, rng: Range) -> tuple[bool, tuple[str, str] | None]:
    """(compressed, file-level problem) from the first bytes of the file (and of its contents)."""
    fh.seek(0)
    magic = fh.read(2)
    compressed = magic == GZIP_MAGIC
    if named_gzip(rng.path) and not compressed:
        return False, (NOT_GZIP, f"named .gz but starts with {magic!r}, not the gzip magic")
    if rng.fmt != JSONL_FMT:
        return compressed, None
    fh.seek(0)
    head = Stream(fh, compressed).peek(HEAD_BYTES)
    fh.seek(0)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or _nul_parity(head) > 0.9:
        return compressed, (UTF16, "JSONL in UTF-16: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)")
    if b"\x00" in head or decode.binary_ratio(head) > 0.05:
        return compressed, (NOT_TEXT, "binary bytes, not JSON lines")
    return compressed, None


def _nul_parity(head: bytes) -> float:
    """Share of NUL bytes on their majority parity (UTF-16: ASCII characters put every NUL on one)."""
    nul = head.count(0)
    if nul < 4:
        return 0.0
    return max(head[0::2].count(0), head[1::2].count(0)) / nul


# --- stats --------------------------------------------------------------------------------

def merge_stats(parts: list[dict[str, Any]]) -> tuple[dict[str, Any], str | None]:
    """One file's stats from its ranges' stats, and a problem if the ranges do not tile the
    file exactly (a range lost, read twice, or overlapping). A file that yields no record but
    has unframed regions is a file-level error (nothing in it could be read)."""
    parts = sorted(parts, key=lambda p: p["range"][0])
    size, at, problem = parts[0]["size"], 0, None
    for p in parts:
        if p["range"][0] != at:
            problem = f"ranges do not tile the file: {at} then {p['range']}"
        at = p["range"][1]
    if at != size and problem is None:
        problem = f"ranges end at {at}, the file has {size} bytes"
    skipped, regions = Counter(), {}
    for p in parts:
        skipped.update(p["skipped"])
        for reason, r in p["regions"].items():
            acc = regions.setdefault(reason, {"count": 0, "bytes": 0})
            acc["count"] += r["count"]
            acc["bytes"] += r["bytes"]
    merged = {"format": parts[0]["format"], "bytes": sum(p["bytes"] for p in parts),
              "records": sum(p["records"] for p in parts), "skipped": dict(sorted(skipped.items())),
              "errors": [e for p in parts for e in p["errors"]], "regions": dict(sorted(regions.items())),
              "ranges": len(parts)}
    if merged["records"] == 0 and not merged["errors"] and regions:
        reason = max(sorted(regions), key=lambda k: (regions[k]["bytes"], regions[k]["count"]))
        merged["errors"] = [{"offset": 0, "reason": reason, "detail": "no record could be read from the file",
                             "bytes": size}]
    return merged, problem


# --- JSONL --------------------------------------------------------------------------------

def _jsonl_rows(stream: Stream, align: bool, end: int | None, state: RangeState) -> Iterator[dict[str, Any]]:
    """Lines whose first byte lies before ``end``; ``align``: skip the line in progress at the start."""
    limit = state.cfg.max_record_bytes
    if align:
        stream.seek(stream.pos - 1)
        stream.skip_line()
    while end is None or stream.pos < end:
        offset = stream.pos
        try:
            line = stream.readline(limit + 1)
            if len(line) > limit:
                n = len(line) + (0 if line.endswith(b"\n") else stream.skip_line())
                yield state.row(offset, reason=TOO_LARGE, detail=f"{n} bytes, over reader.max_record_bytes={limit}")
                continue
        except StreamBroken as e:
            partial = getattr(e, "partial", b"")
            if partial.strip():
                yield state.row(offset, reason=e.reason, detail=e.detail)
            else:
                state.region(e.reason, len(partial))
            if not stream.recover():
                return
            continue
        if not line:
            return
        if offset == 0 and line.startswith(UTF8_BOM):
            line = line[len(UTF8_BOM):]
        if line.strip():
            yield guarded(lambda: _jsonl_row(line, offset, state), offset, state)


def _jsonl_row(line: bytes, offset: int, state: RangeState) -> dict[str, Any]:
    raw_text = line.decode("utf-8", errors="replace")
    try:
        obj = json.loads(raw_text)
    except ValueError as e:
        return state.row(offset, reason=INVALID_JSON, detail=str(e)[:200], text=decode.sanitize(raw_text))
    if not isinstance(obj, dict):
        return state.row(offset, reason=INVALID_JSON, detail=f"not an object: {type(obj).__name__}",
                         text=decode.sanitize(raw_text))
    return object_row(obj, offset, state)


def object_row(obj: dict[str, Any], offset: int, state: RangeState, text_type: str | None = None) -> dict[str, Any]:
    """A JSON object or Parquet row as a record; ``text_type`` names a non-string column type."""
    meta = {"doc_id": _opt_str(obj.get("id")), "source": _opt_str(obj.get("source")),
            "url": _opt_str(obj.get("url")), "timestamp": _opt_str(obj.get("timestamp"))}
    text = obj.get("text")
    if text_type is not None:
        return state.row(offset, **meta, reason=MISSING_TEXT, detail=f"text is {text_type}")
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
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float, list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)  # Parquet dates, timestamps, decimals
