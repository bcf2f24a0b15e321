"""Which page becomes what: pick the source pages, inject the content classes in counted numbers,
add spam, English pages and duplicates, and give every page its format and (WARC) charset."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

from demo.sources import english_pages, news_pages, review_pages

from .inject import ELIGIBLE, INJECTORS, near_copy, spam_page
from .model import BOILERPLATE_ZH, CHARSETS, SITES, Doc, converter
from .words import WordLists, matcher

MIN_CHARS = 150  # PanGu-α §3.1.1: documents under 150 characters are dropped
NEAR_DUP_MIN_CHARS = 400  # duplicate origins are long enough for a near copy to stay similar

# Formats by position within each kind: 50 % WARC, 30 % JSONL, 20 % WET, and every kind reaches
# all three formats by its third page.
FORMAT_CYCLE = ("warc", "jsonl", "wet", "warc", "jsonl", "warc", "warc", "jsonl", "wet", "warc")

# kind -> (fraction of the Chinese source pages, minimum count)
INJECTED = {  # made from clean source pages by inject.INJECTORS, in this order
    "advertisement": (0.03, 3),
    "sensitive_many": (0.015, 3),
    "sensitive_borderline": (0.01, 3),
    "traditional": (0.03, 8),  # 8 puts >= 4 in WARC: Big5, Big5 labelled GBK, UTF-8
    "nav_bar": (0.03, 3),
    "title_only": (0.01, 3),
    "short": (0.005, 3),  # on top of the source pages that are naturally short
    "duplicated_paragraphs": (0.02, 3),
    "special_symbols": (0.02, 3),
}
EXTRAS = {
    "spam": (0.02, 3),
    "english": (0.01, 3),
    "exact_duplicate": (0.01, 3),
    "near_duplicate": (0.01, 3),
}  # pages added beside the source pages
# charset class -> (fraction of WARC pages, minimum); the others are utf8_header or set by kind
CHARSET_QUOTAS = {
    "gbk_header": (0.04, 1),
    "gb2312_header": (0.03, 1),
    "gb18030_header": (0.02, 1),
    "gbk_meta_only": (0.01, 1),
    "gb2312_meta_only": (0.01, 1),
    "gbk_undeclared": (0.01, 1),
    "utf8_undeclared": (0.01, 1),
    "utf8_meta_only": (0.15, 1),
}
# the kinds a CHARSET_QUOTAS class may go to
GB_KINDS = (
    "clean",
    "advertisement",
    "sensitive_many",
    "sensitive_borderline",
    "nav_bar",
    "duplicated_paragraphs",
    "short",
    "title_only",
    "spam",
)


def _quota(fraction_minimum: tuple[float, int], n: int) -> int:
    fraction, minimum = fraction_minimum
    return max(minimum, round(fraction * n))


def _visible_len(text: str) -> int:
    return sum(not c.isspace() for c in text)


def _encodes(text: str, codec: str) -> bool:
    try:
        text.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


def _inject_content(docs: list[Doc], rng: random.Random, lists: WordLists) -> None:
    """Only pages whose source text hits neither word list are injected, so every count is exact."""
    pool = [d for d in docs if d.kind == "clean" and not d.ad_hits and not d.sensitive_hits]
    for kind, quota in INJECTED.items():
        want = _quota(quota, len(docs))
        eligible = [d for d in pool if d.kind == "clean" and ELIGIBLE.get(kind, bool)(d)]
        if len(eligible) < want:
            raise ValueError(f"only {len(eligible)} pages can become {kind}; raise max_docs")
        for d in rng.sample(eligible, want):
            d.kind = kind
            INJECTORS[kind](d, rng, lists)


def _insert_randomly(docs: list[Doc], extra: list[Doc], rng: random.Random) -> None:
    for d in extra:
        docs.insert(rng.randint(0, len(docs)), d)


def _extra_pages(rng: random.Random, n_source: int) -> list[Doc]:
    extra = [spam_page(rng) for _ in range(_quota(EXTRAS["spam"], n_source))]
    english = english_pages()[: _quota(EXTRAS["english"], n_source)]
    return extra + [Doc(t, p, src, SITES["web"][0], kind="english") for t, p, src in english]


def _assign_formats(docs: list[Doc]) -> None:
    seen: Counter[str] = Counter()
    for d in docs:
        d.fmt = FORMAT_CYCLE[seen[d.kind] % len(FORMAT_CYCLE)]
        seen[d.kind] += 1


def _add_duplicates(docs: list[Doc], rng: random.Random, n_source: int) -> None:
    """Copies of distinct clean pages, each in its origin's format, cycling through the formats."""
    copies, pools = [], {}
    for d in docs:
        if d.kind == "clean" and _visible_len(d.text()) >= NEAR_DUP_MIN_CHARS:
            pools.setdefault(d.fmt, []).append(d)
    for kind in ("exact_duplicate", "near_duplicate"):
        for k in range(_quota(EXTRAS[kind], n_source)):
            pool = pools[FORMAT_CYCLE[k % len(FORMAT_CYCLE)]]
            origin = pool.pop(rng.randrange(len(pool)))
            origin.has_copies = True
            copy = (
                replace(origin, paras=list(origin.paras), kind=kind, origin=origin)
                if kind == "exact_duplicate"
                else near_copy(origin, rng)
            )
            copies.append(copy)
    _insert_randomly(docs, copies, rng)


