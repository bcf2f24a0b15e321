"""Word order as a signal of language (issue 32, tried and not kept: docs/quality.md).

Word order carries information in any language a model has learned: shuffle the words of a
sentence and a character n-gram model's perplexity rises several-fold, whatever the genre's
vocabulary (classical fiction and dictionary entries score high perplexity, in order or not). Text
whose words are already in no order (a word salad, a keyword list) barely changes. The score of a
page: ln(perplexity of its words shuffled) - ln(perplexity as written), over its prose lines of at
least --min-line characters (each line's rjieba HMM-off words shuffled within the line, seeded by
the page's id), None under --min-chars of such lines. Printed per family and genre of the LOFO
crawl (``make bench-lofo`` writes it) and for the reference; then, per threshold, the pages a rule
"score < threshold" would newly remove among those the LOFO full run kept, and among the
``seed/fragment_soup`` pages the run without that family kept.

    python -m bench.evals.word_order [--crawl out/bench/lofo/crawl.jsonl] [--lofo out/bench/lofo/clean]
        [--profile out/demo/models/fluency] [--reference data/reference/reference.jsonl]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import random
import time
from pathlib import Path

import numpy as np

from bench import harness
from filters.text.markdown import prose
from filters.text.segment import get_segmenter

THRESHOLDS = (0.1, 0.15, 0.2, 0.25, 0.3)
REFERENCE_DOCS = 3000
SOUP = "seed/fragment_soup"  # the LOFO bench's worst family: shuffled words with spam words planted


def _kept(run_dir: Path) -> set[str]:
    import pyarrow.parquet as pq

    return set(pq.read_table(run_dir / "documents", columns=["doc_id"]).column("doc_id").to_pylist())


def main(argv: list[str] | None = None) -> int:
    from filters.quality.fluency.model import FluencyModel

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--crawl", default="out/bench/lofo/crawl.jsonl", help="the LOFO crawl (make bench-lofo)")
    p.add_argument("--lofo", type=Path, default=Path("out/bench/lofo/clean"), help="the LOFO runs' outputs")
    p.add_argument("--profile", default="out/demo/models/fluency", help="the fluency model (make demo)")
    p.add_argument("--reference", default="data/reference/reference.jsonl")
    p.add_argument("--min-line", type=int, default=20, help="prose lines of at least this many characters")
    p.add_argument("--order", choices=("shuffled", "reversed"), default="shuffled", help="each line's words")
    p.add_argument("--min-chars", type=int, default=100, help="no score under this many characters of them")
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()
    model = FluencyModel.load(args.profile)
    seg = get_segmenter("rjieba", hmm=False)

    def lines(text: str) -> str:
        return "\n".join(line for line in prose(text).split("\n") if len(line.strip()) >= args.min_line)

    def shuffled(text: str, key: str) -> str:
        rng = random.Random(hashlib.sha256(key.encode()).hexdigest())
        out = []
        for line in text.split("\n"):
            words = seg.cut(line)
            if args.order == "reversed":
                words.reverse()
            else:
                rng.shuffle(words)
            out.append("".join(words))
        return "\n".join(out)

    def scores(texts: list[str], keys: list[str]) -> np.ndarray:
        read = [lines(t) for t in texts]
        written = model.perplexity_batch(read)
        mixed = model.perplexity_batch([shuffled(t, k) for t, k in zip(read, keys)])
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.log(mixed) - np.log(written)
        return np.where(np.array([len(t) for t in read]) >= args.min_chars, s, np.nan)

    with open(args.crawl, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    score = scores([r["text"] for r in records], [r["id"] for r in records])
    with open(args.reference, encoding="utf-8") as f:
        ref = [json.loads(line)["text"] for _, line in zip(range(REFERENCE_DOCS), f)]
    ref_score = scores(ref, [str(i) for i in range(len(ref))])
    groups: dict[str, list[float]] = collections.defaultdict(list)
    for r, s in zip(records, score):
        groups[f"{r['label']} {r['family']}"].append(s)
    groups["good reference"] = list(ref_score)
    result: dict = {"groups": {}, "thresholds": {}}
    print("| pages | scored | median | 5th percentile | under 0.1 | under 0.2 |\n|---|---|---|---|---|---|")
    for name in sorted(groups):
        v = np.array(groups[name], dtype=float)
        v = v[np.isfinite(v)]
        if not len(v):
            continue
        row = {"n": len(v), "median": np.median(v), "p5": np.percentile(v, 5)}
        row |= {"under_0.1": np.mean(v < 0.1), "under_0.2": np.mean(v < 0.2)}
        result["groups"][name] = {k: round(float(x), 4) for k, x in row.items()}
        shares = f"{row['under_0.1']:.2f} | {row['under_0.2']:.2f}"
        print(f"| {name} | {len(v)} | {row['median']:.2f} | {row['p5']:.2f} | {shares} |")
    full = _kept(args.lofo / "full")
    soup = {r["id"] for r in records if r["family"] == SOUP} & _kept(args.lofo / "without-fragment_soup")
    print("\n| threshold | kept good pages it would remove | kept spam pages | soup the LOFO run kept |")
    print("|---|---|---|---|")
    for t in THRESHOLDS:
        hit = [r for r, s in zip(records, score) if s < t]
        good = collections.Counter(r["family"] for r in hit if r["label"] == "good" and r["id"] in full)
        spam = collections.Counter(r["family"] for r in hit if r["label"] == "spam" and r["id"] in full)
        lofo = sum(1 for r in hit if r["id"] in soup)
        result["thresholds"][str(t)] = {"good": dict(good), "spam": dict(spam), "soup_lofo": lofo}
        print(f"| {t} | {dict(good) or '-'} | {dict(spam) or '-'} | {lofo} of {len(soup)} |")
    harness.write_result(args.result, "bench.evals.word_order", args, result, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
