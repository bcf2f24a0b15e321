"""Verification of LSH candidate edges: the exact Jaccard of the two documents' shingle sets.

Two ways, the same numbers (``tests/test_dedup.py`` runs both):
- ``jaccard_by_component``: the candidate edges are known on the driver, with the candidate
  component of each document; the texts of the documents on an edge are shuffled once, grouped
  by component, and each task computes each document's shingle set once and every edge of the
  component from them.
- ``edge_jaccard``: every edge joins its two texts (two shuffles of the texts, two shingle sets
  per edge); for candidate graphs too large to hold on the driver.
An edge to a document not in ``docs`` (an indexed one: the index keeps keys, not texts) gets
a null Jaccard.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from filters.dedup import minhash as mh

JACCARD_SCHEMA = "a string, b string, jaccard double"
DOCS_PER_TASK = 20_000  # documents of candidate components per verification task (their texts in memory)


def _shingles(text: str, n: int) -> np.ndarray:
    return mh.shingle_hashes(mh.normalise(text), n)


def jaccard_by_component(
    spark: SparkSession, docs: DataFrame, edges: pa.Table, comps: pa.Table, shingle: int
) -> DataFrame:
    """(a, b, jaccard) for every edge of ``edges`` (a, b). ``comps``: (node, component) of every
    node on an edge (``etl.dedup.components.components_local``). The documents' texts and the edges
    are partitioned by component (about DOCS_PER_TASK documents a partition), so both ends of an
    edge meet in one task, which reads its partition whole."""
    comp_of = spark.createDataFrame(comps.rename_columns(["doc_id", "component"]))
    texts = (
        docs.select("doc_id", "text")
        .join(F.broadcast(comp_of), "doc_id")
        .select(
            "component", "doc_id", "text", F.lit(None).cast("string").alias("a"), F.lit(None).cast("string").alias("b")
        )
    )
    index = pc.index_in(edges.column("a"), value_set=comps.column("node"))
    edge_rows = pa.table(
        {
            "component": comps.column("component").take(index),
            "doc_id": pa.nulls(len(edges), pa.string()),
            "text": pa.nulls(len(edges), pa.string()),
            "a": edges.column("a"),
            "b": edges.column("b"),
        }
    )
    rows = texts.unionByName(spark.createDataFrame(edge_rows, texts.schema))
    parts = max(spark.sparkContext.defaultParallelism, -(-len(comps) // DOCS_PER_TASK))

    def verify(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        part = pa.Table.from_batches(list(batches), schema=rows_schema)
        is_doc = pc.is_valid(part.column("doc_id"))
        docs_part, edges_part = part.filter(is_doc), part.filter(pc.invert(is_doc))
        norms = mh.normalise_batch([t or "" for t in docs_part.column("text").to_pylist()])
        sets = dict(zip(docs_part.column("doc_id").to_pylist(), mh.shingle_sets(norms, shingle)))
        a, b = edges_part.column("a").to_pylist(), edges_part.column("b").to_pylist()
        jac = [mh.jaccard(sets[x], sets[y]) if x in sets and y in sets else None for x, y in zip(a, b)]
        yield pa.RecordBatch.from_arrays(
            [
                edges_part.column("a").combine_chunks(),
                edges_part.column("b").combine_chunks(),
                pa.array(jac, pa.float64()),
            ],
            names=["a", "b", "jaccard"],
        )

    rows_schema = pa.schema(
        [
            ("component", pa.string()),
            ("doc_id", pa.string()),
            ("text", pa.string()),
            ("a", pa.string()),
            ("b", pa.string()),
        ]
    )
    return rows.repartition(parts, "component").mapInArrow(verify, JACCARD_SCHEMA)


def edge_jaccard(edges: DataFrame, docs: DataFrame, shingle: int) -> DataFrame:
    """(a, b, jaccard) of each edge (a, b), each joined to its two texts."""
    texts = docs.select("doc_id", "text")
    pairs = (
        edges.select("a", "b")
        .join(texts.select(F.col("doc_id").alias("a"), F.col("text").alias("text_a")), "a", "left")
        .join(texts.select(F.col("doc_id").alias("b"), F.col("text").alias("text_b")), "b", "left")
    )

    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            ta, tb = batch.column("text_a").to_pylist(), batch.column("text_b").to_pylist()
            jac = [
                None if x is None or y is None else mh.jaccard(_shingles(x, shingle), _shingles(y, shingle))
                for x, y in zip(ta, tb)
            ]
            yield pa.RecordBatch.from_arrays(
                [batch.column("a"), batch.column("b"), pa.array(jac, pa.float64())], names=["a", "b", "jaccard"]
            )

    return pairs.select("a", "b", "text_a", "text_b").mapInArrow(compute, JACCARD_SCHEMA)


def verification_summary(verified: DataFrame, threshold: float) -> dict:
    """Counts and precision of the candidate edges that could be verified (a Spark job)."""
    row = verified.agg(
        F.count(F.lit(1)).alias("edges"),
        F.count("jaccard").alias("verified"),
        F.sum((F.col("jaccard") < threshold).cast("int")).alias("below_threshold"),
        F.percentile_approx("jaccard", [0.01, 0.1, 0.5], 1000).alias("q"),
    ).first()
    return _summary(row.edges, row.verified, row.below_threshold or 0, row.q)


def summary_local(verified: pa.Table, threshold: float) -> dict:
    """``verification_summary`` of a collected (a, b, jaccard) table, on the driver."""
    jac = verified.column("jaccard").drop_null().to_numpy()
    q = np.quantile(jac, [0.01, 0.1, 0.5], method="inverted_cdf").tolist() if len(jac) else None
    return _summary(len(verified), len(jac), int((jac < threshold).sum()), q)


def _summary(edges: int, verified: int, below: int, q) -> dict:
    return {
        "candidate_edges": edges,
        "verified": verified,
        "below_threshold": below,
        "precision": round(1 - below / verified, 4) if verified else None,
        "jaccard_p01_p10_p50": [round(x, 4) for x in q] if q else None,
    }
