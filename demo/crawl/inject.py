"""The content classes planted in clean source pages (ads, sensitive words, traditional script,
navigation bars, ...), and the pages made from templates: spam and near duplicates.

An injector ``(doc, rng, lists) -> None`` edits a clean page in place into its kind; ``ELIGIBLE``
names the pages an injector can work on (any page if absent)."""

from __future__ import annotations

import random
from dataclasses import replace

from .model import SITES, Doc
from .words import WordLists, matcher

NAV_LINES = (
    "首页 | 新闻 | 体育 | 娱乐 | 财经 | 科技",
    "当前位置：首页 > 新闻中心 > 正文",
    "首页 >> 国内新闻",
    "上一页 下一页 返回顶部",
    "[首页] [上一页] 1 2 3 4 5 [下一页] [尾页]",
    "您现在的位置：首页 > 资讯 > 详细内容",
)
AD_TEMPLATES = (
    "【推广】{kws}，热线：400-{a}-{b}",
    "{kws}！名额有限，详见官网 www.{site}.com",
    "{kws}，微信号：{site}{a}",
)
SPAM_SERVICES = (
    ("搬家公司", "banjia"),
    ("开锁换锁", "kaisuo"),
    ("管道疏通", "shutong"),
    ("空调维修", "kongtiao"),
    ("保洁公司", "baojie"),
    ("代理记账", "jizhang"),
    ("网站建设", "jianzhan"),
    ("装修公司", "zhuangxiu"),
    ("二手车回收", "ershouche"),
)
SPAM_CITIES = ("北京", "上海", "广州", "深圳", "杭州", "成都", "武汉", "南京", "西安", "重庆")
SPAM_DISTRICTS = ("朝阳", "海淀", "东城", "西城", "丰台", "浦东", "天河", "南山", "西湖", "武侯")
SPAM_LINES = (
    "{kw} {kw}电话 {kw}哪家好 {kw}价格 {phone}",
    "{city}{district}{svc}，{kw}，专业{svc}，电话：{phone}",
    "{kw}24小时上门服务 www.{slug}{n}.com {phone}",
    "热门搜索：{kw} {city}{svc}电话 {city}便宜{svc} {kw}收费标准 {kw}公司",
)
SYMBOL_RUN = "★☆■□◆◇●○▲△※"
CONTROL_CHARS = ("\x07", "\x08", "\x1b", "\x7f")
ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\ufeff")
EDITORS = ("王平", "李静", "张伟", "刘洋", "陈晨")


