"""Exact groups and LSH candidate edges on the driver, for an input whose keys are small enough
to collect (``DedupConfig.driver_max_docs``).

The same answers as the Spark windows of ``etl.dedup.stage`` (``_exact``, ``candidate_edges``; the
tests run both paths on the same documents), without their shuffles: on the 64 MB benchmark
corpus (18 K documents, 290 K band rows) those cost about a second of Spark jobs, the numpy here
a few tens of milliseconds. A nightly increment or a sampled variant (``jobs.judge_rules``) is
this size; a first build over a whole crawl is not and stays distributed.

Order of ids is Spark's string order (binary UTF-8), which is Python's and Arrow's code-point
order: the smallest doc_id of a bucket is its root either way.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from etl.dedup.index import DedupIndex, exact_prior_matches, touched_prior_rows

EDGE_COLUMNS = ["a", "b", "qa", "pa", "qb", "pb"]  # ends, their quality_score and prior flag
DUPLICATES_SCHEMA = pa.schema([("doc_id", pa.string()), ("duplicate_of", pa.string()), ("kind", pa.string())])


def exact_local(keys: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(exact duplicates: doc_id, duplicate_of; the rows of ``keys`` that are their group's
    keeper). ``keys``: doc_id, exact_key, quality_score, ... of new documents; keeper: the highest
    quality_score (nulls last), then the smallest doc_id, as ``etl.dedup.stage._ranked``."""
    df = keys.select(["doc_id", "exact_key", "quality_score"]).to_pandas()
    df["row"] = np.arange(len(df))
    df["no_quality"] = df["quality_score"].isna()
    df = df.sort_values(["exact_key", "no_quality", "quality_score", "doc_id"], ascending=[True, True, False, True])
    keeper = df.groupby("exact_key", sort=False)["doc_id"].transform("first")
    dups = df[df["doc_id"] != keeper]
    unique = np.sort(df.loc[df["doc_id"] == keeper, "row"].to_numpy())
    return (
        pa.table(
            {"doc_id": pa.array(dups["doc_id"], pa.string()), "duplicate_of": pa.array(keeper[dups.index], pa.string())}
        ),
        keys.take(pa.array(unique, pa.int64())),
    )


def exact_prior_local(unique: pa.Table, index: DedupIndex) -> pa.Table:
    """(doc_id, duplicate_of) of the new documents whose exact key is already indexed."""
    spark = index.spark
    prior = index.exact()
    if prior is None or len(unique) == 0:
        return pa.table({"doc_id": pa.array([], pa.string()), "duplicate_of": pa.array([], pa.string())})
    new = spark.createDataFrame(unique.select(["exact_key", "doc_id"]))
    return exact_prior_matches(prior, new).select("doc_id", "duplicate_of").toArrow()


def band_table(keys: pa.Table, bands: int) -> pa.Table:
    """band (int32), key (int64), doc_id: one row per document and band of ``keys``."""
    flat = keys.column("band_keys").combine_chunks()
    if len(flat) and not pc.all(pc.equal(pc.list_value_length(flat), bands)).as_py():
        raise ValueError(f"every signature must have {bands} band keys")
    n = len(keys)
    return pa.table(
        {
            "band": pa.array(np.tile(np.arange(bands, dtype=np.int32), n)),
            "key": flat.flatten(),
            "doc_id": keys.column("doc_id").combine_chunks().take(pa.array(np.repeat(np.arange(n), bands))),
        }
    )


def touched_prior_local(rows: pa.Table, index: DedupIndex) -> pa.Table | None:
    """Indexed (band, key, doc_id) rows in the buckets of ``rows``, or None without an index."""
    prior = index.bands()
    if prior is None:
        return None
    new = index.spark.createDataFrame(rows.select(["band", "key"]))
    return touched_prior_rows(prior, new).select("band", "key", "doc_id").toArrow()


