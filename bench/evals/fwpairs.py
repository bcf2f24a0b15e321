"""Function-word pairs as a signal of grammar (issue 32, tried and not kept: docs/quality.md).

Shuffled words of real text put function words side by side in ways prose never does (关于的的,
的了). This scores each page by its adjacent function-word pairs that the reference never has, per
100 function words (rjieba's HMM-off cut; the function words of ``FUNCTION_WORDS`` of up to two
characters, each seen more than 50 times; pairs counted on 80 % of the reference), on the other
20 % of the reference and on the LOFO crawl (``make bench-lofo`` writes it), and prints the
spread per family and genre.

    python -m bench.evals.fwpairs [--reference data/reference/reference.jsonl] [--crawl out/bench/lofo/crawl.jsonl]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import time

import numpy as np

from bench import harness
from filters.quality.words import FUNCTION_WORDS
from filters.text.segment import get_segmenter


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reference", default="data/reference/reference.jsonl")
    p.add_argument("--crawl", default="out/bench/lofo/crawl.jsonl", help="the LOFO crawl (make bench-lofo)")
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()
    seg = get_segmenter(None, hmm=False)
    fw = {w for w in FUNCTION_WORDS if len(w) <= 2}

    def words(text: str) -> list[str]:
        return [w for w in seg.cut(text) if w.strip()]

    with open(args.reference, encoding="utf-8") as f:
        ref = [json.loads(line)["text"] for line in f]
    random.Random(0).shuffle(ref)
    cut = int(len(ref) * 0.8)
    pairs: collections.Counter = collections.Counter()
    seen: collections.Counter = collections.Counter()
    for text in ref[:cut]:
        w = words(text)
        pairs.update((a, b) for a, b in zip(w, w[1:]) if a in fw and b in fw)
        seen.update(a for a in w if a in fw)
    common = {w for w, n in seen.items() if n > 50}

    def score(text: str) -> float:
        w = words(text)
        unseen = sum(1 for a, b in zip(w, w[1:]) if a in common and b in common and not pairs[(a, b)])
        return 100 * unseen / max(1, sum(1 for a in w if a in fw))

    rows: dict[str, list[float]] = collections.defaultdict(list)
    rows["good reference (held out)"] = [score(t) for t in ref[cut:]]
    with open(args.crawl, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            rows[f"{r.get('label', '?')} {r.get('family') or r.get('set')}"].append(score(r["text"]))
    print("| pages | n | median | 95th percentile | share over 2 |\n|---|---|---|---|---|")
    result = {}
    for name in sorted(rows):
        v = np.array(rows[name])
        result[name] = {"n": len(v), "median": np.median(v), "p95": np.percentile(v, 95), "over_2": np.mean(v > 2)}
        print(f"| {name} | {len(v)} | {np.median(v):.2f} | {np.percentile(v, 95):.2f} | {np.mean(v > 2):.2f} |")
    result = {name: {k: round(float(x), 4) for k, x in r.items()} for name, r in result.items()}
    harness.write_result(args.result, "bench.evals.fwpairs", args, result, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
