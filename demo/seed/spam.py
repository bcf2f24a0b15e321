"""The seed's own spam: ten families of junk pages, written from this package's pools
(``spam_words``, ``lexicon``) and nothing of the demo crawl's (no template, word list or keyword
list of ``demo.crawl.inject`` or ``filters/resources``): local-service SEO pages, ads with contact
lines, get-rich-quick, fake medicine, gambling, instant loans, keyword lists, link farms, fragment
soup and ordinary text with spam lines planted in it.

Each family is ``(rng, src) -> (title, paragraphs)`` and varies its shape as well as its words
(lines or prose, separators, contact spellings, length); keyword slots draw from thousands of real
words, so a model learns the kind of page rather than a template. ``src`` supplies held-aside
ordinary text for the families that cut, shuffle or plant into it (``demo.seed.pages.Sources``)."""

from __future__ import annotations

import random
from collections.abc import Callable

from demo.seed.spam_parts import contact, domain, emoji, lines, person, pick, place, sep, thing
from demo.seed.spam_words import (
    AD_WORDS,
    AREAS,
    ASKS,
    BETS,
    BONUSES,
    CLAIMS,
    CURES,
    GAMBLING_WORDS,
    GAMES,
    GIGS,
    ILLNESSES,
    LOAN_APPS,
    LOAN_NAMES,
    LOAN_TERMS,
    LOAN_WORDS,
    MEDICINE_WORDS,
    MENTOR_LINES,
    PATIENTS,
    PAYS,
    PLATFORM_NAMES,
    PLATFORM_SUFFIX,
    PRODUCTS,
    RICH_WORDS,
    SELLING,
    SEO_SITES,
    SPAM_CHROME,
    SURNAMES,
    TAGS,
    TRADES,
)

Content = tuple[str, list[str]]  # a page's title and paragraphs


def _run_on(rng: random.Random, parts: list[str]) -> list[str]:
    """Lines as they are, or run together into one to three paragraphs."""
    if rng.random() < 0.65 or len(parts) < 3:
        return parts
    glue = rng.choice(("，", "。", " ", "！", sep(rng)))
    cuts = sorted(rng.sample(range(1, len(parts)), rng.randint(0, 2)))
    return [glue.join(parts[a:b]) for a, b in zip([0, *cuts], [*cuts, len(parts)])]


def local_seo(rng: random.Random, src) -> Content:
    """A local-service or wholesale SEO page: one keyword (place + thing) stacked with search
    questions, filler prose around it, neighbouring places and a contact block."""
    where, what = place(rng), thing(rng)
    kw, site = where + what, rng.choice(SEO_SITES)
    asks = rng.sample(ASKS, 6)
    title = rng.choice(
        (
            sep(rng).join(kw + a for a in asks[: rng.randint(2, 4)]),
            f"【{kw}】{kw}{asks[0]}-{site}",
            f"{kw}（{asks[0]}）{where}本地{what}推荐",
            f"{where}哪里有{what}？{kw}{asks[1]}",
            f"{kw}{sep(rng)}{what}{asks[2]}{sep(rng)}{site}",
        )
    )
    makers = [
        lambda: f"{kw}{rng.choice(ASKS)}？{kw}{rng.choice(ASKS)}？{emoji(rng)}",
        lambda: (
            f"{where}{rng.choice(AREAS)}{what}，{rng.choice(('专业', '正规', '本地', '老牌'))}{what}{rng.randint(3, 28)}年，"
            f"{rng.choice(('价格公道', '当天到场', '不满意不收费', '先服务后付款', '质量保证'))}，{contact(rng)}"
        ),
        lambda: (
            f"很多朋友在问{kw}{rng.choice(ASKS)}，其实{what}的价格要看具体情况，"
            f"{where}一般在{rng.randint(2, 90) * 10}元左右，具体可以咨询{person(rng)}。"
        ),
        lambda: (
            f"本公司位于{where}{rng.choice(AREAS)}，主营{what}、{thing(rng)}、{thing(rng)}，"
            f"已有{rng.randint(3, 28)}年经验，服务客户{rng.randint(2, 90)}00余家。"
        ),
        lambda: sep(rng).join(f"{place(rng)}{what}" for _ in range(rng.randint(4, 9))),
        lambda: f"{rng.choice(TAGS)}：" + sep(rng).join(f"{kw}{a}" for a in rng.sample(ASKS, rng.randint(3, 7))),
        lambda: f"地址：{where}{rng.choice(AREAS)}{rng.randint(1, 300)}号　{person(rng)}　{contact(rng)}",
        lambda: (
            f"{kw}是{where}地区的{rng.choice(('知名', '专业', '大型'))}{what}{rng.choice(('服务商', '供应商', '厂家', '门店'))}，"
            f"想了解{kw}{rng.choice(ASKS)}的朋友可以看看下面的介绍。"
        ),
        lambda: contact(rng),
    ]
    return title, _run_on(rng, lines(rng, makers, 6, 28))


