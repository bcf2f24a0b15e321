"""Exact and MinHash-LSH fuzzy deduplication on Spark.

1. One pass over the texts (``mapInArrow``, numpy over whole batches): normalised-text hash
   (exact key), MinHash signature and band keys per document; persisted, not recomputed, and
   counted. An input of at most ``driver_max_docs`` documents has its keys collected and steps 2
   and 3 done on the driver (``etl.dedup.local``, numpy; same answers, tested), saving about a
   dozen Spark jobs; a larger one does them in Spark windows.
2. Exact: one document per exact key (``filters.dedup.minhash.exact_key``).
3. Candidate edges: one row per (band, key, doc_id); a small bucket (<= ``all_pairs_max``
   members) gives all its pairs, a larger one links its members to its smallest doc_id (star
   edges); no per-bucket lists. Each edge carries its ends' quality_score and prior flag.
4. The candidate edges are counted. Up to ``driver_max_edges`` (the usual case: near-duplicate
   families are small) they are collected, ids and scores only, and resolved in one pass each:
   verification by candidate component (one task gets a component's texts and computes each
   shingle set once), connected components and keepers on the driver (``etl.dedup.components``).
   Above it, everything stays distributed: verification joins each edge to its two texts, and
   connected components run as large-star / small-star rounds with a checkpoint each.
5. One keeper per component: an already indexed document, then the highest ``quality_score``,
   then the smallest ``doc_id``.

Verification (``verify``): the exact Jaccard of every candidate edge between two new documents.
``measure`` reports it (the precision of LSH at this threshold); ``enforce`` also drops edges
below the threshold before the components are formed. Edges to indexed documents stay
unverified (the index keeps band keys, not texts). In a bucket larger than ``all_pairs_max`` only
star edges exist, so enforcing can split one whose members are similar to each other but not to
the root: a little recall traded for precision, in hot buckets only.

Every input document ends in ``survivors`` (keepers) or ``duplicates`` (doc_id, duplicate_of,
kind = exact | near). Each Spark action runs under a job description "dedup: <phase>" (the Spark
UI and ``bench.bench_dedup`` group job times by it); ``DedupResult.report`` has the driver's
seconds per phase.
"""

from __future__ import annotations

import logging
import time
import typing
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from etl.dedup import local as dl
from etl.dedup.checkpoints import Checkpoints
from etl.dedup.components import components_local, components_spark
from etl.dedup.index import DedupIndex, IndexConfig, exact_prior_matches
from etl.dedup.verify import JACCARD_SCHEMA, edge_jaccard, jaccard_by_component, summary_local, verification_summary
from etl.runtime.progress import label_jobs
from filters.dedup import minhash as mh
from filters.dedup.minhash import MinHashParams

log = logging.getLogger("zhcorpus")
VerifyMode = Literal["off", "measure", "enforce"]
VERIFY_MODES = typing.get_args(VerifyMode)  # kept for importers; DedupConfig.verify is the Literal


@dataclass(frozen=True)
class DedupConfig:
    """The ``dedup`` section, the same in every job that deduplicates."""

    minhash: MinHashParams = field(default_factory=MinHashParams)
    # off | measure (exact Jaccard of every candidate edge, reported) | enforce (also drop edges
    # below minhash.threshold before the components are formed: about half the LSH candidates at
    # 16 x 8 are below 0.8 on the benchmark corpus, docs/benchmarks.md, "2026-11-24: dedup")
    verify: VerifyMode = "enforce"
    # Buckets up to this size yield all their pairs (so verification judges every pair), larger
    # ones star edges to their smallest member: near-duplicate families are small, a template
    # page copied thousands of times is not (tests/test_dedup.py: a 3,000-copy hot bucket).
    all_pairs_max: int = 8
    # Candidate edges up to this many are resolved on the driver (ids and scores, ~100 bytes an
    # edge in Arrow: ~100 MB and about a second of scipy at the bound); more go to Spark
    # (large-star / small-star, a checkpoint and an action per round). On the 64 MB benchmark
    # corpus there are ~3,300 candidate edges.
    driver_max_edges: int = 1_000_000
    # A candidate component up to this many documents is verified in one task (its texts in
    # memory, each shingle set computed once); with a larger one every edge joins its two texts.
    group_max_docs: int = 50_000
    # Inputs of up to this many documents collect their keys (~230 bytes a document in Arrow,
    # ~60 MB and a few hundred MB of numpy temporaries at the bound) and find exact groups and
    # candidate edges on the driver (``etl.dedup.local``) instead of in Spark windows: a nightly
    # increment or a 64 MB benchmark saves a dozen Spark jobs. Larger inputs stay distributed.
    driver_max_docs: int = 250_000
    # The persistent index's file sizes and compaction (etl/dedup/index.py, docs/nightly.md).
    index: IndexConfig = field(default_factory=IndexConfig)


