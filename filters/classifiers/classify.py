"""fastText document classifiers: the PanGu-α spam filter and a GPT-3 App. A quality scorer.

Both are fastText supervised models over jieba words (``filters.text.segment``) plus hashed word
bigrams, that is a linear (softmax = logistic for two labels) classifier over hashed n-gram
features: the model family GPT-3 used (Spark ML HashingTF + LogisticRegression), in one library for
both models, loaded once per worker, scoring thousands of documents a second per core.
``preprocess`` is the one text transform used at training and at scoring time; its version is stored
with every model.

A model directory holds ``model.bin`` and ``metadata.json`` (kind, sha256 of model.bin,
preprocessing version and segmenter (``preprocess_metadata``), labels, counts, chosen threshold,
held-out metrics). ``TextClassifier`` refuses a model whose bytes do not match the recorded (or an
expected) sha256, one of another preprocessing version, and one whose words came from another
segmentation engine unless that engine passes the parity check (``filters.text.segment.require_parity``).
"""

from __future__ import annotations

import hashlib
import logging
import math
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from base import artifact
from base.artifact import META_FILE, ModelError, require_sha256, sha256_file  # noqa: F401 (re-exported)
from filters.text.chars import nfkc_lower_batch
from filters.text.markdown import prose
from filters.text.segment import SegmentationMismatch, Segmenter, get_segmenter, require_parity

PREPROCESS_VERSION = "4"  # bump when preprocess() changes: models trained before must be retrained
# v2 (issue 32): the models read a page's prose (``filters.text.markdown.prose``): code blocks, code spans,
# link targets, HTML tags and Markdown markers are not words of the page (a README's `pip install`,
# identifiers and URLs read as spam's Latin contact ids: the v1 spam model removed 37 of 86
# Chinese technical pages, one reading the text without its code alone 43, one reading the prose 7;
# docs/classifiers.md)
# v4 (issue 32): the models read words and sentence punctuation (``is_word``); a token of layout marks
# alone (a list's dash, a link's brackets, arrows, box drawing, pictographs) is not read: layout is
# the structural signals' business (separator and short lines, symbol ratio), and a classifier
# that learns it learns the seed's page furniture (70 % of the seed's spam pages hold a pictograph,
# 2 % of its ham). On make bench-lofo's full run the v3 spam model removed 8 of 86 technical READMEs
# and 14 of 120 lists of sayings for their " - " and "[...]", the v4 one 2 and 0, with every
# evaluation family's spam removal unchanged; docs/classifiers.md.
# Score the opening of a document; long tails add time, not signal (ours; bench/bench_segment.py
# measured 1,000 and 500 characters: other decisions on 0.1-0.2 % of the demo crawl's documents).
MAX_CHARS = 3000
# jieba's HMM (new-word guessing) on: with it off the quality model dropped 6 of 1,638 clean demo
# pages instead of 0 and its held-out log loss rose 0.010 -> 0.012 (bench/bench_segment.py).
PREPROCESS_HMM = True
MODEL_FILE = "model.bin"


# Punctuation of sentences, as NFKC and lower case leave it (full-width ， ！ ？ ： ； ( ) are ASCII
# by then); every other token without a letter or a digit is layout.
SENTENCE_PUNCT = frozenset(",.!?;:'\"()%。、“”‘’《》「」『』—·")


def is_word(token: str) -> bool:
    """Whether the classifiers read ``token`` (a jieba word without whitespace): it holds a letter or a
    digit (Han included: ``str.isalnum``), or it is sentence punctuation alone."""
    return any(c.isalnum() for c in token) or all(c in SENTENCE_PUNCT for c in token)


def _words_line(words: Sequence[str]) -> str:
    # words hold no whitespace (whitespace characters are words of their own), so dropping the
    # space words is a split on whitespace runs
    return " ".join(w for w in " ".join(words).split() if is_word(w))


def preprocess(text: str, max_chars: int = MAX_CHARS, segmenter: Segmenter | None = None) -> str:
    """The prose (``filters.text.markdown.prose``), NFKC + lower case, first ``max_chars`` characters,
    whitespace (newlines included) folded, jieba words (HMM on; ``segmenter``: default engine) that
    are words (``is_word``) joined by single spaces: one line, as fastText reads it."""
    head = prose(text)[:max_chars]
    if not unicodedata.is_normalized("NFKC", head):  # the quick check: most text is NFKC already
        head = unicodedata.normalize("NFKC", head)
    folded = " ".join(head.lower().split())
    return _words_line((segmenter or get_segmenter(None, PREPROCESS_HMM)).cut(folded))