def contact_ad(rng: random.Random, src) -> Content:
    """A seller's ad: product, selling points, prices and contact lines, as lines with emoji or
    as run-on paragraphs."""
    product = rng.choice(PRODUCTS) if rng.random() < 0.5 else thing(rng)
    price = rng.randint(9, 899)
    makers = [
        lambda: f"{emoji(rng)}{product}{rng.choice(SELLING)}，{rng.choice(SELLING)}{emoji(rng)}",
        lambda: f"原价{price * rng.randint(2, 5)}，现在只要{price}，{rng.choice(SELLING)}",
        lambda: (
            f"需要的{rng.choice(('姐妹', '宝宝们', '朋友', '老板', '亲'))}{rng.choice(('直接', '赶紧', '速度'))}{contact(rng)}"
        ),
        lambda: contact(rng),
        lambda: f"{rng.choice(SPAM_CHROME)}{emoji(rng)}",
        lambda: (
            f"{rng.choice(('实拍', '现货', '新款到', '补货到'))}{product}，{rng.choice(SELLING)}，{rng.choice(SELLING)}"
        ),
        lambda: sep(rng).join(pick(rng, AD_WORDS, SELLING, k=rng.randint(3, 6))),
        lambda: f"{rng.choice(('网址', '官网', '店铺'))}：{domain(rng)}",
    ]
    parts = lines(rng, makers, 5, 18) + [contact(rng)]
    rng.shuffle(parts)
    title = rng.choice(
        (
            f"{product}{rng.choice(SELLING)}",
            f"{emoji(rng)}{product}{sep(rng)}{rng.choice(AD_WORDS)}",
            f"出{product}，{contact(rng)}",
            f"{product}{sep(rng)}{rng.choice(AD_WORDS)}{sep(rng)}{rng.choice(AD_WORDS)}",
        )
    )
    return title, _run_on(rng, parts)


def get_rich(rng: random.Random, src) -> Content:
    """Work-from-home, click-farming and investment schemes: a testimony, promises, a mentor
    and a contact."""
    gig, pay = rng.choice(GIGS), rng.choice(PAYS)
    makers = [
        lambda: f"{rng.choice(GIGS)}，{rng.choice(PAYS)}，{rng.choice(MENTOR_LINES)}",
        lambda: (
            f"我以前是{rng.choice(('上班族', '宝妈', '大学生', '外卖员', '工厂普工'))}，做{gig}{rng.randint(1, 11)}个月，"
            f"现在每个月{rng.randint(1, 9)}万多，{rng.choice(MENTOR_LINES)}。"
        ),
        lambda: f"{emoji(rng)}{rng.choice(PAYS)}{emoji(rng)}{rng.choice(MENTOR_LINES)}",
        lambda: f"{rng.choice(('收益截图', '到账记录', '学员反馈'))}：今天又到账{rng.randint(100, 9999)}元",
        lambda: (
            f"想改变现状的{contact(rng)}，{rng.choice(('备注来意', '备注赚钱', '暗号666', '名额只剩' + str(rng.randint(2, 9)) + '个'))}"
        ),
        lambda: sep(rng).join(pick(rng, RICH_WORDS, PAYS, k=rng.randint(3, 6))),
        lambda: contact(rng),
        lambda: rng.choice(SPAM_CHROME),
    ]
    title = rng.choice(
        (
            f"{gig}{sep(rng)}{pay}",
            f"{pay}！{gig}招人",
            f"在家就能做的{gig}，{pay}",
            f"揭秘：{rng.choice(('普通人', '宝妈', '学生党'))}如何靠{gig}{pay}",
            sep(rng).join(pick(rng, RICH_WORDS, k=3)),
        )
    )
    return title, _run_on(rng, lines(rng, makers, 5, 16))


