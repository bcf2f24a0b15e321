"""Benchmark decontamination: which training documents contain text of an evaluation item.

GPT-3 (Brown et al. 2020, App. C) removed training documents that shared a 13-gram (of words)
with an evaluation item. Chinese has no word boundaries, so the unit here is the character, in
the same normalised form dedup uses (``filters.dedup.minhash.normalise``: NFKC, lower case, no
whitespace or punctuation), hashed with the same 64-bit polynomial hash
(``filters.dedup.minhash.shingle_hashes``). Items are first converted to simplified characters, as
the cleaning stage converts documents. The default n = 20 characters is GPT-3's 13 words at this
corpus's 1.79 characters per word, rounded down, and measured on the demo crawl (docs/pii-decontamination.md,
"Why n = 20 characters"; ``bench/bench_pii_decontam.py --sweep``): shorter n-grams
hit pages that share only an official's title and name with an item.

An ``EvalIndex`` holds, sorted, the distinct n-gram hashes of every item with the item that owns
each one (per benchmark: a shared n-gram is recorded once for each benchmark that has it, under
its first item there). Items shorter than n characters are matched whole: the item's normalised
text must occur in the document's (an Aho-Corasick automaton over all of them, one pass). Items
shorter than ``min_chars`` would hit any page (``好评``) and are not matched at all; the index
counts both groups per benchmark, so nothing is skipped in silence.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass

import ahocorasick
import numpy as np
import opencc

from filters.dedup import minhash as mh
from filters.text import rolling

# Characters, after normalisation. docs/pii-decontamination.md has the measurement behind each default.
DEFAULT_NGRAM = 20
DEFAULT_MIN_CHARS = 8
BITS_PER_NGRAM = 16  # the prefilter's size: a false pass rate of about 1 - exp(-1/16) = 6 %
NGRAM, WHOLE = "ngram", "whole"


@dataclass(frozen=True)
class EvalItem:
    benchmark: str
    item_id: str
    text: str


@dataclass(frozen=True)
class Hit:
    benchmark: str
    item_id: str
    how: str  # NGRAM or WHOLE

    def __str__(self) -> str:
        return f"{self.benchmark}:{self.item_id}"


# The n-gram hash is filters.dedup.minhash.shingle_hashes's (a polynomial in the FNV prime over the
# code points, then splitmix64), computed with prefix sums instead of n passes: P is odd, so it
# has an inverse Q modulo 2^64 and the window [i, i+n) hashes to P^(n-1+i) * (G[i+n] - G[i]),
# G[j] = sum_{t<j} c[t] Q^t. Five numpy passes whatever n is (tests check it against minhash).
_P = int(mh._POLY)


def ngram_hashes(norm: str, n: int) -> np.ndarray:
    """The 64-bit hash of every character n-gram of a normalised text, in order, repeats kept
    (as a set, equal to ``filters.dedup.minhash.shingle_hashes`` for texts of at least n characters);
    empty for a shorter text."""
    cps = np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    m = len(cps) - n + 1
    if m <= 0:
        return np.zeros(0, np.uint64)
    p_pow, q_pow = rolling.powers(_P, len(cps) + n)  # P^k, and Q^k with Q = P^-1
    with np.errstate(over="ignore"):
        g = np.zeros(len(cps) + 1, np.uint64)
        np.cumsum(cps * q_pow[: len(cps)], out=g[1:])
        return mh._splitmix64(p_pow[n - 1 : n - 1 + m] * (g[n:] - g[:m]))


class EvalIndex:
    """The evaluation items as hashed n-grams plus whole short texts. Small enough to broadcast
    (14 bytes per distinct n-gram: hash, owner, 16 filter bits) and picklable; ``Matcher`` builds the automaton from it
    on
    each worker."""

    def __init__(
        self, items: list[EvalItem], n: int = DEFAULT_NGRAM, min_chars: int = DEFAULT_MIN_CHARS, t2s: bool = True
    ):
        if n < 2:
            raise ValueError(f"decontaminate.ngram must be >= 2, not {n}")
        self.n, self.min_chars, self.t2s = n, min_chars, t2s
        # the cleaning stage converts documents to simplified characters (PanGu-α §3.1.1), so a
        # traditional-character benchmark is indexed as it would look after cleaning
        convert = opencc.OpenCC("t2s").convert if t2s else (lambda t: t)
        # one order for everything that reports an item: benchmark name, then the file's order
        ordered = sorted(enumerate(items), key=lambda p: (p[1].benchmark, p[0]))
        self.items: list[tuple[str, str]] = [(it.benchmark, it.item_id) for _, it in ordered]
        self.stats: dict[str, Counter[str]] = {}
        hashes, owners, self.short = [], [], []
        for idx, (_, it) in enumerate(ordered):
            st = self.stats.setdefault(it.benchmark, Counter())
            st["items"] += 1
            norm = mh.normalise(convert(it.text))
            if len(norm) >= n:
                st["ngram_items"] += 1
                h = mh.shingle_hashes(norm, n)
                hashes.append(h)
                owners.append(np.full(len(h), idx, dtype=np.int32))
            elif len(norm) >= max(min_chars, 1):
                st["whole_items"] += 1
                self.short.append((norm, idx))
            else:
                st["ignored_items"] += 1
        self.hashes, self.owners = _first_owner_per_benchmark(hashes, owners, self.items)
        self.bits_log2, self.bits = _bit_filter(self.hashes)
        for b, st in self.stats.items():
            st["ngrams"] = 0
        for b, count in Counter(self.items[i][0] for i in self.owners.tolist()).items():
            self.stats[b]["ngrams"] = count

    @property
    def fingerprint(self) -> str:
        """blake2b of everything the matcher uses: names one index across driver and workers."""
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{self.n}\0{self.min_chars}\0{self.t2s}\0".encode())
        h.update(self.hashes.tobytes())
        h.update(self.owners.tobytes())
        h.update(self.bits.tobytes())
        h.update(json.dumps([self.items, self.short], ensure_ascii=False).encode())
        return h.hexdigest()

    @property
    def benchmarks(self) -> list[str]:
        return sorted(self.stats)

    def summary(self) -> dict[str, dict[str, int]]:
        """Per benchmark: items, ngram_items, whole_items (shorter than n, matched whole),
        ignored_items (shorter than min_chars), ngrams (distinct hashes indexed)."""
        keys = ("items", "ngram_items", "whole_items", "ignored_items", "ngrams")
        return {b: {k: int(self.stats[b][k]) for k in keys} for b in self.benchmarks}


def _bit_filter(hashes: np.ndarray) -> tuple[int, np.ndarray]:
    """A one-hash Bloom filter over the top bits of the hashes, BITS_PER_NGRAM bits per n-gram
    (packed): a document's n-grams go through it first, and only the ~6 % it lets through are
    looked up in the sorted array (a binary search per n-gram costs cache misses at millions)."""
    log2 = max(10, int(np.ceil(np.log2(max(len(hashes), 1) * BITS_PER_NGRAM))))
    table = np.zeros(1 << log2, dtype=bool)
    table[(hashes >> np.uint64(64 - log2)).astype(np.int64)] = True
    return log2, np.packbits(table, bitorder="little")


def _first_owner_per_benchmark(hashes, owners, items) -> tuple[np.ndarray, np.ndarray]:
    """Sorted hashes with one owner (the lowest item index) per (hash, benchmark)."""
    if not hashes:
        return np.zeros(0, np.uint64), np.zeros(0, np.int32)
    h, o = np.concatenate(hashes), np.concatenate(owners)
    names = {b: i for i, b in enumerate(sorted({b for b, _ in items}))}
    bench_of = np.array([names[b] for b, _ in items], dtype=np.int32)
    order = np.lexsort((o, bench_of[o], h))  # by hash, then benchmark, then item
    h, o = h[order], o[order]
    keep = np.ones(len(h), dtype=bool)
    keep[1:] = (h[1:] != h[:-1]) | (bench_of[o[1:]] != bench_of[o[:-1]])
    return h[keep], o[keep]


class Matcher:
    """Which evaluation items a document contains. Build once per worker from an ``EvalIndex``."""

    def __init__(self, index: EvalIndex):
        self.index = index
        self._automaton = None
        if index.short:
            self._automaton = ahocorasick.Automaton()
            owners: dict[str, list[int]] = {}
            for norm, idx in index.short:
                owners.setdefault(norm, []).append(idx)
            for norm, idxs in owners.items():
                self._automaton.add_word(norm, tuple(idxs))
            self._automaton.make_automaton()

    def item_indices(self, text: str) -> tuple[list[int], list[int]]:
        """(items hit by an n-gram, items contained whole), each sorted and distinct."""
        return self._indices(mh.normalise(text or ""))

    def _indices(self, norm: str) -> tuple[list[int], list[int]]:
        """``item_indices`` of a text already normalised (``minhash.normalise``)."""
        ngram_hits: list[int] = []
        idx = self.index
        if len(idx.hashes) and len(norm) >= idx.n:
            h = ngram_hashes(norm, idx.n)
            pos = (h >> np.uint64(64 - idx.bits_log2)).astype(np.int64)
            h = h[((idx.bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1).astype(bool)]
            lo = np.minimum(np.searchsorted(idx.hashes, h), len(idx.hashes) - 1)
            found = np.unique(h[idx.hashes[lo] == h])  # rare: only these need their owner range
            if len(found):
                lo, hi = np.searchsorted(idx.hashes, found, "left"), np.searchsorted(idx.hashes, found, "right")
                ngram_hits = sorted({int(o) for a, b in zip(lo, hi) for o in idx.owners[a:b]})
        whole: set[int] = set()
        if self._automaton is not None and norm:
            for _end, idxs in self._automaton.iter(norm):
                whole.update(idxs)
        return ngram_hits, sorted(whole)

    def hits(self, text: str) -> list[Hit]:
        """Every item the document hits, in index order (benchmark, then the item's order)."""
        return self._hits(*self.item_indices(text))

    def hits_batch(self, texts: list[str]) -> list[list[Hit]]:
        """``[self.hits(t) for t in texts]``, the texts normalised at once (``minhash.normalise_batch``:
        a third of the work text by text)."""
        return [self._hits(*self._indices(norm)) for norm in mh.normalise_batch([t or "" for t in texts])]

    def _hits(self, ngram: list[int], whole: list[int]) -> list[Hit]:
        how = {i: NGRAM for i in ngram} | {i: WHOLE for i in whole if i not in ngram}
        return [Hit(*self.index.items[i], how[i]) for i in sorted(how)]
