"""MinHash against exact Jaccard, and the LSH parameters."""

from __future__ import annotations

import math
import random

import numpy as np

from filters import minhash as mh
from tests.crawl_fixture import P

BASE = "".join(P) * 3


def _mutate(text: str, rate: float, rng: random.Random) -> str:
    chars = list(text)
    for i in range(len(chars)):
        if rng.random() < rate:
            chars[i] = chr(0x4E00 + rng.randrange(20000))
    return "".join(chars)


def test_minhash_tracks_exact_jaccard_on_random_pairs():
    """|estimate - J| <= 4 standard errors, sqrt(J(1-J)/num_perm), on every one of 200 pairs."""
    rng = random.Random(0)
    params = mh.MinHashParams()
    worst = 0.0
    for _ in range(200):
        a = _mutate(BASE[rng.randrange(400):], rng.uniform(0, 0.05), rng)
        b = _mutate(a, rng.uniform(0, 0.3), rng)
        ha, hb = (mh.shingle_hashes(mh.normalise(t), params.shingle) for t in (a, b))
        j = mh.jaccard(ha, hb)
        est = mh.estimate_jaccard(mh.signature(ha, params.num_perm, params.seed),
                                  mh.signature(hb, params.num_perm, params.seed))
        bound = 4 * math.sqrt(max(j * (1 - j), 0.01) / params.num_perm)
        assert abs(est - j) <= bound, (j, est)
        worst = max(worst, abs(est - j) / bound)
    assert worst > 0.05  # the estimates are estimates, not copies of the exact value


def test_normalisation_and_exact_keys():
    assert mh.exact_key("Ｈｅｌｌｏ，世界！\n") == mh.exact_key("hello 世界")
    assert mh.exact_key("你好世界") != mh.exact_key("你好世間")


def test_long_documents_are_chunked_identically():
    text = _mutate(BASE * 40, 0.5, random.Random(1))
    h = mh.shingle_hashes(mh.normalise(text), 5)
    assert len(h) > 3 * mh.CHUNK
    a, b = mh._permutations(64, 1)
    direct = ((a * h.reshape(1, -1) + b) >> np.uint64(32)).astype(np.uint32).min(axis=1)
    assert np.array_equal(mh.signature(h, 64, 1), direct)


def test_bands_from_datasketch_and_keys_per_band():
    p = mh.MinHashParams(threshold=0.8, num_perm=128).resolved()
    assert (p.bands, p.rows) == (9, 13)
    sig = mh.signature(mh.shingle_hashes(mh.normalise(BASE), 5), 128, 1)
    keys = mh.band_keys(sig, p.bands, p.rows)
    assert keys.dtype == np.int64 and len(set(keys.tolist())) == p.bands
    other = sig.copy()
    other[0] ^= 1  # only band 0 changes
    k2 = mh.band_keys(other, p.bands, p.rows)
    assert k2[0] != keys[0] and np.array_equal(k2[1:], keys[1:])
