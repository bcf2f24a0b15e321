"""Which character n-gram size for MinHash-LSH on Chinese? False positives per shingle size.

    python -m bench.bench_shingle --documents out/demo/corpus/documents [--sizes 3 4 5 6 7]

For each n: LSH candidate pairs (documents sharing a band key, default threshold 0.8 → 16 x 8),
and how many of them are false positives, i.e. exact Jaccard of their n-gram sets below the
threshold. Small n makes unrelated Chinese texts share many common bigram/trigram phrases
(的一, 中国, 我们...), large n makes one changed character break n shingles.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import defaultdict

import pyarrow.parquet as pq

from filters import minhash as mh


def measure(texts: list[str], n: int, params: mh.MinHashParams) -> dict:
    p = mh.MinHashParams(n, params.num_perm, params.threshold, params.seed).resolved()
    sets = [mh.shingle_hashes(mh.normalise(t), n) for t in texts]
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, h in enumerate(sets):
        for band, key in enumerate(mh.band_keys(mh.signature(h, p.num_perm, p.seed), p.bands, p.rows).tolist()):
            buckets[(band, key)].append(i)
    pairs = {pair for members in buckets.values() if len(members) > 1
             for pair in itertools.combinations(sorted(members), 2)}
    jacc = [mh.jaccard(sets[a], sets[b]) for a, b in pairs]
    fp = sum(j < p.threshold for j in jacc)
    return {"shingle": n, "candidate_pairs": len(pairs), "false_positives": fp,
            "false_positive_rate": round(fp / len(pairs), 4) if pairs else 0.0,
            "mean_jaccard_of_candidates": round(sum(jacc) / len(jacc), 4) if jacc else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--documents", default="out/demo/corpus/documents")
    ap.add_argument("--sizes", type=int, nargs="+", default=[3, 4, 5, 6, 7])
    args = ap.parse_args(argv)
    texts = pq.read_table(args.documents, columns=["text"]).column("text").to_pylist()
    rows = [measure(texts, n, mh.MinHashParams()) for n in args.sizes]
    print(json.dumps({"documents": len(texts), "results": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
