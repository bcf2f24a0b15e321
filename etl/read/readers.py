"""Spark readers: raw crawl files from any Hadoop path (local, hdfs://, s3a://) -> one DataFrame
of ``RAW_SCHEMA`` rows (records, plus ``kind="file"`` rows with each range's reader counts).

The driver lists the files with their sizes and plans byte ranges (``plan``): an uncompressed
JSONL file is cut every ``reader.split_bytes`` (each range reads the lines that start in it), an
uncompressed WARC/WET file at record starts found by walking its headers, a Parquet file by row
group; a gzip file is one range (gzip cannot be split). One Spark task reads a range, or a pack
of small files, in Python with bounded memory (``etl.read.records.parse_range``), so one big file
keeps every core busy, reports progress per range and has no size limit; small files are packed
into about two tasks per core (``etl.runtime.sizing``: 3,000 one-record files are 4 tasks on 2 cores).
``s3://``/``s3a://`` objects are listed and read the same way through ``etl.read.remote`` (ranged
GETs). Files on other file systems go through Spark's ``binaryFile`` (whole files, each under 2 GiB). Empty files,
unknown formats and oversized remote files get their reader row from the driver. After reading,
the records are spread over every core when the read itself could not be (``reader.rebalance``).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from etl.read import records as rec
from etl.read import remote, warc
from etl.read.streams import GZIP_MAGIC, Stream
from etl.runtime import sizing
from etl.runtime.paths import NoInputFiles
from etl.runtime.progress import Counters
from etl.runtime.sizing import OPEN_COST

log = logging.getLogger("zhcorpus")

RAW_SCHEMA = T.StructType(
    [T.StructField(name, T.LongType() if name == "offset" else T.StringType()) for name in rec.RAW_FIELDS]
)
ARROW_RAW = pa.schema([pa.field(name, pa.int64() if name == "offset" else pa.string()) for name in rec.RAW_FIELDS])
RANGE_SCHEMA = T.StructType(
    [
        T.StructField("path", T.StringType()),
        T.StructField("fmt", T.StringType()),
        T.StructField("size", T.LongType()),
        T.StructField("start", T.LongType()),
        T.StructField("end", T.LongType()),
        T.StructField("local", T.StringType()),
        T.StructField("aligned", T.BooleanType()),
        T.StructField("aliases", T.ArrayType(T.StringType())),
    ]
)
BATCH_ROWS = 1024
BATCH_BYTES = 32 << 20
BINARY_FILE_LIMIT = (1 << 31) - 1  # Spark's binaryFile holds a file in one byte array
DEFAULT_PACK = 64 << 20  # bytes a task packs when ranges are not split (reader.split_bytes = 0)


@dataclass(frozen=True)
class InputFile:
    path: str  # as Hadoop names it: the records' source_file
    size: int
    local: str | None  # where Python opens it: the OS path of a local file, or an s3 URI
    aliases: tuple[str, ...] = ()  # the other names the inputs gave the same file (it is read once)


@dataclass
class Plan:
    tasks: list[list[rec.Range]] = field(default_factory=list)  # one Spark task per pack of ranges
    remote: list[InputFile] = field(default_factory=list)  # read whole through binaryFile
    driver_rows: list[dict[str, Any]] = field(default_factory=list)  # files nobody reads
    split: int | None = None
    unsplit_bytes: int = 0  # the largest range that could not be split (gzip)
    capacity: int = 0  # bytes (plus OPEN_COST a range) a task packs (etl.runtime.sizing.read_capacity)
    # Tasks the binaryFile read is coalesced into, packed like local files; 0 = as Spark plans it
    # (some remote file is large: coalescing would put several large files in one Arrow batch).
    remote_tasks: int = 0

    @property
    def ranges(self) -> int:
        return sum(len(t) for t in self.tasks)


def list_inputs(spark: SparkSession, paths: list[str], s3: remote.S3Access | None = None) -> list[InputFile]:
    """Expand files, directories (recursively) and globs through Hadoop's FileSystem API, with
    sizes (s3 URIs through ``etl.read.remote.list_files`` and ``s3``, resolved from the defaults when
    None); hidden files (``_*``, ``.*``) are skipped, as Spark does. Raises ``NoInputFiles``
    (a ``FileNotFoundError``) for a path that matches nothing or only hidden files, and the
    refusals of ``etl.read.remote`` (credentials, bucket, access)."""
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    listed: list[InputFile] = []
    for p in paths:
        if remote.is_s3(p):
            found, local = remote.list_files(p, s3 or remote.S3Access.resolve(remote.S3Config())), True
            if not found:
                raise NoInputFiles(f"input path matches nothing: {p}")
        else:
            path = jvm.org.apache.hadoop.fs.Path(p)
            fs = path.getFileSystem(conf)
            statuses = fs.globStatus(path)
            if statuses is None or len(statuses) == 0:
                raise NoInputFiles(f"input path matches nothing: {p}")
            found = [f for st in statuses for f in _walk(fs, st)]
            local = statuses[0].getPath().toUri().getScheme() == "file"
        visible = [(name, size) for name, size in found if not name.rsplit("/", 1)[-1].startswith(("_", "."))]
        if not visible:
            raise NoInputFiles(
                f"no input files under {p} ({len(found)} hidden file(s) skipped: names starting with '.' or '_')"
            )
        for name, size in visible:
            listed.append(InputFile(name, size, (name if remote.is_s3(name) else _local_path(name)) if local else None))
    return distinct_files(listed)


def distinct_files(listed: list[InputFile]) -> list[InputFile]:
    """One ``InputFile`` per file, whatever the names it was listed under (a directory and a file
    in it, a symlink beside its target, a hard link, ``s3a://`` and ``s3://``), with the others in
    ``aliases``, by path. The name kept is the file's own (not a symlink's), else the first."""
    groups: dict[tuple, list[InputFile]] = {}
    for f in listed:
        groups.setdefault(file_identity(f), []).append(f)
    out = []
    for group in groups.values():
        keep = min(group, key=lambda f: (_is_link(f), f.path))
        names = sorted(f.path for f in group)
        names.remove(keep.path)
        if names:
            log.warning("input %s is also named %s: read once", keep.path, ", ".join(names))
        out.append(InputFile(keep.path, keep.size, keep.local, tuple(names)))
    return sorted(out, key=lambda f: f.path)


def file_identity(f: InputFile) -> tuple:
    """What makes two listed names one file: a local file's device and inode (symlinks and hard
    links), an object's bucket and key (any s3 scheme; S3 has no links); else the name."""
    if f.local is not None and remote.is_s3(f.local):
        _, bucket, key = remote.split(f.local)
        return ("s3", bucket, key)
    if f.local is not None:
        try:
            st = os.stat(f.local)
            return ("inode", st.st_dev, st.st_ino)
        except OSError:  # not on the driver's disk: its resolved path is the best name it has
            return ("path", os.path.realpath(f.local))
    return ("name", f.path)


