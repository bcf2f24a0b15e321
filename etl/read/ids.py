"""Unique doc_ids. A record's doc_id is its input ``id`` when it has one, but inputs repeat ids
(two dumps both numbered from 0, a file copied into two directories, ``1`` in one file and
``"1"`` in another), and ``duplicates/`` and the dedup index are keyed by doc_id.

The rule (deterministic, documented in docs/cleaning.md): the first record with an id, in
(source_file, offset) order, keeps it; every later one becomes ``{id}~{h}``, ``h`` the first 16
hex digits of SHA-256 over ``source_file + "\\0" + offset``, and keeps the original id in
``renamed_from``. Nothing is dropped: whether the copies are the same text is dedup's business.
The ledger counts the renamed records (``input.duplicate_ids``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from etl.read import records as rec

BROADCAST_MAX = 2_000_000  # later copies above this are joined without a broadcast


def unique_ids(rows: DataFrame) -> DataFrame:
    """``rows`` with every record's doc_id unique and a ``renamed_from`` column. Runs one small
    job (the ids only); apply it to persisted rows, it reads them again."""
    records = rows.where(F.col("kind") == rec.RECORD).select("doc_id", "source_file", "offset")
    first = Window.partitionBy("doc_id").orderBy("source_file", "offset")
    later = (
        records.withColumn("_n", F.row_number().over(first))
        .where(F.col("_n") > 1)
        .select("source_file", "offset", F.col("doc_id").alias("renamed_from"))
    )
    n = later.count()
    if n == 0:
        return rows.withColumn("renamed_from", F.lit(None).cast("string"))
    joined = rows.join(F.broadcast(later) if n <= BROADCAST_MAX else later, ["source_file", "offset"], "left")
    suffix = F.substring(F.sha2(F.concat_ws("\u0000", "source_file", F.col("offset").cast("string")), 256), 1, 16)
    doc_id = F.when(F.col("renamed_from").isNull(), F.col("doc_id")).otherwise(F.concat_ws("~", "doc_id", suffix))
    return joined.select(*[doc_id.alias(c) if c == "doc_id" else F.col(c) for c in rows.columns], "renamed_from")