def fake_medicine(rng: random.Random, src) -> Content:
    """A miracle cure: the illness, the remedy, claims, testimonials, a price and a contact."""
    ill, cure = rng.choice(ILLNESSES), rng.choice(CURES)
    makers = [
        lambda: f"{ill}{rng.choice(('不用愁', '有救了', '别再乱吃药了', '克星来了'))}！{cure}{rng.choice(CLAIMS)}",
        lambda: (
            rng.choice(PATIENTS).format(s=rng.choice(SURNAMES), place=place(rng))
            + f"患{ill}{rng.randint(2, 30)}年，用了{cure}{rng.randint(1, 4)}个疗程，{rng.choice(CLAIMS)}。"
        ),
        lambda: f"{rng.choice(CLAIMS)}，{rng.choice(CLAIMS)}，{rng.choice(CLAIMS)}",
        lambda: (
            f"原价{rng.randint(3, 20)}98元，今天{rng.choice(('特价', '只要', '活动价'))}{rng.randint(1, 9)}98元，"
            f"买{rng.randint(2, 3)}送{rng.randint(1, 2)}"
        ),
        lambda: f"{ill}、{rng.choice(ILLNESSES)}、{rng.choice(ILLNESSES)}都能用，{rng.choice(CLAIMS)}",
        lambda: sep(rng).join(pick(rng, MEDICINE_WORDS, k=rng.randint(3, 6))),
        lambda: f"{rng.choice(('预约', '订货请找', '领取试用装'))}{contact(rng)}",
        lambda: f"{rng.choice(('温馨提示', '特别提醒'))}：{rng.choice(CLAIMS)}，货到付款",
    ]
    title = rng.choice(
        (
            f"{ill}{rng.choice(CLAIMS)}？{cure}",
            f"{cure}{sep(rng)}{ill}{sep(rng)}{rng.choice(CLAIMS)}",
            f"得了{ill}怎么办？老中医：{cure}{rng.choice(CLAIMS)}",
            f"{ill}{sep(rng)}{rng.choice(MEDICINE_WORDS)}{sep(rng)}{rng.choice(MEDICINE_WORDS)}",
        )
    )
    return title, _run_on(rng, lines(rng, makers, 5, 15))


def gambling(rng: random.Random, src) -> Content:
    """An online casino or lottery-plan page: games, betting plans, bonuses, a web address."""
    games = rng.sample(GAMES, rng.randint(2, 5))
    name = rng.choice(PLATFORM_NAMES) + rng.choice(PLATFORM_SUFFIX)
    makers = [
        lambda: f"{name}{rng.choice(('官网', '平台', 'APP', '入口'))}{sep(rng)}{domain(rng)}",
        lambda: f"{'、'.join(games)}{sep(rng)}{rng.choice(BETS)}{sep(rng)}{rng.choice(BETS)}",
        lambda: f"{emoji(rng)}{rng.choice(BONUSES)}，{rng.choice(BONUSES)}{emoji(rng)}",
        lambda: (
            f"{rng.choice(games)}{rng.choice(('计划', '走势图', '开奖结果', '技巧', '公式'))}：第{rng.randint(10, 999)}期 "
            f"{' '.join(str(rng.randint(0, 9)) for _ in range(rng.randint(3, 6)))} {rng.choice(BETS)}"
        ),
        lambda: (
            f"{rng.choice(('今天', '昨晚', '刚刚'))}{rng.choice(('会员', '玩家', '老哥'))}{rng.choice(SURNAMES)}**"
            f"{rng.choice(('赢了', '提款', '中奖'))}{rng.randint(1, 99) * 1000}元"
        ),
        lambda: sep(rng).join(pick(rng, GAMBLING_WORDS, BETS, k=rng.randint(3, 7))),
        lambda: f"{rng.choice(BETS)}，{rng.choice(SPAM_CHROME)}，{contact(rng)}",
        lambda: rng.choice(SPAM_CHROME),
    ]
    title = rng.choice(
        (
            f"{name}{sep(rng)}{games[0]}{sep(rng)}{rng.choice(BONUSES)}",
            f"{games[0]}{rng.choice(('计划', '技巧', '必赢方法'))}_{name}",
            f"{name}官网入口",
            sep(rng).join(pick(rng, GAMBLING_WORDS, GAMES, k=3)),
        )
    )
    return title, _run_on(rng, lines(rng, makers, 5, 18))


