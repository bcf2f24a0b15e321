"""Character n-gram fluency model: CCNet's perplexity signal (Wenzek et al. 2020 §3.3) for Chinese.

CCNet scores every document with a 5-gram KenLM model trained on a reference corpus and buckets
documents by the reference's perplexity percentiles. Here the tokens are characters (Chinese has
no spaces), the estimator is interpolated modified Kneser-Ney (Chen & Goodman 1998, §3; adjusted
counts as in Heafield et al. 2013 §3.1: n-grams of the highest order or that start with <s> keep
their raw counts, the others count their distinct left extensions), and the model is compiled to
the backoff form of an ARPA file: every stored n-gram has its interpolated log10 probability, every
context its log10 backoff weight, so a query is "longest stored n-gram + the backoffs of the longer
contexts", as KenLM queries.

Text goes through ``normalise`` (versioned: ``NORMALISE_VERSION``) at training and at scoring; each
non-empty line is a sentence ``<s> c1 .. cn </s>``. Characters outside the vocabulary (the
``max_vocab`` most frequent of the reference) are <unk>. An n-gram is a base-``radix`` number of its
token ids, oldest most significant (radix = vocabulary + 3 specials), so its context is
``key // radix`` and its suffix ``key % radix**(n-1)``; ``radix**order`` must fit in 64 bits.

A model directory holds ``model.npz`` (plain arrays, loaded with ``allow_pickle=False``) and
``metadata.json`` (sha256 of model.npz, normalise version, discounts, counts...); ``FluencyModel``
refuses a mismatch of either. Numpy only: executors load it once per worker.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from base.artifact import ModelError, require_sha256, sha256_file

log = logging.getLogger("zhcorpus")

NORMALISE_VERSION = "1"  # bump when normalise() changes: models trained before must be retrained
MODEL_FILE, META_FILE, PERCENTILES_FILE = "model.npz", "metadata.json", "reference_percentiles.json"
UNK, BOS, EOS = 0, 1, 2  # token ids; characters are 3 .. radix-1 in the vocabulary's order
SPECIALS = ("<unk>", "<s>", "</s>")
NEWLINE, SPACE, ZERO = 10, 32, 48
NO_PROB = -99.0  # log10 "probability" of <s>, which is never predicted (the ARPA convention)
# Characters normalised and scored at a time: bounds the temporaries (~100 bytes a character).
SLICE_CHARS = 1 << 20
# Scoring reads a document's opening MAX_CHARS characters (ours, issue 23's example; CCNet scores
# whole documents, but a long tail adds time, not signal; filters/classify.py reads 3,000).
MAX_CHARS = 5000
FORMAT = "zhcorpus-fluency-ngram/1"  # model.npz's layout; load refuses any other
# Bigrams of the DENSE_IDS most frequent token ids are also kept as a dense block (8 MB): 86 % of
# the bigrams of People's Daily text, read by one gather instead of a sort and a search (ours).
DENSE_IDS = 1024
DISCOUNT_FALLBACK = (0.5, 1.0, 1.5)  # KenLM lmplz --discount_fallback's defaults
_DIGIT = re.compile(r"\d")


# ---------------------------------------------------------------- normalisation and encoding


def _nfkc_lower(text: str) -> str:
    if not unicodedata.is_normalized("NFKC", text):  # the quick check: most text is NFKC already
        text = unicodedata.normalize("NFKC", text)
    return text.lower()


def normalise(text: str) -> list[str]:
    """The definition (version ``NORMALISE_VERSION``): NFKC, lower case, every decimal digit (``\\d``)
    -> "0" (CCNet), ``\\r`` is a line break, whitespace runs inside a line -> one space, lines
    stripped; the non-empty lines are the sentences. ``normalised_codes`` is its batch form."""
    s = _DIGIT.sub("0", _nfkc_lower(text)).replace("\r", "\n")
    return [" ".join(line.split()) for line in s.split("\n") if line.split()]


@lru_cache(maxsize=1)
def _fold_table() -> np.ndarray:
    """Code point -> code point: digits -> "0", whitespace -> " ", "\\r" and "\\n" -> "\\n"."""
    table = np.arange(0x110000, dtype=np.uint32)
    every = table.tobytes().decode("utf-32-le", "surrogatepass")  # every code point, in order
    table[[m.start() for m in re.finditer(r"\s", every)]] = SPACE  # str.split()'s whitespace
    table[[m.start() for m in re.finditer(r"\d", every)]] = ZERO
    table[[NEWLINE, 13]] = NEWLINE
    return table


def _codes(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(all code points, start offset of each string)."""
    lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    codes = np.frombuffer("".join(strings).encode("utf-32-le", "surrogatepass"), np.uint32)
    return codes, np.cumsum(lengths) - lengths


