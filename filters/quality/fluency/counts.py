"""Counting a reference: its characters (to choose the vocabulary) and its n-grams.

An n-gram is a base-``radix`` number of its token ids, oldest most significant (radix = vocabulary
+ 3 specials), so its context is ``key // radix`` and its suffix ``key % radix**(n-1)``;
``radix**order`` must fit in 64 bits (``check_radix``). ``batch_counts`` is what each Spark task
pre-aggregates (``etl.quality.fluency_train``), ``merge_counts`` sums the parts.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from filters.quality.fluency.normalise import NEWLINE, normalised_codes
from filters.quality.fluency.tokens import Tokens, encode, slices


def char_counts(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(code points, counts) of the normalised characters of ``texts``; NEWLINE counts sentences."""
    codes, _ = normalised_codes(texts)
    return np.unique(codes, return_counts=True)


def choose_vocab(codes: np.ndarray, counts: np.ndarray, max_vocab: int) -> np.ndarray:
    """The ``max_vocab`` most frequent characters (ties: lower code point first), most frequent first."""
    chars = codes != NEWLINE
    codes, counts = np.asarray(codes, np.int64)[chars], np.asarray(counts, np.int64)[chars]
    order = np.lexsort((codes, -counts))[:max_vocab]
    return codes[order].astype(np.uint32)


def check_radix(radix: int, order: int) -> None:
    if radix**order > 2**64:
        raise ValueError(
            f"{order}-grams over {radix} token ids do not fit 64-bit keys: lower max_vocab to at "
            f"most {int(2 ** (64 / order)) - 3} or the order"
        )


def ngram_keys(tokens: Tokens, order: int, radix: int) -> Iterator[tuple[int, np.ndarray]]:
    """(n, key of every n-gram occurrence) for n = 1..order: the n-grams that end at a scored
    token and start at or after its sentence's <s>."""
    ids = tokens.ids.astype(np.uint64)
    key, scored = ids.copy(), tokens.scored
    for n in range(1, order + 1):
        if n > 1:  # key_n(t) = key_{n-1}(t) + ids[t-n+1] * radix**(n-1)
            key[n - 1 :] += ids[: len(ids) - n + 1] * np.uint64(radix ** (n - 1))
        yield n, key[scored & (tokens.depth >= n - 1)]


def batch_counts(
    texts: Sequence[str], id_of: np.ndarray, order: int, radix: int
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(n, unique keys, counts) per order and slice of ``texts``: what each Spark task pre-aggregates."""
    for start, stop in slices(texts):
        for n, keys in ngram_keys(encode(texts[start:stop], id_of), order, radix):
            yield (n, *np.unique(keys, return_counts=True))


def merge_counts(parts: Iterator[tuple[int, np.ndarray, np.ndarray]]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Sum (n, keys, counts) parts into sorted unique keys and counts per order."""
    by_order: dict[int, list] = {}
    for n, keys, counts in parts:
        by_order.setdefault(n, []).append((keys, counts))
    out = {}
    for n, items in by_order.items():
        keys, inverse = np.unique(np.concatenate([k for k, _ in items]), return_inverse=True)
        out[n] = (
            keys,
            np.bincount(inverse, np.concatenate([c for _, c in items]).astype(np.float64), len(keys)).astype(np.int64),
        )
    return out