def preprocess_batch(texts: Sequence[str], max_chars: int = MAX_CHARS, segmenter: Segmenter | None = None) -> list[str]:
    """``[preprocess(t, max_chars, segmenter) for t in texts]``, the normalisation done for the
    batch at once (``filters.text.chars.nfkc_lower_batch``, ~4x faster than text by text)."""
    cut = (segmenter or get_segmenter(None, PREPROCESS_HMM)).cut
    heads = nfkc_lower_batch([prose(t)[:max_chars] for t in texts])
    return [_words_line(cut(" ".join(h.split()))) for h in heads]


def preprocess_metadata(engine: str | None = None) -> dict[str, Any]:
    """What a classifier's metadata.json records about its preprocessing (merge it in at training):
    ``preprocess_version``, ``max_chars`` and ``segmenter`` (engine, version, hmm)."""
    return {
        "preprocess_version": PREPROCESS_VERSION,
        "max_chars": MAX_CHARS,
        "segmenter": get_segmenter(engine, PREPROCESS_HMM).info(),
    }


@dataclass(frozen=True)
class TrainParams:
    # fastText supervised settings (ours, tuned on the demo seed data's validation split).
    epoch: int = 10
    lr: float = 0.2
    word_ngrams: int = 2  # unigrams + hashed bigrams
    dim: int = 32
    bucket: int = 200_000  # hashing space for the bigrams
    min_count: int = 1
    seed: int = 0  # fastText is deterministic with thread=1
    threads: int = 1


class TextClassifier:
    """A loaded binary classifier; ``positive_prob`` is P(positive label) per text. ``engine``: the
    segmentation engine to preprocess with (None = the default); a model whose metadata records
    another engine (or none: models before the record were jieba's) is loaded only when that
    engine passes the parity check on the built-in sample."""

    def __init__(self, model_dir: str | Path, expected_sha256: str | None = None, engine: str | None = None):
        model_dir = Path(model_dir)
        self.meta = read_metadata(model_dir)
        require_sha256(model_dir / MODEL_FILE, self.meta["sha256"], expected_sha256)
        if self.meta["preprocess_version"] != PREPROCESS_VERSION:
            raise ModelError(
                f"{model_dir} was trained with preprocessing v{self.meta['preprocess_version']}, "
                f"this code is v{PREPROCESS_VERSION}: retrain it"
            )
        self.segmenter = _checked_segmenter(self.meta.get("segmenter"), engine, f"classifier {model_dir}")
        import fasttext

        fasttext.FastText.eprint = lambda *a, **k: None  # silence its deprecation notice
        self.model = fasttext.load_model(str(model_dir / MODEL_FILE))
        self.positive = self.meta["positive_label"]
        self.threshold = float(self.meta["threshold"])

    def positive_prob(self, texts: Sequence[str], preprocessed: bool = False) -> np.ndarray:
        """``preprocessed=True``: ``texts`` already went through ``preprocess`` (segmentation is
        the expensive part; two models scoring the same documents share it)."""
        if not texts:
            return np.zeros(0)
        lines = list(texts) if preprocessed else preprocess_batch(texts, segmenter=self.segmenter)
        return positive_probs(self.model, lines, self.positive)


def _checked_segmenter(recorded: dict[str, Any] | None, engine: str | None, what: str) -> Segmenter:
    if recorded and bool(recorded.get("hmm")) != PREPROCESS_HMM:
        raise ModelError(
            f"{what} records segmentation with hmm={recorded.get('hmm')}; preprocessing "
            f"v{PREPROCESS_VERSION} segments with hmm={PREPROCESS_HMM}: retrain it"
        )
    segmenter = get_segmenter(engine, PREPROCESS_HMM)
    try:
        require_parity(recorded, segmenter, what)
    except SegmentationMismatch as e:
        raise ModelError(str(e)) from e
    return segmenter


