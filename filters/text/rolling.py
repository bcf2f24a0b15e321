"""One polynomial rolling hash's power tables, for every module that hashes substrings with prefix
sums (``filters.quality.repeat``: repetition signals and template keys; ``filters.dedup.decontam``:
benchmark n-grams). With an odd base B, B is invertible modulo 2^64, and the substring [i, j) of
prefix sums H[k] = sum_{t<k} c[t] B^t hashes to (H[j] - H[i]) B^-i: a table of B^k and one of
B^-k serve every substring in two numpy operations."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

CACHED = 1 << 21  # tables up to this size are cached per base (a few sizes per process)


def powers(base: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(base**k, base**-k) mod 2^64 for k < at least ``size`` (uint64). ``base`` must be odd."""
    if size > CACHED:
        return _tables(base, size)  # a text longer than a chunk: its own tables, not kept
    return _cached(base, max(1024, 1 << (max(size, 1) - 1).bit_length()))


def _tables(base: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    if not base & 1:
        raise ValueError(f"rolling hash base {base:#x} must be odd (invertible modulo 2^64)")
    out = []
    for b in (base, pow(base, -1, 1 << 64)):
        p = np.empty(size, dtype=np.uint64)
        p[0] = 1
        with np.errstate(over="ignore"):
            np.cumprod(np.full(size - 1, np.uint64(b)), out=p[1:])
        out.append(p)
    return out[0], out[1]


_cached = lru_cache(maxsize=None)(_tables)
