"""Crawl-level template repetition: how much of a document is made of character n-grams that many
*other* documents of the same crawl also hold.

Spam farms publish thousands of pages from a few templates: the frame of each sentence is fixed and
slot words (a city, a product, a phone number) change. A page of such a farm shares most of its
8-character spans with dozens of other pages, while a page of news, a statute, a poem or a forum
post shares few (quotations, set phrases, a footer). A spinner's page (a stock article with words
swapped for synonyms and a keyword planted every few lines) keeps the stretches between its swaps.
The signal is label-free and knows no family: it measures the crawl, not a word list. Field
practice: CCNet's paragraph hashes (Wenzek et al. 2020 §3.1) and RefinedWeb's line dedup (Penedo
et al. 2023 §G.2) remove spans repeated across a crawl; C4 drops every three-sentence span seen
twice (Raffel et al. 2020 §2.2). Here the unit is a character n-gram after normalisation, so a
template survives none of: changed slot words, punctuation, whitespace, full/half width, digits,
script variants already converted by the cleaning stage.

Two units, one share each, the larger one the document's ``template_share``:
- spans: the share of a document's sampled 8-character n-grams held by at least ``min_docs``
  distinct texts (a template's fixed stretches between slots);
- clauses: the share of its characters in clauses (runs of letters and digits between two
  punctuation marks, at least ``min_clause`` long) held by as many texts: a farm that assembles
  pages from a pool of short stock phrases (``质量很好，物流很快，下次还来``) repeats no long
  stretch but every clause.

This module is the per-document part (no Spark): ``document_keys`` (the reference, text by text)
and ``batch_keys`` (the same keys for a whole batch at once) give a document's keys; the crawl
aggregation (``etl.quality.crawl_repeat``) counts, for each key, the distinct texts that hold it.
Exact copies of one text count once (dedup's job, not this rule's): a text posted ten times is not
a template. Keys the reference corpus holds are never template keys (legal formulae, set phrases:
natural text, however often a crawl repeats it).

Sampling (Broder's mod-m sampling of shingles): only n-grams whose key is 0 mod ``modulus`` are
kept, so the shuffle carries 8 bytes per ``modulus`` characters; the same n-gram is sampled in every
document or in none, so the share is an unbiased estimate of the share of all the document's
distinct n-grams.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from filters.quality.repeat import prefix_hashes, substring_keys
from filters.text.chars import HAN, char_table, nfkc_lower, nfkc_lower_batch

SPAN, CLAUSE = 0, 1  # the two kinds of key
_CLAUSE_TAG = np.uint64(0x5BD1E9955BD1E995)  # clause keys live apart from span keys of equal text
_ALNUM_CACHE: dict[str, np.ndarray] = {}
CHUNK_CHARS = 1 << 20  # texts are hashed together in chunks of about this many characters
# what ends a sentence in the normalised text (NFKC: ！？； are !?;); a key's context is its sentence
SENTENCE_ENDS = np.array([ord(c) for c in "。!?;\n\r"], dtype=np.uint32)


@dataclass(frozen=True)
class CrawlRepeatConfig:
    enabled: bool = True
    # Span length in characters (Han, letters, digits). 8 is as long as the longest Chinese set
    # phrases and idioms (4-8 characters; the reference's keys are never template keys) and shorter
    # than the stretch between two words a spinner swaps for synonyms (issue 32: 10 caught 49 % of
    # the blind set's spun articles, 8 catches 78 %; on 7,221 documents of natural text, without
    # the reference's keys, the 99th percentile of the share is 0.33 at 8 and 0.30 at 10).
    ngram: int = 8
    # Keep the n-grams whose key is 0 mod this (1 = all): 8 bytes of shuffle per ``modulus``
    # characters of text. At 8, a 150-character document still has ~18 sampled spans.
    modulus: int = 8
    # Clauses shorter than this are never template clauses (他说, 是的, 谢谢: every text has them);
    # 0 = no clause keys.
    min_clause: int = 5
    # A key is a template key when at least this many distinct texts of the crawl hold it.
    min_docs: int = 5
    # A document is template spam when its spans' or its clauses' template share reaches this (and
    # it has at least ``min_keys`` sampled spans, so a short page is not judged on 3 spans).
    max_share: float = 0.6
    min_keys: int = 8
    # A sentence (text between two of 。！？； or line ends) of at least this many letters and digits
    # that several texts hold verbatim is a copy (a quotation, a syndicated paragraph, an article of
    # a statute), not a template, which is a fixed frame around slots that change: a key is a
    # template key only when the texts holding it hold it in at least two contexts, a context being
    # the long sentence that holds the key in a text, or the text itself (a key in shorter
    # sentences, or in two different ones). 0 = every key's context is its text. Issue 32: on the
    # evaluation crawl, 32 keeps every page of fiction and statutes (8 and 7 of them were
    # templates without it) and every spam family's templates but a few (pirate_video 31 -> 14).
    min_copy: int = 32

    def __post_init__(self) -> None:
        if (
            self.ngram < 2
            or self.modulus < 1
            or self.min_docs < 2
            or self.min_keys < 1
            or self.min_clause < 0
            or self.min_copy < 0
        ):
            raise ValueError(
                "crawl_repeat: ngram >= 2, modulus >= 1, min_docs >= 2, min_keys >= 1, min_clause >= 0, min_copy >= 0"
            )
        if not 0.0 < self.max_share <= 1.0:
            raise ValueError("crawl_repeat.max_share must be in (0, 1]")


def _alnum_mask(codes: np.ndarray) -> np.ndarray:
    """Han ideographs and Unicode letters/digits (str.isalnum) among ``codes``."""
    table = _ALNUM_CACHE.get("t")
    if table is None:
        table = _ALNUM_CACHE["t"] = np.array([chr(c).isalnum() for c in range(0x3000)], dtype=bool)
    return table[np.minimum(codes, len(table) - 1)] | ((char_table()[codes] & HAN) != 0)


def _digits_as_zero(codes: np.ndarray) -> np.ndarray:
    return np.where((codes >= 0x30) & (codes <= 0x39), np.uint32(0x30), codes)


def _sampled(keys: np.ndarray, modulus: int) -> np.ndarray:
    """Which keys are kept: the high bits mix every character (the low ones of a product little)."""
    return (keys >> np.uint64(40)) % np.uint64(modulus) == 0 if modulus > 1 else np.ones(len(keys), dtype=bool)


@dataclass
class DocKeys:
    """One document's keys: distinct sampled span keys (sorted), distinct clause keys (sorted)
    with the characters each covers in the document, and its letters and digits; each key's
    context (``CrawlRepeatConfig.min_copy``): the long sentence that holds every occurrence of it
    in the document, else the document's identity."""

    spans: np.ndarray
    clauses: np.ndarray
    weights: np.ndarray
    chars: int
    span_contexts: np.ndarray
    clause_contexts: np.ndarray