def _make_advertisement(doc: Doc, rng: random.Random, lists: WordLists) -> None:
    kws = rng.sample(lists.ad_keywords, rng.randint(3, 6))
    cut = rng.randint(1, len(kws) - 2)
    for group in (kws[:cut], kws[cut:]):
        line = rng.choice(AD_TEMPLATES).format(
            kws="，".join(group),
            a=rng.randint(100, 999),
            b=rng.randint(1000, 9999),
            site=rng.choice(("vip", "shop", "tuan", "mall")) + str(rng.randint(10, 99)),
        )
        doc.paras.insert(rng.randint(len(doc.paras) // 2, len(doc.paras)), line)


def _insert_terms(doc: Doc, rng: random.Random, terms: list[str]) -> None:
    for term in terms:
        i = rng.randrange(len(doc.paras))
        para = doc.paras[i]
        cuts = [j + 1 for j, c in enumerate(para) if c in "，。；！？"] or [len(para)]
        pos = rng.choice(cuts)
        doc.paras[i] = para[:pos] + term + "，" + para[pos:]


def _insert_sensitive(doc: Doc, rng: random.Random, lists: WordLists, n: int) -> None:
    """Exactly n distinct sensitive words (the page had none before)."""
    base = doc.paras
    for _attempt in range(20):  # a term inserted next to another can form a third; retry
        doc.paras = list(base)
        _insert_terms(doc, rng, rng.sample(lists.sensitive, n))
        if len(matcher(lists.sensitive).hits(doc.text())) == n:
            return
    raise RuntimeError(f"could not insert exactly {n} sensitive words into {doc.title!r}")


def _make_sensitive_many(doc: Doc, rng: random.Random, lists: WordLists) -> None:
    _insert_sensitive(doc, rng, lists, rng.randint(4, 6))


def _make_sensitive_borderline(doc: Doc, rng: random.Random, lists: WordLists) -> None:
    _insert_sensitive(doc, rng, lists, rng.randint(1, 2))


def _make_traditional(doc: Doc, _rng: random.Random, _lists: WordLists) -> None:
    doc.variant = "s2twp"  # rendered through OpenCC; Big5 pages switch to s2tw (Big5-safe)


def _make_title_only(doc: Doc, _rng: random.Random, _lists: WordLists) -> None:
    doc.paras = []


def _make_nav_bar(doc: Doc, rng: random.Random, _lists: WordLists) -> None:
    top, bottom, middle = rng.sample(NAV_LINES, 3)
    doc.paras = [top, *doc.paras, bottom]
    if len(doc.paras) > 4 and rng.random() < 0.5:
        doc.paras.insert(rng.randint(2, len(doc.paras) - 2), middle)


def _make_short(doc: Doc, rng: random.Random, _lists: WordLists) -> None:
    doc.title = doc.title[:30]
    doc.paras = [doc.paras[0][: rng.randint(30, 100)]]


def _make_duplicated_paragraphs(doc: Doc, rng: random.Random, _lists: WordLists) -> None:
    long_paras = [p for p in doc.paras if len(p) >= 20]
    for para in rng.sample(long_paras, min(2, len(long_paras))):
        at = doc.paras.index(para)
        for _ in range(rng.randint(1, 3)):  # 2-4 copies in all, adjacent or further down
            doc.paras.insert(rng.randint(at + 1, len(doc.paras)), para)


def _make_special_symbols(doc: Doc, rng: random.Random, _lists: WordLists) -> None:
    runs = [
        "".join(rng.choice(SYMBOL_RUN) for _ in range(rng.randint(4, 12))),
        "".join(chr(0xE000 + rng.randrange(256)) for _ in range(rng.randint(1, 4))),
        rng.choice(CONTROL_CHARS),
        rng.choice(ZERO_WIDTH),
        rng.choice(ZERO_WIDTH),
    ]
    for run in runs:
        i = rng.randrange(len(doc.paras))
        pos = rng.randint(0, len(doc.paras[i]))
        doc.paras[i] = doc.paras[i][:pos] + run + doc.paras[i][pos:]
    doc.paras.insert(rng.randint(0, len(doc.paras)), SYMBOL_RUN[rng.randrange(4)] * 20)


INJECTORS = {
    "advertisement": _make_advertisement,
    "sensitive_many": _make_sensitive_many,
    "sensitive_borderline": _make_sensitive_borderline,
    "traditional": _make_traditional,
    "nav_bar": _make_nav_bar,
    "title_only": _make_title_only,
    "short": _make_short,
    "duplicated_paragraphs": _make_duplicated_paragraphs,
    "special_symbols": _make_special_symbols,
}
ELIGIBLE = {
    "traditional": lambda d: d.source == "news",
    "duplicated_paragraphs": lambda d: sum(len(p) >= 20 for p in d.paras) >= 2,
    "short": lambda d: len(d.paras[0]) >= 30,
}


def near_copy(doc: Doc, rng: random.Random) -> Doc:
    """doc with a few one-character edits and an editor line, served from another site."""
    paras = list(doc.paras)
    for _ in range(rng.randint(2, 4)):
        i = rng.choice([k for k, p in enumerate(paras) if len(p) > 20])
        pos = rng.randrange(1, len(paras[i]) - 1)
        paras[i] = paras[i][:pos] + rng.choice(("", "的", "了", "，")) + paras[i][pos + 1 :]
    paras.append(f"（责任编辑：{rng.choice(EDITORS)}）")
    others = [s for s in SITES[doc.source] if s != doc.site] or [doc.site]
    return replace(doc, paras=paras, kind="near_duplicate", origin=doc, site=rng.choice(others))


def spam_page(rng: random.Random) -> Doc:
    """A keyword-stuffed local-services page of 15-40 template lines."""
    (svc, slug), city = rng.choice(SPAM_SERVICES), rng.choice(SPAM_CITIES)
    kw, phone = city + svc, f"1{rng.choice('3589')}{rng.randrange(10**9):09d}"
    lines = [
        rng.choice(SPAM_LINES).format(
            kw=kw, city=city, svc=svc, slug=slug, phone=phone, district=rng.choice(SPAM_DISTRICTS), n=rng.randint(1, 99)
        )
        for _ in range(rng.randint(15, 40))
    ]
    return Doc(f"{kw}电话_{kw}哪家好_{kw}价格", lines, "web", rng.choice(SITES["spam"]), kind="spam")