def _is_link(f: InputFile) -> bool:
    return f.local is not None and not remote.is_s3(f.local) and os.path.islink(f.local)


def _walk(fs, status) -> Iterator[tuple[str, int]]:
    """(path, size) of the files at or under ``status``, recursively. ``listStatus``, not
    ``listFiles``: the latter's LocatedFileStatus loads each local file's owner and permissions,
    by forking ``ls`` without the native Hadoop library (3,000 files took 20 s to list here, and
    now 1 s), and the fewer Py4J calls a file the better (five here)."""
    if not status.isDirectory():
        yield status.getPath().toString(), status.getLen()
        return
    todo = [status.getPath()]
    while todo:
        for st in fs.listStatus(todo.pop()):
            if st.isDirectory():
                todo.append(st.getPath())
            else:
                yield st.getPath().toString(), st.getLen()


def _local_path(name: str) -> str:
    """The OS path of a local file as Hadoop's ``Path.toString`` names it (scheme, ``//authority``
    if any, path): ``file:/x/y`` -> ``/x/y``, what ``toUri().getPath()`` gives, without its calls."""
    rest = name[len("file:") :] if name.startswith("file:") else name
    return "/" + rest[2:].partition("/")[2] if rest.startswith("//") else rest


def list_input_files(spark: SparkSession, paths: list[str]) -> list[str]:
    return [f.path for f in list_inputs(spark, paths)]