def _assign_charsets(docs: list[Doc], rng: random.Random) -> None:
    """A page gets a legacy charset only if its text and page furniture encode in it; duplicates
    take their origin's charset and variant."""
    warc = [d for d in docs if d.fmt == "warc"]
    for d in warc:
        d.charset = "utf8_header"
    big5_ok = [
        d
        for d in warc
        if d.kind == "traditional" and _encodes(converter("s2tw").convert(d.text() + BOILERPLATE_ZH), "big5")
    ]
    if len(big5_ok) < 2:
        raise ValueError("need two Big5-encodable traditional WARC pages; raise max_docs")
    for i, d in enumerate(big5_ok[: max(2, len(big5_ok) // 2 + 1)]):
        d.variant, d.charset = "s2tw", ("big5_labelled_gbk" if i == 0 else "big5_header")
    pool = [d for d in warc if d.kind in GB_KINDS and d.origin is None]
    rng.shuffle(pool)
    for charset, quota in CHARSET_QUOTAS.items():
        codec, want = CHARSETS[charset].codec, _quota(quota, len(warc))
        fits = [d for d in pool if d.charset == "utf8_header" and _encodes(d.text() + BOILERPLATE_ZH, codec)]
        for d in fits[:want]:
            d.charset = charset
    for d in docs:
        if d.origin is not None and d.fmt == "warc":
            d.charset, d.variant = d.origin.charset, d.origin.variant


def plan_documents(seed: int, lists: WordLists, max_docs: int | None) -> list[Doc]:
    """Every page of the crawl, with kind, format and (WARC) charset decided, in crawl order."""
    rng = random.Random(f"{seed}:plan")
    pages = news_pages() + review_pages(random.Random(f"{seed}:reviews"))
    rng.shuffle(pages)
    pages = pages[:max_docs] if max_docs is not None else pages
    docs = [Doc(t, list(p), src, rng.choice(SITES[src])) for t, p, src in pages]
    ads, sensitive = matcher(lists.ad_keywords), matcher(lists.sensitive)
    for d in docs:
        text = d.text()
        d.ad_hits, d.sensitive_hits = len(ads.hits(text)), len(sensitive.hits(text))
        if _visible_len(text) < MIN_CHARS:
            d.kind = "short"
    _inject_content(docs, rng, lists)
    n_source = len(docs)
    _insert_randomly(docs, _extra_pages(rng, n_source), rng)
    _assign_formats(docs)
    _add_duplicates(docs, rng, n_source)
    _assign_charsets(docs, rng)
    return docs
