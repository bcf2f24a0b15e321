"""The compiled model: backoff tables per order and KenLM's query over them.

Every stored n-gram has its interpolated log10 probability, every context its log10 backoff
weight (the backoff form of an ARPA file), so a query is "longest stored n-gram + the backoffs of
the longer contexts", as KenLM queries. ``NgramTables.score`` does it for a whole token stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from filters.quality.fluency.tokens import BOS, Tokens

NO_PROB = -99.0  # log10 "probability" of <s>, which is never predicted (the ARPA convention)
# Bigrams of the DENSE_IDS most frequent token ids are also kept as a dense block (8 MB): 86 % of
# the bigrams of People's Daily text, read by one gather instead of a sort and a search (ours).
DENSE_IDS = 1024


@dataclass
class NgramTables:
    """The compiled model: for order n (index n-1) sorted uint64 ``keys``, float32 log10
    ``log_prob`` and, below the highest order, log10 ``backoff`` (0 where the n-gram is no
    context). Order 1 is dense: key i is token id i. Every stored n-gram's prefix and suffix are
    stored too, so the stored lengths ending at a position are 1..k (what ``score`` relies on)."""

    radix: int
    keys: list[np.ndarray]
    log_prob: list[np.ndarray]
    backoff: list[np.ndarray]

    @property
    def order(self) -> int:
        return len(self.keys)

    def lookup(self, n: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found, index into the order-n arrays) per key."""
        if n == 1:
            return np.ones(len(keys), bool), keys.astype(np.int64)
        order = np.argsort(keys)
        found, idx = np.empty(len(keys), bool), np.empty(len(keys), np.int64)
        found[order], idx[order] = self.find_sorted(n, keys[order])
        return found, idx

    def find_sorted(self, n: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``lookup`` for keys in ascending order, or nearly (n >= 2; only the speed depends on the
        order). Searching in sorted order walks the table forwards: 3x faster than random queries
        into a table larger than the cache (0.08 vs 0.22 s for 565 K queries into 1.4 M keys,
        measured here), and so are the gathers of its values."""
        table = self.keys[n - 1]
        if not len(table):
            return np.zeros(len(keys), bool), np.zeros(len(keys), np.int64)
        idx = np.minimum(np.searchsorted(table, keys), len(table) - 1)
        return table[idx] == keys, idx

    def _find(self, n: int, at: np.ndarray, key: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The stored ones of order-n candidates (positions ``at`` < ``size``, keys): (positions,
        keys, indexes), by key. The candidates' order is free: sorted, the search walks forwards.
        Sorting (key, position) packed in 64 bits gives both back without a gather and is 2.7x
        faster than argsort (6 vs 16 ms for 500 K); where they do not fit, (key, index) with the
        key's low bits dropped (nearly sorted is as good for the search)."""
        keybits, posbits = (self.radix**n - 1).bit_length(), max(1, size.bit_length())
        if keybits + posbits <= 64:
            packed = np.sort(key << np.uint64(posbits) | at.astype(np.uint64))
            at, key = (packed & np.uint64((1 << posbits) - 1)).astype(np.int64), packed >> np.uint64(posbits)
        else:
            bits = max(1, len(key).bit_length())
            shift = np.uint64(max(0, keybits + bits - 64))
            packed = np.sort((key >> shift << np.uint64(bits)) | np.arange(len(key), dtype=np.uint64))
            ranked = (packed & np.uint64((1 << bits) - 1)).astype(np.int64)
            at, key = at[ranked], key[ranked]
        found, idx = self.find_sorted(n, key)
        return at[found], key[found], idx[found]

    @cached_property
    def _dense(self) -> tuple[int, np.ndarray, np.ndarray]:
        """(K, log-probs, backoffs) of the bigrams of the K most frequent ids as K x K blocks (NaN
        log-prob: not stored): most bigram lookups become one gather (``DENSE_IDS``)."""
        k, radix = min(DENSE_IDS, self.radix), np.uint64(self.radix)
        old, new = (self.keys[1] // radix).astype(np.int64), (self.keys[1] % radix).astype(np.int64)
        sel = np.flatnonzero((old < k) & (new < k))
        logp, back = np.full(k * k, np.nan, np.float32), np.zeros(k * k, np.float32)
        logp[old[sel] * k + new[sel]], back[old[sel] * k + new[sel]] = self.log_prob[1][sel], self.backoff[1][sel]
        return k, logp, back

    def _bigrams(self, ids: np.ndarray, wide: np.ndarray) -> tuple[np.ndarray, ...]:
        """(positions, keys, log-probs, backoffs) of the stored bigrams in the stream (``wide``:
        ``ids`` as uint64); whole-array operations, no gather, up to the dense block's."""
        k, dense_logp, dense_back = self._dense
        old, new = ids[:-1], ids[1:]
        scored = new != BOS
        dense = scored & (old < k) & (new < k)
        cell = (old * k + new)[dense]
        logp = dense_logp[cell]
        hit = ~np.isnan(logp)
        at_d, cell, logp = np.flatnonzero(dense)[hit] + 1, cell[hit], logp[hit]
        rest = np.flatnonzero(scored & ~dense) + 1
        at_s, key_s, idx = self._find(2, rest, wide[rest - 1] * np.uint64(self.radix) + wide[rest], len(ids))
        key_d = wide[at_d - 1] * np.uint64(self.radix) + wide[at_d]
        return (
            np.concatenate((at_d, at_s)),
            np.concatenate((key_d, key_s)),
            np.concatenate((logp, self.log_prob[1][idx])),
            np.concatenate((dense_back[cell], self.backoff[1][idx])),
        )

    def query(self, keys: np.ndarray, length: int) -> np.ndarray:
        """log10 p(last token | the length-1 before it) for n-gram keys of one length, by the
        ARPA recursion: the stored n-gram's log-prob, else the context's backoff plus the query
        of the suffix."""
        out, todo = np.zeros(len(keys)), np.arange(len(keys))
        for m in range(length, 0, -1):
            suffix = keys[todo] % np.uint64(self.radix**m) if m < length else keys[todo]
            found, idx = self.lookup(m, suffix)
            out[todo[found]] += self.log_prob[m - 1][idx[found]]
            todo, suffix = todo[~found], suffix[~found]
            if m > 1 and len(todo):
                f, i = self.lookup(m - 1, suffix // np.uint64(self.radix))
                out[todo[f]] += self.backoff[m - 2][i[f]]
        return out

    def score(self, tokens: Tokens) -> np.ndarray:
        """log10 p of every token given its sentence so far (0 at <s>), bottom-up as KenLM: the
        longest stored n-gram ending at t, plus the backoffs of the contexts ending at t-1 that are
        at least as long as it (the recursion of ``query``, every lookup shared by two positions)."""
        ids, order = tokens.ids, self.order
        best = self.log_prob[0][ids]
        longest = np.ones(len(ids), np.int8)
        bo = np.zeros((order, len(ids)), np.float32)  # row j-1: backoff of the j-gram ending at t
        bo[0] = self.backoff[0][ids]
        wide = ids.astype(np.uint64)
        if order > 1:
            at, key, logp, back = self._bigrams(ids, wide)
        for n in range(2, order + 1):
            # Candidates: where the (n-1)-gram was found. One that starts at <s> extends to an
            # n-gram holding <s> inside (or, at 0, the stream's last </s> before it): never
            # stored, so no depth test is needed (2 % more lookups, one gather fewer).
            if n > 2:
                # ... and where the (n-1)-gram ending at t-1, the n-gram's prefix, was found: a
                # stored n-gram's prefix is stored (7-13 % fewer lookups on plain text).
                prefix = longest[at - 1] >= n - 1
                at, key = at[prefix], key[prefix]
                key = key + wide[at - (n - 1)] * np.uint64(self.radix ** (n - 1))
                at, key, idx = self._find(n, at, key, len(ids))
                logp = self.log_prob[n - 1][idx]
            best[at], longest[at] = logp, n
            if n < order:  # the highest order has no backoffs: its row stays 0
                bo[n - 1, at] = back if n == 2 else self.backoff[n - 1][idx]
        # bo[j-1, t] becomes the sum of the backoffs of the j..order-1 grams ending at t (row
        # order-1, the highest order's, is 0); position t adds row longest(t)-1 at t-1.
        for j in range(order - 2, -1, -1):
            bo[j] += bo[j + 1]
        t = np.flatnonzero(tokens.scored)
        out = np.zeros(len(ids))
        out[t] = best[t] + bo.ravel()[(longest[t] - 1).astype(np.int64) * len(ids) + t - 1]
        return out
