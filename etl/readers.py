"""Spark readers: raw crawl files from any Hadoop path (local, hdfs://, s3a://) -> one DataFrame
of ``RAW_SCHEMA`` rows (records, plus one ``kind="file"`` row per WARC/JSONL file).

WARC/WET/JSONL files are read whole with Spark's ``binaryFile`` source (gzip is not splittable
anyway; a file must stay under 2 GiB, Common Crawl's are ~1 GiB) and parsed by
``etl.records.parse_file`` inside ``mapInArrow``. Parquet uses Spark's own reader and goes
through the same record validation.
"""

from __future__ import annotations

import logging
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from etl import records as rec
from etl.progress import Counters

log = logging.getLogger("zhcorpus")

RAW_SCHEMA = T.StructType([
    T.StructField(name, T.LongType() if name == "offset" else T.StringType()) for name in rec.RAW_FIELDS
])
ARROW_RAW = pa.schema([pa.field(name, pa.int64() if name == "offset" else pa.string()) for name in rec.RAW_FIELDS])
BATCH_ROWS = 1024
BATCH_BYTES = 32 << 20


def list_input_files(spark: SparkSession, paths: list[str]) -> list[str]:
    """Expand files, directories (recursively) and globs through Hadoop's FileSystem API;
    hidden files (``_*``, ``.*``) are skipped, as Spark does."""
    jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    out: list[str] = []
    for p in paths:
        path = jvm.org.apache.hadoop.fs.Path(p)
        fs = path.getFileSystem(conf)
        statuses = fs.globStatus(path)
        if statuses is None or len(statuses) == 0:
            raise FileNotFoundError(f"input path matches nothing: {p}")
        for st in statuses:
            if st.isDirectory():
                it = fs.listFiles(st.getPath(), True)
                while it.hasNext():
                    out.append(it.next().getPath().toString())
            else:
                out.append(st.getPath().toString())
    visible = [f for f in out if not f.rsplit("/", 1)[-1].startswith(("_", "."))]
    return sorted(dict.fromkeys(visible))


def read_raw(spark: SparkSession, paths: list[str], cfg: rec.ReaderConfig, counters: Counters) -> tuple[DataFrame, list[str]]:
    """All records of the inputs; returns the DataFrame and the files it covers. Files of an
    unknown format are not read: they get a ``kind="file"`` row with an ``unsupported_format`` error."""
    files = list_input_files(spark, paths)
    by_fmt: dict[str | None, list[str]] = {}
    for f in files:
        by_fmt.setdefault(rec.detect_format(f), []).append(f)
    frames: list[DataFrame] = []
    streamed = by_fmt.get(rec.WARC_FMT, []) + by_fmt.get(rec.JSONL_FMT, [])
    if streamed:
        binary = spark.read.format("binaryFile").load(streamed).select("path", "content")
        frames.append(binary.mapInArrow(_parse_files(cfg, counters), RAW_SCHEMA))
    if by_fmt.get(rec.PARQUET_FMT):
        frames.append(_read_parquet(spark, by_fmt[rec.PARQUET_FMT], cfg, counters))
    if by_fmt.get(None):
        unknown = [rec.parse_file(f, b"", cfg) for f in by_fmt[None]]
        frames.append(spark.createDataFrame([row for rows in unknown for row in rows], RAW_SCHEMA))
    log.info("inputs: %d files (%s)", len(files), ", ".join(f"{k or 'unknown'}: {len(v)}" for k, v in sorted(by_fmt.items(), key=str)))
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    return df, files


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


def _parse_files(cfg: rec.ReaderConfig, counters: Counters):
    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def rows() -> Iterator[dict[str, Any]]:
            for batch in batches:
                paths, contents = batch.column("path"), batch.column("content")
                for i in range(batch.num_rows):
                    content = contents[i].as_py()
                    n = 0
                    for row in rec.parse_file(paths[i].as_py(), content, cfg):
                        n += row["kind"] == rec.RECORD
                        yield row
                    counters.records.add(n)
                    counters.bytes.add(len(content))
        yield from _batches(rows())
    return parse


def _read_parquet(spark: SparkSession, files: list[str], cfg: rec.ReaderConfig, counters: Counters) -> DataFrame:
    df = spark.read.parquet(*files)
    if "text" not in df.columns:
        raise ValueError(f"Parquet input has no 'text' column (columns: {df.columns}): {files[:3]}")
    cols = [F.col("_metadata.file_path").alias("path"), F.col("_metadata.row_index").alias("row_index")]
    for name in ("id", "url", "source", "timestamp", "text"):
        cols.append((F.col(name).cast("string") if name in df.columns else F.lit(None).cast("string")).alias(name))
    return df.select(*cols).mapInArrow(_parquet_rows(cfg, counters), RAW_SCHEMA)


def _parquet_rows(cfg: rec.ReaderConfig, counters: Counters):
    def convert(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        def rows() -> Iterator[dict[str, Any]]:
            for batch in batches:
                for r in batch.to_pylist():
                    yield rec.parquet_row(r, cfg)
                counters.records.add(batch.num_rows)
        yield from _batches(rows())
    return convert
