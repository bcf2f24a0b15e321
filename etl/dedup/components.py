"""Connected components of an undirected graph of string ids: on the driver when it is small
(scipy, one pass), on Spark when it is not (large-star / small-star rounds). Both label every
node on an edge with its component's smallest id (binary UTF-8 order, Spark's string order), so
either gives the same answer (``tests/test_dedup.py`` checks them against each other and a
union-find on random graphs)."""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from etl.dedup.checkpoints import Checkpoints
from etl.runtime.progress import label_jobs

log = logging.getLogger("zhcorpus")
MAX_CC_ROUNDS = 64  # far above the O(log^2 n) large/small-star needs; reaching it is an error


def components_local(a: pa.Array, b: pa.Array) -> pa.Table:
    """(node, component) for every node on an edge (a[i], b[i]); component = the smallest id of
    the node's component. O(edges) with scipy's breadth-first labelling."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    a, b = pa.array(a, pa.string()), pa.array(b, pa.string())
    ids = pc.unique(pa.concat_arrays([a, b]))
    ids = ids.take(pc.sort_indices(ids))  # sorted: the smallest index is the smallest id
    ia = pc.index_in(a, value_set=ids).to_numpy(zero_copy_only=False)
    ib = pc.index_in(b, value_set=ids).to_numpy(zero_copy_only=False)
    n = len(ids)
    if n == 0:
        return pa.table({"node": ids, "component": ids})
    graph = coo_matrix((np.ones(len(ia), dtype=np.int8), (ia, ib)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    root = np.full(labels.max() + 1, n, dtype=np.int64)
    np.minimum.at(root, labels, np.arange(n))
    return pa.table({"node": ids, "component": ids.take(pa.array(root[labels]))})


def _large_star(edges: DataFrame) -> DataFrame:
    """Every edge (a, u) becomes (a, m_u), m_u = min of u and u's smaller neighbours."""
    mins = edges.groupBy("a").agg(F.min("b").alias("m")).withColumnRenamed("a", "u")
    return edges.join(mins, edges.b == mins.u, "left").select("a", F.coalesce("m", "b").alias("b")).distinct()


def _small_star(edges: DataFrame) -> DataFrame:
    """Each node u and its smaller neighbours all link to m, the smallest of them."""
    mins = edges.groupBy("a").agg(F.min("b").alias("m"))
    joined = edges.join(mins, "a")
    return (
        joined.select("a", F.col("m").alias("b"))
        .unionByName(joined.where(F.col("b") != F.col("m")).select(F.col("b").alias("a"), F.col("m").alias("b")))
        .distinct()
    )


def components_spark(edges: DataFrame, checkpoints: Checkpoints) -> tuple[DataFrame, int]:
    """((node, component), rounds) for edges (a, b) with a > b, by alternating large-star /
    small-star (Kiveris et al., "Connected Components in MapReduce and Beyond", SoCC 2014) until
    every edge points at a root and every node has one parent. Per round: one checkpoint (the
    lineage would otherwise grow with the rounds) and one action for the test, under the Spark
    job description "dedup: components round N"."""
    e, sc = edges.select("a", "b"), edges.sparkSession.sparkContext
    for rnd in range(1, MAX_CC_ROUNDS + 1):
        with label_jobs(sc, f"dedup: components round {rnd}"):
            e = checkpoints.checkpoint(_small_star(_large_star(e)))
            children = e.select(F.col("a").alias("b")).distinct()
            unfinished = (
                e.join(children, "b")
                .select(F.lit(1).alias("x"))  # an edge pointing at a child
                .unionByName(e.groupBy("a").count().where("count > 1").select(F.lit(1).alias("x")))
            )
            log.info("connected components: round %d", rnd)
            done = not unfinished.limit(1).collect()
        if done:
            roots = e.select(F.col("b").alias("node"), F.col("b").alias("component")).distinct()
            return e.select(F.col("a").alias("node"), F.col("b").alias("component")).unionByName(roots), rnd
    raise RuntimeError(f"connected components did not converge in {MAX_CC_ROUNDS} rounds")
