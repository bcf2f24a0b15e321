"""The seed's own spam: ten families of junk pages, written from this package's pools
(``spam_words``) and nothing of the demo crawl's (no template, word list or keyword list of
``demo.crawl.inject`` or ``filters/resources``): local-service SEO pages, ads with contact lines,
get-rich-quick, fake medicine, gambling, instant loans, keyword lists, link farms, fragment soup
and ordinary text with spam lines planted in it.

Each family is ``(rng, src) -> (title, paragraphs)`` and varies its shape as well as its words
(lines or prose, separators, contact spellings, length), so a model learns the kind of page rather
than a template. ``src`` supplies held-aside ordinary text for the families that cut or plant
into it (``demo.seed.pages.Sources``)."""

from __future__ import annotations

import random
from collections.abc import Callable

from demo.seed.spam_words import (AREAS, ASKS, BETS, BONUSES, CLAIMS, CN_DIGITS, CURES, DOMAINS, GAMES,
                                  GIGS, GOODS, ILLNESSES, LOAN_NAMES, LOAN_TERMS, MENTOR_LINES, PATIENTS,
                                  PAYS, PHONE, PLACES, PRODUCTS, QQ, SELLING, SEO_SITES, SPAM_CHROME,
                                  SURNAMES, TAGS, TITLES, TRADES, WECHAT)

Content = tuple[str, list[str]]  # a page's title and paragraphs
FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
SEPARATORS = ("_", "-", "|", "，", " ", "、", "——", "/")
EMOJI = ("🔥", "✅", "👉", "💰", "❤", "⭐", "🎁", "📞", "‼", "★", "√", "→")


# --- small pieces ----------------------------------------------------------------------------------

def number(rng: random.Random, digits: str) -> str:
    """digits written as spammers write them to dodge filters: grouped, spaced, dotted,
    full-width, in Han numerals or a mix."""
    style = rng.choice(("plain", "plain", "dash", "space", "dot", "wide", "han", "mixed"))
    if style == "dash" and len(digits) == 11:
        return f"{digits[:3]}-{digits[3:7]}-{digits[7:]}"
    if style == "space":
        return " ".join(digits[i:i + 4] for i in range(0, len(digits), 4))
    if style == "dot":
        return ".".join(digits[i:i + 3] for i in range(0, len(digits), 3))
    if style == "wide":
        return digits.translate(FULL_WIDTH)
    if style == "han":
        return "".join(CN_DIGITS[int(d)] for d in digits)
    if style == "mixed":
        return "".join(CN_DIGITS[int(d)] if rng.random() < 0.4 else d for d in digits)
    return digits


def mobile(rng: random.Random) -> str:
    return f"1{rng.choice('3456789')}{rng.randrange(10 ** 9):09d}"


def contact(rng: random.Random) -> str:
    """One contact line: phone, WeChat or QQ in one of many spellings."""
    roll = rng.random()
    if roll < 0.4:
        return f"{rng.choice(PHONE)}{rng.choice('：: ')}{number(rng, mobile(rng))}"
    if roll < 0.75:
        handle = rng.choice((number(rng, mobile(rng)),
                             f"{rng.choice(('ab', 'vip', 'hao', 'kk', 'zz', 'xiao', 'love'))}{rng.randrange(10 ** 5, 10 ** 8)}"))
        return f"{rng.choice(('联系', '', '找我', '搜'))}{rng.choice(WECHAT)}{rng.choice('：: 号')}{handle}"
    return f"{rng.choice(QQ)}{rng.choice('：: ')}{number(rng, str(rng.randrange(10 ** 5, 10 ** 10)))}"


def domain(rng: random.Random) -> str:
    name = "".join(rng.choice("abcdefghjkmnpqrstwxyz") for _ in range(rng.randint(3, 7)))
    host = rng.choice(("www.", "m.", "", "")) + name + str(rng.randint(1, 999) if rng.random() < 0.5 else "")
    return f"{host}.{rng.choice(DOMAINS)}"


def person(rng: random.Random) -> str:
    return rng.choice(SURNAMES) + rng.choice(TITLES)


def sep(rng: random.Random) -> str:
    return rng.choice(SEPARATORS)


def emoji(rng: random.Random) -> str:
    return rng.choice(EMOJI) * rng.randint(0, 3) if rng.random() < 0.4 else ""