def split_size(cfg: rec.ReaderConfig, splittable_bytes: int, parallelism: int) -> int | None:
    """``split_bytes``, made smaller (not below ``min_split_bytes``) until there are 2 ranges per core."""
    if cfg.split_bytes <= 0:
        return None
    want = -(-splittable_bytes // max(1, 2 * parallelism))
    return max(1, min(cfg.split_bytes, max(cfg.min_split_bytes, want)))


def _python_reads(f: InputFile, cfg: rec.ReaderConfig) -> bool:
    return f.local is not None and (cfg.local_reads or remote.is_s3(f.local))


def _splittable(f: InputFile, fmt: str | None, cfg: rec.ReaderConfig) -> bool:
    return (
        _python_reads(f, cfg)
        and f.size > 0
        and fmt is not None
        and (fmt == rec.PARQUET_FMT or not rec.named_gzip(f.path))
    )


def plan(files: list[InputFile], cfg: rec.ReaderConfig, parallelism: int, s3: remote.S3Access | None = None) -> Plan:
    """Ranges, packed into tasks; what goes through binaryFile; the driver's own reader rows.
    ``s3`` opens s3 objects where a WARC file is walked for its record starts."""
    out, ranges = Plan(), []
    out.split = split_size(
        cfg, sum(f.size for f in files if _splittable(f, rec.detect_format(f.path), cfg)), parallelism
    )
    for f in files:
        fmt = rec.detect_format(f.path)
        if fmt is None:
            out.driver_rows.append(rec.error_row(f.path, None, f.size, rec.UNSUPPORTED_FORMAT, f.path, f.aliases))
        elif f.size == 0:
            out.driver_rows.append(rec.error_row(f.path, fmt, 0, rec.EMPTY_FILE, "the file has no bytes", f.aliases))
        elif _python_reads(f, cfg):
            ranges += _file_ranges(f, fmt, out.split if _splittable(f, fmt, cfg) else None, cfg, s3)
        elif f.size > BINARY_FILE_LIMIT:
            out.driver_rows.append(
                rec.error_row(
                    f.path,
                    fmt,
                    f.size,
                    rec.FILE_TOO_LARGE,
                    f"{f.size} bytes: Spark's binaryFile reads at most "
                    f"{BINARY_FILE_LIMIT} from this file system; copy it to a local or mounted disk, or split it",
                    f.aliases,
                )
            )
        else:
            out.remote.append(f)
    out.unsplit_bytes = max((r.end - r.start for r in ranges if r.start == 0 and r.end == r.size), default=0)
    _pack_plan(out, ranges, cfg, parallelism)
    return out


def _pack_plan(out: Plan, ranges: list[rec.Range], cfg: rec.ReaderConfig, parallelism: int) -> None:
    """Tasks for the local ranges and the remote files alike: one capacity for both, about two
    tasks per core for small inputs (``etl.runtime.sizing``)."""
    limit = cfg.split_bytes or DEFAULT_PACK
    remote = [f.size + OPEN_COST for f in out.remote]
    out.capacity = sizing.read_capacity(_costs(ranges) + remote, out.split or limit, limit, parallelism)
    out.tasks = _pack(ranges, out.capacity)
    if remote and max(remote) < out.capacity // 2:
        out.remote_tasks = len(sizing.pack(remote, out.capacity))


def _file_ranges(
    f: InputFile, fmt: str, split: int | None, cfg: rec.ReaderConfig, s3: remote.S3Access | None = None
) -> list[rec.Range]:
    whole = [rec.Range(f.path, fmt, f.size, 0, f.size, f.local, aliases=f.aliases)]
    if split is None or f.size <= split:
        return whole
    if fmt == rec.WARC_FMT:
        try:
            with remote.open_input(f.local, s3) as fh:
                if fh.read(2) == GZIP_MAGIC:  # gzip without the name: read whole
                    return whole
                cuts = warc.record_starts(Stream(fh, False), cfg.max_record_bytes, split)
        except OSError:  # the range task reports it as the file's error
            return whole
        aligned = True
    else:
        cuts, aligned = list(range(split, f.size, split)), False
    bounds = [0, *cuts, f.size]
    return [
        rec.Range(f.path, fmt, f.size, a, b, f.local, aligned, f.aliases) for a, b in zip(bounds, bounds[1:]) if b > a
    ]


def _pack(ranges: list[rec.Range], capacity: int) -> list[list[rec.Range]]:
    """Big ranges alone; small ones (whole small files) in contiguous packs of about ``capacity``
    bytes (``etl.runtime.sizing.pack``)."""
    return [[ranges[i] for i in task] for task in sizing.pack(_costs(ranges), capacity)]


def _costs(ranges: list[rec.Range]) -> list[int]:
    return [r.end - r.start + OPEN_COST for r in ranges]


@dataclass(frozen=True)
class Then:
    """What the reading task does next with each raw batch, in the same Python worker (a record
    then crosses into Python once, not once to be read and again to be processed): ``fn`` maps an
    ``ARROW_RAW`` batch to a batch of ``schema``. Where the records are spread over the cores
    after reading (``reader.rebalance``), it runs after the shuffle instead."""

    fn: Callable[[pa.RecordBatch], pa.RecordBatch]
    schema: T.StructType

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """``fn`` over a partition's batches: what ``mapInArrow(then, then.schema)`` runs."""
        return (self.fn(b) for b in batches)


def read_raw(
    spark: SparkSession, paths: list[str], cfg: rec.ReaderConfig, counters: Counters, then: Then | None = None
) -> tuple[DataFrame, list[str]]:
    """All records of the inputs, and the files they come from. Every file gets reader rows
    (``kind="file"``): its counts, or the file-level error that kept it from being read. With
    ``then``, the rows are ``then.fn``'s of the raw batches, of ``then.schema``."""
    s3 = remote.S3Access.resolve(cfg.s3) if any(remote.is_s3(p) for p in paths) else None
    files = list_inputs(spark, paths, s3)
    sc = spark.sparkContext
    p = plan(files, cfg, sc.defaultParallelism, s3)
    n_tasks, want = len(p.tasks) + (p.remote_tasks or len(p.remote)), 2 * sc.defaultParallelism
    rebalance = cfg.rebalance and (n_tasks < want or p.unsplit_bytes > (p.split or 0))
    fused = then if not rebalance else None

    def read(readers: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]):
        if fused is None:
            return readers, RAW_SCHEMA
        return (lambda batches: fused(readers(batches))), fused.schema

    frames: list[DataFrame] = []
    if p.tasks:
        packs = sc.parallelize([[asdict(r) for r in t] for t in p.tasks], len(p.tasks)).flatMap(lambda t: t)
        frames.append(spark.createDataFrame(packs, RANGE_SCHEMA).mapInArrow(*read(_read_ranges(cfg, counters, s3))))
    if p.remote:
        binary = spark.read.format("binaryFile").load([f.path for f in p.remote]).select("path", "length", "content")
        if p.remote_tasks:  # small files: Spark would pack 2 a task (openCostInBytes 4 MB, 8 MB a task)
            binary = binary.coalesce(p.remote_tasks)
        aliases = {f.path: f.aliases for f in p.remote if f.aliases}
        frames.append(binary.mapInArrow(*read(_read_contents(cfg, counters, aliases))))
    if p.driver_rows:  # a few rows: one partition, not one per core
        rows = spark.createDataFrame(p.driver_rows, RAW_SCHEMA).coalesce(1)
        frames.append(rows if fused is None else rows.mapInArrow(fused, fused.schema))
    counters.ranges_total = p.ranges + len(p.remote)
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    if rebalance:
        df = df.repartition(max(want, n_tasks), "source_file", "offset")
        if then is not None:
            df = df.mapInArrow(then, then.schema)
    formats = Counter(rec.detect_format(f.path) or "unknown" for f in files)
    log.info(
        "inputs: %d files (%s), %.1f MB: %d ranges in %d tasks (split %s, packed up to %.2f MB), %d whole "
        "through binaryFile%s",
        len(files),
        ", ".join(f"{k}: {v}" for k, v in sorted(formats.items())),
        sum(f.size for f in files) / 1e6,
        p.ranges,
        len(p.tasks),
        f"{p.split / 1e6:.2f} MB" if p.split else "off",
        p.capacity / 1e6,
        len(p.remote),
        f"; records spread over {max(want, n_tasks)} partitions" if rebalance else "",
    )
    return df, [f.path for f in files]