def candidate_edges_local(rows: pa.Table, quality: pa.Table, prior: pa.Table | None, all_pairs_max: int) -> pa.Table:
    """``etl.dedup.stage.candidate_edges`` on the driver: (a, b, qa, pa, qb, pb), a > b, distinct.
    ``rows``: band, key, doc_id of new documents; ``quality``: doc_id, quality_score of those;
    ``prior``: band, key, doc_id of indexed documents in the same buckets (a doc_id both new and
    indexed counts as indexed: it is published)."""
    parts = [rows.select(["band", "key", "doc_id"])]
    if prior is not None and len(prior):
        parts.append(prior.select(["band", "key", "doc_id"]).cast(parts[0].schema))
    allrows = pa.concat_tables(parts).combine_chunks()
    ids = pc.unique(allrows.column("doc_id"))
    ids = ids.take(pc.sort_indices(ids))  # node number order = doc_id order
    node = pc.index_in(allrows.column("doc_id"), value_set=ids).to_numpy()
    a, b = _bucket_pairs(allrows.column("band").to_numpy(), allrows.column("key").to_numpy(), node, all_pairs_max)
    q = np.full(len(ids), np.nan)
    at = pc.index_in(quality.column("doc_id"), value_set=ids)
    on_edge = pc.is_valid(at)  # every new document has band rows; a test's table may have more
    q[at.filter(on_edge).to_numpy()] = quality.column("quality_score").filter(on_edge).to_numpy(zero_copy_only=False)
    is_prior = np.zeros(len(ids), bool)
    if len(parts) > 1:
        is_prior[pc.index_in(parts[1].column("doc_id"), value_set=ids).to_numpy()] = True
    qa, qb = pa.array(q[a], pa.float64(), from_pandas=True), pa.array(q[b], pa.float64(), from_pandas=True)
    return pa.table(
        [ids.take(pa.array(a)), ids.take(pa.array(b)), qa, pa.array(is_prior[a]), qb, pa.array(is_prior[b])],
        names=EDGE_COLUMNS,
    )


def _bucket_pairs(
    band: np.ndarray, key: np.ndarray, node: np.ndarray, all_pairs_max: int
) -> tuple[np.ndarray, np.ndarray]:
    """Node pairs (a > b, distinct) of every (band, key) bucket of more than one row: all pairs in
    a bucket of at most ``all_pairs_max`` rows, each member and the smallest node in a larger one."""
    order = np.lexsort((node, key, band))
    band, key, node = band[order], key[order], node[order]
    first = np.ones(len(node), bool)
    first[1:] = (band[1:] != band[:-1]) | (key[1:] != key[:-1])
    start = np.flatnonzero(first)
    bucket = np.cumsum(first) - 1
    size = np.diff(np.append(start, len(node)))[bucket]
    pos = np.arange(len(node)) - start[bucket]
    small = size <= all_pairs_max
    pairs = [np.flatnonzero(~small & (pos >= 1))]
    others = [start[bucket[pairs[0]]]]
    for k in range(1, max(all_pairs_max, 2)):
        i = np.flatnonzero(small & (pos >= k))
        pairs.append(i)
        others.append(i - k)
    i, j = np.concatenate(pairs), np.concatenate(others)
    a, b = node[i].astype(np.int64), node[j].astype(np.int64)
    keep = a != b
    width = int(node.max(initial=0)) + 1
    packed = np.unique(a[keep] * width + b[keep])
    return packed // width, packed % width


def exact_duplicates(exact: pa.Table, near: pa.Table) -> pa.Table:
    """doc_id, duplicate_of, kind of every duplicate (``exact``: doc_id, duplicate_of of the exact
    ones; ``near``: of the near ones): an exact copy of a document that is itself a near duplicate
    points at that one's keeper."""
    near_ids, near_to = near.column("doc_id").to_pylist(), near.column("duplicate_of").to_pylist()
    final = dict(zip(near_ids, near_to))
    exact_to = [final.get(d, d) for d in exact.column("duplicate_of").to_pylist()]
    return pa.table(
        {
            "doc_id": exact.column("doc_id").to_pylist() + near_ids,
            "duplicate_of": exact_to + near_to,
            "kind": ["exact"] * len(exact) + ["near"] * len(near),
        },
        schema=DUPLICATES_SCHEMA,
    )


def edges_frame(spark, tbl: pa.Table) -> DataFrame:
    """(a, b, a_node, b_node) of ``candidate_edges(with_nodes=True)`` from a driver edge table."""

    def node(x: str) -> pa.StructArray:
        return pa.StructArray.from_arrays(
            [
                tbl.column(x).combine_chunks(),
                tbl.column(f"q{x}").combine_chunks(),
                tbl.column(f"p{x}").combine_chunks(),
            ],
            names=["doc_id", "quality_score", "prior"],
        )

    return spark.createDataFrame(
        pa.table({"a": tbl.column("a"), "b": tbl.column("b"), "a_node": node("a"), "b_node": node("b")})
    )
