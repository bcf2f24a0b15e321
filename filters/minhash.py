"""MinHash signatures and LSH band keys for Chinese documents, vectorised with numpy.

Shingles are character n-grams of the normalised text (NFKC, lower case, whitespace and
punctuation removed): Chinese has no word boundaries, and character n-grams need no segmenter.
Each n-gram is hashed to 64 bits by a polynomial over its code points plus a splitmix64
finaliser; permutation i is the multiply-shift hash ``(a_i * x + b_i) mod 2^64 >> 32`` with
odd ``a_i``. Signatures are computed over shingle chunks with a running minimum, so memory
is ``num_perm x chunk`` whatever the document's length. Bands x rows come from datasketch's
optimal-parameter search for the Jaccard threshold (equal false-positive/negative weights).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_POLY = np.uint64(0x100000001B3)  # FNV-1a 64-bit prime as the polynomial base
_NOT_CONTENT = re.compile(r"[\s\W_]+", re.UNICODE)  # whitespace and punctuation
CHUNK = 4096  # shingles per block of the running minimum (memory bound: num_perm x CHUNK x 8 bytes)


@dataclass(frozen=True)
class MinHashParams:
    """Everything that defines signatures and band keys; an index records it and refuses others."""
    shingle: int = 5  # character n-gram size (see README: false positives measured for n = 3..7)
    num_perm: int = 128
    threshold: float = 0.8  # Jaccard similarity at which documents count as near-duplicates
    seed: int = 1
    bands: int = 0  # 0 = from datasketch's optimal-parameter search for the threshold
    rows: int = 0

    def resolved(self) -> "MinHashParams":
        if self.bands and self.rows:
            if self.bands * self.rows > self.num_perm:
                raise ValueError(f"bands x rows = {self.bands * self.rows} exceeds num_perm {self.num_perm}")
            return self
        from datasketch.lsh import _optimal_param

        b, r = _optimal_param(self.threshold, self.num_perm, 0.5, 0.5)
        return MinHashParams(self.shingle, self.num_perm, self.threshold, self.seed, b, r)


def normalise(text: str) -> str:
    """What two texts must share to be exact duplicates: NFKC (full/half width), lower case,
    no whitespace or punctuation."""
    return _NOT_CONTENT.sub("", unicodedata.normalize("NFKC", text).lower())


def exact_key(text: str) -> str:
    return hashlib.blake2b(normalise(text).encode("utf-8"), digest_size=16).hexdigest()


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
            h = h * _POLY + cps[k: len(cps) - n + 1 + k]
        return np.unique(_splitmix64(h))


@lru_cache(maxsize=8)
def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.Generator(np.random.PCG64(seed))
    a = rng.integers(1, 1 << 63, size=num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)  # odd
    b = rng.integers(0, 1 << 63, size=num_perm, dtype=np.uint64)
    return a.reshape(-1, 1), b.reshape(-1, 1)


def signature(hashes: np.ndarray, num_perm: int, seed: int) -> np.ndarray:
    """MinHash signature (num_perm uint32 values); all-ones for an empty shingle set."""
    a, b = _permutations(num_perm, seed)
    sig = np.full(num_perm, np.uint32(0xFFFFFFFF), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for start in range(0, len(hashes), CHUNK):
            block = hashes[start: start + CHUNK].reshape(1, -1)
            hv = ((a * block + b) >> np.uint64(32)).astype(np.uint32)  # (num_perm, chunk)
            np.minimum(sig, hv.min(axis=1), out=sig)
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
    """Exact Jaccard of two shingle-hash sets."""
    if len(a) == 0 and len(b) == 0:
        return 1.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)
