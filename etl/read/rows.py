"""One range's rows: the record layout (``RAW_FIELDS``), the read stage's reasons, the reader's
config and ``RangeState``, the rows and counts of one byte range, which every format's parser
fills (``etl.read.records`` for JSONL, ``etl.read.warc_records``, ``etl.read.parquet_records``).
``object_row`` turns a JSON object or a Parquet row into a record. Pure Python, no Spark.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from etl.read import decode, remote, warc
from etl.read.warc_records import EMPTY

RECORD, FILE = "record", "file"
WARC_FMT, JSONL_FMT, PARQUET_FMT = "warc", "jsonl", "parquet"

RAW_FIELDS = (
    "kind",
    "doc_id",
    "source_file",
    "offset",
    "format",
    "source",
    "url",
    "timestamp",
    "title",
    "text",
    "reason",
    "detail",
    "file_stats",
)

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
    aliases: tuple[str, ...] = ()  # other names the inputs gave this file (etl.read.readers.distinct_files)


def derived_doc_id(path: str, offset: int) -> str:
    """Deterministic 128-bit id from the source file and the record's byte offset."""
    return hashlib.blake2b(f"{path}\0{offset}".encode(), digest_size=16).hexdigest()


class RangeState:
    """Rows and counts of one range."""

    def __init__(self, rng: Range, cfg: ReaderConfig):
        self.rng, self.path, self.fmt, self.cfg = rng, rng.path, rng.fmt or "unknown", cfg
        self.records = 0
        self.skipped: Counter[str] = Counter()
        self.errors: list[dict[str, Any]] = []
        self.regions: dict[str, dict[str, int]] = {}
        self.region_offsets: dict[str, int] = {}  # the first region of each reason

    def row(
        self,
        offset: int,
        *,
        doc_id: str | None = None,
        fmt: str | None = None,
        source: str | None = None,
        url: str | None = None,
        timestamp: str | None = None,
        title: str | None = None,
        text: str | None = None,
        reason: str | None = None,
        detail: str | None = None,
    ) -> dict[str, Any]:
        fmt = fmt or self.fmt
        if reason is not None and text is not None:
            text = text[: self.cfg.rejected_text_max_chars]
        row = {
            "kind": RECORD,
            "doc_id": decode.sanitize(doc_id) or derived_doc_id(self.path, offset),
            "source_file": self.path,
            "offset": offset,
            "format": fmt,
            "source": decode.sanitize(source) or self.cfg.default_source or fmt,
            "url": decode.sanitize(url),
            "timestamp": decode.sanitize(timestamp),
            "title": decode.sanitize(title),
            "text": decode.sanitize(text),
            "reason": reason,
            "detail": decode.sanitize(detail),
            "file_stats": None,
        }
        self.records += 1
        return row

    def file_error(self, reason: str, detail: str, nbytes: int | None = None, offset: int = 0) -> None:
        """A file-level error; whole-file ones are reported by the range that starts the file."""
        if nbytes is None and self.rng.start != 0:
            return
        self.errors.append(
            {
                "offset": offset,
                "reason": reason,
                "detail": detail[:300],
                "bytes": self.rng.size if nbytes is None else nbytes,
            }
        )

    def region(self, reason: str, nbytes: int, offset: int | None = None) -> None:
        """Bytes between records that no record claims (``etl.read.warc.Region``); the file's
        regions are one file error per reason (``etl.read.records.merge_stats``)."""
        r = self.regions.setdefault(reason, {"count": 0, "bytes": 0})
        r["count"] += 1
        r["bytes"] += nbytes
        if offset is not None:
            self.region_offsets[reason] = min(offset, self.region_offsets.get(reason, offset))

    def damaged(self, offset: int, nbytes: int, reason: str, detail: str, records: int) -> None:
        """Bytes of the file as stored that were skipped to get past damage (a corrupt gzip
        member): a file error with ``records``, the records known to lie there (each rejected)."""
        self.errors.append(
            {
                "offset": offset,
                "reason": reason,
                "detail": f"{nbytes} bytes from byte {offset} of the file skipped: {detail}"[:300],
                "bytes": nbytes,
                "records": records,
            }
        )

    def stats(self) -> dict[str, Any]:
        return {
            "format": self.fmt,
            "size": self.rng.size,
            "range": [self.rng.start, self.rng.end],
            "bytes": self.rng.end - self.rng.start,
            "records": self.records,
            "skipped": dict(sorted(self.skipped.items())),
            "errors": self.errors,
            "regions": dict(sorted(self.regions.items())),
            **({"region_offsets": dict(sorted(self.region_offsets.items()))} if self.region_offsets else {}),
            **({"also_named": list(self.rng.aliases)} if self.rng.aliases and self.rng.start == 0 else {}),
        }


def file_row(path: str, stats: dict[str, Any]) -> dict[str, Any]:
    return {
        **{k: None for k in RAW_FIELDS},
        "kind": FILE,
        "source_file": path,
        "format": stats["format"],
        "file_stats": json.dumps(stats, sort_keys=True),
    }


def object_row(obj: dict[str, Any], offset: int, state: RangeState, text_type: str | None = None) -> dict[str, Any]:
    """A JSON object or Parquet row as a record; ``text_type`` names a non-string column type."""
    meta = {
        "doc_id": _opt_str(obj.get("id")),
        "source": _opt_str(obj.get("source")),
        "url": _opt_str(obj.get("url")),
        "timestamp": _opt_str(obj.get("timestamp")),
    }
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
