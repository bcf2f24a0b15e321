"""Crawl-level template repetition: how much of a document is made of character n-grams that many
*other* documents of the same crawl also hold.

Spam farms publish thousands of pages from a few templates: the frame of each sentence is fixed and
slot words (a city, a product, a phone number) change. A page of such a farm shares most of its
10-character spans with dozens of other pages, while a page of news, a statute, a poem or a forum
post shares few (quotations, set phrases, a footer). The signal is label-free and knows no family:
it measures the crawl, not a word list. Field practice: CCNet's paragraph hashes (Wenzek et al.
2020 §3.1) and RefinedWeb's line dedup (Penedo et al. 2023 §G.2) remove spans repeated across a
crawl; C4 drops every three-sentence span seen twice (Raffel et al. 2020 §2.2). Here the unit is a
character n-gram after normalisation, so a template survives none of: changed slot words,
punctuation, whitespace, full/half width, digits, script variants already converted by the
cleaning stage.

This module is the per-document part (no Spark): ``sampled_keys`` gives a document's sampled
n-gram keys; the crawl aggregation (``etl.classify.crawl_repeat``) counts, for each key, the
distinct texts that hold it, and ``template_share`` is the share of a document's keys held by at
least ``min_docs`` distinct texts. Exact copies of one text count once (dedup's job, not this
rule's): a text posted ten times is not a template.

Sampling (Broder's mod-m sampling of shingles): only n-grams whose key is 0 mod ``modulus`` are
kept, so the shuffle carries 8 bytes per ``modulus`` characters; the same n-gram is sampled in every
document or in none, so the share is an unbiased estimate of the share of all the document's
distinct n-grams.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from filters.quality_repeat import prefix_hashes, substring_keys
from filters.text import HAN, char_table, nfkc_lower, nfkc_lower_batch

# Characters a span is made of: Han and letters/digits (NFKC, lower case, every digit -> "0").
# Punctuation, symbols and whitespace are dropped, so a template re-punctuated is the same template.
_ALNUM_CACHE: dict[str, np.ndarray] = {}


@dataclass(frozen=True)
class CrawlRepeatConfig:
    enabled: bool = True
    # Span length in characters (Han, letters, digits). 10 is longer than nearly every Chinese set
    # phrase or idiom (4-8 characters) and shorter than a template's fixed stretch between two slots.
    ngram: int = 10
    # Keep the n-grams whose key is 0 mod this (1 = all): 8 bytes of shuffle per ``modulus``
    # characters of text. At 8, a 150-character document still has ~18 sampled spans.
    modulus: int = 8
    # A span is a template span when at least this many distinct texts of the crawl hold it.
    min_docs: int = 5
    # A document is template spam when at least this share of its sampled spans are template
    # spans (and it has at least ``min_keys`` of them, so a short page is not judged on 3 spans).
    max_share: float = 0.6
    min_keys: int = 8

    def __post_init__(self) -> None:
        if self.ngram < 2 or self.modulus < 1 or self.min_docs < 2 or self.min_keys < 1:
            raise ValueError("crawl_repeat: ngram >= 2, modulus >= 1, min_docs >= 2, min_keys >= 1")
        if not 0.0 < self.max_share <= 1.0:
            raise ValueError("crawl_repeat.max_share must be in (0, 1]")


def _alnum_mask(codes: np.ndarray) -> np.ndarray:
    """Han ideographs and Unicode letters/digits (str.isalnum) among ``codes``."""
    table = _alnum_table()
    return table[np.minimum(codes, len(table) - 1)] | ((char_table()[codes] & HAN) != 0)


def _alnum_table() -> np.ndarray:
    t = _ALNUM_CACHE.get("t")
    if t is None:
        t = np.array([chr(c).isalnum() for c in range(0x3000)], dtype=bool)  # BMP up to CJK punct
        _ALNUM_CACHE["t"] = t
    return t


def span_codes(text: str) -> np.ndarray:
    """The code points spans are cut from: NFKC, lower case, letters and digits only, digits as 0."""
    norm = nfkc_lower(text)
    codes = np.frombuffer(norm.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    codes = codes[_alnum_mask(codes)]
    digit = (codes >= 0x30) & (codes <= 0x39)
    return np.where(digit, np.uint32(0x30), codes)


def sampled_keys(text: str, cfg: CrawlRepeatConfig) -> np.ndarray:
    """The distinct sampled n-gram keys of ``text`` (int64, sorted): empty when the text has fewer
    than ``ngram`` span characters."""
    codes = span_codes(text)
    n = len(codes) - cfg.ngram + 1
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.arange(n, dtype=np.int64)
    keys = substring_keys(prefix_hashes(codes), starts, starts + cfg.ngram)
    if cfg.modulus > 1:
        keys = keys[(keys >> np.uint64(40)) % np.uint64(cfg.modulus) == 0]  # high bits: the low ones mix little
    return np.unique(keys).view(np.int64)


CHUNK_CHARS = 1 << 20  # texts are hashed together in chunks of about this many span characters


@dataclass
class BatchKeys:
    """The sampled keys of a batch of texts, back to back: ``keys[i]`` belongs to text
    ``doc[i]`` (distinct within each text, sorted); ``ident[j]``: a 63-bit identity of text
    ``j``'s span characters (exact copies agree); ``n_keys[j]``: how many keys it has."""

    doc: np.ndarray
    keys: np.ndarray
    ident: np.ndarray
    n_keys: np.ndarray


