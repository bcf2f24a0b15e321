"""Thresholds of the rule-based cleaning, each with the source it came from.

PanGu-α = Zeng et al. 2021, "PanGu-α: Large-scale Autoregressive Pretrained Chinese Language
Models with Auto-parallel Computation", arXiv 2104.12369, §3.1.1 (data cleaning and filtering).
Where the paper states a rule but no number, the number here is ours and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SymbolConfig:
    # PanGu-α §3.1.1 "remove special symbols". Control, format (zero-width, BOM, bidi),
    # private-use and surrogate code points are always removed; decorative symbols (Unicode
    # So/Sk, box drawing, ASCII rules like "=====") only when they form a run this long. Ours.
    min_decorative_run: int = 2


@dataclass(frozen=True)
class NavbarConfig:
    # PanGu-α §3.1.1 "identify and remove navigation bars". The numbers are ours: a line is a
    # navigation bar when it splits on menu separators into >= min_items short items
    # (each <= max_item_chars) and has no sentence punctuation, or when it is a short line
    # (<= max_keyword_line_chars) holding one of the keywords below.
    enabled: bool = True
    min_items: int = 3
    max_item_chars: int = 8
    max_keyword_line_chars: int = 40
    # Items split by whitespace alone (no menu separator) must average at most this many
    # characters: menu entries are words ("国内新闻", 4), a chapter title's halves are phrases
    # ("蔡夫人议献荆州", 7). Ours (issue 23: the rule deleted real chapter titles). Chapter and
    # section headings ("第四十回", "卷之一") and lines with a parenthetical gloss are never menus.
    max_spaced_item_chars: int = 5
    # The site's footer counts as its chrome too: copyright and licence lines (C4 and RefinedWeb drop
    # such boilerplate lines; a short line holding one, without sentence punctuation, is no prose).
    keywords: tuple[str, ...] = (
        "首页",
        "当前位置",
        "您的位置",
        "你的位置",
        "您现在的位置",
        "返回顶部",
        "网站导航",
        "网站地图",
        "上一页",
        "下一页",
        "上一篇",
        "下一篇",
        "上一章",
        "下一章",
        "返回目录",
        "返回列表",
        "设为首页",
        "加入收藏",
        "联系我们",
        "关于我们",
        "版权所有",
        "Copyright",
        "ICP备",
        "ICP证",
        "公网安备",
    )


@dataclass(frozen=True)
class ParagraphConfig:
    # PanGu-α §3.1.1 "remove duplicated paragraphs": later exact repeats of a paragraph
    # (a line, whitespace-normalised) are removed, the first occurrence stays.
    enabled: bool = True
    min_chars: int = 1  # shorter lines are never treated as duplicates (ours)


@dataclass(frozen=True)
class LengthConfig:
    min_chars: int = 150  # PanGu-α §3.1.1: remove documents with less than 150 characters
    # ... except verse of at least this many (ours; 0 = none): a poem of four or eight lines is a
    # whole text in 24 to 70 characters (filters.pangu.rules.verse)
    verse_min_chars: int = 40
    min_han_ratio: float = 0.60  # PanGu-α §3.1.1: remove documents with less than 60 % Chinese characters
    # "documents which only contain page title" (PanGu-α §3.1.1); the slack is ours: a body
    # that is the title plus fewer than this many other characters is title-only.
    title_only_slack_chars: int = 10
    # Without a <title> (WET, JSONL) a single line this short, with no sentence punctuation,
    # is treated as a bare title (ours).
    bare_title_max_chars: int = 64


@dataclass(frozen=True)
class AdsConfig:
    # PanGu-α §3.1.1 "remove documents with advertisement keywords"; the paper gives no count,
    # we drop at >= min_distinct_hits distinct keywords so one stray "包邮" in a news story stays.
    enabled: bool = True
    min_distinct_hits: int = 2
    keywords_file: str = ""  # "" = the bundled filters/resources/ad_keywords.txt
    extra_keywords: tuple[str, ...] = ()  # user additions, on top of the file


@dataclass(frozen=True)
class SensitiveConfig:
    # PanGu-α §3.1.1: documents containing more than 3 of the 724 sensitive words are removed.
    enabled: bool = True
    max_distinct_hits: int = 3
    lists_dir: str = ""  # "" = the bundled sensitive_words/ directory; one <category>.txt a file
    # Text ABOUT the schemes is not counted (ours): a document with at least this many distinct
    # terms of sensitive_words/safety/reporting.txt (courts, police, reporters) is a report, which
    # the rule does not remove; 0 = count every document. Measured 2026-11-26 over every document
    # with more than 3 sensitive terms in data/reference, the seed and both OOD sets: the good ones
    # (statutes on drugs, court prose: 4 documents) carry 5 to 11 markers, the spam and low-quality
    # ones (38) at most 2. The safety layer still scores reports, with its own margin.
    report_min_markers: int = 3


@dataclass(frozen=True)
class ConvertConfig:
    # PanGu-α §3.1.1 "convert traditional Chinese to simplified Chinese" (OpenCC config name).
    enabled: bool = True
    opencc_config: str = "t2s"


@dataclass(frozen=True)
class RulesConfig:
    symbols: SymbolConfig = field(default_factory=SymbolConfig)
    convert: ConvertConfig = field(default_factory=ConvertConfig)
    navbar: NavbarConfig = field(default_factory=NavbarConfig)
    paragraphs: ParagraphConfig = field(default_factory=ParagraphConfig)
    length: LengthConfig = field(default_factory=LengthConfig)
    ads: AdsConfig = field(default_factory=AdsConfig)
    sensitive: SensitiveConfig = field(default_factory=SensitiveConfig)