@dataclass
class DedupResult:
    survivors: DataFrame  # the new documents kept, all their columns
    duplicates: DataFrame  # doc_id, duplicate_of, kind (exact | near)
    survivor_bands: DataFrame  # band, key, doc_id of the survivors: what an index appends
    survivor_exact: DataFrame  # exact_key, doc_id of the survivors
    verified: DataFrame | None = None  # a, b, jaccard of every candidate edge (verify != "off")
    # candidate_edges, components ("driver" | "spark", rounds), verification (verify != "off",
    # the verification_summary fields), seconds per phase (driver wall clock)
    report: dict = field(default_factory=dict)


def signatures(docs: DataFrame, params: mh.MinHashParams) -> DataFrame:
    """doc_id, exact_key, band_keys (array<long>), quality_score (null when ``docs`` has none)."""
    p = params.resolved()
    schema = pa.schema(
        [
            ("doc_id", pa.string()),
            ("exact_key", pa.string()),
            ("band_keys", pa.list_(pa.int64())),
            ("quality_score", pa.float64()),
        ]
    )
    quality = F.col("quality_score").cast("double") if "quality_score" in docs.columns else F.lit(None).cast("double")

    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            exact, flat = signature_columns(batch.column("text").to_pylist(), p)
            band_keys = pa.ListArray.from_arrays(
                pa.array(np.arange(0, len(flat) + 1, p.bands, dtype=np.int32)), pa.array(flat, pa.int64())
            )
            yield pa.RecordBatch.from_arrays(
                [batch.column("doc_id"), pa.array(exact, pa.string()), band_keys, batch.column("quality_score")],
                schema=schema,
            )

    return docs.select("doc_id", "text", quality.alias("quality_score")).mapInArrow(
        compute, "doc_id string, exact_key string, band_keys array<bigint>, quality_score double"
    )


def signature_columns(texts: list[str | None], p: mh.MinHashParams) -> tuple[list[str], np.ndarray]:
    """Per text: the exact key, and the band keys (all texts' keys, flat, ``p.bands`` a text);
    ``p`` resolved. The per-document work of the dedup stage (bench/corpus_anchor.py times it)."""
    exact, keys = [], []
    for part in mh.by_chars([t or "" for t in texts]):  # bounds the numpy temporaries
        norms = mh.normalise_batch(part)
        exact += [mh.exact_key(x, normalised=True) for x in norms]
        keys.append(mh.batch_band_keys(mh.batch_signatures(norms, p.shingle, p.num_perm, p.seed), p.bands, p.rows))
    return exact, np.concatenate(keys).ravel() if keys else np.zeros(0, np.int64)


def band_rows(keys: DataFrame) -> DataFrame:
    """One row per (band, key, doc_id), with the other columns of ``keys``."""
    rest = [c for c in keys.columns if c != "band_keys"]
    return keys.select(*rest, F.posexplode("band_keys").alias("band", "key"))