def _lines(rng: random.Random, makers: list[Callable[[], str]], lo: int, hi: int) -> list[str]:
    return [rng.choice(makers)() for _ in range(rng.randint(lo, hi))]


# --- families ------------------------------------------------------------------------------------

def local_seo(rng: random.Random, src) -> Content:
    """A local-service or wholesale SEO page: one keyword (place + trade or goods) stacked with
    search questions, filler prose around it, neighbouring places and a contact block."""
    place, thing = rng.choice(PLACES), rng.choice(TRADES + GOODS)
    kw, years, site = place + thing, rng.randint(3, 28), rng.choice(SEO_SITES)
    asks = rng.sample(ASKS, 6)
    title = rng.choice((f"{kw}{asks[0]}{sep(rng)}{kw}{asks[1]}{sep(rng)}{kw}{asks[2]}",
                        f"【{kw}】{kw}{asks[0]}-{site}", f"{kw}（{asks[0]}）{place}本地{thing}推荐",
                        f"{place}哪里有{thing}？{kw}{asks[1]}"))
    makers = [
        lambda: f"{kw}{rng.choice(ASKS)}？{kw}{rng.choice(ASKS)}？{emoji(rng)}",
        lambda: f"{place}{rng.choice(AREAS)}{thing}，{rng.choice(('专业', '正规', '本地', '老牌'))}{thing}{rng.randint(3, 28)}年，"
                f"{rng.choice(('价格公道', '当天到场', '不满意不收费', '先服务后付款'))}，{contact(rng)}",
        lambda: f"很多朋友在问{kw}{rng.choice(ASKS)}，其实{thing}的价格要看具体情况，"
                f"{place}一般在{rng.randint(2, 90) * 10}元左右，具体可以咨询{person(rng)}。",
        lambda: f"本公司位于{place}{rng.choice(AREAS)}，主营{thing}、{rng.choice(TRADES + GOODS)}、{rng.choice(TRADES + GOODS)}，"
                f"已有{years}年经验，服务客户{rng.randint(2, 90)}00余家。",
        lambda: sep(rng).join(f"{p}{thing}" for p in rng.sample(PLACES, rng.randint(4, 9))),
        lambda: f"{rng.choice(TAGS)}：" + sep(rng).join(f"{kw}{a}" for a in rng.sample(ASKS, rng.randint(3, 7))),
        lambda: f"地址：{place}{rng.choice(AREAS)}{rng.randint(1, 300)}号　{person(rng)}　{contact(rng)}",
        lambda: contact(rng),
    ]
    return title, _lines(rng, makers, 6, 28)