def batch_keys(texts: list[str], cfg: CrawlRepeatConfig) -> BatchKeys:
    """``sampled_keys`` of every text at once (``nfkc_lower_batch``, one mask, one prefix hash per
    chunk of texts): the same keys, several times faster than text by text."""
    norm = nfkc_lower_batch([t or "" for t in texts])
    docs, keys, ident = [], [], np.zeros(len(texts), dtype=np.int64)
    start = 0
    while start < len(norm):
        stop, size = start, 0
        while stop < len(norm) and (size == 0 or size + len(norm[stop]) <= CHUNK_CHARS):
            size += len(norm[stop])
            stop += 1
        d, k, ident[start:stop] = _chunk_keys(norm[start:stop], cfg)
        docs.append(d + start)
        keys.append(k)
        start = stop
    doc = np.concatenate(docs) if docs else np.zeros(0, dtype=np.int64)
    key = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    return BatchKeys(doc, key, ident, np.bincount(doc, minlength=len(texts)))


def _chunk_keys(norm: list[str], cfg: CrawlRepeatConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lengths = np.fromiter(map(len, norm), dtype=np.int64, count=len(norm))
    codes = np.frombuffer("".join(norm).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    owner = np.repeat(np.arange(len(norm)), lengths)
    keep = _alnum_mask(codes)
    codes, owner = codes[keep], owner[keep]
    codes = np.where((codes >= 0x30) & (codes <= 0x39), np.uint32(0x30), codes)
    ends = np.cumsum(np.bincount(owner, minlength=len(norm)))
    begins = ends - np.bincount(owner, minlength=len(norm))
    prefix = prefix_hashes(codes)
    ident = (substring_keys(prefix, begins, ends) >> np.uint64(1)).view(np.int64)
    n = cfg.ngram
    if len(codes) < n:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), ident
    starts = np.flatnonzero(owner[: len(codes) - n + 1] == owner[n - 1 :])  # windows inside one text
    keys = substring_keys(prefix, starts, starts + n)
    if cfg.modulus > 1:
        sampled = (keys >> np.uint64(40)) % np.uint64(cfg.modulus) == 0
        keys, starts = keys[sampled], starts[sampled]
    doc = owner[starts]
    order = np.lexsort((keys, doc))
    doc, keys = doc[order], keys[order]
    fresh = np.ones(len(keys), dtype=bool)
    fresh[1:] = (keys[1:] != keys[:-1]) | (doc[1:] != doc[:-1])
    return doc[fresh], keys[fresh].view(np.int64), ident


def template_share(keys: np.ndarray, repeated: set[int] | np.ndarray) -> float:
    """Share of ``keys`` that are template spans (``repeated``: the keys held by >= min_docs
    distinct texts); NaN when there are no keys."""
    if not len(keys):
        return float("nan")
    rep = np.asarray(sorted(repeated) if isinstance(repeated, set) else repeated, dtype=np.int64)
    return float(np.isin(keys, rep).mean())


def crawl_template_shares(texts: list[str], cfg: CrawlRepeatConfig) -> tuple[np.ndarray, np.ndarray]:
    """The reference implementation of the whole crawl aggregation in one process: (share, number
    of sampled keys) per text. Exact copies (same span codes) count once per key."""
    per_doc = [sampled_keys(t, cfg) for t in texts]
    ident = [hash(span_codes(t).tobytes()) for t in texts]
    holders: dict[int, set[int]] = {}
    for keys, who in zip(per_doc, ident):
        for k in keys.tolist():
            holders.setdefault(k, set()).add(who)
    repeated = np.array(sorted(k for k, s in holders.items() if len(s) >= cfg.min_docs), dtype=np.int64)
    shares = np.array([template_share(k, repeated) for k in per_doc])
    return shares, np.array([len(k) for k in per_doc])


def is_template(share: float, n_keys: int, cfg: CrawlRepeatConfig) -> bool:
    return n_keys >= cfg.min_keys and share >= cfg.max_share