def _node(df: DataFrame) -> F.Column:
    q = F.col("quality_score") if "quality_score" in df.columns else F.lit(None).cast("double")
    prior = F.col("prior") if "prior" in df.columns else F.lit(False)
    return F.struct(F.col("doc_id"), q.cast("double").alias("quality_score"), prior.alias("prior"))


def candidate_edges(rows: DataFrame, all_pairs_max: int = 8, with_nodes: bool = False) -> DataFrame:
    """(a, b) with a > b, distinct. A bucket of at most ``all_pairs_max`` members gives all its
    pairs, a larger one links each member to its smallest doc_id (star edges: linear in the
    bucket, so a hot bucket cannot blow up). One window over (band, key) ordered by doc_id does
    both: each row sees its bucket's size, first member and up to ``all_pairs_max - 1``
    predecessors; no per-bucket lists. ``rows``: band, key, doc_id [, quality_score, prior] (or
    a signatures frame with band_keys). ``with_nodes``: also a_node, b_node, structs of
    (doc_id, quality_score, prior)."""
    if "band_keys" in rows.columns:
        rows = band_rows(rows)
    bucket = Window.partitionBy("band", "key")
    ordered = bucket.orderBy("doc_id")
    node = F.col("node")
    prev = F.array(*[F.lag(node, k).over(ordered) for k in range(1, max(all_pairs_max, 2))])
    r = (
        rows.select("band", "key", "doc_id", _node(rows).alias("node"))
        .select(
            "node",
            F.count(F.lit(1)).over(bucket).alias("n"),
            F.first(node).over(ordered).alias("root"),
            prev.alias("prev"),
        )
        .where(F.col("n") > 1)
    )
    others = F.when(F.col("n") <= all_pairs_max, F.col("prev")).otherwise(F.array("root"))  # one branch, one window
    edges = r.select(node.alias("a_node"), F.explode(others).alias("b_node")).where(
        F.col("b_node").isNotNull() & (F.col("b_node.doc_id") != F.col("a_node.doc_id"))
    )
    edges = edges.distinct()  # a node's fields follow from its doc_id
    ends = [F.col("a_node.doc_id").alias("a"), F.col("b_node.doc_id").alias("b")]
    return edges.select(*ends, "a_node", "b_node") if with_nodes else edges.select(*ends)


def _collect_edges(edges: DataFrame, report: dict) -> pa.Table:
    """The candidate edges (``candidate_edges(with_nodes=True)``) as a driver edge table."""
    with phase(edges.sparkSession, "collect candidate edges", report["seconds"]):
        return (
            edges.select("a", "b", "a_node.quality_score", "a_node.prior", "b_node.quality_score", "b_node.prior")
            .toArrow()
            .rename_columns(dl.EDGE_COLUMNS)
        )


def _resolve_on_driver(
    docs: DataFrame, tbl: pa.Table, cfg: DedupConfig, p: MinHashParams, report: dict
) -> tuple[pa.Table, DataFrame | None]:
    """(near duplicates: doc_id, duplicate_of; verified edges or None) from the candidate edges
    ``tbl`` (``etl.dedup.local.EDGE_COLUMNS``): verification by candidate component, components
    and keepers on the driver."""
    spark, seconds = docs.sparkSession, report["seconds"]
    verified = None
    if cfg.verify != "off":
        candidates = components_local(tbl.column("a"), tbl.column("b"))
        largest = pc.max(pc.value_counts(candidates.column("component")).field("counts")).as_py() or 0
        with phase(spark, "verification", seconds):
            if largest <= cfg.group_max_docs:
                jac = jaccard_by_component(spark, docs, tbl.select(["a", "b"]), candidates, p.shingle)
            else:
                jac = edge_jaccard(spark.createDataFrame(tbl.select(["a", "b"])), docs, p.shingle)
            vt = jac.toArrow()
        report["verification"] = {"mode": cfg.verify, **summary_local(vt, p.threshold)}
        verified = spark.createDataFrame(vt, JACCARD_SCHEMA)
        if cfg.verify == "enforce":
            tbl = tbl.join(vt, ["a", "b"])
            tbl = tbl.filter(
                pc.or_kleene(pc.is_null(tbl.column("jaccard")), pc.greater_equal(tbl.column("jaccard"), p.threshold))
            )
    with phase(spark, "components + keepers (driver)", seconds):
        near = _keepers_local(tbl)
    report["components"] = {"where": "driver", "edges": len(tbl)}
    return near, verified


