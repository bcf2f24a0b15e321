"""Benchmark decontamination: which training documents contain text of an evaluation item.

GPT-3 (Brown et al. 2020, App. C) removed training documents that shared a 13-gram (of words)
with an evaluation item. Chinese has no word boundaries, so the unit here is the character, in
the same normalised form dedup uses (``filters.minhash.normalise``: NFKC, lower case, no
whitespace or punctuation), hashed with the same 64-bit polynomial hash
(``filters.minhash.shingle_hashes``). The default n is chosen by measurement on the demo crawl
(README "Personal data and decontamination"; ``bench/bench_pii_decontam.py --sweep``).

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

from filters import minhash as mh

# Characters, after normalisation. See the README for the measurement behind each default.
DEFAULT_NGRAM = 13
DEFAULT_MIN_CHARS = 8
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


class EvalIndex:
    """The evaluation items as hashed n-grams plus whole short texts. Small enough to broadcast
    (12 bytes per distinct n-gram) and picklable; ``Matcher`` builds the automaton from it on
    each worker."""

    def __init__(self, items: list[EvalItem], n: int = DEFAULT_NGRAM, min_chars: int = DEFAULT_MIN_CHARS):
        if n < 2:
            raise ValueError(f"decontaminate.ngram must be >= 2, not {n}")
        self.n, self.min_chars = n, min_chars
        # one order for everything that reports an item: benchmark name, then the file's order
        ordered = sorted(enumerate(items), key=lambda p: (p[1].benchmark, p[0]))
        self.items: list[tuple[str, str]] = [(it.benchmark, it.item_id) for _, it in ordered]
        self.stats: dict[str, Counter[str]] = {}
        hashes, owners, self.short = [], [], []
        for idx, (_, it) in enumerate(ordered):
            st = self.stats.setdefault(it.benchmark, Counter())
            st["items"] += 1
            norm = mh.normalise(it.text)
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
        for b, st in self.stats.items():
            st["ngrams"] = 0
        for b, count in Counter(self.items[i][0] for i in self.owners.tolist()).items():
            self.stats[b]["ngrams"] = count

    @property
    def fingerprint(self) -> str:
        """blake2b of everything the matcher uses: names one index across driver and workers."""
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{self.n}\0{self.min_chars}\0".encode())
        h.update(self.hashes.tobytes())
        h.update(self.owners.tobytes())
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


def _first_owner_per_benchmark(hashes, owners, items) -> tuple[np.ndarray, np.ndarray]:
    """Sorted hashes with one owner (the lowest item index) per (hash, benchmark)."""
    if not hashes:
        return np.zeros(0, np.uint64), np.zeros(0, np.int32)
    h, o = np.concatenate(hashes), np.concatenate(owners)
    bench_of = np.array([sorted({b for b, _ in items}).index(b) for b, _ in items], dtype=np.int32)
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
        norm = mh.normalise(text or "")
        ngram_hits: list[int] = []
        idx = self.index
        if len(idx.hashes) and len(norm) >= idx.n:
            h = mh.shingle_hashes(norm, idx.n)
            lo = np.searchsorted(idx.hashes, h, side="left")
            hi = np.searchsorted(idx.hashes, h, side="right")
            found = np.flatnonzero(hi > lo)
            if len(found):
                ngram_hits = sorted({int(o) for f in found for o in idx.owners[lo[f]:hi[f]]})
        whole: set[int] = set()
        if self._automaton is not None and norm:
            for _end, idxs in self._automaton.iter(norm):
                whole.update(idxs)
        return ngram_hits, sorted(whole)

    def hits(self, text: str) -> list[Hit]:
        """Every item the document hits, in index order (benchmark, then the item's order)."""
        ngram, whole = self.item_indices(text)
        how = {i: NGRAM for i in ngram} | {i: WHOLE for i in whole if i not in ngram}
        return [Hit(*self.index.items[i], how[i]) for i in sorted(how)]
