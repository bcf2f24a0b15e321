"""The methods ``bench.bench_dedup`` compares, each from reading the corpus's Parquet to writing
its result; each returns (seconds, (doc_id, doc_id) pairs, extra facts).

- job: this project's dedup stage (``etl.dedup.stage.dedup`` with ``Checkpoints``), writing
  documents/ and duplicates/ as the jobs do; pairs (doc_id, duplicate_of).
- bigcode: ``bench.peers.bigcode_dedup``, the BigCode-style RDD job, writing its kept documents and
  duplicates.
- mllib: Spark ML ``MinHashLSH`` with 10 hash tables and ``approxSimilarityJoin`` (PanGu-α's
  baseline) on character n-grams of the same normalised text, pairs written to Parquet.
- datasketch: ``MinHashLSH`` in one process, the same bands x rows, pairs from querying each.
- text_dedup: text-dedup 0.4.1 in its own venv (``bench/peers/text_dedup_peer.py``), one process.
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from bench.harness import next_job_id, spark_jobs
from filters.dedup import minhash as mh

log = logging.getLogger("zhcorpus.bench")
MLLIB_TABLES = 10  # PanGu-α's baseline: MinHashLSH with 10 hash tables
MLLIB_FEATURES = 1 << 24  # HashingTF buckets: ~2,000 shingles a document rarely collide
TEXT_DEDUP_PYTHON = Path("build/text-dedup-venv/bin/python")
Pair = tuple[str, str]


def run_job(spark, cfg, corpus: Path, out: Path) -> tuple[float, set[Pair], dict]:
    from etl.dedup.checkpoints import Checkpoints
    from etl.dedup.stage import dedup, phase

    first = next_job_id(spark)
    t0 = time.perf_counter()
    with Checkpoints(spark, "", "dedup") as cp:
        result = dedup(spark.read.parquet(str(corpus / "documents")), cfg, checkpoints=cp)
        seconds = result.report["seconds"]
        with phase(spark, "write duplicates", seconds):
            result.duplicates.write.mode("overwrite").parquet(str(out / "duplicates"))
        with phase(spark, "write documents", seconds):
            result.survivors.write.mode("overwrite").parquet(str(out / "documents"))
    wall = time.perf_counter() - t0
    dups = pq.read_table(out / "duplicates").to_pylist()
    kept = set(pq.read_table(out / "documents", columns=["doc_id"]).column("doc_id").to_pylist())
    facts = {
        "duplicates": len(dups),
        "kept": len(kept),
        "duplicate_of_not_kept": sum(d["duplicate_of"] not in kept for d in dups),
        "stage": result.report,
        "spark_jobs": spark_jobs(spark, first),
    }
    return wall, {tuple(sorted((d["doc_id"], d["duplicate_of"]))) for d in dups}, facts


def run_bigcode(spark, params: mh.MinHashParams, corpus: Path, out: Path) -> tuple[float, set[Pair], dict]:
    from bench.peers.bigcode_dedup import bigcode_dedup

    first = next_job_id(spark)
    t0 = time.perf_counter()
    kept, dups, rounds = bigcode_dedup(spark.read.parquet(str(corpus / "documents")), params)
    dups.write.mode("overwrite").parquet(str(out / "duplicates"))
    kept.write.mode("overwrite").parquet(str(out / "documents"))
    wall = time.perf_counter() - t0
    spark.catalog.clearCache()
    rows = pq.read_table(out / "duplicates").to_pylist()
    return (
        wall,
        {tuple(sorted((r["doc_id"], r["duplicate_of"]))) for r in rows},
        {"rounds": rounds, "spark_jobs": sum(g["jobs"] for g in spark_jobs(spark, first))},
    )


def mllib_pairs(spark, corpus: Path, out: Path, p: mh.MinHashParams) -> None:
    """The MLlib baseline, from reading the Parquet to writing its pairs (a, b, dist) to ``out``."""
    from pyspark.ml.feature import HashingTF, MinHashLSH, NGram
    from pyspark.sql import functions as F

    @F.pandas_udf("string")
    def normalise(texts: pd.Series) -> pd.Series:
        return texts.map(mh.normalise)

    docs = spark.read.parquet(str(corpus / "documents")).select("doc_id", normalise("text").alias("norm"))
    chars = docs.select("doc_id", F.split("norm", "").alias("chars")).where(F.size("chars") >= p.shingle)
    grams = NGram(n=p.shingle, inputCol="chars", outputCol="grams").transform(chars)
    feats = HashingTF(inputCol="grams", outputCol="features", numFeatures=MLLIB_FEATURES, binary=True).transform(grams)
    model = MinHashLSH(inputCol="features", outputCol="hashes", numHashTables=MLLIB_TABLES, seed=p.seed).fit(feats)
    hashed = model.transform(feats).select("doc_id", "features", "hashes").persist()
    # approxSimilarityJoin keeps distance < threshold; the epsilon makes it Jaccard >= t
    joined = model.approxSimilarityJoin(hashed, hashed, 1 - p.threshold + 1e-9, distCol="dist")
    (
        joined.select(F.col("datasetA.doc_id").alias("a"), F.col("datasetB.doc_id").alias("b"), "dist")
        .where(F.col("a") < F.col("b"))
        .write.mode("overwrite")
        .parquet(str(out))
    )
    hashed.unpersist()


def run_mllib(
    spark, p: mh.MinHashParams, corpus: Path, out: Path, limit_s: float
) -> tuple[float | None, set[Pair], dict]:
    """Seconds (None if cancelled after ``limit_s``) and the pairs."""
    sc = spark.sparkContext
    sc.setJobGroup("bench-mllib", "MLlib MinHashLSH baseline", interruptOnCancel=True)
    timer = threading.Timer(limit_s, sc.cancelJobGroup, ["bench-mllib"])
    timer.start()
    t0 = time.perf_counter()
    try:
        mllib_pairs(spark, corpus, out / "pairs", p)
        seconds = time.perf_counter() - t0
    except Exception as e:  # cancelled: py4j / Spark raise their own types
        if time.perf_counter() - t0 < limit_s:
            raise
        log.warning("MLlib baseline did not finish in %.0f s (%s)", limit_s, type(e).__name__)
        return None, set(), {"limit_s": limit_s}
    finally:
        timer.cancel()
        sc.setLocalProperty("spark.jobGroup.id", None)
    rows = pq.read_table(out / "pairs", columns=["a", "b"]).to_pylist()
    return seconds, {(r["a"], r["b"]) for r in rows}, {"hash_tables": MLLIB_TABLES, "features": MLLIB_FEATURES}


def run_datasketch(p: mh.MinHashParams, corpus: Path, out: Path) -> tuple[float, set[Pair], dict]:
    """Seconds, pairs from querying every document, and the LSH's bands x rows."""
    from datasketch import MinHash, MinHashLSH

    t0 = time.perf_counter()
    table = pq.read_table(corpus / "documents", columns=["doc_id", "text"])
    ids, texts = table.column("doc_id").to_pylist(), table.column("text").to_pylist()
    n = p.shingle

    def shingles(text: str) -> set[bytes]:
        norm = mh.normalise(text)
        return {norm[i : i + n].encode("utf-8") for i in range(max(1, len(norm) - n + 1))}

    lsh = MinHashLSH(threshold=p.threshold, num_perm=p.num_perm, params=(p.bands, p.rows))
    sketches = list(MinHash.generator((shingles(t) for t in texts), num_perm=p.num_perm, seed=p.seed))
    with lsh.insertion_session() as session:
        for doc_id, m in zip(ids, sketches):
            session.insert(doc_id, m)
    pairs = {
        tuple(sorted((doc_id, other))) for doc_id, m in zip(ids, sketches) for other in lsh.query(m) if other != doc_id
    }
    return time.perf_counter() - t0, pairs, {"bands": lsh.b, "rows": lsh.r}


def run_text_dedup(p: mh.MinHashParams, corpus: Path, out: Path) -> tuple[float | None, set[Pair], dict]:
    """text-dedup 0.4.1 in build/text-dedup-venv (None and a reason when that venv is missing)."""
    if not TEXT_DEDUP_PYTHON.exists():
        return None, set(), {"skipped": f"{TEXT_DEDUP_PYTHON} missing (make bench-dedup builds it with Python 3.12)"}
    cmd = [
        str(TEXT_DEDUP_PYTHON),
        "bench/peers/text_dedup_peer.py",
        str(corpus),
        str(out),
        "--shingle",
        str(p.shingle),
        "--num-perm",
        str(p.num_perm),
        "--bands",
        str(p.bands),
        "--rows",
        str(p.rows),
        "--seed",
        str(p.seed),
        "--threshold",
        str(p.threshold),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    pairs = {tuple(x) for x in json.loads(Path(res["pairs_file"]).read_text())}
    return res["seconds"], pairs, {"num_proc": 1, "check_false_positive": True}
