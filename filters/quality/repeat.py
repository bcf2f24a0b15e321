"""Gopher's repetition statistics (Rae et al. 2021, App. A, Table A1), for a batch of documents at
once: every array here holds the items of many documents back to back, with a document index per
item, so numpy's per-call cost is paid once per batch, not once per document.

- Word n-grams: ``ngram_coverage`` gives, per document, the characters covered by the most
  frequent repeated 2-, 3- and 4-gram and by all repeated 5- to 10-grams. An (n+1)-gram can only
  occur twice where the n-grams at i and i+1 both do, so each n is sorted only over those
  candidates: after the 2-grams, the arrays shrink to the repeated part of the text.
- Lines and paragraphs: ``first_occurrence`` marks items whose key was seen earlier in the same
  document; ``block_keys`` turns runs of line keys into paragraph keys.

Keys are 64-bit hashes: a polynomial hash of each word's or stripped line's code points
(``substring_keys``, computed for all of a chunk's words at once from prefix sums), mixed with the
document index. Collisions between different items are ignored: the base is a fixed odd constant,
so a collision could be built on purpose, but two natural words or lines share a key about as
rarely as two random 64-bit numbers (~m^2 / 2^65 for m items of a chunk: ~1e-8 at m = 500,000)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from filters.text import rolling

TOP_NS = (2, 3, 4)  # Gopher: fraction of characters in the most frequent 2-, 3-, 4-gram
DUP_NS = (5, 6, 7, 8, 9, 10)  # Gopher: fraction of characters in duplicated 5- to 10-grams
_P = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multipliers (golden ratio, splitmix64)
_Q = np.uint64(0xBF58476D1CE4E5B9)
_B = np.uint64(0xD6E8FEB86659FD93)  # the base of the substring polynomial hash (odd: invertible mod 2^64)


class Prefix(NamedTuple):
    """Prefix hashes of a text's code points, for ``substring_keys``."""

    h: np.ndarray  # h[k] = sum(codes[j] * _B**j for j < k) mod 2**64
    inv: np.ndarray  # inv[k] = _B**-k mod 2**64


def prefix_hashes(codes: np.ndarray) -> Prefix:
    """Polynomial prefix hashes of ``codes`` (uint32 code points), mod 2^64."""
    n = len(codes)
    powers, inv = rolling.powers(int(_B), n + 1)
    h = np.zeros(n + 1, dtype=np.uint64)
    np.cumsum(codes.astype(np.uint64) * powers[:n], out=h[1:])
    return Prefix(h, inv)


