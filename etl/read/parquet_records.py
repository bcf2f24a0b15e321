"""Parquet rows -> records, with pyarrow, one row group at a time (pure Python, no Spark).

A range takes the row groups whose first page starts inside it, so a file's ranges read each
row group exactly once. Columns ``text`` (required), ``id``, ``url``, ``source``, ``timestamp``
are read with their own types: a ``text`` column that is not a string is ``missing_text`` with
the type in ``detail`` (as in JSONL), never cast. A footer that cannot be read is one
``corrupt_parquet`` error for the file; a row group that cannot be decoded is one for its bytes
(the rows read before the damage stay).
"""

from __future__ import annotations

from typing import Any, BinaryIO, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from etl.read.rows import CORRUPT_PARQUET, NO_TEXT_COLUMN, RangeState, object_row
from etl.read.warc_records import guarded

COLUMNS = ("id", "url", "source", "timestamp", "text")
BATCH_ROWS = 1024
_ERRORS = (pa.ArrowException, OSError, ValueError, EOFError)


def parquet_rows(fh: BinaryIO, state: RangeState) -> Iterator[dict[str, Any]]:
    rng = state.rng
    try:
        pf = pq.ParquetFile(fh)
        meta = pf.metadata
        schema = pf.schema_arrow
    except _ERRORS as e:
        state.file_error(CORRUPT_PARQUET, f"{type(e).__name__}: {e}")
        return
    if "text" not in schema.names:
        state.file_error(NO_TEXT_COLUMN, f"no 'text' column (columns: {schema.names[:20]})")
        return
    ttype = schema.field("text").type
    bad_type = None if is_text_type(ttype) else str(ttype)
    columns = [c for c in COLUMNS if c in schema.names and not (c == "text" and bad_type)]
    first_row = 0
    for k in range(meta.num_row_groups):
        rg = meta.row_group(k)
        if rng.start <= _first_byte(rg, rng.size) < rng.end:
            yield from _row_group(pf, k, rg, first_row, columns, bad_type, state)
        first_row += rg.num_rows


def is_text_type(t: pa.DataType) -> bool:
    """Every Arrow string type, and a dictionary of strings (pandas categoricals, some writers'
    defaults: issue 24), whose values ``to_pylist`` gives as str."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _first_byte(rg, size: int) -> int:
    """Where the row group's first page starts (clamped into the file: each group has one owner)."""
    col = rg.column(0)
    at = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    return min(max(at or 0, 0), size - 1)


def _row_group(
    pf: pq.ParquetFile, k: int, rg, first_row: int, columns: list[str], bad_type: str | None, state: RangeState
) -> Iterator[dict[str, Any]]:
    done = 0
    try:
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[k], columns=columns, use_threads=False):
            values = {name: batch.column(name).to_pylist() for name in columns}
            for i in range(batch.num_rows):
                obj = {name: v[i] for name, v in values.items()}
                offset = first_row + done + i
                yield guarded(lambda: object_row(obj, offset, state, bad_type), offset, state)
            done += batch.num_rows
    except _ERRORS as e:
        nbytes = sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
        state.file_error(
            CORRUPT_PARQUET,
            f"row group {k}: {type(e).__name__}: {e}; {rg.num_rows - done} of {rg.num_rows} rows unread",
            nbytes=nbytes,
            offset=_first_byte(rg, state.rng.size),
        )
