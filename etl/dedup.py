"""Exact and MinHash-LSH fuzzy deduplication on Spark, with connected components on Spark.

1. Exact: one document per normalised-text hash (``filters.minhash.exact_key``).
2. Signatures and band keys per document (numpy, inside ``mapInArrow``).
3. Candidate edges: one row per (band, key, doc_id); a small bucket (<= ALL_PAIRS_MAX members)
   gives all its pairs, a larger one links its members to its smallest doc_id (star edges); no
   per-bucket lists, nothing collected.
4. Connected components by alternating large-star / small-star (Kiveris et al., "Connected
   Components in MapReduce and Beyond", SoCC 2014): O(log^2 n) rounds, each a couple of joins
   and aggregations; the loop ends when every edge points at a root and every node has one parent.
5. One keeper per component: highest ``quality_score`` (when present), then smallest ``doc_id``.

Optional verification (``verify``): the exact Jaccard of every candidate edge between two new
documents, from their texts. ``measure`` reports it (the precision of LSH at this threshold);
``enforce`` also drops edges below the threshold before the components are formed. Edges to
indexed documents stay unverified (the index keeps band keys, not texts). In a bucket larger
than ALL_PAIRS_MAX only star edges exist, so enforcing can split one whose members are similar
to each other but not to the root: a little recall traded for precision, in hot buckets only.

Every input document ends in ``documents`` (keepers) or ``duplicates`` (doc_id, duplicate_of,
kind = exact | near).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Iterator, Literal

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from etl.dedup_index import DedupIndex, exact_prior_matches, touched_prior_rows
from filters import minhash as mh

log = logging.getLogger("zhcorpus")
MAX_CC_ROUNDS = 64  # far above the O(log^2 n) the algorithm needs; reaching it is an error
VERIFY_MODES = ("off", "measure", "enforce")
# Buckets up to this size yield all their pairs (so verification judges every pair); larger
# ones, star edges to their smallest member. Near-duplicate families are small; a hot bucket
# (a template page copied thousands of times) is not.
ALL_PAIRS_MAX = 8


@dataclass(frozen=True)
class DedupConfig:
    """The ``dedup`` section of every job that deduplicates."""
    minhash: mh.MinHashParams = field(default_factory=mh.MinHashParams)
    # Exact Jaccard of the LSH candidate edges: "measure" reports it, "enforce" also drops
    # edges below the threshold before components are formed, "off" skips it (module docstring).
    verify: Literal["off", "measure", "enforce"] = "enforce"


def signatures(docs: DataFrame, params: mh.MinHashParams) -> DataFrame:
    """doc_id, exact_key, band_keys (array<long>), quality_score (null when ``docs`` has none)."""
    p = params.resolved()
    schema = pa.schema([("doc_id", pa.string()), ("exact_key", pa.string()), ("band_keys", pa.list_(pa.int64())),
                        ("quality_score", pa.float64())])
    quality = F.col("quality_score").cast("double") if "quality_score" in docs.columns else F.lit(None).cast("double")

    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            exact, keys = [], []
            for text in batch.column("text").to_pylist():
                norm = mh.normalise(text or "")
                exact.append(mh.exact_key(norm, normalised=True))
                sig = mh.signature(mh.shingle_hashes(norm, p.shingle), p.num_perm, p.seed)
                keys.append(mh.band_keys(sig, p.bands, p.rows))
            flat = np.concatenate(keys) if keys else np.zeros(0, np.int64)
            band_keys = pa.ListArray.from_arrays(pa.array(np.arange(0, len(flat) + 1, p.bands, dtype=np.int32)),
                                                 pa.array(flat, pa.int64()))
            yield pa.RecordBatch.from_arrays([batch.column("doc_id"), pa.array(exact, pa.string()), band_keys,
                                              batch.column("quality_score")], schema=schema)

    return (docs.select("doc_id", "text", quality.alias("quality_score"))
            .mapInArrow(compute, "doc_id string, exact_key string, band_keys array<bigint>, quality_score double"))


def _ranked(df: DataFrame, group: str) -> DataFrame:
    """Add ``keeper``: the group's best doc_id: an already indexed document first (it is
    published), then highest quality_score, then smallest doc_id."""
    order = [F.col("prior").desc(), F.col("quality_score").desc_nulls_last(), F.col("doc_id")]
    return df.withColumn("keeper", F.first("doc_id").over(Window.partitionBy(group).orderBy(*order)))


def band_rows(keys: DataFrame) -> DataFrame:
    """One row per (band, key, doc_id)."""
    return keys.select("doc_id", F.posexplode("band_keys").alias("band", "key"))


def candidate_edges(rows: DataFrame, all_pairs_max: int = ALL_PAIRS_MAX) -> DataFrame:
    """(a, b) with a > b. A bucket of at most ``all_pairs_max`` members gives all its pairs (a
    self-join on (band, key)); a larger one links each member to its smallest doc_id (star
    edges: linear in the bucket, so a hot bucket cannot blow up). ``rows``: band, key, doc_id
    (or a signatures frame with band_keys)."""
    if "band_keys" in rows.columns:
        rows = band_rows(rows)
    rows = rows.select("band", "key", "doc_id")
    buckets = (rows.groupBy("band", "key").agg(F.min("doc_id").alias("root"), F.count(F.lit(1)).alias("n"))
               .where("n > 1"))
    members = rows.join(buckets, ["band", "key"])
    small = members.where(F.col("n") <= all_pairs_max).select("band", "key", "doc_id")
    pairs = (small.alias("x").join(small.alias("y"), ["band", "key"])
             .where(F.col("x.doc_id") > F.col("y.doc_id"))
             .select(F.col("x.doc_id").alias("a"), F.col("y.doc_id").alias("b")))
    star = (members.where((F.col("n") > all_pairs_max) & (F.col("doc_id") != F.col("root")))
            .select(F.col("doc_id").alias("a"), F.col("root").alias("b")))
    return pairs.unionByName(star).distinct()


def edge_jaccard(edges: DataFrame, docs: DataFrame, params: mh.MinHashParams) -> DataFrame:
    """(a, b, jaccard): the exact Jaccard of each edge's shingle sets; null where either end is
    not in ``docs`` (an indexed document)."""
    n = params.shingle
    texts = docs.select("doc_id", "text")
    pairs = (edges.join(texts.select(F.col("doc_id").alias("a"), F.col("text").alias("text_a")), "a", "left")
             .join(texts.select(F.col("doc_id").alias("b"), F.col("text").alias("text_b")), "b", "left"))

    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            ta, tb = batch.column("text_a").to_pylist(), batch.column("text_b").to_pylist()
            jac = [None if x is None or y is None else
                   mh.jaccard(mh.shingle_hashes(mh.normalise(x), n), mh.shingle_hashes(mh.normalise(y), n))
                   for x, y in zip(ta, tb)]
            yield pa.RecordBatch.from_arrays([batch.column("a"), batch.column("b"), pa.array(jac, pa.float64())],
                                             names=["a", "b", "jaccard"])

    return pairs.select("a", "b", "text_a", "text_b").mapInArrow(compute, "a string, b string, jaccard double")


def verification_summary(verified: DataFrame, threshold: float) -> dict:
    """Counts and precision of the candidate edges that could be verified."""
    row = verified.agg(
        F.count(F.lit(1)).alias("edges"), F.count("jaccard").alias("verified"),
        F.sum((F.col("jaccard") < threshold).cast("int")).alias("below_threshold"),
        F.percentile_approx("jaccard", [0.01, 0.1, 0.5], 1000).alias("q")).first()
    below = row.below_threshold or 0
    return {"candidate_edges": row.edges, "verified": row.verified, "below_threshold": below,
            "precision": round(1 - below / row.verified, 4) if row.verified else None,
            "jaccard_p01_p10_p50": [round(x, 4) for x in row.q] if row.q else None}


def largest_clusters(duplicates: DataFrame, n: int = 10) -> list[dict]:
    """The ``n`` kept documents with the most duplicates: [{duplicate_of, count}]."""
    return [r.asDict() for r in duplicates.groupBy("duplicate_of").count()
            .orderBy(F.desc("count"), "duplicate_of").limit(n).collect()]


def _large_star(edges: DataFrame) -> DataFrame:
    """Every edge (a, u) becomes (a, m_u), m_u = min of u and u's smaller neighbours."""
    mins = edges.groupBy("a").agg(F.min("b").alias("m")).withColumnRenamed("a", "u")
    return (edges.join(mins, edges.b == mins.u, "left")
            .select("a", F.coalesce("m", "b").alias("b")).distinct())


