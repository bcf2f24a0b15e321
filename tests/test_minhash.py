"""MinHash against exact Jaccard, and the LSH parameters."""

from __future__ import annotations

import math
import random
import unicodedata

import numpy as np
import pytest

from filters.dedup import minhash as mh
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
        a = _mutate(BASE[rng.randrange(400) :], rng.uniform(0, 0.05), rng)
        b = _mutate(a, rng.uniform(0, 0.3), rng)
        ha, hb = (mh.shingle_hashes(mh.normalise(t), params.shingle) for t in (a, b))
        j = mh.jaccard(ha, hb)
        est = mh.estimate_jaccard(
            mh.signature(ha, params.num_perm, params.seed), mh.signature(hb, params.num_perm, params.seed)
        )
        bound = 4 * math.sqrt(max(j * (1 - j), 0.01) / params.num_perm)
        assert abs(est - j) <= bound, (j, est)
        worst = max(worst, abs(est - j) / bound)
    assert worst > 0.05  # the estimates are estimates, not copies of the exact value


def test_normalisation_and_exact_keys():
    assert mh.exact_key("Ｈｅｌｌｏ，世界！\n") == mh.exact_key("hello 世界")
    assert mh.exact_key("你好世界") != mh.exact_key("你好世間")


def test_long_documents_are_chunked_identically(monkeypatch):
    text = _mutate(BASE * 40, 0.5, random.Random(1))
    h = mh.shingle_hashes(mh.normalise(text), 5)
    monkeypatch.setattr(mh, "CHUNK", 1000)
    assert len(h) > 3 * mh.CHUNK
    chunked = mh.signature(h, 64, 1)
    monkeypatch.setattr(mh, "CHUNK", len(h))
    assert np.array_equal(chunked, mh.signature(h, 64, 1))


def test_short_documents_are_densified():
    """Fewer shingles than bins: every bin still holds one of the document's values, and the
    estimate on short pairs stays unbiased enough to separate near from unrelated."""
    a = mh.shingle_hashes(mh.normalise(P[0][:40]), 5)
    assert len(a) < 64
    sig = mh.signature(a, 128, 1)
    assert (sig != 0xFFFFFFFF).all() and len(set(sig.tolist())) <= len(a)
    b = mh.shingle_hashes(mh.normalise(P[0][:40] + "的"), 5)
    c = mh.shingle_hashes(mh.normalise(P[1][:40]), 5)
    assert mh.estimate_jaccard(sig, mh.signature(b, 128, 1)) > 0.8
    assert mh.estimate_jaccard(sig, mh.signature(c, 128, 1)) < 0.1


def test_bands_from_datasketch_and_keys_per_band():
    assert (
        mh.MinHashParams(threshold=0.8, false_negative_weight=0.5).resolved().bands == 9
    )  # datasketch's default weights
    p = mh.MinHashParams(threshold=0.8, num_perm=128).resolved()
    assert (p.bands, p.rows) == (16, 8)
    sig = mh.signature(mh.shingle_hashes(mh.normalise(BASE), 5), 128, 1)
    keys = mh.band_keys(sig, p.bands, p.rows)
    assert keys.dtype == np.int64 and len(set(keys.tolist())) == p.bands
    other = sig.copy()
    other[0] ^= 1  # only band 0 changes
    k2 = mh.band_keys(other, p.bands, p.rows)
    assert k2[0] != keys[0] and np.array_equal(k2[1:], keys[1:])


def _random_texts(rng: random.Random, count: int) -> list[str]:
    """Han text, full-width forms, ASCII, punctuation, combining marks, Hangul jamo, ligatures,
    circled and superscript digits, at lengths from empty to several CHUNKs of shingles."""
    pools = [
        "".join(P),
        "０１２３４５６７８９ＡＢＣｘｙｚ＿！（）",
        "abcXYZ019_-.,",
        "，。！？、；：“”《》 \t\n　",
        "e\u0301a\u0308\u0327",
        "\u1100\u1161\u11a8가",
        "ﬁﬂ²③㎏Ⅻ",
    ]
    out = ["", "a", "的", "ab的", "，。", "０１", "abcd"]
    for _ in range(count):
        n = rng.choice([3, 6, 40, 300, 2000, 9000])
        out.append("".join(rng.choice(rng.choice(pools)) for _ in range(n)))
    return out


def test_normalise_equals_plain_nfkc():
    """The full-width table and the quick check are shortcuts: the result is plain NFKC of the
    text without whitespace and punctuation, lower-cased."""

    def plain(text: str) -> str:
        return mh._NOT_CONTENT.sub("", unicodedata.normalize("NFKC", mh._NOT_CONTENT.sub("", text))).lower()

    texts = _random_texts(random.Random(4), 300)
    assert all(mh.normalise(t) == plain(t) for t in texts)
    assert mh.normalise("ＡＢ１２，ａｂ") == "ab12ab"