def _each(form: str, codes: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code points, start of each piece's result) of ``form`` (a normalisation, or "lower")
    applied to each piece ``codes[starts[i]:starts[i + 1]]`` on its own: one call over all of
    them with NUL after each (a starter that composes with nothing and has no case, so it cuts
    both), cut apart again in numpy."""
    spaced = np.zeros(len(codes) + len(starts), np.uint32)
    piece = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(codes)]))
    spaced[np.arange(len(codes)) + piece] = codes  # the NUL of piece i sits after its codes
    text = spaced.tobytes().decode("utf-32-le", "surrogatepass")
    text = text.lower() if form == "lower" else unicodedata.normalize(form, text)
    out = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    nul = np.flatnonzero(out == 0)
    if len(nul) != len(starts):
        raise AssertionError(f"{form} of a character holds NUL")
    return out[out != 0], np.r_[0, nul[:-1] + 1] - np.arange(len(starts))


@lru_cache(maxsize=1)
def _char_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``nfkc_lower_tables`` with the flat array after the digit and space fold (``_fold_table``)."""
    simple, length, offset, flat = nfkc_lower_tables()
    return simple, length, offset, _fold_table()[flat]


@lru_cache(maxsize=1)
def nfkc_lower_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per code point c: whether ``_nfkc_lower`` of any text made of such characters is the
    concatenation of theirs ("simple"), and that per-character result as (length, offset into a
    flat array, flat array). NFKC = canonical composition of the
    compatibility decomposition (NFKD); c is simple when NFKD(c) holds no non-starter (nothing to
    reorder) and no character that is the second of a canonical pair (nothing composes), so
    NFKC(text) is the concatenation of the NFKD(c); lower() is per character except for the
    final-sigma rule, so NFKD(c) holding a capital sigma makes c not simple. ~0.3 s, once a
    process (every character normalised in one call, cut apart in numpy)."""
    cps = np.array([c for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000], np.uint32)
    one_each = np.arange(len(cps))
    nfd, nfd_start = _each("NFD", cps, one_each)
    nfd_first = np.zeros(len(nfd), bool)
    nfd_first[nfd_start] = True
    bad = np.zeros(0x110000, bool)
    bad[nfd[~nfd_first]] = True  # seconds of canonical pairs (and non-starters)
    # combining marks: planes 0-3 and 14 (planes 4-13 are unassigned, 15-16 private use)
    assigned = cps[(cps < 0x40000) | ((cps >= 0xE0000) & (cps < 0xE1000))]
    bad[
        assigned[np.fromiter(map(unicodedata.combining, map(chr, assigned.tolist())), np.int64, len(assigned)) != 0]
    ] = True
    bad[0x3A3] = True  # GREEK CAPITAL SIGMA: its lower case depends on its neighbours
    kd, kd_start = _each("NFKD", cps, one_each)
    simple = np.zeros(0x110000, bool)
    simple[cps] = ~np.logical_or.reduceat(bad[kd], kd_start)
    simple[0] = True
    low, low_start = _each("lower", kd, kd_start)  # each character's NFKD, lower-cased as a whole
    per_char = np.diff(np.r_[low_start, len(low)])
    length, offset = np.ones(0x110000, np.uint8), np.zeros(0x110000, np.int64)
    length[cps] = per_char
    offset[cps] = 1 + np.cumsum(per_char) - per_char  # after the NUL, which is itself
    return simple, length, offset, np.r_[0, low].astype(np.uint32)


def normalised_codes(texts: Sequence[str], max_chars: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(code points, text index) of a batch after ``normalise``: every sentence of every text
    followed by NEWLINE, i.e. ``"".join(line + "\\n" for line in normalise(t[:max_chars]))`` for each
    text in order. No per-character Python: texts made of "simple" characters (``_char_tables``;
    nearly all Chinese text) go through per-character tables; others through ``_nfkc_lower``."""
    simple, length, offset, flat = _char_tables()
    docs = [t[:max_chars] + "\n" for t in texts]
    raw, starts = _codes(docs)
    direct = np.ones(len(docs), bool)
    ok = simple[raw]
    if not ok.all():  # the texts holding a non-simple character are normalised by Python
        direct = np.logical_and.reduceat(ok, starts)
        docs = [d if keep else _nfkc_lower(d) for d, keep in zip(docs, direct.tolist())]
        raw, starts = _codes(docs)
    doc = np.repeat(np.arange(len(docs), dtype=np.int32), np.diff(np.r_[starts, len(raw)]))
    if direct.all():
        codes, n_out = flat[offset[raw]], length[raw]
    else:
        table = direct[doc]
        codes, n_out = np.where(table, flat[offset[raw]], _fold_table()[raw]), np.where(table, length[raw], 1)
    longer = np.flatnonzero(n_out > 1)  # a character whose normal form is longer ("…" -> "..."): few
    if len(longer):  # its 2nd.. characters go in after its first
        extra = n_out[longer].astype(np.int64) - 1
        first = np.repeat(offset[raw[longer]] + 1 - np.cumsum(extra) + extra, extra)
        after = np.repeat(longer + 1, extra)
        codes = np.insert(codes, after, flat[first + np.arange(len(after))])
        doc = np.insert(doc, after, doc[after - 1])
    # A space after a space, a line break or the start goes (runs and leading spaces) ...
    nl, sp = codes == NEWLINE, codes == SPACE
    keep = ~(sp & np.concatenate(([True], sp[:-1] | nl[:-1])))
    codes, doc = codes[keep], doc[keep]
    # ... then a space before a line break (trailing) and a break after a break or the start.
    nl, sp = codes == NEWLINE, codes == SPACE
    keep = ~((sp & np.concatenate((nl[1:], [True]))) | (nl & np.concatenate(([True], nl[:-1]))))
    return codes[keep], doc[keep]


@dataclass(frozen=True)
class Tokens:
    """A batch as one token stream: ``ids`` (``<s>`` c1 .. cn ``</s>`` per sentence), the text each
    token belongs to, and its ``depth``: how many tokens of its sentence precede it (<s> counted)."""

    ids: np.ndarray  # int32
    doc: np.ndarray  # int32

    @cached_property
    def depth(self) -> np.ndarray:
        """int32; counting reads it, scoring does not (built on first use)."""
        at = np.arange(len(self.ids), dtype=np.int32)
        return at - np.maximum.accumulate(np.where(self.ids == BOS, at, 0))

    @property
    def scored(self) -> np.ndarray:
        """Tokens that are predicted: everything but <s> (KenLM counts </s>)."""
        return self.ids != BOS


def encode(texts: Sequence[str], id_of: np.ndarray, max_chars: int | None = None) -> Tokens:
    """Tokens of a batch; ``id_of`` maps a code point to its token id (``vocab_table``)."""
    codes, doc = normalised_codes(texts, max_chars)
    if not len(codes):
        empty = np.zeros(0, np.int32)
        return Tokens(empty, empty)
    nl = codes == NEWLINE
    start = np.concatenate(([True], nl[:-1]))  # first character of a sentence (none is empty)
    pos = np.arange(len(codes)) + np.cumsum(start)  # room for one <s> before each sentence
    ids = np.empty(len(codes) + int(start.sum()), np.int32)
    ids[pos] = np.where(nl, EOS, id_of[codes])
    ids[pos[start] - 1] = BOS
    docs = np.empty_like(ids)
    docs[pos] = doc
    docs[pos[start] - 1] = doc[start]
    return Tokens(ids, docs)


def vocab_table(vocab: np.ndarray) -> np.ndarray:
    """Code point -> token id: ``vocab[i]`` is id ``i + 3``, every other code point <unk>."""
    table = np.full(0x110000, UNK, np.int32)
    table[vocab.astype(np.int64)] = np.arange(3, len(vocab) + 3, dtype=np.int32)
    return table


def slices(texts: Sequence[str], budget: int = SLICE_CHARS) -> Iterator[tuple[int, int]]:
    """(start, stop) of consecutive runs of ``texts`` of about ``budget`` characters (a longer text alone)."""
    start, size = 0, 0
    for i, t in enumerate(texts):
        size += len(t)
        if size >= budget:
            yield start, i + 1
            start, size = i + 1, 0
    if start < len(texts):
        yield start, len(texts)


# ---------------------------------------------------------------- counting


def char_counts(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(code points, counts) of the normalised characters of ``texts``; NEWLINE counts sentences."""
    codes, _ = normalised_codes(texts)
    return np.unique(codes, return_counts=True)


def choose_vocab(codes: np.ndarray, counts: np.ndarray, max_vocab: int) -> np.ndarray:
    """The ``max_vocab`` most frequent characters (ties: lower code point first), most frequent first."""
    chars = codes != NEWLINE
    codes, counts = np.asarray(codes, np.int64)[chars], np.asarray(counts, np.int64)[chars]
    order = np.lexsort((codes, -counts))[:max_vocab]
    return codes[order].astype(np.uint32)


def check_radix(radix: int, order: int) -> None:
    if radix**order > 2**64:
        raise ValueError(
            f"{order}-grams over {radix} token ids do not fit 64-bit keys: lower max_vocab to at "
            f"most {int(2 ** (64 / order)) - 3} or the order"
        )


def ngram_keys(tokens: Tokens, order: int, radix: int) -> Iterator[tuple[int, np.ndarray]]:
    """(n, key of every n-gram occurrence) for n = 1..order: the n-grams that end at a scored
    token and start at or after its sentence's <s>."""
    ids = tokens.ids.astype(np.uint64)
    key, scored = ids.copy(), tokens.scored
    for n in range(1, order + 1):
        if n > 1:  # key_n(t) = key_{n-1}(t) + ids[t-n+1] * radix**(n-1)
            key[n - 1 :] += ids[: len(ids) - n + 1] * np.uint64(radix ** (n - 1))
        yield n, key[scored & (tokens.depth >= n - 1)]


def batch_counts(
    texts: Sequence[str], id_of: np.ndarray, order: int, radix: int
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(n, unique keys, counts) per order and slice of ``texts``: what each Spark task pre-aggregates."""
    for start, stop in slices(texts):
        for n, keys in ngram_keys(encode(texts[start:stop], id_of), order, radix):
            yield (n, *np.unique(keys, return_counts=True))


def merge_counts(parts: Iterator[tuple[int, np.ndarray, np.ndarray]]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Sum (n, keys, counts) parts into sorted unique keys and counts per order."""
    by_order: dict[int, list] = {}
    for n, keys, counts in parts:
        by_order.setdefault(n, []).append((keys, counts))
    out = {}
    for n, items in by_order.items():
        keys, inverse = np.unique(np.concatenate([k for k, _ in items]), return_inverse=True)
        out[n] = (
            keys,
            np.bincount(inverse, np.concatenate([c for _, c in items]).astype(np.float64), len(keys)).astype(np.int64),
        )
    return out


# ---------------------------------------------------------------- the backoff tables


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


# ---------------------------------------------------------------- estimation (modified Kneser-Ney)


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


# ---------------------------------------------------------------- the model


class FluencyModel:
    """A character n-gram model: ``perplexity_batch`` is the per-document signal. Load with
    ``FluencyModel.load(dir)``; build with ``from_counts`` (Spark training) or ``train_local``."""

    def __init__(self, tables: NgramTables, vocab: np.ndarray, meta: dict[str, Any]):
        self.tables, self.vocab, self.meta = tables, vocab.astype(np.uint32), meta
        self.max_chars: int | None = meta.get("max_chars")
        self._id_of: np.ndarray | None = None

    @property
    def id_of(self) -> np.ndarray:
        """Code point -> token id (a 4.4 MB table, built on first use)."""
        if self._id_of is None:
            self._id_of = vocab_table(self.vocab)
        return self._id_of

    @classmethod
    def from_counts(
        cls,
        raw: dict[int, tuple[np.ndarray, np.ndarray]],
        vocab: np.ndarray,
        order: int,
        min_count: int = 1,
        max_chars: int | None = MAX_CHARS,
        **meta: Any,
    ) -> FluencyModel:
        """Estimate from raw counts (``merge_counts`` of ``batch_counts`` over the reference)."""
        radix = len(vocab) + len(SPECIALS)
        tables, stats = estimate(raw, order, radix, min_count)
        return cls(
            tables,
            vocab,
            {
                "format": FORMAT,
                "tokens": "characters",
                "order": order,
                "vocab_size": len(vocab),
                "radix": radix,
                "min_count": min_count,
                "max_chars": max_chars,
                "normalise_version": NORMALISE_VERSION,
                **stats,
                **meta,
            },
        )

    @classmethod
    def load(cls, model_dir: str | Path, expected_sha256: str | None = None) -> FluencyModel:
        """Refuses (``ModelError``) a directory without both files, a model.npz whose sha256 is not
        the one metadata.json (or ``expected_sha256``) records, and another normalise version."""
        model_dir = Path(model_dir)
        npz, meta_path = model_dir / MODEL_FILE, model_dir / META_FILE
        if not npz.is_file() or not meta_path.is_file():
            raise ModelError(f"{model_dir} is not a fluency model directory (needs {MODEL_FILE} and {META_FILE})")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except ValueError as e:
            raise ModelError(f"{meta_path} is not valid JSON: {e}") from e
        require_sha256(npz, meta.get("sha256"), expected_sha256)
        if meta.get("format") != FORMAT:
            raise ModelError(f"{model_dir} holds format {meta.get('format')!r}, this code reads {FORMAT!r}")
        if meta.get("normalise_version") != NORMALISE_VERSION:
            raise ModelError(
                f"{model_dir} was trained on text normalised by v{meta.get('normalise_version')}, "
                f"this code is v{NORMALISE_VERSION}: retrain it (python -m jobs.train_fluency)"
            )
        with np.load(npz, allow_pickle=False) as z:
            order, radix = int(meta["order"]), int(meta["radix"])
            keys = [np.arange(radix, dtype=np.uint64)] + [z[f"keys_{n}"] for n in range(2, order + 1)]
            tables = NgramTables(
                radix,
                keys,
                [z[f"log_prob_{n}"] for n in range(1, order + 1)],
                [z[f"backoff_{n}"] for n in range(1, order)] + [np.zeros(len(keys[-1]), np.float32)],
            )
            vocab = z["vocab"]
        if len(vocab) + len(SPECIALS) != radix or any(
            len(k) != len(p) or len(k) != len(b) for k, p, b in zip(tables.keys, tables.log_prob, tables.backoff)
        ):
            raise ModelError(f"{npz}: array sizes do not match each other or metadata.json")
        return cls(tables, vocab, meta)

    def save(self, model_dir: str | Path) -> dict[str, Any]:
        """Write model.npz then metadata.json (with model.npz's sha256) into the existing
        ``model_dir`` (a staging directory: publishing is the caller's); returns the metadata."""
        t, model_dir = self.tables, Path(model_dir)
        arrays = {
            "vocab": self.vocab,
            **{f"keys_{n}": t.keys[n - 1] for n in range(2, t.order + 1)},
            **{f"log_prob_{n}": t.log_prob[n - 1] for n in range(1, t.order + 1)},
            **{f"backoff_{n}": t.backoff[n - 1] for n in range(1, t.order)},
        }
        np.savez(model_dir / MODEL_FILE, **arrays)
        self.meta = {**self.meta, "sha256": sha256_file(model_dir / MODEL_FILE)}
        (model_dir / META_FILE).write_text(json.dumps(self.meta, indent=2, ensure_ascii=False), encoding="utf-8")
        return self.meta

    def token_id(self, char: str) -> int:
        return int(self.id_of[ord(char)])

    def ngram_log10(self, ids: Sequence[int]) -> float:
        """log10 p(ids[-1] | ids[:-1]) for token ids (the last ``order`` are used)."""
        ids = list(ids)[-self.tables.order :]
        key = sum(int(w) * self.tables.radix ** (len(ids) - 1 - j) for j, w in enumerate(ids))
        return float(self.tables.query(np.array([key], np.uint64), len(ids))[0])

    def distribution(self, context: Sequence[int]) -> np.ndarray:
        """log10 p(w | context) for every token id w (the last ``order - 1`` of ``context`` are
        used; <s> gets NO_PROB): over the other ids it sums to 1."""
        context, radix = list(context)[-(self.tables.order - 1) :] if self.tables.order > 1 else [], self.tables.radix
        head = sum(int(w) * radix ** (len(context) - j) for j, w in enumerate(context))
        out = self.tables.query(np.uint64(head) + np.arange(radix, dtype=np.uint64), len(context) + 1)
        out[BOS] = NO_PROB
        return out

    def score_batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(sum of log10 p, number of predicted tokens) per text: its sentences' characters and
        their </s>, as KenLM scores a sentence; a text is read up to ``max_chars`` characters."""
        sums, counts = np.zeros(len(texts)), np.zeros(len(texts), np.int64)
        for start, stop in slices(texts):
            tokens = encode(texts[start:stop], self.id_of, self.max_chars)
            logp, scored = self.tables.score(tokens), tokens.scored
            sums[start:stop] = np.bincount(tokens.doc, logp, stop - start)
            counts[start:stop] = np.bincount(tokens.doc[scored], minlength=stop - start)
        return sums, counts

    def perplexity_batch(self, texts: Sequence[str]) -> np.ndarray:
        """10 ** (-sum log10 p / tokens) per text (CCNet's document perplexity); NaN for a text
        with no sentence after normalisation."""
        sums, counts = self.score_batch(texts)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(counts > 0, 10.0 ** (-sums / np.maximum(counts, 1)), np.nan)

    def log_prob(self, text: str) -> tuple[float, int]:
        sums, counts = self.score_batch([text])
        return float(sums[0]), int(counts[0])

    def export_arpa(self, path: str | Path) -> None:
        """The model as an ARPA file (KenLM's ``lmplz`` output format): characters are words, a
        whitespace or unprintable character is written ``<U+XXXX>`` (``arpa_words`` spells a text)."""
        t = self.tables
        names = np.array(list(SPECIALS) + [arpa_name(int(c)) for c in self.vocab], dtype=object)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\\data\\\n" + "".join(f"ngram {n}={len(k)}\n" for n, k in enumerate(t.keys, 1)))
            for n in range(1, t.order + 1):
                f.write(f"\n\\{n}-grams:\n")
                words = [
                    names[(t.keys[n - 1] // np.uint64(t.radix ** (n - 1 - j)) % np.uint64(t.radix)).astype(np.int64)]
                    for j in range(n)
                ]
                bo = t.backoff[n - 1] if n < t.order else None
                for i, logp in enumerate(t.log_prob[n - 1].tolist()):
                    gram = " ".join(w[i] for w in words)
                    f.write(f"{logp:.7g}\t{gram}\t{bo[i]:.7g}\n" if bo is not None else f"{logp:.7g}\t{gram}\n")
            f.write("\n\\end\\\n")


def arpa_name(code: int) -> str:
    ch = chr(code)
    return f"<U+{code:04X}>" if ch.isspace() or not ch.isprintable() else ch


def arpa_words(sentence: str) -> str:
    """A normalised sentence as the ARPA export's space-separated words (for KenLM's ``score``)."""
    return " ".join(arpa_name(ord(c)) for c in sentence)


def train_local(
    texts: Sequence[str],
    order: int = 5,
    max_vocab: int = 7000,
    min_count: int = 1,
    max_chars: int | None = MAX_CHARS,
    **meta: Any,
) -> FluencyModel:
    """The whole training in one process (tests, small references); ``etl.classify.fluency_train`` is the
    Spark form of the same steps."""
    vocab = choose_vocab(*char_counts(texts), max_vocab)
    radix = len(vocab) + len(SPECIALS)
    check_radix(radix, order)
    raw = merge_counts(batch_counts(texts, vocab_table(vocab), order, radix))
    return FluencyModel.from_counts(raw, vocab, order, min_count, max_chars, **meta)