def _keepers_local(tbl: pa.Table) -> pa.Table:
    """(doc_id, duplicate_of) of every non-indexed node that is not its component's keeper."""
    comps = components_local(tbl.column("a"), tbl.column("b")).to_pandas()
    ends = [
        tbl.select([x, f"q{x}", f"p{x}"]).rename_columns(["node", "quality_score", "prior"]).to_pandas() for x in "ab"
    ]
    nodes = pd.concat(ends).drop_duplicates("node")
    df = comps.merge(nodes, on="node")
    df["no_quality"] = df["quality_score"].isna()
    df = df.sort_values(
        ["component", "prior", "no_quality", "quality_score", "node"], ascending=[True, False, True, False, True]
    )
    df["keeper"] = df.groupby("component")["node"].transform("first")
    near = df[(df["node"] != df["keeper"]) & ~df["prior"].astype(bool)].sort_values("node")
    return pa.table(
        {"doc_id": pa.array(near["node"], pa.string()), "duplicate_of": pa.array(near["keeper"], pa.string())}
    )


def _resolve_on_spark(
    docs: DataFrame, edges: DataFrame, cfg: DedupConfig, p: MinHashParams, cp: Checkpoints, report: dict
) -> tuple[DataFrame, DataFrame | None]:
    """``_resolve_on_driver`` for a candidate graph too large to collect: every step on Spark."""
    spark, seconds = docs.sparkSession, report["seconds"]
    verified = None
    if cfg.verify != "off":
        verified = cp.persist(edge_jaccard(edges, docs, p.shingle))
        with phase(spark, "verification", seconds):
            report["verification"] = {"mode": cfg.verify, **verification_summary(verified, p.threshold)}
        if cfg.verify == "enforce":
            passed = verified.where(F.col("jaccard").isNull() | (F.col("jaccard") >= p.threshold))
            edges = edges.join(passed.select("a", "b"), ["a", "b"])
    with phase(spark, "components (spark)", seconds):
        comps, rounds = components_spark(edges, cp)
    report["components"] = {"where": "spark", "rounds": rounds}
    nodes = edges.select(F.col("a_node").alias("n")).unionByName(edges.select(F.col("b_node").alias("n"))).distinct()
    members = comps.join(nodes.select("n.*"), comps.node == F.col("doc_id")).drop("node")
    rank = F.struct(
        (~F.col("prior")).alias("p"),
        F.col("quality_score").isNull().alias("q0"),
        (-F.col("quality_score")).alias("q"),
        F.col("doc_id"),
    )
    best = members.groupBy("component").agg(F.min(rank).getField("doc_id").alias("keeper"))
    near = (
        members.join(best, "component")
        .where((F.col("doc_id") != F.col("keeper")) & ~F.col("prior"))
        .select("doc_id", F.col("keeper").alias("duplicate_of"))
    )
    return near, verified


def largest_clusters(duplicates: DataFrame, n: int = 10) -> list[dict]:
    """The ``n`` kept documents with the most duplicates: [{duplicate_of, count}]."""
    return [
        r.asDict()
        for r in duplicates.groupBy("duplicate_of").count().orderBy(F.desc("count"), "duplicate_of").limit(n).collect()
    ]


def _ranked(df: DataFrame, group: str) -> DataFrame:
    """Add ``keeper``: the group's best doc_id: an already indexed document first (it is
    published), then highest quality_score, then smallest doc_id."""
    order = [F.col("prior").desc(), F.col("quality_score").desc_nulls_last(), F.col("doc_id")]
    return df.withColumn("keeper", F.first("doc_id").over(Window.partitionBy(group).orderBy(*order)))


