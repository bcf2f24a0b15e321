"""The fluency model: tables + vocabulary + metadata, loaded once per worker, scoring batches.

A model directory holds ``model.npz`` (plain arrays, loaded with ``allow_pickle=False``) and
``metadata.json`` (sha256 of model.npz, normalise version, discounts, counts...); ``FluencyModel``
refuses a mismatch of either. ``train_local`` is the whole training in one process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from base.artifact import META_FILE, ModelError, read_metadata, require_sha256, sha256_file
from filters.quality.fluency.arpa import write_arpa
from filters.quality.fluency.counts import batch_counts, char_counts, check_radix, choose_vocab, merge_counts
from filters.quality.fluency.kneser_ney import estimate
from filters.quality.fluency.normalise import NORMALISE_VERSION
from filters.quality.fluency.tables import NO_PROB, NgramTables
from filters.quality.fluency.tokens import BOS, SPECIALS, encode, slices, vocab_table

MODEL_FILE, PERCENTILES_FILE = "model.npz", "reference_percentiles.json"
# Scoring reads a document's opening MAX_CHARS characters (ours, issue 23's example; CCNet scores
# whole documents, but a long tail adds time, not signal; filters/classifiers/classify.py reads 3,000).
MAX_CHARS = 5000
FORMAT = "zhcorpus-fluency-ngram/1"  # model.npz's layout; load refuses any other


class FluencyModel:
    """A character n-gram model: ``perplexity_batch`` is the per-document signal. Load with
    ``FluencyModel.load(dir)``; build with ``from_counts`` (Spark training) or ``train_local``."""

    def __init__(self, tables: NgramTables, vocab: np.ndarray, meta: dict[str, Any]):
        self.tables, self.vocab, self.meta = tables, vocab.astype(np.uint32), meta
        self.max_chars: int | None = meta.get("max_chars")
        self._id_of: np.ndarray | None = None

    @property
    def id_of(self) -> np.ndarray:
        """Code point -> token id (a 4.4 MB table, built on first use)."""
        if self._id_of is None:
            self._id_of = vocab_table(self.vocab)
        return self._id_of

    @classmethod
    def from_counts(
        cls,
        raw: dict[int, tuple[np.ndarray, np.ndarray]],
        vocab: np.ndarray,
        order: int,
        min_count: int = 1,
        max_chars: int | None = MAX_CHARS,
        **meta: Any,
    ) -> FluencyModel:
        """Estimate from raw counts (``merge_counts`` of ``batch_counts`` over the reference)."""
        radix = len(vocab) + len(SPECIALS)
        tables, stats = estimate(raw, order, radix, min_count)
        return cls(
            tables,
            vocab,
            {
                "format": FORMAT,
                "tokens": "characters",
                "order": order,
                "vocab_size": len(vocab),
                "radix": radix,
                "min_count": min_count,
                "max_chars": max_chars,
                "normalise_version": NORMALISE_VERSION,
                **stats,
                **meta,
            },
        )

    @classmethod
    def load(cls, model_dir: str | Path, expected_sha256: str | None = None) -> FluencyModel:
        """Refuses (``ModelError``) a directory without both files, a model.npz whose sha256 is not
        the one metadata.json (or ``expected_sha256``) records, and another normalise version."""
        model_dir = Path(model_dir)
        npz = model_dir / MODEL_FILE
        meta = read_metadata(model_dir, MODEL_FILE, "fluency model")
        require_sha256(npz, meta.get("sha256"), expected_sha256)
        if meta.get("format") != FORMAT:
            raise ModelError(f"{model_dir} holds format {meta.get('format')!r}, this code reads {FORMAT!r}")
        if meta.get("normalise_version") != NORMALISE_VERSION:
            raise ModelError(
                f"{model_dir} was trained on text normalised by v{meta.get('normalise_version')}, "
                f"this code is v{NORMALISE_VERSION}: retrain it (python -m jobs.train_fluency)"
            )
        with np.load(npz, allow_pickle=False) as z:
            order, radix = int(meta["order"]), int(meta["radix"])
            keys = [np.arange(radix, dtype=np.uint64)] + [z[f"keys_{n}"] for n in range(2, order + 1)]
            tables = NgramTables(
                radix,
                keys,
                [z[f"log_prob_{n}"] for n in range(1, order + 1)],
                [z[f"backoff_{n}"] for n in range(1, order)] + [np.zeros(len(keys[-1]), np.float32)],
            )
            vocab = z["vocab"]
        if len(vocab) + len(SPECIALS) != radix or any(
            len(k) != len(p) or len(k) != len(b) for k, p, b in zip(tables.keys, tables.log_prob, tables.backoff)
        ):
            raise ModelError(f"{npz}: array sizes do not match each other or metadata.json")
        return cls(tables, vocab, meta)

    def save(self, model_dir: str | Path) -> dict[str, Any]:
        """Write model.npz then metadata.json (with model.npz's sha256) into the existing
        ``model_dir`` (a staging directory: publishing is the caller's); returns the metadata."""
        t, model_dir = self.tables, Path(model_dir)
        arrays = {
            "vocab": self.vocab,
            **{f"keys_{n}": t.keys[n - 1] for n in range(2, t.order + 1)},
            **{f"log_prob_{n}": t.log_prob[n - 1] for n in range(1, t.order + 1)},
            **{f"backoff_{n}": t.backoff[n - 1] for n in range(1, t.order)},
        }
        np.savez(model_dir / MODEL_FILE, **arrays)
        self.meta = {**self.meta, "sha256": sha256_file(model_dir / MODEL_FILE)}
        (model_dir / META_FILE).write_text(json.dumps(self.meta, indent=2, ensure_ascii=False), encoding="utf-8")
        return self.meta

    def token_id(self, char: str) -> int:
        return int(self.id_of[ord(char)])

    def ngram_log10(self, ids: Sequence[int]) -> float:
        """log10 p(ids[-1] | ids[:-1]) for token ids (the last ``order`` are used)."""
        ids = list(ids)[-self.tables.order :]
        key = sum(int(w) * self.tables.radix ** (len(ids) - 1 - j) for j, w in enumerate(ids))
        return float(self.tables.query(np.array([key], np.uint64), len(ids))[0])

    def distribution(self, context: Sequence[int]) -> np.ndarray:
        """log10 p(w | context) for every token id w (the last ``order - 1`` of ``context`` are
        used; <s> gets NO_PROB): over the other ids it sums to 1."""
        context, radix = list(context)[-(self.tables.order - 1) :] if self.tables.order > 1 else [], self.tables.radix
        head = sum(int(w) * radix ** (len(context) - j) for j, w in enumerate(context))
        out = self.tables.query(np.uint64(head) + np.arange(radix, dtype=np.uint64), len(context) + 1)
        out[BOS] = NO_PROB
        return out

    def score_batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(sum of log10 p, number of predicted tokens) per text: its sentences' characters and
        their </s>, as KenLM scores a sentence; a text is read up to ``max_chars`` characters."""
        sums, counts = np.zeros(len(texts)), np.zeros(len(texts), np.int64)
        for start, stop in slices(texts):
            tokens = encode(texts[start:stop], self.id_of, self.max_chars)
            logp, scored = self.tables.score(tokens), tokens.scored
            sums[start:stop] = np.bincount(tokens.doc, logp, stop - start)
            counts[start:stop] = np.bincount(tokens.doc[scored], minlength=stop - start)
        return sums, counts

    def perplexity_batch(self, texts: Sequence[str]) -> np.ndarray:
        """10 ** (-sum log10 p / tokens) per text (CCNet's document perplexity); NaN for a text
        with no sentence after normalisation."""
        sums, counts = self.score_batch(texts)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(counts > 0, 10.0 ** (-sums / np.maximum(counts, 1)), np.nan)

    def log_prob(self, text: str) -> tuple[float, int]:
        sums, counts = self.score_batch([text])
        return float(sums[0]), int(counts[0])

    def export_arpa(self, path: str | Path) -> None:
        """The model as an ARPA file (KenLM's ``lmplz`` output format; ``filters.quality.fluency.arpa``)."""
        write_arpa(self.tables, self.vocab, path)


def train_local(
    texts: Sequence[str],
    order: int = 5,
    max_vocab: int = 7000,
    min_count: int = 1,
    max_chars: int | None = MAX_CHARS,
    **meta: Any,
) -> FluencyModel:
    """The whole training in one process (tests, small references); ``etl.quality.fluency_train`` is the
    Spark form of the same steps."""
    vocab = choose_vocab(*char_counts(texts), max_vocab)
    radix = len(vocab) + len(SPECIALS)
    check_radix(radix, order)
    raw = merge_counts(batch_counts(texts, vocab_table(vocab), order, radix))
    return FluencyModel.from_counts(raw, vocab, order, min_count, max_chars, **meta)