def substring_keys(prefix: Prefix, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A 64-bit key per substring [start, end): equal substrings get equal keys wherever they
    are."""
    poly = (prefix.h[ends] - prefix.h[starts]) * prefix.inv[starts]
    return (poly ^ (ends - starts).astype(np.uint64)) * _P


def text_keys(words: Sequence[str]) -> np.ndarray:
    """``substring_keys`` of each of ``words`` on its own (to look words up among a text's)."""
    codes = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    ends = np.cumsum(lengths)
    return substring_keys(prefix_hashes(codes), ends - lengths, ends)


def doc_keys(hashes: np.ndarray, doc: np.ndarray) -> np.ndarray:
    """Item hashes (int64 or uint64) made unique to their document: equal keys = equal item in the
    same document."""
    return (hashes.view(np.uint64) ^ (doc.astype(np.uint64) * _Q)) * _P


def covered_chars(starts: np.ndarray, n: int, csum_len: np.ndarray, doc: np.ndarray, n_docs: int) -> np.ndarray:
    """Per document, the characters of the words covered by the n-grams starting at word indices
    ``starts`` (``csum_len``: cumulative word lengths, from 0); a word covered twice counts once.
    Works on the intervals, not on every word: they are few after the first rounds."""
    if not len(starts):
        return np.zeros(n_docs)
    s = np.sort(starts)
    e = s + n
    reach = np.maximum.accumulate(e)  # the furthest word any earlier interval covers
    from_ = s.copy()
    from_[1:] = np.maximum(s[1:], reach[:-1])
    fresh = np.maximum(csum_len[e] - csum_len[np.minimum(from_, e)], 0)
    return np.bincount(doc[s], weights=fresh, minlength=n_docs)


def _repeats(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices of the items whose key occurs more than once, those keys), grouped: equal keys
    are adjacent."""
    order = np.argsort(keys)
    sk = keys[order]
    same = sk[1:] == sk[:-1]
    repeated = np.zeros(len(sk), dtype=bool)
    repeated[1:] = same
    repeated[:-1] |= same
    return order[repeated], sk[repeated]


def _top_starts(starts: np.ndarray, keys: np.ndarray, n: int, csum_len: np.ndarray, doc: np.ndarray) -> np.ndarray:
    """Occurrences of each document's most frequent n-gram among repeated ones (``starts``,
    grouped by their ``keys`` as ``_repeats`` gives them); ties go to the n-gram with more
    characters, then to the one that occurs first."""
    if not len(starts):
        return starts
    new = np.ones(len(keys), dtype=bool)
    new[1:] = keys[1:] != keys[:-1]
    gstart = np.flatnonzero(new)
    gid = np.cumsum(new) - 1
    sizes = np.diff(np.append(gstart, len(keys)))
    first = np.minimum.reduceat(starts, gstart)
    chars = csum_len[first + n] - csum_len[first]
    gdoc = doc[first]
    pick = np.lexsort((first, -chars, -sizes, gdoc))
    best = np.ones(len(pick), dtype=bool)
    best[1:] = gdoc[pick][1:] != gdoc[pick][:-1]
    chosen = np.zeros(len(sizes), dtype=bool)
    chosen[pick[best]] = True
    return starts[chosen[gid]]


def ngram_coverage(hashes: np.ndarray, lengths: np.ndarray, doc: np.ndarray, n_docs: int) -> dict[int, np.ndarray]:
    """For the words of a batch (``hashes``: any 64-bit hash per word, ``lengths``: characters
    per word, ``doc``: ascending document index per word), the characters per document covered by
    {n: the most frequent n-gram occurring at least twice} for n in ``TOP_NS`` (0 where no n-gram
    repeats) and {n: every n-gram occurring at least twice} for n in ``DUP_NS``; overlapping
    occurrences count their characters once. n-grams never cross documents."""
    out = {n: np.zeros(n_docs) for n in TOP_NS + DUP_NS}
    m = len(hashes)
    if m < 2:
        return out
    csum_len = np.concatenate(([0], np.cumsum(lengths)))
    hashes = hashes.view(np.uint64)
    key = doc_keys(hashes, doc)  # key[i]: the (n-1)-gram starting at i, for the candidates of n
    key[:-1] = (key[:-1] ^ hashes[1:]) * _P  # every 2-gram (those crossing documents are not candidates)
    cand = np.flatnonzero(doc[:-1] == doc[1:])  # 2-gram starts inside one document
    for n in range(2, max(DUP_NS) + 1):
        if n > 2:
            key[cand] = (key[cand] ^ hashes[cand + n - 1]) * _P
        idx, keys = _repeats(key[cand])
        repeated = cand[idx]
        if n in TOP_NS:
            out[n] = covered_chars(_top_starts(repeated, keys, n, csum_len, doc), n, csum_len, doc, n_docs)
        else:
            out[n] = covered_chars(repeated, n, csum_len, doc, n_docs)
        is_rep = np.zeros(m, dtype=bool)
        is_rep[repeated] = True
        cand = np.flatnonzero(is_rep[:-1] & is_rep[1:])  # the (n+1)-gram at i holds the n-grams at i, i+1
        if not len(cand):
            break
    return out


def first_occurrence(keys: np.ndarray) -> np.ndarray:
    """True where an item's key (``doc_keys``) occurred earlier in the array."""
    if not len(keys):
        return np.zeros(0, dtype=bool)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first[inverse] != np.arange(len(keys))


def block_keys(line_keys: np.ndarray, block_start: np.ndarray) -> np.ndarray:
    """One key per block of consecutive lines (``block_start``: True on the first line of each
    block): the lines' keys in order, as a polynomial in ``_P``, so equal keys = the same lines in
    the same order."""
    starts = np.flatnonzero(block_start)
    block = np.cumsum(block_start) - 1
    rank = np.arange(len(line_keys)) - starts[block]
    powers = np.cumprod(np.full(int(rank.max()) + 1 if len(rank) else 1, _P))  # wraps mod 2^64
    return np.add.reduceat(line_keys * powers[rank], starts) if len(starts) else line_keys[:0]