@contextmanager
def phase(spark, name: str, seconds: dict | None = None):
    """Label the Spark jobs started inside as "dedup: <name>" and add the block's wall time to
    ``seconds[name]``."""
    t0 = time.perf_counter()
    try:
        with label_jobs(spark.sparkContext, f"dedup: {name}"):
            yield
    finally:
        if seconds is not None:
            seconds[name] = round(seconds.get(name, 0.0) + time.perf_counter() - t0, 3)


def _exact(keys: DataFrame, index: DedupIndex | None) -> tuple[DataFrame, DataFrame]:
    """(exact duplicates: doc_id, duplicate_of, kind; the unique rest of ``keys``)."""
    exact = _ranked(keys, "exact_key")
    dups = exact.where(F.col("doc_id") != F.col("keeper")).select(
        "doc_id", F.col("keeper").alias("duplicate_of"), F.lit("exact").alias("kind")
    )
    unique = exact.where(F.col("doc_id") == F.col("keeper")).drop("keeper")
    if index is not None and index.committed():
        found = index.exact_found(unique.select("exact_key"))  # only the index files the night's keys fall in
        seen = exact_prior_matches(found, unique).withColumn("kind", F.lit("exact"))
        dups = dups.unionByName(seen)
        unique = unique.join(seen.select("doc_id"), "doc_id", "left_anti")
    return dups, unique


def dedup(
    docs: DataFrame, cfg: DedupConfig, index: DedupIndex | None = None, checkpoints: Checkpoints | None = None
) -> DedupResult:
    """Deduplicate ``docs`` (doc_id, text[, quality_score]) within themselves and, with
    ``index``, against every indexed document. ``checkpoints``: the run's ``Checkpoints`` (the
    caller writes the result inside its with-block); None makes a local one, which refuses to
    run on a cluster."""
    if isinstance(cfg, MinHashParams):  # the pre-DedupConfig call dedup(docs, params, index, verify)
        warnings.warn("dedup(docs, MinHashParams, index, verify) is deprecated: pass a DedupConfig", DeprecationWarning)
        cfg, checkpoints = DedupConfig(minhash=cfg, verify=checkpoints or "off"), None
    spark, p = docs.sparkSession, cfg.minhash.resolved()
    cp = checkpoints or Checkpoints(spark, "", "dedup")
    report: dict = {"seconds": {}}
    keys = cp.persist(signatures(docs, p).withColumn("prior", F.lit(False)))
    if cfg.driver_max_docs > 0:
        with phase(spark, "signatures", report["seconds"]):
            n_docs = keys.count()
        if n_docs <= cfg.driver_max_docs:
            return _dedup_local(docs, keys, cfg, p, index, cp, report)
    report["grouping"] = "spark"
    exact_dups, unique = _exact(keys, index)
    rows = band_rows(unique).select("band", "key", "doc_id", "quality_score", "prior")
    if index is not None and index.committed():
        touched = index.touched(rows).select(
            "band", "key", "doc_id", F.lit(None).cast("double").alias("quality_score"), F.lit(True).alias("prior")
        )
        rows = rows.unionByName(touched)
    edges = cp.persist(candidate_edges(rows, cfg.all_pairs_max, with_nodes=True))
    with phase(spark, "signatures + exact + candidate edges", report["seconds"]):
        report["candidate_edges"] = n_edges = edges.count()
    if index is not None and index.committed():
        report["index_lookup"] = {"bands": index.lookup_summary()}  # the exact lookup's tasks ran in the same jobs
    if n_edges <= cfg.driver_max_edges:
        near, verified = _resolve_on_driver(docs, _collect_edges(edges, report), cfg, p, report)
        near = spark.createDataFrame(near, "doc_id string, duplicate_of string")
    else:
        near, verified = _resolve_on_spark(docs, edges, cfg, p, cp, report)
    # an exact copy of a document that is itself a near duplicate points at the final keeper
    final = near.select(F.col("doc_id").alias("duplicate_of"), F.col("duplicate_of").alias("final"))
    exact_dups = exact_dups.join(final, "duplicate_of", "left").select(
        "doc_id", F.coalesce("final", "duplicate_of").alias("duplicate_of"), "kind"
    )
    duplicates = cp.persist(exact_dups.unionByName(near.withColumn("kind", F.lit("near"))))
    survivors = docs.join(duplicates.select("doc_id"), "doc_id", "left_anti")
    kept = unique.join(near.select("doc_id"), "doc_id", "left_anti")
    return DedupResult(
        survivors,
        duplicates,
        band_rows(kept).select("band", "key", "doc_id"),
        kept.select("exact_key", "doc_id"),
        verified,
        report,
    )