def loans(rng: random.Random, src) -> Content:
    """An instant-loan or cash-out page: product names, loose terms, steps and a contact."""
    names = rng.sample(LOAN_NAMES + LOAN_APPS, rng.randint(1, 3))
    steps = iter(range(1, 20))
    makers = [
        lambda: f"{rng.choice(names)}{sep(rng)}{rng.choice(LOAN_TERMS)}{sep(rng)}{rng.choice(LOAN_TERMS)}",
        lambda: f"{emoji(rng)}{rng.choice(LOAN_TERMS)}，{rng.choice(LOAN_TERMS)}，{rng.choice(LOAN_TERMS)}",
        lambda: (
            f"第{next(steps, 9)}步：{rng.choice(('下载APP', '填写资料', '上传身份证', '绑定银行卡', '等待放款', '联系客服'))}"
        ),
        lambda: (
            f"{rng.choice(('急用钱', '缺钱周转', '信用卡还不上', '网贷逾期'))}？{rng.choice(names)}{rng.choice(LOAN_TERMS)}"
        ),
        lambda: (
            f"借{rng.randint(1, 50) * 1000}元，{rng.randint(7, 360)}天，{rng.choice(('利息', '手续费', '日息'))}"
            f"{rng.randint(1, 99)}元，{rng.choice(LOAN_TERMS)}"
        ),
        lambda: sep(rng).join(pick(rng, LOAN_WORDS, LOAN_TERMS, k=rng.randint(3, 7))),
        lambda: f"{rng.choice(('办理', '申请', '下款'))}{contact(rng)}",
        lambda: f"{rng.choice(('下载地址', '申请入口'))}：{domain(rng)}",
        lambda: f"已有{rng.randint(1, 99)}万人借款成功，最高额度{rng.randint(1, 50)}万",
    ]
    title = rng.choice(
        (
            f"{names[0]}{sep(rng)}{rng.choice(LOAN_TERMS)}",
            f"{rng.choice(LOAN_TERMS)}的借款平台有哪些",
            f"{names[0]}官方{sep(rng)}{rng.choice(LOAN_TERMS)}{sep(rng)}{rng.choice(LOAN_TERMS)}",
            sep(rng).join(pick(rng, LOAN_WORDS, k=3)),
        )
    )
    return title, _run_on(rng, lines(rng, makers, 5, 15))


def keyword_list(rng: random.Random, src) -> Content:
    """Nothing but keywords: tag clouds and search-term lists over many places and things."""
    things = [thing(rng) for _ in range(rng.randint(2, 6))]
    places = [place(rng) for _ in range(rng.randint(3, 12))]

    def terms() -> str:
        items = [
            rng.choice(places) + rng.choice(things) + rng.choice(("", "") + ASKS) for _ in range(rng.randint(4, 16))
        ]
        return rng.choice((f"{rng.choice(TAGS)}：", "", "")) + sep(rng).join(items)

    return sep(rng).join(rng.choice(places) + rng.choice(things) for _ in range(3)), [
        terms() for _ in range(rng.randint(3, 14))
    ]


def link_farm(rng: random.Random, src) -> Content:
    """A content-farm index: dozens of titles (keyword titles or headlines lifted from held-aside
    text) with dates and counts, and a pager."""
    things = [thing(rng) for _ in range(rng.randint(2, 5))]
    shapes = (
        "{k}{a}？看完这篇就懂了",
        "{p}{k}{a}（{y}年最新）",
        "{k}的{n}个误区，第{m}个很多人不知道",
        "{k}{a}_{p}{k}{a}",
        "揭秘{k}行业内幕",
        "{k}{a}？内行人告诉你",
        "{y}年{p}{k}{a}一览表",
        "{h}",
    )
    out = []
    for _ in range(rng.randint(10, 35)):
        t = rng.choice(shapes).format(
            k=rng.choice(things),
            a=rng.choice(ASKS),
            p=place(rng),
            y=rng.randint(2015, 2025),
            n=rng.randint(3, 12),
            m=rng.randint(2, 9),
            h=rng.choice(src.aside_titles),
        )
        date = f"{rng.randint(2015, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        out.append(
            rng.choice(("{t} {d}", "· {t}", "[{d}] {t}", "{t}（阅读{v}）", "{t}", "{d} {t}")).format(
                t=t, d=date, v=rng.randint(10, 99999)
            )
        )
    if rng.random() < 0.6:
        out.append(f"第{rng.randint(1, 9)}页/共{rng.randint(10, 500)}页 ‹ 1 2 3 … {rng.randint(20, 99)} ›")
    return f"{things[0]}{sep(rng)}{rng.choice(TAGS)}{sep(rng)}{rng.choice(SEO_SITES)}", out