def span_codes(text: str) -> np.ndarray:
    """The code points keys are cut from: NFKC, lower case, letters and digits only, digits as 0."""
    codes = np.frombuffer(nfkc_lower(text).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return _digits_as_zero(codes[_alnum_mask(codes)])


def _identity(keys: np.ndarray) -> np.ndarray:
    """63-bit identities (int64, never negative) of ``substring_keys``: a text's, or a sentence's."""
    return (keys >> np.uint64(1)).view(np.int64)


def document_keys(text: str, cfg: CrawlRepeatConfig) -> DocKeys:
    """The reference: one text's keys, clause by clause and span by span."""
    codes = np.frombuffer(nfkc_lower(text).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    keep = _alnum_mask(codes)
    span = _digits_as_zero(codes[keep])
    prefix = prefix_hashes(span)
    ident = int(_identity(substring_keys(prefix, np.array([0]), np.array([len(span)])))[0])
    # each letter's sentence, and that sentence's identity when it is long enough to be a copy
    sentence = np.cumsum(np.isin(codes, SENTENCE_ENDS))[keep]
    context: dict[int, int] = {}
    for s in np.unique(sentence).tolist():
        where = np.flatnonzero(sentence == s)
        a, b = int(where[0]), int(where[-1]) + 1
        long = cfg.min_copy and b - a >= cfg.min_copy
        context[s] = int(_identity(substring_keys(prefix, np.array([a]), np.array([b])))[0]) if long else ident

    def held_in(found: dict[int, set[int]], k: int) -> int:
        return next(iter(found[k])) if len(found[k]) == 1 else ident

    clauses: dict[int, int] = {}
    clause_seen: dict[int, set[int]] = {}
    positions = np.flatnonzero(keep)
    a = 0
    while a < len(span):
        b = a + 1
        while b < len(span) and positions[b] == positions[b - 1] + 1:
            b += 1
        if cfg.min_clause and b - a >= cfg.min_clause:
            arr = span[a:b]
            key = int((substring_keys(prefix_hashes(arr), np.array([0]), np.array([len(arr)])) ^ _CLAUSE_TAG)[0])
            clauses[key] = clauses.get(key, 0) + b - a
            clause_seen.setdefault(key, set()).add(context[int(sentence[a])])
        a = b
    span_seen: dict[int, set[int]] = {}
    for start in range(len(span) - cfg.ngram + 1):
        key = substring_keys(prefix, np.array([start]), np.array([start + cfg.ngram]))
        if _sampled(key, cfg.modulus)[0]:
            span_seen.setdefault(int(key[0]), set()).add(context[int(sentence[start])])
    sk = np.array(sorted(span_seen), dtype=np.uint64)
    ck = np.array(sorted(clauses), dtype=np.uint64)
    return DocKeys(
        sk.view(np.int64),
        ck.view(np.int64),
        np.array([clauses[k] for k in ck.tolist()], dtype=np.int64),
        len(span),
        np.array([held_in(span_seen, k) for k in sk.tolist()], dtype=np.int64),
        np.array([held_in(clause_seen, k) for k in ck.tolist()], dtype=np.int64),
    )


def sampled_keys(text: str, cfg: CrawlRepeatConfig) -> np.ndarray:
    """The distinct sampled span keys of ``text`` (int64, sorted)."""
    return document_keys(text, cfg).spans


@dataclass
class BatchKeys:
    """The keys of a batch of texts, back to back: key ``keys[i]`` of kind ``kind[i]`` (SPAN or
    CLAUSE) belongs to text ``doc[i]``, covers ``weight[i]`` of its characters (1 for a span) and is
    held there in context ``context[i]`` (``DocKeys``); keys are distinct within a text and kind,
    sorted by (text, kind, key). ``ident[j]``: a 63-bit identity of text ``j``'s letters and digits
    (exact copies agree); ``chars[j]``: their number; ``n_spans[j]``: its sampled span keys."""

    doc: np.ndarray
    kind: np.ndarray
    keys: np.ndarray
    weight: np.ndarray
    ident: np.ndarray
    chars: np.ndarray
    n_spans: np.ndarray
    context: np.ndarray


def batch_keys(texts: list[str], cfg: CrawlRepeatConfig) -> BatchKeys:
    """``document_keys`` of every text at once (``nfkc_lower_batch``, one mask, one prefix hash per
    chunk of texts): the same keys, several times faster than text by text."""
    norm = nfkc_lower_batch([t or "" for t in texts])
    parts, ident, chars = [], np.zeros(len(texts), dtype=np.int64), np.zeros(len(texts), dtype=np.int64)
    start = 0
    while start < len(norm):
        stop, size = start, 0
        while stop < len(norm) and (size == 0 or size + len(norm[stop]) <= CHUNK_CHARS):
            size += len(norm[stop])
            stop += 1
        cols, ident[start:stop], chars[start:stop] = _chunk_keys(norm[start:stop], cfg)
        cols[0] += start
        parts.append(cols)
        start = stop
    doc, kind, keys, weight, context = (
        (np.concatenate([p[i] for p in parts]) for i in range(5)) if parts else [np.zeros(0, np.int64)] * 5
    )
    n_spans = np.bincount(doc[kind == SPAN], minlength=len(texts))
    return BatchKeys(doc, kind, keys, weight, ident, chars, n_spans, context)


def _chunk_keys(norm: list[str], cfg: CrawlRepeatConfig) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    lengths = np.fromiter(map(len, norm), dtype=np.int64, count=len(norm))
    codes = np.frombuffer("".join(norm).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    owner = np.repeat(np.arange(len(norm)), lengths)
    keep = _alnum_mask(codes)
    sentence = np.cumsum(np.isin(codes, SENTENCE_ENDS))[keep] if cfg.min_copy else None
    pos = np.flatnonzero(keep)
    codes, owner = _digits_as_zero(codes[pos]), owner[pos]
    counts = np.bincount(owner, minlength=len(norm))
    ends = np.cumsum(counts)
    prefix = prefix_hashes(codes)
    ident = _identity(substring_keys(prefix, ends - counts, ends))
    # each letter's context: its sentence's identity when the sentence is long enough to be a copy
    context = ident[owner]
    if cfg.min_copy and len(codes):
        first = np.ones(len(codes), dtype=bool)
        first[1:] = (sentence[1:] != sentence[:-1]) | (owner[1:] != owner[:-1])
        sstart = np.flatnonzero(first)
        send = np.append(sstart[1:], len(codes))
        long = (send - sstart) >= cfg.min_copy
        per_sentence = np.where(long, _identity(substring_keys(prefix, sstart, send)), -1)
        mine = np.repeat(per_sentence, send - sstart)
        context = np.where(mine >= 0, mine, context)
    # spans: windows of ngram characters inside one text, sampled
    n = cfg.ngram
    starts = np.flatnonzero(owner[: len(codes) - n + 1] == owner[n - 1 :]) if len(codes) >= n else np.zeros(0, np.int64)
    spans = substring_keys(prefix, starts, starts + n)
    keep = _sampled(spans, cfg.modulus)
    doc, kind, keys, weight, ctx = (
        [owner[starts[keep]]],
        [np.zeros(keep.sum(), np.int64)],
        [spans[keep]],
        [np.ones(keep.sum(), np.int64)],
        [context[starts[keep]]],
    )
    if cfg.min_clause:
        # clauses: maximal runs of letters and digits, contiguous in the text and inside one text
        new = np.ones(len(pos), dtype=bool)
        new[1:] = (pos[1:] != pos[:-1] + 1) | (owner[1:] != owner[:-1])
        cstart = np.flatnonzero(new)
        cend = np.append(cstart[1:], len(pos))
        long = (cend - cstart) >= cfg.min_clause
        cstart, cend = cstart[long], cend[long]
        doc.append(owner[cstart])
        kind.append(np.ones(len(cstart), np.int64))
        keys.append(substring_keys(prefix, cstart, cend) ^ _CLAUSE_TAG)
        weight.append(cend - cstart)
        ctx.append(context[cstart])
    doc, kind, keys, weight, ctx = (np.concatenate(x) for x in (doc, kind, keys, weight, ctx))
    order = np.lexsort((keys, kind, doc))
    doc, kind, keys, weight, ctx = doc[order], kind[order], keys[order], weight[order], ctx[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = (keys[1:] != keys[:-1]) | (kind[1:] != kind[:-1]) | (doc[1:] != doc[:-1])
    group = np.flatnonzero(first)
    weight = np.add.reduceat(weight, group) if len(group) else weight[:0]
    weight[kind[group] == SPAN] = 1
    if len(group):  # a key held in one context in a text keeps it; in two, the text is its context
        lo, hi = np.minimum.reduceat(ctx, group), np.maximum.reduceat(ctx, group)
        ctx = np.where(lo == hi, lo, ident[doc[group]])
    else:
        ctx = ctx[:0]
    return [doc[group], kind[group], keys[group].view(np.int64), weight, ctx], ident, counts


def template_share(keys: DocKeys, held: np.ndarray) -> float:
    """max(share of the span keys in ``held``, share of the characters in clauses in ``held``);
    NaN when the text has no span key. ``held``: sorted template keys (either kind)."""
    if not len(keys.spans):
        return float("nan")
    span = float(np.isin(keys.spans, held).mean())
    clause = float(keys.weights[np.isin(keys.clauses, held)].sum() / keys.chars) if keys.chars else 0.0
    return max(span, clause)


def crawl_template_shares(
    texts: list[str], cfg: CrawlRepeatConfig, reference_keys: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The reference implementation of the whole crawl aggregation in one process: (share, number
    of sampled span keys) per text. Exact copies (same letters and digits) count once per key; a
    template key is held by ``min_docs`` texts in at least two contexts (``min_copy``);
    ``reference_keys`` are never template keys."""
    per_doc = [document_keys(t, cfg) for t in texts]
    ident = [hash(span_codes(t).tobytes()) for t in texts]
    holders: dict[tuple[int, int], set[int]] = {}
    contexts: dict[tuple[int, int], set[int]] = {}
    for keys, who in zip(per_doc, ident):
        for kind, ks, cs in ((SPAN, keys.spans, keys.span_contexts), (CLAUSE, keys.clauses, keys.clause_contexts)):
            for k, c in zip(ks.tolist(), cs.tolist()):
                holders.setdefault((kind, k), set()).add(who)
                contexts.setdefault((kind, k), set()).add(c)
    held = {k for (kind, k), s in holders.items() if len(s) >= cfg.min_docs and len(contexts[kind, k]) > 1}
    if reference_keys is not None:
        held -= set(reference_keys.tolist())
    held_arr = np.array(sorted(held), dtype=np.int64)
    return np.array([template_share(k, held_arr) for k in per_doc]), np.array([len(k.spans) for k in per_doc])


def is_template(share: float, n_keys: int, cfg: CrawlRepeatConfig) -> bool:
    return n_keys >= cfg.min_keys and share >= cfg.max_share
