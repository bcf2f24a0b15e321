"""Fuzzy dedup: this Spark job against Spark MLlib MinHashLSH and datasketch, on one generated
corpus, in one run; and (``--shingle-sweep``) LSH false positives per shingle size.

    python -m bench.bench_dedup --mb 50 [--out out/bench-dedup] [--skip-mllib] [--shingle-sweep 3 4 5 6 7]
    python -m bench.bench_dedup --mb 50 --methods --shingle-sweep 3 4 5 6 7     # the sweep alone, no Spark
    python -m bench.bench_dedup --methods job --job-set verify=enforce --job-set minhash.bands=20 --job-set minhash.rows=6

The corpus (``demo.dedup_corpus``: Chinese documents with injected near-duplicate families) is
generated into OUT/corpus-<mb>mb-seed<seed> once and reused while its parameters match. Methods, same corpus:

- job: ``jobs.dedup.run`` at Spark ``local[2]`` (read Parquet, exact + MinHash-LSH dedup,
  connected components, write documents/ + duplicates/ + report). Pairs: (doc_id, duplicate_of).
- mllib: the baseline PanGu-α describes: character n-grams of the same normalised text (Spark ML
  ``NGram`` over the characters), ``HashingTF`` (binary, 2^24 features), ``MinHashLSH`` with 10
  hash tables, ``approxSimilarityJoin`` of the corpus with itself at Jaccard distance 1 - t
  (it computes exact distances of the candidates), pairs a < b written to Parquet. Same session.
- datasketch: one Python process (one core): read the Parquet, ``MinHash`` per document from the
  UTF-8 bytes of the same shingles (``MinHash.generator``, shared permutations), insert into
  ``MinHashLSH(threshold, num_perm)`` (the same bands x rows as the job), query each; pairs from the queries.

Measures, each against exact Jaccard of character n-gram sets (``filters.minhash``: the same
shingling the job uses). All-pairs Jaccard is quadratic, so ground truth is evaluated on a union:
every pair within an injected family plus every pair any method reported; the positives are
those with Jaccard >= t. With MLlib in the run the union is all but complete: its 10 one-hash
tables make any pair with Jaccard >= 0.8 a candidate with probability >= 1 - 0.2^10, and it keeps
every candidate within the distance. For each method:

- precision = reported pairs with Jaccard >= t / reported pairs;
- recall = positives the method connects / positives, where connects means both documents are
  in one component of the method's reported pairs (union-find on the driver). For the job that
  is "same final keeper", since its pairs all point at the keeper; for the pair methods it
  credits a pair found directly or through other reported pairs, so all three are measured alike;
- documents removed = documents on a reported pair - components (for the job: its duplicates),
  against the same count for the positives' graph.

Wall time excludes session start-up and includes reading and writing; the Spark methods run
after each other in one session, after one untimed warm-up run of the job (so both run on a
warm JVM with Python workers started, as a cluster's long-lived executors would). Medians over
--repeats. docs/s per core divides by the cores used (2 for local[2], 1 for datasketch). The
result records the 1-minute load average before each method and digests of the job's sources.
Output: OUT/result.json (the comparison), OUT/shingle_sweep.json. ``--job-set`` overrides the job's config as ``jobs.dedup --set`` does; minhash.* settings apply to
every method (shingle size, threshold, and datasketch's bands x rows).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import logging
import os
import statistics
import subprocess
import threading
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from demo.dedup_corpus import CorpusParams, Pair, corpus_dir, ensure_corpus, family_pairs
from filters import minhash as mh
from jobs.config import load_config
from jobs.dedup import DedupConfig, run

log = logging.getLogger("zhcorpus.bench")
CORES = 2  # Spark local[CORES]
MLLIB_TABLES = 10  # PanGu-α's baseline: MinHashLSH with 10 hash tables
MLLIB_FEATURES = 1 << 24  # HashingTF buckets: ~2,000 shingles a document rarely collide
METHODS = ("job", "mllib", "datasketch")


def load(corpus: Path) -> tuple[list[str], list[str], list[dict]]:
    """(doc_ids, texts, truth rows) in doc_id order."""
    docs = pq.read_table(corpus / "documents", columns=["doc_id", "text"]).sort_by("doc_id")
    truth = pq.read_table(corpus / "truth.parquet").sort_by("doc_id").to_pylist()
    if [t["doc_id"] for t in truth] != docs.column("doc_id").to_pylist():
        raise ValueError(f"{corpus}: truth.parquet and documents/ list different doc_ids")
    return docs.column("doc_id").to_pylist(), docs.column("text").to_pylist(), truth


def components(pairs: set[Pair]) -> dict[str, str]:
    """Union-find: node -> its component's root, for every node on a pair."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in parent}


