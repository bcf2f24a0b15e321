"""MinHash signatures and LSH band keys for Chinese documents, vectorised with numpy.

Shingles are character n-grams of the normalised text (NFKC, lower case, whitespace and
punctuation removed): Chinese has no word boundaries, and character n-grams need no segmenter.
Each n-gram is hashed to 64 bits by a polynomial over its code points plus a splitmix64
finaliser. Signatures use one-permutation hashing with optimal densification (Li, Owen & Zhang,
NeurIPS 2012; Shrivastava, ICML 2017): one more 64-bit mix per shingle picks a bin (of
``num_perm``) and a 32-bit value, each bin keeps its minimum, and an empty bin copies the bin
that its own fixed random probe sequence reaches first. Two documents agree on a bin with
probability equal to their Jaccard similarity, as with ``num_perm`` independent permutations, at
O(shingles) instead of O(shingles x num_perm) work. Shingles are processed in blocks, so memory is
O(CHUNK) beyond the document's own hash array. Bands x rows come from datasketch's
optimal-parameter search for the Jaccard threshold.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterator

import numpy as np

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_POLY = np.uint64(0x100000001B3)  # FNV-1a 64-bit prime as the polynomial base
_NOT_CONTENT = re.compile(r"[\s\W_]+", re.UNICODE)  # whitespace and punctuation
CHUNK = 1 << 16  # shingles per block of the running minimum (bounds the temporaries)
_EMPTY = np.uint32(0xFFFFFFFF)
# U+FF01..U+FF5E -> their NFKC images, ASCII U+0021..U+007E (no combining marks are left to
# compose with them: ``normalise`` removes those first, so the result is NFKC's)
_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}
_FULLWIDTH_RUN = re.compile("[\uff01-\uff5e]+")


def _halfwidth(m: re.Match) -> str:
    return m.group().translate(_FULLWIDTH)


_PROBES = 64  # probe sequence length for densification; past it an empty bin takes the next filled one


@dataclass(frozen=True)
class MinHashParams:
    """Everything that defines signatures and band keys; an index records it and refuses others."""

    shingle: int = 5  # character n-gram size (docs/dedup.md, "Shingle size": false positives for n = 3..7)
    num_perm: int = 128
    threshold: float = 0.8  # Jaccard similarity at which documents count as near-duplicates
    seed: int = 1
    # datasketch's optimal-parameter search weighs the false-positive and false-negative areas
    # under the banding S-curve; its 0.5 / 0.5 (9 x 13 at 0.8) finds a pair at exactly the
    # threshold 40 % of the time. Weighing misses at 0.95 (16 x 8: 95 %) and verifying the
    # candidates' exact Jaccard (etl.dedup verify="enforce") gets recall and precision both.
    false_negative_weight: float = 0.95
    bands: int = 0  # 0 = from datasketch's optimal-parameter search for the threshold
    rows: int = 0

    def resolved(self) -> "MinHashParams":
        if self.bands and self.rows:
            if self.bands * self.rows > self.num_perm:
                raise ValueError(f"bands x rows = {self.bands * self.rows} exceeds num_perm {self.num_perm}")
            return self
        from datasketch.lsh import _optimal_param

        w = self.false_negative_weight
        if not 0 < w < 1:
            raise ValueError(f"false_negative_weight must be in (0, 1), not {w}")
        b, r = _optimal_param(self.threshold, self.num_perm, 1 - w, w)
        return replace(self, bands=b, rows=r)


def normalise(text: str) -> str:
    """What two texts must share to be exact duplicates: NFKC (full/half width), lower case,
    no whitespace or punctuation. Punctuation goes first: the rest, mostly Han characters, is
    usually NFKC already, and the quick check skips the (10x slower) normalisation. Combining
    marks count as punctuation and are removed, not composed. Full-width forms are mapped by
    table first (``tests/test_minhash.py`` checks the result against plain NFKC)."""
    s = _NOT_CONTENT.sub("", text)
    # full-width digits and letters (common in Chinese news) are NFKC's most frequent change:
    # map them first, so the quick check passes
    s = _FULLWIDTH_RUN.sub(_halfwidth, s)
    if not unicodedata.is_normalized("NFKC", s):
        s = _NOT_CONTENT.sub("", unicodedata.normalize("NFKC", s))
    return s.lower()


_DROPPED = np.uint32(0xFFFFFFFF)  # in ``_normal_table``: not a content character


@lru_cache(maxsize=1)
def _normal_table() -> np.ndarray:
    """Per code point, what ``normalise`` makes of it: ``_DROPPED`` (not a content character),
    its image when that is one character whatever its neighbours (the full-width map, then lower
    case, of a character NFKC leaves alone in any context: ``filters.text.chars.FOLD`` unset), else 0
    (the text needs ``normalise``). Built once per process."""
    from filters.text.chars import FOLD, char_table

    fold = char_table() & FOLD
    table = np.full(len(fold), _DROPPED, dtype=np.uint32)
    every = "".join(map(chr, range(len(fold))))
    for m in re.finditer(r"[^\W_]", every):  # one character each (\s is within \W)
        cp = m.start()
        h = _FULLWIDTH.get(cp, cp)
        low = chr(h).lower()
        # capital sigma lower-cases by context (final form); the rest of str.lower is per character
        table[cp] = ord(low) if not fold[h] and h != 0x3A3 and len(low) == 1 else 0
    return table


BATCH_CHARS = 1 << 21  # characters per numpy batch (normalisation ~17, signatures ~40 bytes a character)


def by_chars(texts: list[str], limit: int | None = None) -> Iterator[list[str]]:
    """Consecutive slices of ``texts`` of at most ``limit`` (default ``BATCH_CHARS``) characters
    (or one text)."""
    limit = limit or BATCH_CHARS
    start, size = 0, 0
    for i, t in enumerate(texts):
        if size and size + len(t) > limit:
            yield texts[start:i]
            start, size = i, 0
        size += len(t)
    if start < len(texts):
        yield texts[start:]


def normalise_batch(texts: list[str]) -> list[str]:
    """``[normalise(t) for t in texts]`` in a few numpy calls per ``BATCH_CHARS`` characters:
    every character mapped by table (``_normal_table``); a text holding a character whose image
    depends on its neighbours goes through ``normalise`` (``tests/test_minhash.py`` checks every
    code point)."""
    return [norm for part in by_chars(texts) for norm in _normalise_slice(part)]


def _normalise_slice(texts: list[str]) -> list[str]:
    if not texts:
        return []
    cps = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    bounds = np.zeros(len(texts) + 1, dtype=np.int64)  # where each text starts, then the end
    np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=bounds[1:])
    image = _normal_table()[cps]
    dropped = image == _DROPPED
    bounds -= np.searchsorted(np.flatnonzero(dropped), bounds)  # now in kept characters
    kept = image[~dropped]
    joined, edges = kept.tobytes().decode("utf-32-le"), bounds.tolist()
    norms = [joined[a:b] for a, b in zip(edges, edges[1:])]
    for i in set(np.searchsorted(bounds, np.flatnonzero(kept == 0), side="right").tolist()):
        norms[i - 1] = normalise(texts[i - 1])
    return norms


def exact_key(text: str, normalised: bool = False) -> str:
    norm = text if normalised else normalise(text)
    return hashlib.blake2b(norm.encode("utf-8"), digest_size=16).hexdigest()


def _splitmix64(x: np.ndarray) -> np.ndarray:
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def shingle_hashes(norm: str, n: int) -> np.ndarray:
    """Distinct 64-bit hashes of the character n-grams of an already normalised text; a text
    shorter than n is one shingle."""
    cps = np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if len(cps) == 0:
        return np.zeros(0, dtype=np.uint64)
    if len(cps) < n:
        n = len(cps)
    with np.errstate(over="ignore"):
        h = np.zeros(len(cps) - n + 1, dtype=np.uint64)
        for k in range(n):
            h = h * _POLY + cps[k : len(cps) - n + 1 + k]
        return _sorted_distinct(_splitmix64(h))


@lru_cache(maxsize=8)
def _probes(num_perm: int, seed: int) -> np.ndarray:
    """(num_perm, _PROBES) random bins: the order in which an empty bin looks for a filled one."""
    return np.random.Generator(np.random.PCG64(seed)).integers(0, num_perm, size=(num_perm, _PROBES))


def _seed_mix(seed: int) -> np.uint64:
    return np.uint64((seed * 0x9E3779B97F4A7C15 + 0xD1B54A32D192ED03) & 0xFFFFFFFFFFFFFFFF)


def signature(hashes: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    """MinHash signature (num_perm uint32 values) by one-permutation hashing with optimal
    densification; all-ones for an empty shingle set. Repeated hashes do not change it."""
    sig = np.full(num_perm, _EMPTY, dtype=np.uint32)
    if len(hashes) == 0:
        return sig
    filled = np.zeros(num_perm, dtype=bool)
    mix = _seed_mix(seed)
    with np.errstate(over="ignore"):
        for start in range(0, len(hashes), CHUNK):
            h = _splitmix64(hashes[start : start + CHUNK] ^ mix)
            bins = (h % np.uint64(num_perm)).astype(np.intp)
            np.minimum.at(sig, bins, (h >> np.uint64(32)).astype(np.uint32))
            filled[bins] = True
    if not filled.all():
        empty = np.flatnonzero(~filled)
        probes = _probes(num_perm, seed)[empty]  # (n_empty, _PROBES)
        hit = filled[probes]
        src = probes[np.arange(len(empty)), hit.argmax(axis=1)]
        lost = ~hit.any(axis=1)  # no filled bin among the probes (a few shingles): the next filled bin
        if lost.any():
            nxt = np.flatnonzero(filled)
            src[lost] = nxt[np.searchsorted(nxt, empty[lost]) % len(nxt)]
        sig[empty] = sig[src]
    return sig


def band_keys(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """One signed 64-bit key per band (as Spark's LongType wants), from that band's rows."""
    with np.errstate(over="ignore"):
        block = sig[: bands * rows].astype(np.uint64).reshape(bands, rows)
        key = np.zeros(bands, dtype=np.uint64)
        for j in range(rows):
            key = _splitmix64(key * _POLY + block[:, j])
        key = _splitmix64(key + np.arange(bands, dtype=np.uint64))  # the band index is part of the key
    return key.view(np.int64)


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    return float(np.mean(sig_a == sig_b))


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two shingle-hash sets, each sorted and distinct (as ``shingle_hashes``
    and ``shingle_sets`` give them): the smaller one looked up in the larger by binary search."""
    if len(a) == 0 and len(b) == 0:
        return 1.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    inter = 0
    if len(small):
        at = np.searchsorted(large, small)
        at[at == len(large)] = len(large) - 1
        inter = int(np.count_nonzero(large[at] == small))
    return inter / (len(a) + len(b) - inter)


def _mix_in_place(x: np.ndarray) -> np.ndarray:
    """``_splitmix64(x)`` written over ``x`` (an array the caller owns), with one temporary."""
    tmp = np.empty_like(x)
    with np.errstate(over="ignore"):
        x += np.uint64(0x9E3779B97F4A7C15)
        for shift, mult in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
            x ^= np.right_shift(x, np.uint64(shift), out=tmp)
            x *= np.uint64(mult)
        x ^= np.right_shift(x, np.uint64(31), out=tmp)
    return x


def _batch_shingles(norms: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
    """(doc index, shingle hash) of every character n-gram of every text, duplicates kept: the
    polynomial runs over the texts' code points concatenated, and windows that cross a text's
    end are dropped. A text shorter than n is one shingle, as in ``shingle_hashes``."""
    lengths = np.fromiter(map(len, norms), dtype=np.int64, count=len(norms))
    cps = np.frombuffer("".join(norms).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    doc_parts, hash_parts = [], []
    windows = len(cps) - n + 1
    if windows > 0:
        h = cps[:windows].copy()
        with np.errstate(over="ignore"):
            for k in range(1, n):
                h *= _POLY
                h += cps[k : windows + k]
        valid = np.ones(windows, dtype=bool)
        ends = np.cumsum(lengths)
        crossing = (ends[:, None] - np.arange(1, n)).ravel()  # the n - 1 windows before each end
        valid[crossing[(crossing >= 0) & (crossing < windows)]] = False
        doc_parts.append(np.repeat(np.arange(len(norms)), lengths)[:windows][valid])
        hash_parts.append(_mix_in_place(h[valid]))
    short = np.flatnonzero((lengths > 0) & (lengths < n))
    for i in short:  # rare: a normalised text of fewer than n characters
        doc_parts.append(np.array([i]))
        hash_parts.append(shingle_hashes(norms[i], n))
    if not doc_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    return np.concatenate(doc_parts), np.concatenate(hash_parts)


def _sorted_distinct(x: np.ndarray) -> np.ndarray:
    """``np.unique(x)``: numpy 2's unique hashes first and sorts after, about 4x slower on a
    text's few thousand shingles than one sort and a mask."""
    x = np.sort(x)
    keep = np.ones(len(x), dtype=bool)
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def shingle_sets(norms: list[str], n: int) -> list[np.ndarray]:
    """``[shingle_hashes(x, n) for x in norms]``, the hashing done for a ``BATCH_CHARS`` slice of
    texts at once (dedup verification: ~3x less CPU than text by text)."""
    sets: list[np.ndarray] = []
    for part in by_chars(norms):
        docs, hashes = _batch_shingles(part, n)
        order = np.argsort(docs, kind="stable")  # texts shorter than n come last
        cuts = np.searchsorted(docs[order], np.arange(len(part) + 1)).tolist()
        hashes = hashes[order]
        sets += [_sorted_distinct(hashes[a:b]) for a, b in zip(cuts, cuts[1:])]
    return sets


def batch_signatures(norms: list[str], n: int, num_perm: int, seed: int) -> np.ndarray:
    """(len(norms), num_perm) uint32 whose row i equals ``signature(shingle_hashes(norms[i], n),
    num_perm, seed)`` (``tests/test_minhash.py`` checks it): one-permutation hashing of all the
    texts' shingles at once (a minimum per (text, bin)), then the same densification, in a few
    numpy calls per batch instead of a few dozen per text. Callers bound the batch's characters
    (``BATCH_CHARS``): memory is ~40 bytes per character."""
    docs, hashes = _batch_shingles(norms, n)
    sig = np.full(len(norms) * num_perm, _EMPTY, dtype=np.uint32)
    filled = np.zeros(len(norms) * num_perm, dtype=bool)
    hashes ^= _seed_mix(seed)
    h = _mix_in_place(hashes)
    bins = h & np.uint64(num_perm - 1) if num_perm & (num_perm - 1) == 0 else h % np.uint64(num_perm)
    cell = docs * num_perm + bins.astype(np.int64)
    np.minimum.at(sig, cell, (h >> np.uint64(32)).astype(np.uint32))
    filled[cell] = True
    sig, filled = sig.reshape(len(norms), num_perm), filled.reshape(len(norms), num_perm)
    some = filled.any(axis=1)  # a text without shingles keeps the all-ones signature
    doc_e, bin_e = np.nonzero(~filled & some[:, None])
    if len(doc_e):
        probes = _probes(num_perm, seed)[bin_e]  # (n_empty, _PROBES)
        hit = filled[doc_e[:, None], probes]
        src = probes[np.arange(len(doc_e)), hit.argmax(axis=1)]
        for k in np.flatnonzero(~hit.any(axis=1)):  # no filled bin among the probes: the next filled bin
            nxt = np.flatnonzero(filled[doc_e[k]])
            src[k] = nxt[np.searchsorted(nxt, bin_e[k]) % len(nxt)]
        sig[doc_e, bin_e] = sig[doc_e, src]
    return sig


def batch_band_keys(sigs: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(len(sigs), bands) int64: row i equals ``band_keys(sigs[i], bands, rows)``."""
    with np.errstate(over="ignore"):
        block = sigs[:, : bands * rows].astype(np.uint64).reshape(len(sigs), bands, rows)
        key = np.zeros((len(sigs), bands), dtype=np.uint64)
        for j in range(rows):
            key = _splitmix64(key * _POLY + block[:, :, j])
        key = _splitmix64(key + np.arange(bands, dtype=np.uint64))
    return key.view(np.int64)
