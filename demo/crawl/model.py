"""What a demo crawl is made of: the record kinds and charset classes it counts, the fictitious
sites it serves pages from, and ``Doc``, one page on its way from source text to output record."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

import opencc

GENERATOR_VERSION = "1.0.0"
# The generator as its output names it (warcinfo "software", MANIFEST.json and SEED.json): where it
# lived when version 1.0.0 was written, before it moved from etl/demo_crawl/ to demo/crawl/. Kept so
# the same version keeps giving the same bytes; a new GENERATOR_VERSION should name demo.crawl.
GENERATOR_NAME = "etl.demo_crawl"
GENERATOR_PATH = "etl/demo_crawl/"
MIB = 1 << 20
ID_NAMESPACE = uuid.UUID("5d0c6f0e-8a57-4f0b-9c1e-3a7e2b9d4c61")  # uuid5 namespace of record ids
CRAWL_START = datetime(2026, 1, 15, tzinfo=timezone.utc)  # fixed: no wall-clock anywhere
PROJECT_ROOT = Path(__file__).resolve().parents[2]
AD_KEYWORDS_FILE = PROJECT_ROOT / "filters" / "resources" / "ad_keywords.txt"
SENSITIVE_DIR = PROJECT_ROOT / "sensitive_words"

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


@dataclass(frozen=True)
class Charset:
    codec: str | None  # Python codec of the body bytes (None: random bytes)
    content_type: str  # HTTP Content-Type header
    meta: str  # <meta> declaration in <head>, "" for none


CHARSETS = {
    "utf8_header": Charset("utf-8", "text/html; charset=utf-8", '<meta charset="utf-8">'),
    "utf8_meta_only": Charset("utf-8", "text/html", '<meta charset="utf-8">'),
    "utf8_undeclared": Charset("utf-8", "text/html", ""),
    "gbk_header": Charset("gbk", "text/html; charset=gbk", '<meta charset="gbk">'),
    # pages labelled gb2312 are GBK in practice; readers decode every GB* label as gb18030
    "gb2312_header": Charset("gbk", "text/html; charset=gb2312", '<meta charset="gb2312">'),
    "gb18030_header": Charset("gb18030", "text/html; charset=gb18030", '<meta charset="gb18030">'),
    "gbk_meta_only": Charset("gbk", "text/html", '<meta charset="gbk">'),
    "gb2312_meta_only": Charset(
        "gbk", "text/html", '<meta http-equiv="Content-Type" content="text/html; charset=gb2312">'
    ),
    "gbk_undeclared": Charset("gbk", "text/html", ""),
    "big5_header": Charset("big5", "text/html; charset=big5", '<meta charset="big5">'),
    "big5_labelled_gbk": Charset("big5", "text/html; charset=gbk", '<meta charset="gbk">'),
    "binary_garbage": Charset(None, "text/html", ""),
}


@dataclass(frozen=True)
class Site:
    host: str
    name: str
    section: str  # first URL path segment
    menu: tuple[str, ...]
    lang: str = "zh"


_NEWS_MENU = ("首页", "新闻", "国内", "国际", "体育", "娱乐", "财经", "科技")
SITES = {
    "news": (
        Site("news.huaxia-demo.cn", "华夏新闻网", "news", _NEWS_MENU),
        Site("www.zhongguo-demo.com.cn", "中国时事在线", "china", _NEWS_MENU),
        Site("www.jingji-demo.cn", "经济观察网", "article", _NEWS_MENU),
    ),
    "reviews": (
        Site("shop.demo-mall.cn", "演示商城", "product", ("首页", "图书", "数码", "家电", "服装", "酒店", "用户评价")),
        Site("www.dianping-demo.cn", "点评之家", "review", ("首页", "美食", "酒店", "图书", "电影", "评论")),
    ),
    "forum": (Site("bbs.demo-forum.cn", "书友论坛", "forum", ("论坛首页", "读书", "数码", "旅游", "生活", "灌水")),),
    "web": (
        Site(
            "docs.pyref-demo.org",
            "Python Reference Mirror",
            "reference",
            ("Home", "Docs", "Downloads", "Community", "About"),
            "en",
        ),
    ),
    "data": (Site("quote.caijing-demo.cn", "财经行情中心", "quote", ("首页", "行情", "数据")),),
    "spam": (
        Site("www.bj-fuwu-demo.com", "便民服务网", "fuwu", ("首页", "服务", "价格", "联系")),
        Site("www.58-tongcheng-demo.com", "同城信息港", "info", ("首页", "分类", "发布")),
    ),
}
# page furniture per site language, filled into render.PAGE
LABELS = {
    "zh": dict(
        search="搜索",
        hot="热点排行",
        crumb="当前位置：首页 &gt; {section} &gt; 正文",
        info="来源：{site}　发布时间：{time}",
        rights="版权所有",
        icp="京ICP备05012345号",
        links=("关于我们", "联系我们", "广告服务", "网站地图", "隐私政策"),
        hot_items=("本站公告", "热门专题", "图片新闻", "视频频道", "往期回顾"),
    ),
    "en": dict(
        search="Search",
        hot="Popular",
        crumb="Home &gt; {section}",
        info="Source: {site} | Updated {time}",
        rights="All rights reserved.",
        icp="",
        links=("About", "Contact", "Privacy", "Sitemap"),
        hot_items=("Tutorial", "Library Reference", "What's New", "FAQ"),
    ),
}
# every Chinese string a page adds around its text: a page may take a legacy charset only if
# its text plus this encodes in it
BOILERPLATE_ZH = "".join(str(v) for v in LABELS["zh"].values()) + "".join(
    "".join(s.menu) + s.name for group in ("news", "reviews", "forum") for s in SITES[group]
)


@lru_cache(maxsize=None)
def converter(config: str) -> opencc.OpenCC:
    """The OpenCC converter of a config name such as "s2twp", built once."""
    return opencc.OpenCC(f"{config}.json")


@dataclass
class Doc:
    """One page. Text is kept in simplified Chinese; ``variant`` names the OpenCC config it is
    rendered through (traditional pages)."""

    title: str
    paras: list[str]
    source: str  # news / reviews / forum / web (English, spam and made-up pages)
    site: Site
    kind: str = "clean"
    fmt: str = ""  # warc / wet / jsonl
    charset: str = ""  # WARC responses: a CHARSETS key
    variant: str = ""  # "", "s2twp" (UTF-8 traditional) or "s2tw" (Big5-safe)
    origin: Doc | None = None  # the page an exact/near duplicate copies
    has_copies: bool = False
    defect: str = ""  # malformed_warc_header: "no_colon" or "bad_length"
    ad_hits: int = 0  # distinct ad keywords in the source text
    sensitive_hits: int = 0  # distinct sensitive words in the source text
    url: str = ""
    doc_id: str = ""
    timestamp: datetime = CRAWL_START
    file: str = ""  # stem of the Chunk (output file) that holds the page

    def text(self) -> str:
        plain = "\n".join([self.title, *self.paras])
        return converter(self.variant).convert(plain) if self.variant else plain