def test_normalise_batch_equals_normalise_on_every_code_point():
    """The table path of ``normalise_batch`` against ``normalise``: every code point between
    neighbours, runs of consecutive code points, the pairs that compose (Hangul jamo, a letter
    and a combining mark with punctuation between), context-dependent lower case (final sigma),
    full-width forms, and mixed random texts; the texts in one batch, so boundaries are tested."""
    every = [chr(c) for c in range(0x110000)]
    texts = ["a" + c + "中" for c in every] + ["".join(every[i : i + 9]) for i in range(0, 0x110000, 5)]
    lead, vowel, trail = (
        [chr(c) for c in range(0x1100, 0x1113)],
        [chr(c) for c in range(0x1161, 0x1176)],
        "\u11a8\u11c2",
    )
    texts += [x + y + z for x in lead for y in vowel for z in ("", *trail)] + ["\uac00\u11a8", "ㄱㅏ"]
    texts += ["ΑΣ", "ΑΣ Β", "Σ", "ΟΔΟΣ，ΟΔΟΣ", "İstanbul", "ǅ", "ﬁ", "Ⅻ①㍿", "e\u0301", "e，\u0301", "ＡＢ１２，ａｂ"]
    texts += _random_texts(random.Random(11), 300)
    assert mh.normalise_batch(texts) == [mh.normalise(t) for t in texts]
    assert mh.normalise_batch([]) == [] and mh.normalise_batch([""]) == [""]


def test_batches_are_bounded_in_characters(monkeypatch):
    """Normalisation and signatures run in slices of at most BATCH_CHARS characters (a text
    longer than that is a slice of its own); the results do not depend on the slicing."""
    texts = _random_texts(random.Random(12), 200)
    ref = [mh.normalise(t) for t in texts]
    monkeypatch.setattr(mh, "BATCH_CHARS", 500)
    slices = list(mh.by_chars(texts))
    assert sum(slices, []) == texts and all(sum(map(len, s)) <= 500 or len(s) == 1 for s in slices)
    assert len(slices) > 20 and mh.normalise_batch(texts) == ref


@pytest.mark.parametrize("n,num_perm,seed", [(5, 128, 1), (3, 64, 7), (7, 128, 2)])
def test_batch_signatures_equal_per_document(n, num_perm, seed, monkeypatch):
    """One batch of texts (empty, shorter than n, long enough to be chunked, densified ones)
    gives exactly the per-document signatures and band keys."""
    monkeypatch.setattr(mh, "CHUNK", 1000)  # the per-document reference chunks its long texts
    norms = [mh.normalise(t) for t in _random_texts(random.Random(seed), 120)]
    batch = mh.batch_signatures(norms, n, num_perm, seed)
    ref = np.stack([mh.signature(mh.shingle_hashes(x, n), num_perm, seed) for x in norms])
    assert batch.shape == (len(norms), num_perm) and np.array_equal(batch, ref)
    assert any(0 < len(x) < n for x in norms) and any(len(x) > 3 * mh.CHUNK for x in norms)
    bands, rows = num_perm // 8, 8
    assert np.array_equal(mh.batch_band_keys(batch, bands, rows), np.stack([mh.band_keys(s, bands, rows) for s in ref]))
    monkeypatch.setattr(mh, "BATCH_CHARS", 5000)  # several slices
    sets = mh.shingle_sets(norms, n)
    assert len(sets) == len(norms) and all(np.array_equal(x, mh.shingle_hashes(y, n)) for x, y in zip(sets, norms))


def test_jaccard_equals_set_jaccard():
    """Exact Jaccard of sorted distinct hash arrays against Python sets: empty, disjoint, equal,
    nested, overlapping, values at both ends of uint64."""
    rng = random.Random(4)
    top = np.iinfo(np.uint64).max
    cases = [(set(), set()), (set(), {1}), ({1, 2}, {1, 2}), ({1, 2, 3}, {2}), ({0, top}, {top}), ({5}, {6})]
    for _ in range(200):
        pool = [rng.choice([0, top, rng.randrange(1 << 64)]) for _ in range(rng.randint(1, 60))]
        cases.append(
            (set(rng.sample(pool, rng.randint(0, len(pool)))), set(rng.sample(pool, rng.randint(0, len(pool)))))
        )
    for x, y in cases:
        want = 1.0 if not x | y else len(x & y) / len(x | y)
        arr = [np.array(sorted(s), dtype=np.uint64) for s in (x, y)]
        assert mh.jaccard(*arr) == want and mh.jaccard(*arr[::-1]) == want, (x, y)