def _small_star(edges: DataFrame) -> DataFrame:
    """Each node u and its smaller neighbours all link to m, the smallest of them."""
    mins = edges.groupBy("a").agg(F.min("b").alias("m"))
    joined = edges.join(mins, "a")
    return (joined.select("a", F.col("m").alias("b"))
            .unionByName(joined.where(F.col("b") != F.col("m")).select(F.col("b").alias("a"), F.col("m").alias("b")))
            .distinct())


def connected_components(edges: DataFrame) -> DataFrame:
    """(node, component) for every node on an edge; component = the component's smallest id."""
    e = edges.localCheckpoint()
    for rnd in range(1, MAX_CC_ROUNDS + 1):
        e = _small_star(_large_star(e)).localCheckpoint()
        children = e.select(F.col("a").alias("b")).distinct()
        pointing_at_child = e.join(children, "b").limit(1).count()
        multi_parent = e.groupBy("a").count().where("count > 1").limit(1).count()
        log.info("connected components: round %d", rnd)
        if not pointing_at_child and not multi_parent:
            roots = e.select(F.col("b").alias("node"), F.col("b").alias("component")).distinct()
            return e.select(F.col("a").alias("node"), F.col("b").alias("component")).unionByName(roots)
    raise RuntimeError(f"connected components did not converge in {MAX_CC_ROUNDS} rounds")