def evaluate(pairs: set[Pair], jacc: dict[Pair, float], positives: set[Pair], t: float) -> dict:
    """Precision of the reported pairs, recall of the positives through the pairs' components,
    documents removed (nodes - components)."""
    comp = components(pairs)
    good = sum(jacc[p] >= t for p in pairs)
    found = sum(a in comp and comp.get(a) == comp.get(b) for a, b in positives)
    return {"pairs": len(pairs), "precision": round(good / len(pairs), 4) if pairs else None,
            "recall": round(found / len(positives), 4) if positives else None,
            "false_positive_pairs": len(pairs) - good, "missed_positive_pairs": len(positives) - found,
            "documents_removed": len(comp) - len(set(comp.values()))}


def run_job(spark, cfg, corpus: Path, out: Path) -> tuple[float, set[Pair], dict]:
    """Seconds, (doc_id, duplicate_of) pairs, and checks on the job's own output."""
    t0 = time.perf_counter()
    report = run(cfg, [str(corpus / "documents")], str(out), overwrite=True, spark=spark)
    seconds = time.perf_counter() - t0
    dups = pq.read_table(out / "duplicates").to_pylist()
    kept = set(pq.read_table(out / "documents", columns=["doc_id"]).column("doc_id").to_pylist())
    checks = {"duplicates": len(dups), "by_kind": report["duplicates_by_kind"], "balanced": report["balanced"],
              "duplicate_of_not_kept": sum(d["duplicate_of"] not in kept for d in dups),
              "config": report["config"], **({"verification": report["verification"]} if "verification" in report else {})}
    return seconds, {tuple(sorted((d["doc_id"], d["duplicate_of"]))) for d in dups}, checks


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
    (joined.select(F.col("datasetA.doc_id").alias("a"), F.col("datasetB.doc_id").alias("b"), "dist")
     .where(F.col("a") < F.col("b")).write.mode("overwrite").parquet(str(out)))
    hashed.unpersist()


def run_mllib(spark, corpus: Path, out: Path, p: mh.MinHashParams, limit_s: float) -> tuple[float | None, set[Pair]]:
    """Seconds (None if cancelled after ``limit_s``) and the pairs."""
    sc = spark.sparkContext
    sc.setJobGroup("bench-mllib", "MLlib MinHashLSH baseline", interruptOnCancel=True)
    timer = threading.Timer(limit_s, sc.cancelJobGroup, ["bench-mllib"])
    timer.start()
    t0 = time.perf_counter()
    try:
        mllib_pairs(spark, corpus, out, p)
        seconds = time.perf_counter() - t0
    except Exception as e:  # cancelled: py4j / Spark raise their own types
        if time.perf_counter() - t0 < limit_s:
            raise
        log.warning("MLlib baseline did not finish in %.0f s (%s)", limit_s, type(e).__name__)
        return None, set()
    finally:
        timer.cancel()
        sc.setLocalProperty("spark.jobGroup.id", None)
    rows = pq.read_table(out, columns=["a", "b"]).to_pylist()
    return seconds, {(r["a"], r["b"]) for r in rows}


def run_datasketch(corpus: Path, p: mh.MinHashParams) -> tuple[float, set[Pair], dict]:
    """Seconds, pairs from querying every document, and the LSH's bands x rows."""
    from datasketch import MinHash, MinHashLSH

    t0 = time.perf_counter()
    table = pq.read_table(corpus / "documents", columns=["doc_id", "text"])
    ids, texts = table.column("doc_id").to_pylist(), table.column("text").to_pylist()
    n = p.shingle

    def shingles(text: str) -> set[bytes]:
        norm = mh.normalise(text)
        return {norm[i:i + n].encode("utf-8") for i in range(max(1, len(norm) - n + 1))}

    lsh = MinHashLSH(threshold=p.threshold, num_perm=p.num_perm, params=(p.bands, p.rows))
    sketches = list(MinHash.generator((shingles(t) for t in texts), num_perm=p.num_perm, seed=p.seed))
    with lsh.insertion_session() as session:
        for doc_id, m in zip(ids, sketches):
            session.insert(doc_id, m)
    pairs = {tuple(sorted((doc_id, other))) for doc_id, m in zip(ids, sketches)
             for other in lsh.query(m) if other != doc_id}
    return time.perf_counter() - t0, pairs, {"bands": lsh.b, "rows": lsh.r}


