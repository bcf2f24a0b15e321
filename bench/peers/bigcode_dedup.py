"""The BigCode-style PySpark MinHash-LSH dedup job: the anchor ``bench.bench_dedup`` measures ours
against. Written here from the published algorithm (the near-deduplication BigCode ran for The
Stack: MinHash by universal hashing, LSH bands grouped on an RDD, star edges per bucket,
large-star / small-star connected components on RDDs, one document kept per component), not
copied code:

1. Each document gets an integer id (``monotonically_increasing_id``) and, in Python per
   document, the MinHash of its shingles: every shingle hashed to 32 bits (SHA-1, first 4 bytes),
   then ``num_perm`` universal hashes ``(a x + b) mod (2^61 - 1)``, keeping 32 bits, and the
   minimum of each over the shingles (a shingles x num_perm matrix per document).
2. The signature is cut into bands; ``(band, bytes of the band)`` keys group the ids
   (``groupByKey``), and each bucket of more than one id yields star edges from its smallest id.
3. Connected components by alternating large-star / small-star on the edge RDD, cached each
   round, until a round changes no edge (the symmetric difference of the edge sets is empty).
4. Each component keeps its smallest id; the documents are joined with the (id, component)
   pairs, the others are dropped, and the kept documents and the duplicates are written.
No exact-Jaccard verification (BigCode's job had none). Shingles: character n-grams of
``filters.dedup.minhash.normalise`` text, the same as ours (BigCode's word n-grams do not apply to
Chinese), so recall is compared on equal shingles and the same bands x rows.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from filters.dedup import minhash as mh

MERSENNE = np.uint64((1 << 61) - 1)
MAX_HASH = np.uint64((1 << 32) - 1)
ID = "__id__"


def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.RandomState(seed)
    a = rng.randint(1, MERSENNE, size=num_perm, dtype=np.uint64)
    b = rng.randint(0, MERSENNE, size=num_perm, dtype=np.uint64)
    return a, b


def sha1_32(data: bytes) -> int:
    return struct.unpack("<I", hashlib.sha1(data).digest()[:4])[0]


def band_keys(text: str, n: int, a: np.ndarray, b: np.ndarray, bands: int, rows: int) -> list[tuple[int, bytes]]:
    """(band, band bytes) of one document's MinHash signature."""
    norm = mh.normalise(text or "")
    grams = {norm[i : i + n] for i in range(max(1, len(norm) - n + 1))}
    h = np.array([sha1_32(g.encode("utf-8")) for g in grams], dtype=np.uint64).reshape(-1, 1)
    with np.errstate(over="ignore"):
        sig = np.vstack([(h * a + b) % MERSENNE & MAX_HASH, np.full((1, len(a)), MAX_HASH, dtype=np.uint64)]).min(
            axis=0
        )
    return [(i, bytes(sig[i * rows : (i + 1) * rows].byteswap().data)) for i in range(bands)]


def star_edges(ids) -> list[tuple[int, int]]:
    ids = sorted(set(ids))
    return [(x, ids[0]) for x in ids[1:]]


def _large_star(edge):
    u, nbrs = edge
    m = min(min(nbrs), u)
    return [(v, m) for v in nbrs if v > u]


def _small_star(edge):
    u, nbrs = edge
    m = min(min(nbrs), u)
    return [(v, m) for v in set(nbrs) | {u} if v != m]


def components(edges):
    """RDD of (node, smallest id of its component) for every non-root node, and the rounds."""
    rounds = 0
    while True:
        rounds += 1
        large = (
            edges.flatMap(lambda e: [(e[0], e[1]), (e[1], e[0])]).groupByKey().flatMap(_large_star).distinct().cache()
        )
        small = large.map(lambda e: (max(e), min(e))).groupByKey().flatMap(_small_star).distinct().cache()
        if small.subtract(edges).union(edges.subtract(small)).isEmpty():
            return small, rounds
        edges = small


def bigcode_dedup(docs: DataFrame, params: mh.MinHashParams) -> tuple[DataFrame, DataFrame, int]:
    """(kept documents, duplicates (doc_id, duplicate_of), rounds) of ``docs`` (doc_id, text)."""
    p = params.resolved()
    a, b = permutations(p.num_perm, p.seed)
    n, bands, rows = p.shingle, p.bands, p.rows
    spark = docs.sparkSession
    records = docs.withColumn(ID, F.monotonically_increasing_id()).cache()
    buckets = (
        records.select(ID, "text")
        .rdd.flatMap(lambda r: [(key, r[0]) for key in band_keys(r[1], n, a, b, bands, rows)])
        .groupByKey()
    )
    edges = buckets.flatMap(lambda kv: star_edges(kv[1])).distinct().cache()
    comps, rounds = (spark.sparkContext.emptyRDD(), 0) if edges.isEmpty() else components(edges)
    assignment = spark.createDataFrame(comps, f"{ID} long, component long")
    kept = records.join(assignment, ID, "left_anti").drop(ID)
    roots = records.select(F.col(ID).alias("component"), F.col("doc_id").alias("duplicate_of"))
    dups = records.join(assignment, ID).join(roots, "component").select("doc_id", "duplicate_of")
    return kept, dups, rounds