@dataclass
class DedupResult:
    survivors: DataFrame  # the new documents kept, all their columns
    duplicates: DataFrame  # doc_id, duplicate_of, kind (exact | near)
    survivor_bands: DataFrame  # band, key, doc_id of the survivors: what an index appends
    survivor_exact: DataFrame  # exact_key, doc_id of the survivors
    verified: DataFrame | None = None  # a, b, jaccard of every candidate edge (verify != "off")


def dedup(docs: DataFrame, params: mh.MinHashParams, index: DedupIndex | None = None,
          verify: str = "off") -> DedupResult:
    """Deduplicate ``docs`` within themselves and, with ``index``, against every indexed document.
    ``verify``: one of VERIFY_MODES (see the module docstring)."""
    if verify not in VERIFY_MODES:
        raise ValueError(f"verify must be one of {VERIFY_MODES}, not {verify!r}")
    keys = signatures(docs, params).withColumn("prior", F.lit(False)).localCheckpoint()
    exact = _ranked(keys, "exact_key")
    exact_dups = exact.where(F.col("doc_id") != F.col("keeper")).select(
        "doc_id", F.col("keeper").alias("duplicate_of"), F.lit("exact").alias("kind"))
    unique = exact.where(F.col("doc_id") == F.col("keeper")).drop("keeper")
    prior_bands = index.bands() if index else None
    prior_exact = index.exact() if index else None
    if prior_exact is not None:
        seen = exact_prior_matches(prior_exact, unique).withColumn("kind", F.lit("exact"))
        exact_dups = exact_dups.unionByName(seen)
        unique = unique.join(seen.select("doc_id"), "doc_id", "left_anti")
    rows = band_rows(unique).withColumn("prior", F.lit(False))
    nodes = unique.select("doc_id", "quality_score", "prior")
    if prior_bands is not None:
        touched = touched_prior_rows(prior_bands, rows).withColumn("prior", F.lit(True))
        rows = rows.unionByName(touched.select("doc_id", "band", "key", "prior"))
        nodes = nodes.unionByName(touched.select("doc_id", F.lit(None).cast("double").alias("quality_score"),
                                                 "prior").distinct())
    edges, verified = candidate_edges(rows.select("band", "key", "doc_id")), None
    if verify != "off":  # checkpointed first: its size is then known and the text join can broadcast it
        edges = edges.localCheckpoint()
        verified = edge_jaccard(edges, docs, params).localCheckpoint()
        if verify == "enforce":
            edges = verified.where(F.col("jaccard").isNull() | (F.col("jaccard") >= params.threshold)).select("a", "b")
    comps = connected_components(edges)
    members = comps.join(nodes, comps.node == nodes.doc_id).drop("node")
    near = _ranked(members, "component")
    near_dups = near.where((F.col("doc_id") != F.col("keeper")) & ~F.col("prior")).select(
        "doc_id", F.col("keeper").alias("duplicate_of"), F.lit("near").alias("kind"))
    # an exact copy of a document that is itself a near duplicate points at the final keeper
    final = near_dups.select(F.col("doc_id").alias("duplicate_of"), F.col("duplicate_of").alias("final"))
    exact_dups = (exact_dups.join(final, "duplicate_of", "left")
                  .select("doc_id", F.coalesce("final", "duplicate_of").alias("duplicate_of"), "kind"))
    duplicates = exact_dups.unionByName(near_dups).localCheckpoint()
    survivors = docs.join(duplicates.select("doc_id"), "doc_id", "left_anti")
    kept_keys = unique.join(near_dups.select("doc_id"), "doc_id", "left_anti")
    return DedupResult(survivors, duplicates, band_rows(kept_keys), kept_keys.select("exact_key", "doc_id"), verified)