def positive_probs(model, lines: Sequence[str], positive: str) -> np.ndarray:
    """P(positive label) for preprocessed lines from a two-label fastText model."""
    labels, probs = model.predict(list(lines), k=2)
    tag = "__label__" + positive
    out = np.array([float(dict(zip(ls, ps)).get(tag, 0.0)) for ls, ps in zip(labels, probs)])
    return np.clip(out, 0.0, 1.0)  # fastText's softmax can round to 1.00001


def read_metadata(model_dir: Path) -> dict[str, Any]:
    return artifact.read_metadata(model_dir, MODEL_FILE)


def _train_child(train_file: str, params: TrainParams, lr: float, out: str) -> str | None:
    """In a fresh process: train, save to ``out``; the error text on fastText's NaN."""
    import fasttext

    fasttext.FastText.eprint = lambda *a, **k: None
    try:
        model = fasttext.train_supervised(
            input=train_file,
            epoch=params.epoch,
            lr=lr,
            wordNgrams=params.word_ngrams,
            dim=params.dim,
            bucket=params.bucket,
            minCount=params.min_count,
            seed=params.seed,
            thread=params.threads,
            loss="softmax",
            verbose=0,
        )
    except RuntimeError as e:
        if "NaN" not in str(e):
            raise
        return str(e)
    model.save_model(out)
    return None


def train_fasttext(train_file: Path, params: TrainParams, max_backoffs: int = 4):
    """Train in a fresh child process and load the result. Returns (model, lr used).

    fasttext-numpy2 0.10.4 raises "Encountered NaN" on identical input and seed when it trains
    again in a process that has trained before (seen: 13 of 16 repeats in one process, 0 of 16 in
    fresh ones, whose models were byte-identical), so every training gets its own process. Should
    a fresh process still hit NaN, the learning rate is halved and training restarts."""
    import multiprocessing
    import tempfile

    import fasttext

    fasttext.FastText.eprint = lambda *a, **k: None
    lr = params.lr
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "model.bin")
        for attempt in range(max_backoffs + 1):
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                error = pool.apply(_train_child, (str(train_file), params, lr, out))
            if error is None:
                return fasttext.load_model(out), lr
            if attempt == max_backoffs:
                raise RuntimeError(error)
            logging.getLogger("zhcorpus").warning("fastText diverged at lr=%g; retrying at lr=%g", lr, lr / 2)
            lr /= 2


def choose_threshold(probs: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """The decision threshold on P(positive) that maximises F1 on held-out data, with its P/R/F1."""
    best = {"threshold": 0.5, "precision": 0.0, "recall": 0.0, "f1": -1.0}
    for t in np.unique(np.concatenate([probs, [0.5]])):
        m = binary_metrics(probs >= t, truth)
        if m["f1"] > best["f1"]:
            best = {"threshold": float(t), **m}
    return best


def binary_metrics(pred: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    tp = int(np.sum(pred & truth))
    fp = int(np.sum(pred & ~truth))
    fn = int(np.sum(~pred & truth))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


def fasttext_line(label: str, text: str) -> str:
    """A fastText training line for a preprocessed text."""
    return f"__label__{label} {text}\n"


# --- GPT-3 App. A keep rule -------------------------------------------------------------


def pareto_draw(doc_id: str, alpha: float, seed: int = 0) -> float:
    """A Pareto(α) draw (numpy's Lomax form, ``np.random.pareto``) fixed by the doc_id, so a
    re-run keeps exactly the same documents: X = (1 - U)^(-1/α) - 1, U from blake2b(doc_id)."""
    digest = hashlib.blake2b(f"{seed}\0{doc_id}".encode(), digest_size=8).digest()
    u = (int.from_bytes(digest, "big") >> 11) / float(1 << 53)  # uniform in [0, 1)
    return (1.0 - u) ** (-1.0 / alpha) - 1.0


def pareto_keep(doc_id: str, score: float, alpha: float, seed: int = 0) -> bool:
    """GPT-3 App. A: keep iff np.random.pareto(α) > 1 - score, i.e. P(keep) = (2 - score)^-α."""
    return pareto_draw(doc_id, alpha, seed) > 1.0 - score


def pareto_keep_probability(score: float, alpha: float) -> float:
    return math.pow(2.0 - score, -alpha)