def _batches(rows: Iterator[dict[str, Any]]) -> Iterator[pa.RecordBatch]:
    """Group rows into Arrow batches bounded by row count and text bytes."""
    buf: list[dict[str, Any]] = []
    size = 0
    for row in rows:
        buf.append(row)
        size += len(row["text"] or "")
        if len(buf) >= BATCH_ROWS or size >= BATCH_BYTES:
            yield pa.RecordBatch.from_pylist(buf, schema=ARROW_RAW)
            buf, size = [], 0
    if buf:
        yield pa.RecordBatch.from_pylist(buf, schema=ARROW_RAW)


def _counted(rows: Iterator[dict[str, Any]], nbytes: int, counters: Counters) -> Iterator[dict[str, Any]]:
    n = 0
    for row in rows:
        n += row["kind"] == rec.RECORD
        yield row
    counters.records.add(n)
    counters.bytes.add(nbytes)
    counters.ranges.add(1)


def _read_ranges(cfg: rec.ReaderConfig, counters: Counters, s3: remote.S3Access | None = None):
    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def rows() -> Iterator[dict[str, Any]]:
            for batch in batches:
                for r in batch.to_pylist():
                    rng = rec.Range(**{**r, "aliases": tuple(r["aliases"] or ())})
                    yield from _counted(rec.parse_range(rng, cfg, s3=s3), rng.end - rng.start, counters)

        yield from _batches(rows())

    return read


def _read_contents(cfg: rec.ReaderConfig, counters: Counters, aliases: dict[str, tuple[str, ...]]):
    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def rows() -> Iterator[dict[str, Any]]:
            for batch in batches:
                paths, lengths, contents = batch.column("path"), batch.column("length"), batch.column("content")
                for i in range(batch.num_rows):
                    path, size = paths[i].as_py(), lengths[i].as_py()
                    rng = rec.Range(path, rec.detect_format(path), size, 0, size, aliases=aliases.get(path, ()))
                    yield from _counted(rec.parse_range(rng, cfg, contents[i].as_py()), size, counters)

        yield from _batches(rows())

    return read