def contact_ad(rng: random.Random, src) -> Content:
    """A seller's ad: product, selling points, prices and contact lines, as lines with emoji or
    as one run-on paragraph."""
    product = rng.choice(PRODUCTS)
    price = rng.randint(9, 899)
    makers = [
        lambda: f"{emoji(rng)}{product}{rng.choice(SELLING)}，{rng.choice(SELLING)}{emoji(rng)}",
        lambda: f"原价{price * rng.randint(2, 5)}，现在只要{price}，{rng.choice(SELLING)}",
        lambda: f"需要的{rng.choice(('姐妹', '宝宝们', '朋友', '老板', '亲'))}{rng.choice(('直接', '赶紧', '速度'))}{contact(rng)}",
        lambda: contact(rng),
        lambda: f"{rng.choice(SPAM_CHROME)}{emoji(rng)}",
        lambda: f"{rng.choice(('实拍', '现货', '新款到', '补货到'))}{product}，{rng.choice(SELLING)}，{rng.choice(SELLING)}",
        lambda: f"{rng.choice(('网址', '官网', '店铺'))}：{domain(rng)}",
    ]
    lines = _lines(rng, makers, 5, 18) + [contact(rng)]
    rng.shuffle(lines)
    title = rng.choice((f"{product}{rng.choice(SELLING)}", f"{emoji(rng)}{product}{sep(rng)}{rng.choice(SELLING)}",
                        f"出{product}，{contact(rng)}"))
    if rng.random() < 0.35:
        return title, ["，".join(lines[:len(lines) // 2]), "，".join(lines[len(lines) // 2:])]
    return title, lines


def get_rich(rng: random.Random, src) -> Content:
    """Work-from-home, click-farming and investment schemes: a testimony, promises, a mentor
    and a contact."""
    gig, pay = rng.choice(GIGS), rng.choice(PAYS)
    makers = [
        lambda: f"{rng.choice(GIGS)}，{rng.choice(PAYS)}，{rng.choice(MENTOR_LINES)}",
        lambda: f"我以前是{rng.choice(('上班族', '宝妈', '大学生', '外卖员', '工厂普工'))}，做{gig}{rng.randint(1, 11)}个月，"
                f"现在每个月{rng.randint(1, 9)}万多，{rng.choice(MENTOR_LINES)}。",
        lambda: f"{emoji(rng)}{rng.choice(PAYS)}{emoji(rng)}{rng.choice(MENTOR_LINES)}",
        lambda: f"{rng.choice(('收益截图', '到账记录', '学员反馈'))}：今天又到账{rng.randint(100, 9999)}元",
        lambda: f"想改变现状的{contact(rng)}，{rng.choice(('备注来意', '备注赚钱', '暗号666', '名额只剩' + str(rng.randint(2, 9)) + '个'))}",
        lambda: contact(rng),
        lambda: rng.choice(SPAM_CHROME),
    ]
    title = rng.choice((f"{gig}{sep(rng)}{pay}", f"{pay}！{gig}招人", f"在家就能做的{gig}，{pay}",
                        f"揭秘：{rng.choice(('普通人', '宝妈', '学生党'))}如何靠{gig}{pay}"))
    return title, _lines(rng, makers, 5, 16)


def fake_medicine(rng: random.Random, src) -> Content:
    """A miracle cure: the illness, the remedy, claims, testimonials, a price and a contact."""
    ill, cure = rng.choice(ILLNESSES), rng.choice(CURES)
    makers = [
        lambda: f"{ill}{rng.choice(('不用愁', '有救了', '别再乱吃药了', '克星来了'))}！{cure}{rng.choice(CLAIMS)}",
        lambda: rng.choice(PATIENTS).format(s=rng.choice(SURNAMES), place=rng.choice(PLACES))
                + f"患{ill}{rng.randint(2, 30)}年，用了{cure}{rng.randint(1, 4)}个疗程，{rng.choice(CLAIMS)}。",
        lambda: f"{rng.choice(CLAIMS)}，{rng.choice(CLAIMS)}，{rng.choice(CLAIMS)}",
        lambda: f"原价{rng.randint(3, 20)}98元，今天{rng.choice(('特价', '只要', '活动价'))}{rng.randint(1, 9)}98元，"
                f"买{rng.randint(2, 3)}送{rng.randint(1, 2)}",
        lambda: f"{ill}、{rng.choice(ILLNESSES)}、{rng.choice(ILLNESSES)}都能用，{rng.choice(CLAIMS)}",
        lambda: f"{rng.choice(('预约', '订货请找', '领取试用装'))}{contact(rng)}",
        lambda: f"{rng.choice(('温馨提示', '特别提醒'))}：{rng.choice(CLAIMS)}，货到付款",
    ]
    title = rng.choice((f"{ill}{rng.choice(CLAIMS)}？{cure}", f"{cure}{sep(rng)}{ill}{sep(rng)}{rng.choice(CLAIMS)}",
                        f"得了{ill}怎么办？老中医：{cure}{rng.choice(CLAIMS)}"))
    return title, _lines(rng, makers, 5, 15)


def gambling(rng: random.Random, src) -> Content:
    """An online casino or lottery-plan page: games, betting plans, bonuses, a web address."""
    games = rng.sample(GAMES, rng.randint(2, 5))
    name = rng.choice(("皇冠", "金沙", "威尼斯人", "永利", "鸿运", "大发", "银河", "888", "365")) + rng.choice(
        ("娱乐", "国际", "彩票", "棋牌", "体育", "官方"))
    makers = [
        lambda: f"{name}{rng.choice(('官网', '平台', 'APP'))}{sep(rng)}{domain(rng)}",
        lambda: f"{'、'.join(games)}{sep(rng)}{rng.choice(BETS)}{sep(rng)}{rng.choice(BETS)}",
        lambda: f"{emoji(rng)}{rng.choice(BONUSES)}，{rng.choice(BONUSES)}{emoji(rng)}",
        lambda: f"{rng.choice(games)}{rng.choice(('计划', '走势图', '开奖结果', '技巧', '公式'))}：第{rng.randint(10, 999)}期 "
                f"{' '.join(str(rng.randint(0, 9)) for _ in range(rng.randint(3, 6)))} {rng.choice(BETS)}",
        lambda: f"{rng.choice(('今天', '昨晚', '刚刚'))}{rng.choice(('会员', '玩家', '老哥'))}{rng.choice(SURNAMES)}**"
                f"{rng.choice(('赢了', '提款', '中奖'))}{rng.randint(1, 99) * 1000}元",
        lambda: f"{rng.choice(BETS)}，{rng.choice(SPAM_CHROME)}，{contact(rng)}",
        lambda: rng.choice(SPAM_CHROME),
    ]
    title = rng.choice((f"{name}{sep(rng)}{games[0]}{sep(rng)}{rng.choice(BONUSES)}",
                        f"{games[0]}{rng.choice(('计划', '技巧', '必赢方法'))}_{name}", f"{name}官网入口"))
    return title, _lines(rng, makers, 5, 18)


def loans(rng: random.Random, src) -> Content:
    """An instant-loan or cash-out page: product names, loose terms, steps and a contact."""
    names = rng.sample(LOAN_NAMES, rng.randint(1, 3))
    steps = iter(range(1, 20))
    makers = [
        lambda: f"{rng.choice(names)}{sep(rng)}{rng.choice(LOAN_TERMS)}{sep(rng)}{rng.choice(LOAN_TERMS)}",
        lambda: f"{emoji(rng)}{rng.choice(LOAN_TERMS)}，{rng.choice(LOAN_TERMS)}，{rng.choice(LOAN_TERMS)}",
        lambda: f"第{next(steps, 9)}步：{rng.choice(('下载APP', '填写资料', '上传身份证', '绑定银行卡', '等待放款', '联系客服'))}",
        lambda: f"{rng.choice(('急用钱', '缺钱周转', '信用卡还不上', '网贷逾期'))}？{rng.choice(names)}{rng.choice(LOAN_TERMS)}",
        lambda: f"{rng.choice(('办理', '申请', '下款'))}{contact(rng)}",
        lambda: f"{rng.choice(('下载地址', '申请入口'))}：{domain(rng)}",
        lambda: f"已有{rng.randint(1, 99)}万人借款成功，最高额度{rng.randint(1, 50)}万",
    ]
    title = rng.choice((f"{names[0]}{sep(rng)}{rng.choice(LOAN_TERMS)}", f"{rng.choice(LOAN_TERMS)}的借款平台有哪些",
                        f"{names[0]}官方{sep(rng)}{rng.choice(LOAN_TERMS)}{sep(rng)}{rng.choice(LOAN_TERMS)}"))
    return title, _lines(rng, makers, 5, 15)


def keyword_list(rng: random.Random, src) -> Content:
    """Nothing but keywords: tag clouds and search-term lists over many places and things."""
    things = rng.sample(TRADES + GOODS + PRODUCTS + ILLNESSES + GAMES, rng.randint(2, 6))
    places = rng.sample(PLACES, rng.randint(3, 12))

    def terms() -> str:
        n = rng.randint(4, 16)
        items = [rng.choice(places) + rng.choice(things) + rng.choice(("",) + ASKS) for _ in range(n)]
        return rng.choice((f"{rng.choice(TAGS)}：", "", "")) + sep(rng).join(items)

    return sep(rng).join(rng.choice(places) + rng.choice(things) for _ in range(3)), [
        terms() for _ in range(rng.randint(3, 14))]


def link_farm(rng: random.Random, src) -> Content:
    """A content-farm index: dozens of keyword titles with dates and counts, a pager."""
    things = rng.sample(TRADES + GOODS + PRODUCTS + ILLNESSES, rng.randint(2, 5))
    shapes = ("{k}{a}？看完这篇就懂了", "{p}{k}{a}（{y}年最新）", "{k}的{n}个误区，第{m}个很多人不知道",
              "{k}{a}_{p}{k}{a}", "揭秘{k}行业内幕", "{k}{a}？内行人告诉你", "{y}年{p}{k}{a}一览表")
    lines = []
    for _ in range(rng.randint(10, 35)):
        t = rng.choice(shapes).format(k=rng.choice(things), a=rng.choice(ASKS), p=rng.choice(PLACES),
                                      y=rng.randint(2015, 2025), n=rng.randint(3, 12), m=rng.randint(2, 9))
        date = f"{rng.randint(2015, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        lines.append(rng.choice(("{t} {d}", "· {t}", "[{d}] {t}", "{t}（阅读{v}）", "{t}")).format(
            t=t, d=date, v=rng.randint(10, 99999)))
    if rng.random() < 0.6:
        lines.append(f"第{rng.randint(1, 9)}页/共{rng.randint(10, 500)}页 ‹ 1 2 3 … {rng.randint(20, 99)} ›")
    return f"{things[0]}{sep(rng)}{rng.choice(TAGS)}{sep(rng)}{rng.choice(SEO_SITES)}", lines


def _word_salad(rng: random.Random, src) -> str:
    """Real words of held-aside text, shuffled in runs, with spam terms mixed in."""
    words = src.segmenter.cut(rng.choice(src.aside_texts)[:400])
    words = [w for w in words if w.strip()]
    rng.shuffle(words)
    spice = [rng.choice(TRADES + GOODS + PRODUCTS + GAMES + LOAN_NAMES) for _ in range(rng.randint(2, 8))]
    for s in spice:
        words.insert(rng.randint(0, len(words)), s)
    return "".join(words[:rng.randint(40, 160)])


def fragment_soup(rng: random.Random, src) -> Content:
    """Spinner output: word salad of real text with spam terms, or pieces cut mid-sentence from
    held-aside text and spam lines, shuffled and glued."""
    if rng.random() < 0.5:
        paras = [_word_salad(rng, src) for _ in range(rng.randint(1, 4))]
        return paras[0][:rng.randint(6, 20)], paras
    pieces = []
    for _ in range(rng.randint(10, 30)):
        text = (rng.choice(src.aside_texts) if rng.random() < 0.6
                else rng.choice(list(SPAM_LINES.values()))(rng))
        start = rng.randrange(max(1, len(text) - 12))
        pieces.append(text[start:start + rng.randint(5, 30)] + rng.choice(("", " ", "…", "|", "，")))
    rng.shuffle(pieces)
    cuts = sorted(rng.sample(range(1, len(pieces)), rng.randint(0, 3)))
    return pieces[0][:rng.randint(4, 16)], ["".join(pieces[a:b]) for a, b in zip([0, *cuts], [*cuts, len(pieces)])]


# one spam line of each family, for planting into ordinary text
SPAM_LINES: dict[str, Callable[[random.Random], str]] = {
    "seo": lambda rng: f"{rng.choice(PLACES)}{rng.choice(TRADES)}{rng.choice(ASKS)}，{contact(rng)}",
    "ad": lambda rng: f"{emoji(rng)}{rng.choice(PRODUCTS)}{rng.choice(SELLING)}，{contact(rng)}",
    "rich": lambda rng: f"{rng.choice(GIGS)}，{rng.choice(PAYS)}，{contact(rng)}",
    "medicine": lambda rng: f"{rng.choice(ILLNESSES)}{rng.choice(CLAIMS)}，{rng.choice(CURES)}，{contact(rng)}",
    "gambling": lambda rng: f"{rng.choice(GAMES)}{rng.choice(BONUSES)}，{domain(rng)}",
    "loan": lambda rng: f"{rng.choice(LOAN_NAMES)}{rng.choice(LOAN_TERMS)}，{contact(rng)}",
}


def planted(rng: random.Random, src) -> Content:
    """A short passage of held-aside ordinary text with 3-6 spam lines planted among its
    paragraphs, so the spam is a good part of the page."""
    lines = [ln.strip() for ln in rng.choice(src.aside_texts).split("\n") if ln.strip()]
    title, body = (lines[0], lines[1:]) if len(lines) > 1 else (lines[0][:rng.randint(8, 24)], lines)
    paras = [p[:rng.randint(50, 200)] for p in body[:rng.randint(1, 3)]]
    for _ in range(rng.randint(3, 6)):
        paras.insert(rng.randint(0, len(paras)), rng.choice(list(SPAM_LINES.values()))(rng))
    return title, paras


FAMILIES: dict[str, tuple[float, Callable]] = {  # family -> (share of the spam label, generator)
    "local_seo": (0.14, local_seo), "contact_ad": (0.12, contact_ad), "get_rich": (0.10, get_rich),
    "fake_medicine": (0.10, fake_medicine), "gambling": (0.10, gambling), "loan": (0.10, loans),
    "keyword_list": (0.08, keyword_list), "link_farm": (0.08, link_farm),
    "fragment_soup": (0.10, fragment_soup), "planted": (0.08, planted),
}