def shingle_sets(texts: list[str], n: int) -> list[np.ndarray]:
    return [mh.shingle_hashes(mh.normalise(t), n) for t in texts]


def lsh_candidates(sets: list[np.ndarray], p: mh.MinHashParams) -> set[tuple[int, int]]:
    """Index pairs sharing at least one band key (the job's signatures and bands)."""
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, h in enumerate(sets):
        for band, key in enumerate(mh.band_keys(mh.signature(h, p.num_perm, p.seed), p.bands, p.rows).tolist()):
            buckets[(band, key)].append(i)
    return {pair for m in buckets.values() if len(m) > 1 for pair in itertools.combinations(m, 2)}


def shingle_sweep(texts: list[str], truth: list[dict], sizes: list[int], params: mh.MinHashParams,
                  background_pairs: int = 2000) -> list[dict]:
    """Per n: LSH candidate pairs, false positives (exact Jaccard at n < t) and their mean
    Jaccard, recall of the injected family pairs whose Jaccard at n is >= t (found directly as
    candidates), and the exact Jaccard of random pairs of unrelated base documents (mean, p99.9,
    max): the margin between unrelated texts and the threshold."""
    index = {t["doc_id"]: i for i, t in enumerate(truth)}
    fam_idx = {tuple(sorted((index[a], index[b]))) for a, b in family_pairs(truth)}
    rng = np.random.default_rng(params.seed)
    base = np.array([i for i, t in enumerate(truth) if t["role"] == "base"])
    background = [tuple(rng.choice(base, 2, replace=False)) for _ in range(background_pairs)]
    rows = []
    for n in sizes:
        p = replace(params, shingle=n).resolved()
        t0 = time.perf_counter()
        sets = shingle_sets(texts, n)
        cand = lsh_candidates(sets, p)
        j = {pair: mh.jaccard(sets[pair[0]], sets[pair[1]]) for pair in cand | fam_idx}
        fp = [j[c] for c in cand if j[c] < p.threshold]
        true_fam = {f for f in fam_idx if j[f] >= p.threshold}
        bg = np.array([mh.jaccard(sets[a], sets[b]) for a, b in background])
        rows.append({"shingle": n, "candidate_pairs": len(cand), "false_positives": len(fp),
                     "false_positive_rate": round(len(fp) / len(cand), 4) if cand else 0.0,
                     "mean_jaccard_of_false_positives": round(float(np.mean(fp)), 4) if fp else None,
                     "candidates_outside_families": len(cand - fam_idx),
                     "injected_pairs_at_or_above_t": len(true_fam),
                     "recall_injected": round(len(true_fam & cand) / len(true_fam), 4) if true_fam else None,
                     "background_jaccard_mean": round(float(bg.mean()), 5),
                     "background_jaccard_p999": round(float(np.quantile(bg, 0.999)), 4),
                     "background_jaccard_max": round(float(bg.max()), 4),
                     "seconds": round(time.perf_counter() - t0, 1)})
        log.info("shingle sweep: %s", rows[-1])
    return rows


def ground_truth(ids: list[str], texts: list[str], fam: set[Pair], reported: list[set[Pair]],
                 p: mh.MinHashParams) -> tuple[dict[Pair, float], set[Pair]]:
    """Exact Jaccard of every family pair and every reported pair; the positives (>= t)."""
    index = {d: i for i, d in enumerate(ids)}
    sets = shingle_sets(texts, p.shingle)
    union = fam.union(*reported)
    jacc = {(a, b): mh.jaccard(sets[index[a]], sets[index[b]]) for a, b in union}
    return jacc, {pair for pair, j in jacc.items() if j >= p.threshold}


def timed(fn, repeats: int) -> tuple[float | None, tuple, float]:
    """Median seconds of ``repeats`` calls of ``fn() -> (seconds, *rest)`` (None if any call did
    not finish), the last call's rest, and the 1-minute load average before the first call (the
    machines are shared: a load above the core count slows every method)."""
    load = os.getloadavg()[0]
    runs = [fn() for _ in range(repeats)]
    secs = [r[0] for r in runs if r[0] is not None]
    return (statistics.median(secs) if len(secs) == len(runs) else None), runs[-1][1:], load


