"""DataFrames written to and read from S3 by the executors, through pyarrow (pyspark ships no
Hadoop S3 connector): what ``etl.runtime.objstore.S3Staging`` does for ``write.parquet`` and
``read.parquet``.

Writing: each task writes its partition as one Parquet file (snappy, as Spark writes them)
straight to the store, hashing the bytes as they go (no local copy), and returns (name, size,
sha256) to the driver, which records them for the commit. A file is named after its partition
and its task attempt (``part-00003-a17.snappy.parquet``): a retried or speculative attempt
writes its own file, and only the attempt Spark kept is recorded (``S3Staging.check`` removes the
others before the commit). An object appears on S3 only when its upload completes, so a killed
task leaves no partial file, at most an unfinished multipart upload that the next writer aborts.

A writing task freezes its Python worker's objects once (``gc.freeze``): PySpark's daemon runs a
full ``gc.collect()`` after every task of a reused worker, which walked every object of pyarrow,
pandas and our modules, ~34 ms a task here, more than encoding a 4 MB partition; frozen, the
collection walks only what later tasks create (a no-op task: 34 -> 2 ms of worker CPU). Objects
alive at the freeze are never collected as cycles: a bounded, one-time cost per worker.

Reading: one task per file, each yielding the file's record batches; the schema is the files'
(Parquet keeps the Arrow schema Spark wrote).
"""

from __future__ import annotations

import gc
import hashlib
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from base.committed import bucket_key
from base.s3 import S3Access

FILE_ROW = "name string, size long, sha256 string"
BLOCK = 8 << 20
_frozen = False  # gc.freeze() done in this (worker) process


class _HashingSink:
    """A writable file object over a pyarrow output stream that counts and hashes what passes."""

    def __init__(self, stream):
        self.stream, self.sha, self.size, self.closed = stream, hashlib.sha256(), 0, False

    def write(self, data) -> int:
        view = memoryview(data)
        self.sha.update(view)
        self.stream.write(view)
        self.size += len(view)
        return len(view)

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if not self.closed:
            self.stream.close()  # completes the upload: the object appears now, whole
            self.closed = True


def upload(local: str | Path, uri: str, access: S3Access) -> tuple[int, str]:
    """Copy a local file to ``uri``; returns its (size, sha256)."""
    sink = _HashingSink(access.filesystem().open_output_stream(bucket_key(uri), compression=None))
    with open(local, "rb") as f:
        while block := f.read(BLOCK):
            sink.write(block)
    sink.close()
    return sink.size, sink.sha.hexdigest()


def write_table_batches(batches: Iterator[pa.RecordBatch], uri: str, access: S3Access) -> tuple[int, str] | None:
    """``batches`` as one Parquet file at ``uri``; (size, sha256), or None when there were no rows."""
    first = next((b for b in batches if b.num_rows), None)
    if first is None:
        return None
    sink = _HashingSink(access.filesystem().open_output_stream(bucket_key(uri), compression=None))
    with pq.ParquetWriter(sink, first.schema, compression="snappy") as writer:
        writer.write_batch(first)
        for b in batches:
            if b.num_rows:
                writer.write_batch(b)
    sink.close()
    return sink.size, sink.sha.hexdigest()


def freeze_worker_once() -> None:
    """``gc.freeze()`` the first time it runs in a process (module docstring: why)."""
    global _frozen
    if not _frozen:
        gc.freeze()
        _frozen = True


def write_frame(df, uri_dir: str, access: S3Access) -> list[tuple[str, int, str]]:
    """Write ``df`` under ``uri_dir``, one file per non-empty partition (an empty frame: one
    file with its schema, as Spark writes one); returns (name, size, sha256) of each file."""
    from pyspark import TaskContext
    from pyspark.sql.pandas.types import to_arrow_schema

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_once()
        ctx = TaskContext.get()
        name = f"part-{ctx.partitionId():05d}-{ctx.taskAttemptId()}.snappy.parquet"
        done = write_table_batches(batches, f"{uri_dir}/{name}", access)
        if done is not None:
            yield pa.RecordBatch.from_pylist([{"name": name, "size": done[0], "sha256": done[1]}])

    rows = [(r["name"], r["size"], r["sha256"]) for r in df.mapInArrow(write, FILE_ROW).collect()]
    if not rows:
        name = "part-00000-empty.snappy.parquet"
        sink = _HashingSink(access.filesystem().open_output_stream(bucket_key(f"{uri_dir}/{name}"), compression=None))
        pq.write_table(to_arrow_schema(df.schema).empty_table(), sink, compression="snappy")
        sink.close()
        rows = [(name, sink.size, sink.sha.hexdigest())]
    return sorted(rows)


def read_frame(spark, uris: list[str], access: S3Access):
    """The Parquet files ``uris`` as one DataFrame (their schema; one partition per file)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    if not uris:
        raise FileNotFoundError("no Parquet files to read")
    fs = access.filesystem()
    with fs.open_input_file(bucket_key(uris[0])) as f:
        schema = pq.read_schema(f)

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files = access.filesystem()
        for b in batches:
            for uri in b.column("uri").to_pylist():
                with files.open_input_file(bucket_key(uri)) as f:
                    for batch in pq.ParquetFile(f).iter_batches():
                        yield batch

    paths = spark.createDataFrame(spark.sparkContext.parallelize([(u,) for u in uris], len(uris)), "uri string")
    return paths.mapInArrow(read, from_arrow_schema(schema))
