"""Gopher's repetition statistics (Rae et al. 2021, App. A, Table A1), for a batch of documents at
once: every array here holds the items of many documents back to back, with a document index per
item, so numpy's per-call cost is paid once per batch, not once per document.

- Word n-grams: ``ngram_coverage`` gives, per document, the characters covered by the most
  frequent repeated 2-, 3- and 4-gram and by all repeated 5- to 10-grams. An (n+1)-gram can only
  occur twice where the n-grams at i and i+1 both do, so each n is sorted only over those
  candidates: after the 2-grams, the arrays shrink to the repeated part of the text.
- Lines and paragraphs: ``first_occurrence`` marks items whose key was seen earlier in the same
  document; ``block_keys`` turns runs of line keys into paragraph keys.

Keys are 64-bit hashes (Python's ``hash`` of each word or stripped line, mixed with the document
index); two different n-grams share a key with probability ~ m^2 / 2^64, which is ignored."""

from __future__ import annotations

import numpy as np

TOP_NS = (2, 3, 4)  # Gopher: fraction of characters in the most frequent 2-, 3-, 4-gram
DUP_NS = (5, 6, 7, 8, 9, 10)  # Gopher: fraction of characters in duplicated 5- to 10-grams
_P = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit multipliers (golden ratio, splitmix64)
_Q = np.uint64(0xBF58476D1CE4E5B9)


def doc_keys(hashes: np.ndarray, doc: np.ndarray) -> np.ndarray:
    """Item hashes (int64 or uint64) made unique to their document: equal keys = equal item in the
    same document."""
    return (hashes.view(np.uint64) ^ (doc.astype(np.uint64) * _Q)) * _P


def covered_chars(starts: np.ndarray, n: int, lengths: np.ndarray, doc: np.ndarray, n_docs: int) -> np.ndarray:
    """Per document, the characters of the words covered by the n-grams starting at ``starts``
    (word indices); a word covered twice counts once."""
    if not len(starts):
        return np.zeros(n_docs)
    m = len(lengths)
    depth = np.cumsum(np.bincount(starts, minlength=m + 1) - np.bincount(starts + n, minlength=m + 1))[:m]
    covered = depth > 0
    return np.bincount(doc[covered], weights=lengths[covered], minlength=n_docs)


def _groups(keys: np.ndarray):
    """(order, group index per sorted item, group sizes, group start in sorted order)."""
    order = np.argsort(keys)
    sk = keys[order]
    new = np.empty(len(sk), dtype=bool)
    new[:1] = True
    np.not_equal(sk[1:], sk[:-1], out=new[1:])
    gid = np.cumsum(new) - 1
    return order, gid, np.bincount(gid), np.flatnonzero(new)


def _top_starts(cand, order, gid, sizes, gstart, n, csum_len, doc) -> np.ndarray:
    """Occurrences of each document's most frequent repeated n-gram; ties go to the n-gram with
    more characters, then to the one that occurs first."""
    rep = np.flatnonzero(sizes > 1)
    if not len(rep):
        return np.zeros(0, dtype=np.int64)
    pos_sorted = cand[order]
    first = np.minimum.reduceat(pos_sorted, gstart)[rep]
    chars = csum_len[first + n] - csum_len[first]
    gdoc = doc[first]
    pick = np.lexsort((first, -chars, -sizes[rep], gdoc))
    keep = np.ones(len(pick), dtype=bool)
    keep[1:] = gdoc[pick][1:] != gdoc[pick][:-1]
    chosen = np.zeros(len(sizes), dtype=bool)
    chosen[rep[pick[keep]]] = True
    return pos_sorted[chosen[gid]]


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
    key = doc_keys(hashes, doc)  # key[i]: the (n-1)-gram starting at i, for the candidates of n
    cand = np.flatnonzero(doc[:-1] == doc[1:])  # 2-gram starts inside one document
    for n in range(2, max(DUP_NS) + 1):
        if not len(cand):
            break
        key[cand] = (key[cand] ^ hashes[cand + n - 1].view(np.uint64)) * _P
        order, gid, sizes, gstart = _groups(key[cand])
        repeated = cand[order[sizes[gid] > 1]]
        if n in TOP_NS:
            out[n] = covered_chars(_top_starts(cand, order, gid, sizes, gstart, n, csum_len, doc), n,
                                   lengths, doc, n_docs)
        else:
            out[n] = covered_chars(repeated, n, lengths, doc, n_docs)
        is_rep = np.zeros(m, dtype=bool)
        is_rep[repeated] = True
        cand = np.flatnonzero(is_rep[:-1] & is_rep[1:])  # the (n+1)-gram at i holds the n-grams at i, i+1
    return out


def first_occurrence(keys: np.ndarray) -> np.ndarray:
    """True where an item's key (``doc_keys``) occurred earlier in the array."""
    if not len(keys):
        return np.zeros(0, dtype=bool)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first[inverse] != np.arange(len(keys))


def block_keys(line_keys: np.ndarray, block_start: np.ndarray) -> np.ndarray:
    """One key per block of consecutive lines (``block_start``: True on the first line of each
    block): the lines' keys in order, as a polynomial in ``_P`` plus the block's length, so equal
    keys = the same lines in the same order."""
    starts = np.flatnonzero(block_start)
    block = np.cumsum(block_start) - 1
    rank = np.arange(len(line_keys)) - starts[block]
    powers = np.cumprod(np.full(int(rank.max()) + 1 if len(rank) else 1, _P))  # wraps mod 2^64
    summed = np.add.reduceat(line_keys * powers[rank], starts) if len(starts) else line_keys[:0]
    sizes = np.diff(np.append(starts, len(line_keys))).astype(np.uint64)
    return (summed ^ sizes) * _Q