def _word_salad(rng: random.Random, src) -> str:
    """Real words of held-aside text, shuffled, with spam terms mixed in."""
    words = [w for w in src.segmenter.cut(rng.choice(src.aside_texts)[:400]) if w.strip()]
    rng.shuffle(words)
    for _ in range(rng.randint(2, 8)):
        words.insert(
            rng.randint(0, len(words)), thing(rng) if rng.random() < 0.5 else rng.choice(TRADES + GAMES + LOAN_NAMES)
        )
    return "".join(words[: rng.randint(40, 160)])


def fragment_soup(rng: random.Random, src) -> Content:
    """Spinner output: word salad of real text with spam terms, or pieces cut mid-sentence from
    held-aside text and spam lines, shuffled and glued."""
    if rng.random() < 0.5:
        paras = [_word_salad(rng, src) for _ in range(rng.randint(1, 4))]
        return paras[0][: rng.randint(6, 20)], paras
    pieces = []
    for _ in range(rng.randint(10, 30)):
        text = rng.choice(src.aside_texts) if rng.random() < 0.6 else rng.choice(list(SPAM_LINES.values()))(rng)
        start = rng.randrange(max(1, len(text) - 12))
        pieces.append(text[start : start + rng.randint(5, 30)] + rng.choice(("", " ", "…", "|", "，")))
    rng.shuffle(pieces)
    cuts = sorted(rng.sample(range(1, len(pieces)), rng.randint(0, 3)))
    return pieces[0][: rng.randint(4, 16)], ["".join(pieces[a:b]) for a, b in zip([0, *cuts], [*cuts, len(pieces)])]


# one spam line of each family, for planting into ordinary text
SPAM_LINES: dict[str, Callable[[random.Random], str]] = {
    "seo": lambda rng: f"{place(rng)}{thing(rng)}{rng.choice(ASKS)}，{contact(rng)}",
    "ad": lambda rng: f"{emoji(rng)}{rng.choice(PRODUCTS)}{rng.choice(SELLING)}，{contact(rng)}",
    "rich": lambda rng: f"{rng.choice(GIGS)}，{rng.choice(PAYS)}，{contact(rng)}",
    "medicine": lambda rng: f"{rng.choice(ILLNESSES)}{rng.choice(CLAIMS)}，{rng.choice(CURES)}，{contact(rng)}",
    "gambling": lambda rng: f"{rng.choice(GAMES)}{rng.choice(BONUSES)}，{domain(rng)}",
    "loan": lambda rng: f"{rng.choice(LOAN_NAMES + LOAN_APPS)}{rng.choice(LOAN_TERMS)}，{contact(rng)}",
}


def planted(rng: random.Random, src) -> Content:
    """A short passage of held-aside ordinary text with 3-6 spam lines planted among its
    paragraphs, so the spam is a good part of the page."""
    text_lines = [ln.strip() for ln in rng.choice(src.aside_texts).split("\n") if ln.strip()]
    title, body = (
        (text_lines[0], text_lines[1:]) if len(text_lines) > 1 else (text_lines[0][: rng.randint(8, 24)], text_lines)
    )
    paras = [p[: rng.randint(50, 200)] for p in body[: rng.randint(1, 3)]]
    for _ in range(rng.randint(3, 6)):
        paras.insert(rng.randint(0, len(paras)), rng.choice(list(SPAM_LINES.values()))(rng))
    return title, paras


FAMILIES: dict[str, tuple[float, Callable]] = {  # family -> (share of the spam label, generator)
    "local_seo": (0.14, local_seo),
    "contact_ad": (0.12, contact_ad),
    "get_rich": (0.10, get_rich),
    "fake_medicine": (0.10, fake_medicine),
    "gambling": (0.10, gambling),
    "loan": (0.10, loans),
    "keyword_list": (0.08, keyword_list),
    "link_farm": (0.08, link_farm),
    "fragment_soup": (0.10, fragment_soup),
    "planted": (0.08, planted),
}
