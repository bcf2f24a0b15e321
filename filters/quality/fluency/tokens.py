"""Normalised text -> one token stream per batch: ``<s> c1 .. cn </s>`` per sentence.

Characters outside the vocabulary (the ``max_vocab`` most frequent of the reference) are <unk>;
``vocab_table`` maps every code point to its token id, and ``slices`` cuts a batch into runs of
about ``SLICE_CHARS`` characters so the temporaries stay bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Sequence

import numpy as np

from filters.quality.fluency.normalise import NEWLINE, normalised_codes

UNK, BOS, EOS = 0, 1, 2  # token ids; characters are 3 .. radix-1 in the vocabulary's order
SPECIALS = ("<unk>", "<s>", "</s>")
# Characters normalised and scored at a time: bounds the temporaries (~100 bytes a character).
SLICE_CHARS = 1 << 20


@dataclass(frozen=True)
class Tokens:
    """A batch as one token stream: ``ids`` (``<s>`` c1 .. cn ``</s>`` per sentence), the text each
    token belongs to, and its ``depth``: how many tokens of its sentence precede it (<s> counted)."""

    ids: np.ndarray  # int32
    doc: np.ndarray  # int32

    @cached_property
    def depth(self) -> np.ndarray:
        """int32; counting reads it, scoring does not (built on first use)."""
        at = np.arange(len(self.ids), dtype=np.int32)
        return at - np.maximum.accumulate(np.where(self.ids == BOS, at, 0))

    @property
    def scored(self) -> np.ndarray:
        """Tokens that are predicted: everything but <s> (KenLM counts </s>)."""
        return self.ids != BOS


def encode(texts: Sequence[str], id_of: np.ndarray, max_chars: int | None = None) -> Tokens:
    """Tokens of a batch; ``id_of`` maps a code point to its token id (``vocab_table``)."""
    codes, doc = normalised_codes(texts, max_chars)
    if not len(codes):
        empty = np.zeros(0, np.int32)
        return Tokens(empty, empty)
    nl = codes == NEWLINE
    start = np.concatenate(([True], nl[:-1]))  # first character of a sentence (none is empty)
    pos = np.arange(len(codes)) + np.cumsum(start)  # room for one <s> before each sentence
    ids = np.empty(len(codes) + int(start.sum()), np.int32)
    ids[pos] = np.where(nl, EOS, id_of[codes])
    ids[pos[start] - 1] = BOS
    docs = np.empty_like(ids)
    docs[pos] = doc
    docs[pos[start] - 1] = doc[start]
    return Tokens(ids, docs)


def vocab_table(vocab: np.ndarray) -> np.ndarray:
    """Code point -> token id: ``vocab[i]`` is id ``i + 3``, every other code point <unk>."""
    table = np.full(0x110000, UNK, np.int32)
    table[vocab.astype(np.int64)] = np.arange(3, len(vocab) + 3, dtype=np.int32)
    return table


def slices(texts: Sequence[str], budget: int = SLICE_CHARS) -> Iterator[tuple[int, int]]:
    """(start, stop) of consecutive runs of ``texts`` of about ``budget`` characters (a longer text alone)."""
    start, size = 0, 0
    for i, t in enumerate(texts):
        size += len(t)
        if size >= budget:
            yield start, i + 1
            start, size = i + 1, 0
    if start < len(texts):
        yield start, len(texts)
