"""Interpolated modified Kneser-Ney estimation (Chen & Goodman 1998, §3), compiled to backoff tables.

Adjusted counts as in Heafield et al. 2013 §3.1: n-grams of the highest order or that start with
<s> keep their raw counts, the others count their distinct left extensions. ``estimate`` turns raw
counts (``filters.quality.fluency.counts.merge_counts``' form) into ``NgramTables`` and the statistics
metadata.json records.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from filters.quality.fluency.counts import check_radix
from filters.quality.fluency.tables import NO_PROB, NgramTables
from filters.quality.fluency.tokens import BOS

log = logging.getLogger("zhcorpus")

DISCOUNT_FALLBACK = (0.5, 1.0, 1.5)  # KenLM lmplz --discount_fallback's defaults


def adjusted_counts(raw: dict[int, tuple[np.ndarray, np.ndarray]], order: int, radix: int) -> dict[int, np.ndarray]:
    """Per order, aligned with ``raw[n][0]``: raw counts at the highest order and for n-grams
    that start with <s> (nothing can precede them), else the number of distinct tokens seen
    before the n-gram (Kneser-Ney's continuation count N1+(. w))."""
    out = {order: raw[order][1].astype(np.int64)}
    for n in range(order - 1, 0, -1):
        keys, counts = raw[n]
        adj = np.zeros(len(keys), np.int64)
        suffixes, left = np.unique(raw[n + 1][0] % np.uint64(radix**n), return_counts=True)
        idx = np.searchsorted(keys, suffixes)
        if idx.size and (idx.max() >= len(keys) or (keys[idx] != suffixes).any()):
            raise ValueError(f"counts of order {n + 1} have suffixes missing from order {n}: incomplete counts")
        adj[idx] = left
        bos = keys // np.uint64(radix ** (n - 1)) == BOS
        adj[bos] = counts[bos]
        out[n] = adj
    return out


def discounts(adjusted: np.ndarray, n: int) -> tuple[float, float, float]:
    """(D1, D2, D3+) from the counts of counts t1..t4 (Chen & Goodman 1998, eq. 26). Where they are
    undefined or out of (0, k) (a small reference; unigrams of a small vocabulary) KenLM's
    ``--discount_fallback`` values are used, with a warning."""
    t = [int((adjusted == k).sum()) for k in (1, 2, 3, 4)]
    if min(t) > 0:
        y = t[0] / (t[0] + 2 * t[1])
        d = (1 - 2 * y * t[1] / t[0], 2 - 3 * y * t[2] / t[1], 3 - 4 * y * t[3] / t[2])
        if all(0 < dk < k for k, dk in zip((1, 2, 3), d)):
            return d
    log.warning(
        "order %d: counts of counts %s give no valid Kneser-Ney discounts; using %s (KenLM's "
        "--discount_fallback): the reference is small for this order",
        n,
        t,
        DISCOUNT_FALLBACK,
    )
    return DISCOUNT_FALLBACK


def pruned_masks(
    raw: dict[int, tuple[np.ndarray, np.ndarray]],
    adjusted: dict[int, np.ndarray],
    order: int,
    radix: int,
    min_count: int,
) -> dict[int, np.ndarray]:
    """Which n-grams are stored: at orders >= 3 those with an adjusted count >= ``min_count``,
    plus every prefix (a context needs its backoff) and suffix (longest-match lookups stop at the
    first missing length) of a stored longer n-gram."""
    kept = {n: np.ones(len(raw[n][0]), bool) for n in range(1, order + 1)}
    for n in range(order, 2, -1):
        kept[n] = adjusted[n] >= min_count
        if n < order:
            longer = raw[n + 1][0][kept[n + 1]]
            kept[n] |= np.isin(raw[n][0], longer // np.uint64(radix))
            kept[n] |= np.isin(raw[n][0], longer % np.uint64(radix**n))
    return kept


def estimate(
    raw: dict[int, tuple[np.ndarray, np.ndarray]], order: int, radix: int, min_count: int = 1
) -> tuple[NgramTables, dict[str, Any]]:
    """Interpolated modified Kneser-Ney from raw n-gram counts (``merge_counts``' form, every order
    1..order), compiled to backoff tables; also the statistics metadata.json records. The mass of
    pruned n-grams goes to their context's backoff, so every distribution still sums to 1."""
    check_radix(radix, order)
    adj = adjusted_counts(raw, order, radix)
    disc = {n: discounts(adj[n], n) for n in range(1, order + 1)}
    kept = pruned_masks(raw, adj, order, radix, max(1, min_count))
    tables = NgramTables(
        radix,
        [np.arange(radix, dtype=np.uint64)],
        [_unigrams(raw[1][0], adj[1], disc[1], radix)],
        [np.zeros(radix, np.float32)],
    )
    for n in range(2, order + 1):
        _add_order(tables, raw[n][0], adj[n], disc[n], kept[n])
    stats = {
        "discounts": {str(n): list(d) for n, d in disc.items()},
        "counts_of_counts": {str(n): [int((adj[n] == k).sum()) for k in (1, 2, 3, 4)] for n in adj},
        "ngrams_counted": {str(n): len(raw[n][0]) for n in raw},
        "ngrams": {str(n): len(k) if n > 1 else radix for n, k in enumerate(tables.keys, 1)},
    }
    return tables, stats


def _discount_of(adjusted: np.ndarray, d: tuple[float, float, float]) -> np.ndarray:
    return np.array((0.0, *d))[np.minimum(adjusted, 3)]


def _unigrams(keys: np.ndarray, adjusted: np.ndarray, d: tuple[float, float, float], radix: int) -> np.ndarray:
    """log10 p(w): discounted continuation counts plus the freed mass spread over the radix - 1
    predictable ids (<unk>, </s>, characters; not <s>)."""
    disc = _discount_of(adjusted, d)
    total = adjusted.sum()
    p = np.full(radix, disc.sum() / total / (radix - 1))
    p[keys.astype(np.int64)] += (adjusted - disc) / total
    logp = np.log10(p)
    logp[BOS] = NO_PROB
    return logp.astype(np.float32)


def _add_order(
    tables: NgramTables, keys: np.ndarray, adjusted: np.ndarray, d: tuple[float, float, float], kept: np.ndarray
) -> None:
    """Append order n = tables.order + 1: p(w|h) = (a(hw) - D(a(hw))) / a(h.) + gamma(h) p(w|h'),
    gamma(h) = (D1 N1(h.) + D2 N2(h.) + D3+ N3+(h.) + the pruned n-grams' discounted counts) / a(h.);
    log10 gamma(h) becomes h's backoff. Keys sorted, so each context's n-grams are contiguous."""
    n, radix = tables.order + 1, np.uint64(tables.radix)
    disc = _discount_of(adjusted, d)
    ctx = keys // radix
    starts = np.flatnonzero(np.concatenate(([True], ctx[1:] != ctx[:-1])))
    group = np.cumsum(np.concatenate(([False], ctx[1:] != ctx[:-1])))
    total = np.add.reduceat(adjusted, starts).astype(np.float64)
    freed = np.add.reduceat(np.where(kept, disc, adjusted), starts)  # a pruned n-gram frees its whole count
    gamma = freed / total
    lower = tables.query(keys[kept] % np.uint64(tables.radix ** (n - 1)), n - 1)
    g = group[kept]
    p = (adjusted[kept] - disc[kept]) / total[g] + gamma[g] * 10.0**lower
    # A context with no stored extension has gamma 1 (everything freed): backoff 0, no entry needed.
    live = np.add.reduceat(kept.astype(np.int64), starts) > 0
    table, contexts = tables.keys[n - 2], ctx[starts][live]
    at = np.minimum(np.searchsorted(table, contexts), len(table) - 1)
    if (table[at] != contexts).any():
        raise ValueError(f"order {n}: contexts missing from order {n - 1}: incomplete counts")
    tables.backoff[n - 2][at] = np.log10(gamma[live])
    tables.keys.append(keys[kept])
    tables.log_prob.append(np.log10(p).astype(np.float32))
    tables.backoff.append(np.zeros(int(kept.sum()), np.float32))
