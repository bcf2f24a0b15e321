"""Spam pages of six families, from a generator written for this set (it shares no template with
demo/crawl or demo/seed), and none with a term of the project's keyword lists:

- ``seo``: keyword stuffing, ``城市+产品最新_城市+产品口碑_城市+产品排行榜`` titles, a ranking of
  made-up shops, and "大家还在搜：城市A产品多少钱、城市B产品…" paragraphs;
- ``gambling``: betting promotions (``猜大小猜单双``, bonus on first deposit);
- ``loan``: instant-loan promotions (``速借｜极速到账``, ``不用抵押不用担保``);
- ``word_salad``: frequent words of jieba's dictionary in random order, punctuated like prose;
- ``contact_ad``: ads whose contact ids are spelled around the lists (徽信, 扣扣, 企鹅号 …) with
  full-width, circled or Chinese-numeral digits;
- ``link_farm``: lists of article titles with dates.

``screen`` matches a page as ``filters.text.keywords`` does (NFKC + lower case); ``spam_documents``
draws a page again (up to ``MAX_DRAWS`` times) while it has a hit, and leaves out one that never
comes clean. Every page has SPAM_MIN_CHARS..SPAM_MAX_CHARS characters.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import lru_cache

from bench.evals.sets.ood import lexicon as lx
from filters.text.keywords import AD_KEYWORDS_FILE, SENSITIVE_DIR, KeywordMatcher, read_list, read_lists_dir

SPAM_MIN_CHARS, SPAM_MAX_CHARS = 200, 1500  # the brief's page length range
MAX_DRAWS = 20
FULLWIDTH_DIGITS = "０１２３４５６７８９"
CIRCLED_DIGITS = "⓪①②③④⑤⑥⑦⑧⑨"
SPOKEN_DIGITS = "零幺二三四五六七八九"  # 1 read as 幺, as in phone numbers


@lru_cache(maxsize=1)
def keyword_matcher() -> KeywordMatcher:
    """The ad-keyword list and every sensitive-word list the cleaning rules use."""
    return KeywordMatcher([read_list(AD_KEYWORDS_FILE, category="advertisement"), *read_lists_dir(SENSITIVE_DIR)])


def screen(text: str) -> set[str]:
    """The keyword-list terms found in ``text`` (NFKC + lower case, as the rules match)."""
    return set().union(*keyword_matcher().hits(text).values())


def _fill(rng: random.Random, make: Callable[[], str], head: list[str] | None = None) -> str:
    """Paragraphs from ``make`` until a length drawn from the page range; cut at a paragraph."""
    target = rng.randint(SPAM_MIN_CHARS + 50, SPAM_MAX_CHARS - 100)
    paras = list(head or [])
    while sum(map(len, paras)) + len(paras) < target:
        paras.append(make())
    while len(paras) > 1 and sum(map(len, paras)) + len(paras) > SPAM_MAX_CHARS:
        paras.pop()
    return "\n".join(paras)


def _brand(rng: random.Random, city: str) -> str:
    return city + "".join(rng.sample(lx.BRAND_SYLLABLES, 2)) + rng.choice(lx.BRAND_SUFFIXES)


def seo_page(rng: random.Random) -> tuple[str, str]:
    city, product = rng.choice(lx.CITIES), rng.choice(lx.PRODUCTS)
    key = city + product
    suffixes = rng.sample(lx.SEO_SUFFIXES, 3)
    title = "_".join(key + s for s in suffixes)
    year = rng.randint(2019, 2025)

    def para() -> str:
        kind = rng.random()
        if kind < 0.35:
            others = rng.sample(lx.CITIES, rng.randint(6, 12))
            return "大家还在搜：" + "、".join(c + product + rng.choice(lx.SEARCH_SUFFIXES) for c in others)
        if kind < 0.6:
            return "".join(f"{i}、{_brand(rng, city)}{product}" for i in range(1, rng.randint(4, 9)))
        return (
            f"{key}哪家好？{key}{rng.choice(lx.SEARCH_SUFFIXES)}？本页为您整理{year}年{key}"
            f"{rng.choice(suffixes)}，{key}口碑排名前十名单，{key}{rng.choice(lx.SEO_SUFFIXES)}一网打尽。"
        )

    return title, _fill(rng, para, [title, f"{key}{suffixes[0]}{key}{suffixes[1]}{key}{suffixes[2]}"])


def gambling_page(rng: random.Random) -> tuple[str, str]:
    game = rng.choice(lx.GAME_NAMES)
    title = f"{game}官方｜猜大小猜单双｜一分钟开奖"
    return title, _fill(
        rng,
        lambda: "".join(rng.sample(lx.GAME_LINES, rng.randint(2, 4))),
        [title, f"{game}计划群，今日第{rng.randint(100, 999)}期开奖结果已公布。"],
    )


def loan_page(rng: random.Random) -> tuple[str, str]:
    brand = rng.choice(lx.LOAN_BRANDS)
    title = f"{brand}｜速借｜极速到账｜不用抵押不用担保"
    return title, _fill(
        rng,
        lambda: "".join(rng.sample(lx.LOAN_LINES, rng.randint(2, 4))),
        [title, f"{brand}已为{rng.randint(10, 999)}万用户解决燃眉之急。"],
    )


def word_salad_page(rng: random.Random) -> tuple[str, str]:
    words = lx.salad_words()

    def sentence() -> str:
        groups = ["".join(rng.choices(words, k=rng.randint(2, 5))) for _ in range(rng.randint(2, 4))]
        return "，".join(groups) + rng.choice("。。。！？")

    title = "".join(rng.choices(words, k=rng.randint(3, 5)))
    return title, _fill(rng, lambda: "".join(sentence() for _ in range(rng.randint(2, 5))), [title])


def contact_id(rng: random.Random) -> str:
    """A contact name from ``CONTACT_NAMES`` and an id with disguised digits."""
    digits = [rng.randrange(10) for _ in range(rng.randint(7, 10))]
    alphabet = rng.choice((FULLWIDTH_DIGITS, CIRCLED_DIGITS, SPOKEN_DIGITS))
    letters = "".join(rng.choices("abcdefghjkmnpqrstwxyz", k=rng.randint(0, 3)))
    return f"{rng.choice(lx.CONTACT_NAMES)}：{letters}{''.join(alphabet[d] for d in digits)}"


def contact_ad_page(rng: random.Random) -> tuple[str, str]:
    goods = rng.choice(lx.AD_GOODS)
    title = f"{goods}，{contact_id(rng)}"

    def para() -> str:
        lines = "".join(rng.sample(lx.AD_LINES, rng.randint(2, 3)))
        return f"{lines}有意者请联系{contact_id(rng)}" if rng.random() < 0.5 else lines

    return title, _fill(rng, para, [title, f"专业做{goods}{rng.randint(3, 12)}年，{contact_id(rng)}"])


def link_farm_page(rng: random.Random) -> tuple[str, str]:
    product = rng.choice(lx.PRODUCTS)
    title = f"{product}资讯_{product}知识大全_第{rng.randint(2, 60)}页"

    def item() -> str:
        headline = rng.choice(lx.FARM_PATTERNS).format(
            city=rng.choice(lx.CITIES),
            product=rng.choice((product, rng.choice(lx.PRODUCTS))),
            year=rng.randint(2018, 2025),
        )
        y, m, d = rng.randint(2018, 2025), rng.randint(1, 12), rng.randint(1, 28)
        date = rng.choice((f"{m:02d}-{d:02d}", f"{m}月{d}日", f"{y}年{m}月{d}日"))  # Han-heavy dates
        return f"{headline}　{date}"

    return title, _fill(rng, item, [title])


FAMILIES: dict[str, Callable[[random.Random], tuple[str, str]]] = {
    "seo": seo_page,
    "gambling": gambling_page,
    "loan": loan_page,
    "word_salad": word_salad_page,
    "contact_ad": contact_ad_page,
    "link_farm": link_farm_page,
}


def spam_documents(rng: random.Random, per_family: int) -> tuple[list[dict], dict[str, int]]:
    """``per_family`` pages of each family (fewer where a page never comes clean), and the number
    of draws thrown away per family because they had a keyword-list term."""
    docs, redrawn = [], {}
    for family, make in FAMILIES.items():
        redrawn[family] = 0
        for _ in range(per_family):
            for _draw in range(MAX_DRAWS):
                title, text = make(rng)
                if SPAM_MIN_CHARS <= len(text) <= SPAM_MAX_CHARS and not screen(title + "\n" + text):
                    docs.append({"title": title, "text": text, "source": f"ood-generator:{family}", "family": family})
                    break
                redrawn[family] += 1
    return docs, redrawn
