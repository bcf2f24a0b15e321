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

import io
import json
import logging
from collections import Counter
from typing import Any, BinaryIO, Iterator

from etl.read import decode, remote, warc

# The record layout, the read reasons, ReaderConfig and RangeState live in etl.read.rows (every
# format's parser fills them); re-exported: the readers' users name them through this module.
from etl.read.rows import (
    CORRUPT_PARQUET,
    EMPTY_FILE,
    FILE,
    FILE_TOO_LARGE,
    INVALID_JSON,
    JSONL_FMT,  # noqa: F401
    MISSING_TEXT,
    NO_TEXT_COLUMN,
    NOT_GZIP,
    NOT_TEXT,
    PARQUET_FMT,
    RAW_FIELDS,
    RECORD,
    TOO_LARGE,
    UNREADABLE,
    UNSUPPORTED_FORMAT,
    UTF16,
    WARC_FMT,
    Range,
    RangeState,
    ReaderConfig,
    derived_doc_id,
    file_row,
    object_row,
)
from etl.read.streams import GZIP_MAGIC, Stream, StreamBroken
from etl.read.warc_records import EMPTY, READER_EXCEPTION, guarded, warc_rows  # noqa: F401 - re-exported reasons

UTF8_BOM = b"\xef\xbb\xbf"
log = logging.getLogger("zhcorpus")
HEAD_BYTES = 4096


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


def error_row(
    path: str, fmt: str | None, size: int, reason: str, detail: str, aliases: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The reader row of a file read by nobody (empty, unsupported, too large): one error."""
    state = RangeState(Range(path, fmt or "unknown", size, 0, size, aliases=aliases), ReaderConfig())
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


def parse_range(
    rng: Range, cfg: ReaderConfig, content: bytes | None = None, s3: remote.S3Access | None = None
) -> Iterator[dict[str, Any]]:
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


def _read_range(
    rng: Range, cfg: ReaderConfig, content: bytes | None, state: RangeState, s3: remote.S3Access | None
) -> Iterator[dict[str, Any]]:
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
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or _nul_parity(head) > 0.9 or _utf16_json(head):
        return compressed, (UTF16, "JSONL in UTF-16: convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)")
    if b"\x00" in head or decode.binary_ratio(head) > 0.05:
        return compressed, (NOT_TEXT, "binary bytes, not JSON lines")
    return compressed, None


def _utf16_json(head: bytes) -> bool:
    """BOM-less UTF-16 JSON lines whose NULs are not all on one parity (Chinese text: 一 is U+4E00,
    a NUL on the other side of each code unit from ASCII's): the head decodes as UTF-16 in one byte
    order into a JSON object's opening."""
    if b"\x00" not in head:
        return False
    for order in ("utf-16-le", "utf-16-be"):
        text = head[: len(head) & ~1].decode(order, errors="replace")
        if text.lstrip().startswith('{"') and text.count("\ufffd") <= 1:
            return True
    return False


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
    merged = {
        "format": parts[0]["format"],
        "bytes": sum(p["bytes"] for p in parts),
        "records": sum(p["records"] for p in parts),
        "skipped": dict(sorted(skipped.items())),
        "errors": [e for p in parts for e in p["errors"]],
        "regions": dict(sorted(regions.items())),
        "ranges": len(parts),
        **next(({"also_named": p["also_named"]} for p in parts if p.get("also_named")), {}),
    }
    if merged["records"] == 0 and not merged["errors"] and regions:
        reason = max(sorted(regions), key=lambda k: (regions[k]["bytes"], regions[k]["count"]))
        merged["errors"] = [
            {"offset": 0, "reason": reason, "detail": "no record could be read from the file", "bytes": size}
        ]
    else:
        merged["errors"] += _region_errors(parts, regions)
    return merged, problem


def _region_errors(parts: list[dict[str, Any]], regions: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
    """One file error per reason of the file's regions: bytes no record claims are bytes the
    corpus lost (issue 34), so the file was not read in full."""
    first: dict[str, int] = {}
    for p in parts:
        for reason, at in p.get("region_offsets", {}).items():
            first[reason] = min(at, first.get(reason, at))
    return [
        {
            "offset": first.get(reason, 0),
            "reason": reason,
            "detail": f"{r['count']} stretch(es) of bytes between records that no record claims "
            "(input.unframed_regions), the first at this offset",
            "bytes": r["bytes"],
            "regions": r["count"],
        }
        for reason, r in sorted(regions.items())
    ]


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
            known = bool(partial.strip())
            if known:
                yield state.row(offset, reason=e.reason, detail=e.detail)
            lost = _lost_lines(e, not partial)
            for at in lost:  # lines a corrupt member inflated before its damage: lost, and counted
                yield state.row(at, reason=e.reason, detail=e.detail)
            more = stream.recover()
            if stream.skipped is not None:
                s = stream.skipped
                state.damaged(s.offset, s.length, e.reason, e.detail, int(known) + len(lost))
            elif not known:
                state.region(e.reason, len(partial), offset)
            if not more:
                return
            continue
        if not line:
            return
        if offset == 0 and line.startswith(UTF8_BOM):
            line = line[len(UTF8_BOM) :]
        if line.strip():
            yield guarded(lambda: _jsonl_row(line, offset, state), offset, state)


def _lost_lines(e: StreamBroken, at_line_start: bool) -> list[int]:
    """Stream offsets of the non-blank lines that begin in ``e.salvage``."""
    data, out = e.salvage, []
    start = 0 if at_line_start else data.find(b"\n") + 1 or len(data)
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        if data[start:end].strip():
            out.append(e.salvage_at + start)
        start = end
    return out


def _jsonl_row(line: bytes, offset: int, state: RangeState) -> dict[str, Any]:
    raw_text = line.decode("utf-8", errors="replace")
    try:
        obj = json.loads(raw_text)
    except ValueError as e:
        return state.row(offset, reason=INVALID_JSON, detail=str(e)[:200], text=decode.sanitize(raw_text))
    if not isinstance(obj, dict):
        return state.row(
            offset, reason=INVALID_JSON, detail=f"not an object: {type(obj).__name__}", text=decode.sanitize(raw_text)
        )
    return object_row(obj, offset, state)
