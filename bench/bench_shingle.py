"""Which character n-gram size for MinHash-LSH on Chinese? False positives per shingle size.

    python -m bench.bench_shingle --documents out/demo/corpus/documents [--sizes 3 4 5 6 7]

``shingle_sweep`` does the same on the dedup benchmark corpus with its injected families
(``python -m bench.bench_dedup --shingle-sweep 3 4 5 6 7``).

For each n: LSH candidate pairs (documents sharing a band key, default threshold 0.8 → 16 x 8),
and how many of them are false positives, i.e. exact Jaccard of their n-gram sets below the
threshold. Small n makes unrelated Chinese texts share many common bigram/trigram phrases
(的一, 中国, 我们...), large n makes one changed character break n shingles.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import time
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pyarrow.parquet as pq

from bench import harness
from bench.corpora.dedup_corpus import family_pairs
from filters.dedup import minhash as mh

log = logging.getLogger("zhcorpus.bench")


def measure(texts: list[str], n: int, params: mh.MinHashParams) -> dict:
    p = mh.MinHashParams(n, params.num_perm, params.threshold, params.seed).resolved()
    sets = [mh.shingle_hashes(mh.normalise(t), n) for t in texts]
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, h in enumerate(sets):
        for band, key in enumerate(mh.band_keys(mh.signature(h, p.num_perm, p.seed), p.bands, p.rows).tolist()):
            buckets[(band, key)].append(i)
    pairs = {
        pair for members in buckets.values() if len(members) > 1 for pair in itertools.combinations(sorted(members), 2)
    }
    jacc = [mh.jaccard(sets[a], sets[b]) for a, b in pairs]
    fp = sum(j < p.threshold for j in jacc)
    return {
        "shingle": n,
        "candidate_pairs": len(pairs),
        "false_positives": fp,
        "false_positive_rate": round(fp / len(pairs), 4) if pairs else 0.0,
        "mean_jaccard_of_candidates": round(sum(jacc) / len(jacc), 4) if jacc else None,
    }


def shingle_sets(texts: list[str], n: int) -> list[np.ndarray]:
    return [mh.shingle_hashes(mh.normalise(t), n) for t in texts]


def lsh_candidates(sets: list[np.ndarray], p: mh.MinHashParams) -> set[tuple[int, int]]:
    """Index pairs sharing at least one band key (the job's signatures and bands)."""
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, h in enumerate(sets):
        for band, key in enumerate(mh.band_keys(mh.signature(h, p.num_perm, p.seed), p.bands, p.rows).tolist()):
            buckets[(band, key)].append(i)
    return {pair for m in buckets.values() if len(m) > 1 for pair in itertools.combinations(m, 2)}


def shingle_sweep(
    texts: list[str], truth: list[dict], sizes: list[int], params: mh.MinHashParams, background_pairs: int = 2000
) -> list[dict]:
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
        rows.append(
            {
                "shingle": n,
                "candidate_pairs": len(cand),
                "false_positives": len(fp),
                "false_positive_rate": round(len(fp) / len(cand), 4) if cand else 0.0,
                "mean_jaccard_of_false_positives": round(float(np.mean(fp)), 4) if fp else None,
                "candidates_outside_families": len(cand - fam_idx),
                "injected_pairs_at_or_above_t": len(true_fam),
                "recall_injected": round(len(true_fam & cand) / len(true_fam), 4) if true_fam else None,
                "background_jaccard_mean": round(float(bg.mean()), 5),
                "background_jaccard_p999": round(float(np.quantile(bg, 0.999)), 4),
                "background_jaccard_max": round(float(bg.max()), 4),
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
        log.info("shingle sweep: %s", rows[-1])
    return rows


def sweep_markdown(rows: list[dict]) -> str:
    lines = [
        "| n | candidate pairs | false positives (J < t) | FP rate | mean J of FPs | candidates outside "
        "families | injected pairs ≥ t | recall of them | unrelated pairs: mean J / p99.9 / max |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['shingle']} | {r['candidate_pairs']:,} | {r['false_positives']:,} | {r['false_positive_rate']} | "
        f"{r['mean_jaccard_of_false_positives']} | {r['candidates_outside_families']:,} | "
        f"{r['injected_pairs_at_or_above_t']:,} | {r['recall_injected']} | {r['background_jaccard_mean']} / "
        f"{r['background_jaccard_p999']} / {r['background_jaccard_max']} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--documents", default="out/demo/corpus/documents")
    ap.add_argument("--sizes", type=int, nargs="+", default=[3, 4, 5, 6, 7])
    harness.add_result_arg(ap)
    args = ap.parse_args(argv)
    started = time.time()
    texts = pq.read_table(args.documents, columns=["text"]).column("text").to_pylist()
    rows = [measure(texts, n, mh.MinHashParams()) for n in args.sizes]
    result = {"documents": len(texts), "results": rows}
    print(json.dumps(result, indent=2))
    harness.write_result(args.result, "bench.bench_shingle", args, result, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