def _dedup_local(
    docs: DataFrame,
    keys: DataFrame,
    cfg: DedupConfig,
    p: MinHashParams,
    index: DedupIndex | None,
    cp: Checkpoints,
    report: dict,
) -> DedupResult:
    """``dedup`` for an input of at most ``driver_max_docs`` documents: its keys (persisted,
    counted) collected, exact groups and candidate edges found on the driver."""
    spark = docs.sparkSession
    report["grouping"] = "driver"
    with phase(spark, "exact + candidate edges (driver)", report["seconds"]):
        exact, unique = dl.exact_local(keys.select("doc_id", "exact_key", "band_keys", "quality_score").toArrow())
    prior = None
    if index is not None and index.committed():
        with phase(spark, "index lookup", report["seconds"]):
            seen = _exact_prior_arrow(unique, index)
            report["index_lookup"] = {"exact": index.lookup_summary()}
            exact = pa.concat_tables([exact, seen.cast(exact.schema)])
            unique = unique.filter(pc.invert(pc.is_in(unique.column("doc_id"), value_set=seen.column("doc_id"))))
            prior = index.touched_arrow(dl.band_table(unique, p.bands).select(["band", "key"]))
            report["index_lookup"]["bands"] = index.lookup_summary()
    with phase(spark, "exact + candidate edges (driver)", report["seconds"]):
        rows = dl.band_table(unique, p.bands)
        tbl = dl.candidate_edges_local(rows, unique.select(["doc_id", "quality_score"]), prior, cfg.all_pairs_max)
    report["candidate_edges"] = len(tbl)
    if len(tbl) <= cfg.driver_max_edges:
        near, verified = _resolve_on_driver(docs, tbl, cfg, p, report)
    else:
        near_frame, verified = _resolve_on_spark(docs, dl.edges_frame(spark, tbl), cfg, p, cp, report)
        near = near_frame.toArrow()
    duplicates = spark.createDataFrame(
        dl.exact_duplicates(exact, near), "doc_id string, duplicate_of string, kind string"
    )
    gone = F.broadcast(duplicates.select("doc_id"))
    kept = keys.join(gone, "doc_id", "left_anti")
    return DedupResult(
        docs.join(gone, "doc_id", "left_anti"),
        duplicates,
        band_rows(kept).select("band", "key", "doc_id"),
        kept.select("exact_key", "doc_id"),
        verified,
        report,
    )


def _exact_prior_arrow(unique: pa.Table, index: DedupIndex) -> pa.Table:
    """(doc_id, duplicate_of) of the new documents whose exact key is already indexed (the
    smallest indexed doc_id; never the document itself), from the index files the keys fall in."""
    found = index.exact_arrow(unique.column("exact_key")).rename_columns(["exact_key", "duplicate_of"])
    pairs = unique.select(["exact_key", "doc_id"]).join(found, "exact_key")
    pairs = pairs.filter(pc.not_equal(pairs.column("doc_id"), pairs.column("duplicate_of")))
    best = pairs.group_by("doc_id").aggregate([("duplicate_of", "min")]).rename_columns(["doc_id", "duplicate_of"])
    return best.select(["doc_id", "duplicate_of"]).sort_by("doc_id")