def _cell(v) -> str:
    return "–" if v is None else f"{v:,}" if isinstance(v, int) else str(v)


def markdown(res: dict) -> str:
    """The README table: one row per method, then the ratios."""
    m, gt = res["methods"], res["ground_truth"]
    lines = ["| method | cores | seconds | docs/s | docs/s per core | pairs | precision | recall | docs removed |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in m.items():
        secs = f"{r['seconds']:.1f}" if r["seconds"] is not None else f"did not finish in {r['limit_s']:.0f}"
        cells = [r["label"], r["cores"], secs] + [_cell(r.get(k)) for k in (
            "docs_per_s", "docs_per_s_per_core", "pairs", "precision", "recall", "documents_removed")]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    lines.append(f"| ground truth (exact Jaccard ≥ {res['threshold']}) | | | | | {gt['positives']:,} | | | "
                 f"{gt['documents_removed']:,} |")
    lines += [f"\n{k}: **{v}**" for k, v in res["ratios"].items()]
    return "\n".join(lines)


def compare(spark, cfg, corpus: Path, out: Path, methods: list[str], repeats: int, mllib_limit_s: float) -> dict:
    """Run the chosen methods on the corpus and evaluate them against exact Jaccard. ``cfg``: the
    job's DedupConfig; its MinHash shingle size and threshold apply to every method."""
    p = cfg.minhash.resolved()
    ids, texts, truth = load(corpus)
    labels = {"job": f"this job, Spark local[{CORES}]", "mllib": f"Spark MLlib MinHashLSH ({MLLIB_TABLES} tables), "
              f"local[{CORES}]", "datasketch": "datasketch MinHashLSH, 1 process"}
    timings, pairs, extra, load_avg = {}, {}, {}, {}
    if "job" in methods or "mllib" in methods:  # untimed: JVM JIT and Python workers warm for both Spark methods
        run_job(spark, cfg, corpus, out / "warmup")
    if "job" in methods:
        timings["job"], (pairs["job"], extra["job"]), load_avg["job"] = timed(
            lambda: run_job(spark, cfg, corpus, out / "job"), repeats)
    if "mllib" in methods:
        timings["mllib"], (pairs["mllib"],), load_avg["mllib"] = timed(
            lambda: run_mllib(spark, corpus, out / "mllib_pairs", p, mllib_limit_s), repeats)
        extra["mllib"] = {"limit_s": mllib_limit_s, "hash_tables": MLLIB_TABLES, "features": MLLIB_FEATURES}
    if "datasketch" in methods:
        timings["datasketch"], (pairs["datasketch"], extra["datasketch"]), load_avg["datasketch"] = timed(
            lambda: run_datasketch(corpus, p), repeats)
    fam = family_pairs(truth)
    jacc, positives = ground_truth(ids, texts, fam, list(pairs.values()), p)
    gt_comp = components(positives)
    res = {"documents": len(ids), "threshold": p.threshold, "shingle": p.shingle, "bands": p.bands, "rows": p.rows,
           "repeats": repeats, "ground_truth": {
               "family_pairs": len(fam), "evaluated_pairs": len(jacc), "positives": len(positives),
               "positives_outside_families": len(positives - fam),
               "documents_removed": len(gt_comp) - len(set(gt_comp.values()))}, "methods": {}}
    for name in pairs:
        cores = 1 if name == "datasketch" else CORES
        finished = timings[name] is not None
        r = {"label": labels[name], "cores": cores, "seconds": timings[name], "limit_s": mllib_limit_s,
             **(evaluate(pairs[name], jacc, positives, p.threshold) if finished else dict.fromkeys(
                 ("pairs", "precision", "recall", "documents_removed"))), **extra[name],
             "load_avg_1m_before": round(load_avg[name], 2)}
        if timings[name] is not None:
            r["seconds"] = round(timings[name], 2)
            r["docs_per_s"] = round(len(ids) / timings[name], 1)
            r["docs_per_s_per_core"] = round(len(ids) / timings[name] / cores, 1)
        res["methods"][name] = r
    res["ratios"] = ratios(res["methods"])
    return res


def ratios(m: dict) -> dict:
    out = {}
    if "job" in m and "mllib" in m and m["mllib"]["seconds"] and m["job"]["seconds"]:
        out["MLlib seconds / job seconds"] = round(m["mllib"]["seconds"] / m["job"]["seconds"], 2)
    if "job" in m and "datasketch" in m and m["job"]["seconds"] and m["datasketch"]["seconds"]:
        out["job docs/s per core / datasketch docs/s per core"] = round(
            m["job"]["docs_per_s_per_core"] / m["datasketch"]["docs_per_s_per_core"], 2)
    return out


def provenance() -> dict:
    """Git HEAD and digests of the job's sources: the job is under active change."""
    root = Path(__file__).resolve().parent.parent
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    return {"git_head": head.stdout.strip() or None,
            **{f: hashlib.sha1((root / f).read_bytes()).hexdigest()[:12] for f in ("etl/dedup.py", "jobs/dedup.py")}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=50.0, help="corpus size in MiB of UTF-8 text (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=1, help="corpus seed")
    ap.add_argument("--out", default="out/bench-dedup", help="corpus cache and outputs (default: %(default)s)")
    ap.add_argument("--methods", nargs="*", default=list(METHODS),
                    help="any of job mllib datasketch; none = only the shingle sweep")
    ap.add_argument("--skip-mllib", action="store_true", help="same as leaving mllib out of --methods")
    ap.add_argument("--job-set", action="append", default=[], metavar="KEY=VALUE",
                    help="job config override, as jobs.dedup --set (e.g. verify=enforce); minhash.* apply to all methods")
    ap.add_argument("--repeats", type=int, default=1, help="timed runs per method, median (default: %(default)s)")
    ap.add_argument("--mllib-limit", type=float, default=1800, help="cancel MLlib after this many seconds")
    ap.add_argument("--shingle-sweep", type=int, nargs="*", default=[], metavar="N",
                    help="also report LSH false positives and recall per shingle size, e.g. 3 4 5 6 7")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    methods = [m for m in args.methods if not (args.skip_mllib and m == "mllib")]
    if set(methods) - set(METHODS):
        ap.error(f"--methods: unknown {sorted(set(methods) - set(METHODS))}; choose from {METHODS}")
    out = Path(args.out)
    corpus = corpus_dir(out, args.mb, args.seed)
    manifest = ensure_corpus(corpus, CorpusParams(mb=args.mb, seed=args.seed))
    log.info("corpus %s: %d documents, %.1f MB", corpus, manifest["documents"], manifest["text_bytes"] / 1e6)
    cfg = replace(load_config(DedupConfig, None, args.job_set), master=f"local[{CORES}]")
    p = cfg.minhash.resolved()
    corpus_info = {k: manifest[k] for k in ("documents", "text_bytes", "roles", "families", "background_jaccard",
                                            "copy_to_original_jaccard")}
    if methods:  # OUT/result.json: the comparison
        from etl.spark import get_spark

        spark = get_spark("bench-dedup", f"local[{CORES}]")
        res = {"code": provenance(), "corpus": corpus_info,
               **compare(spark, cfg, corpus, out, methods, args.repeats, args.mllib_limit)}
        spark.stop()
        (out / "result.json").write_text(json.dumps(res, ensure_ascii=False, indent=2))
        print(json.dumps(res, ensure_ascii=False, indent=2))
        print(markdown(res))
    if args.shingle_sweep:  # OUT/shingle_sweep.json
        _, texts, truth = load(corpus)
        rows = shingle_sweep(texts, truth, args.shingle_sweep, p)
        sweep = {"corpus": corpus_info, "threshold": p.threshold, "bands": p.bands, "rows": p.rows, "sizes": rows}
        (out / "shingle_sweep.json").write_text(json.dumps(sweep, ensure_ascii=False, indent=2))
        print(json.dumps(rows, indent=2))
        print(sweep_markdown(rows))
    return 0


def sweep_markdown(rows: list[dict]) -> str:
    lines = ["| n | candidate pairs | false positives (J < t) | FP rate | mean J of FPs | candidates outside "
             "families | injected pairs ≥ t | recall of them | unrelated pairs: mean J / p99.9 / max |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['shingle']} | {r['candidate_pairs']:,} | {r['false_positives']:,} | {r['false_positive_rate']} | "
              f"{r['mean_jaccard_of_false_positives']} | {r['candidates_outside_families']:,} | "
              f"{r['injected_pairs_at_or_above_t']:,} | {r['recall_injected']} | {r['background_jaccard_mean']} / "
              f"{r['background_jaccard_p999']} / {r['background_jaccard_max']} |" for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
