"""The text transforms of PanGu-α §3.1.1: special symbols, navigation bars, duplicated
paragraphs, and the line normalisation after them. Each transform returns the new text and how
much it removed; ``filters.pangu.pipeline`` composes them.

Speed (issue 14): each transform reads the document's scan (``filters.text.chars.scan``: per
code point class bits) and is skipped where it cannot change anything. Line-level work runs on
the few lines a whole-text regex picks, not on every line. What comes out is what the plain
per-line code gave (``tests/test_clean_parity.py``)."""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from filters.text.chars import DECORATIVE, HAN_RUN, REMOVED, SENTENCE_PUNCT, CharScan, char_table, scan
from filters.text.markdown import (
    code_spans_as,
    has_syntax,
    is_heading,
    outside_syntax,
    syntax_lines,
    without_bullet,
    without_html,
)


def _ranges(codepoints: list[int]) -> str:
    """Compress sorted code points into a regex character-class body."""
    out, start, prev = [], None, None
    for cp in codepoints:
        if start is None:
            start = prev = cp
        elif cp == prev + 1:
            prev = cp
        else:
            out.append((start, prev))
            start = prev = cp
    if start is not None:
        out.append((start, prev))
    esc = lambda cp: f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"  # noqa: E731 - tiny local formatter
    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in out)


@lru_cache(maxsize=None)
def _symbol_patterns() -> tuple[re.Pattern[str], str]:
    """(always-removed code points, decorative class body), from ``char_table``. Plane 1 is one
    range on purpose: sre tests astral ranges one by one, and the ~300 exact So/Sk ranges made
    the regex 10x slower."""
    table = char_table()
    removed = np.flatnonzero(table & REMOVED).tolist()
    decorative = np.flatnonzero(table & DECORATIVE).tolist()
    return re.compile(f"[{_ranges(removed)}]+"), _ranges(decorative)


@lru_cache(maxsize=None)
def _decorative_run(min_run: int) -> re.Pattern[str]:
    _, deco = _symbol_patterns()
    return re.compile(f"[{deco}]{{{max(min_run, 1)},}}")


def _has_decorative_run(s: CharScan, min_run: int) -> bool:
    """Whether a run of ``min_run`` decorative characters exists (without removed characters,
    which would join runs once gone: the caller checks REMOVED first)."""
    mask = (s.classes & DECORATIVE) != 0
    if max(min_run, 1) == 1:
        return bool(mask.any())
    edges = np.flatnonzero(np.diff(np.concatenate(([False], mask, [False])).astype(np.int8)))
    return bool(len(edges)) and int((edges[1::2] - edges[::2]).max()) >= min_run


def remove_special_symbols(text: str, min_decorative_run: int, scanned: CharScan | None = None) -> tuple[str, int]:
    """Drop control/format/private-use/surrogate code points and runs of decorative symbols (but a
    two-character box-drawing dash, ``_DASH``); normalise line ends to ``\\n``. Returns (text, characters removed).
    ``scanned`` (this
    text's ``scan``) lets a text with nothing to remove skip the regexes."""
    s = scanned if scanned is not None else scan(text)
    before = len(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if s.flags & REMOVED:
        removed_re, _ = _symbol_patterns()
        text = removed_re.sub("", text)
    if s.flags & DECORATIVE and (s.flags & REMOVED or _has_decorative_run(s, min_decorative_run)):
        run = _decorative_run(min_decorative_run)
        text = outside_syntax(text, lambda part: run.sub(_unless_dash, part))
    return text, before - len(text)


# Two box-drawing horizontals stand for a dash ("他说──不，他喊道"), as "——" does: punctuation,
# not decoration (issue 23). Longer runs are rules drawn across a page and go.
_DASH = re.compile("[\u2500\u2501]{2}")


def _unless_dash(m: re.Match[str]) -> str:
    return m.group() if _DASH.fullmatch(m.group()) else ""


# A line that can be neither blank-line run nor needs stripping: the text is already normalised.
_UNNORMALISED = re.compile(r"^\s|\s$|\n\s*\n\s*\n|[^\S\n]\n|\n[^\S\n]")


def normalise_lines(text: str) -> str:
    """Strip each line, collapse blank-line runs to one, trim the document."""
    if not _UNNORMALISED.search(text):
        return text
    lines = [line.strip() for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


_INLINE_SPACE = re.compile(r"[^\S\n]+")


def remove_duplicate_paragraphs(text: str, min_chars: int) -> tuple[str, int]:
    """Keep the first occurrence of every paragraph (line); later exact repeats (ignoring
    whitespace) of at least ``min_chars`` visible characters are removed. Lines of code blocks
    and tables are not paragraphs (a ``}`` or ``fi`` closes many blocks, tables repeat their
    header; ``filters.text.markdown.syntax_lines``): never counted, never removed."""
    keys = _INLINE_SPACE.sub("", text).split("\n")  # each line without its whitespace
    if has_syntax(text):
        keys = ["" if syntax else k for k, syntax in zip(keys, syntax_lines(text.split("\n")))]
    counted = [k for k in keys if k and len(k) >= min_chars] if min_chars > 1 else list(filter(None, keys))
    if len(set(counted)) == len(counted):
        return text, 0
    seen: set[str] = set()
    out, removed = [], 0
    for line, key in zip(text.split("\n"), keys):
        if key and len(key) >= min_chars:
            if key in seen:
                removed += 1
                continue
            seen.add(key)
        out.append(line)
    return "\n".join(out), removed


@lru_cache(maxsize=8)
def _keyword_re(keywords: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, keywords))) if keywords else re.compile(r"(?!)")


# A slash between two Latin letters or digits is no menu separator: it joins one token, a path
# (/var/log/dpkg.log), a date (5/5/2021), alternatives (Vue/React/Angular, TCP/IP); a menu's slash
# stands between Han items or beside a space (新闻/体育/娱乐, 首页 / 新闻).
_ALNUM = "0-9A-Za-z"
_NAV_SLASH = f"(?:(?<![{_ALNUM}])/|/(?![{_ALNUM}]))"
NAV_SEPARATORS = re.compile(f"\\s*(?:>>|»|›|>|\\||｜|{_NAV_SLASH}|·|•|→)\\s*")
# A chapter or section heading ("第四十回", "第三章", "卷之一", "第一百二十条"): a title, never a
# menu, however its parts are spaced ("三国演义 第四十回 蔡夫人议献荆州　诸葛亮火烧新野").
_NUMERAL = "0-9０-９一二三四五六七八九十百千万零〇两壹贰叁肆伍陆柒捌玖拾佰仟"
HEADING = re.compile(f"第[{_NUMERAL}]+[回章节卷部篇集条款编幕折则]|卷[之第]?[{_NUMERAL}]+|^[{_NUMERAL}]+[、.．]\\S")
# A parenthetical gloss ("大体/小体（dàtǐ/xiǎotǐ）", "清（1644—1911）"): menus carry none.
GLOSS = re.compile(r"（[^）]+）|\([^)]+\)")


_WORDLIKE = re.compile(r"[^\W_]")  # a letter (Han included) or a digit

# A code span with the spaces around it (marked by ``code_spans_as(line, "\0")``): the words on
# either side are one phrase, not two menu items.
_CODE_AND_SPACE = re.compile("[ \t\u3000]*\x00[ \t\u3000]*")


@lru_cache(maxsize=8)
def _long_item(max_item_chars: int) -> re.Pattern[str]:
    """A run of more than ``max_item_chars`` characters that are neither whitespace nor a menu
    separator: whichever way the line is split into items, one of them is too long."""
    return re.compile(f"(?:[^\\s>»›|｜/·•→]|(?<=[{_ALNUM}])/(?=[{_ALNUM}])){{{max_item_chars + 1},}}")


def is_navigation_line(
    line: str,
    keywords: tuple[str, ...],
    min_items: int,
    max_item_chars: int,
    max_keyword_line_chars: int,
    max_spaced_item_chars: int = 5,
) -> bool:
    """A menu-like line: 'A | B | C', '首页 > 新闻 > 正文', '新闻 体育 娱乐 财经', or a short
    line holding a navigation keyword ('当前位置', '返回顶部', ...). Chapter and section headings
    (``第四十回``, a Markdown ``## ``), lines with a parenthetical gloss and lines ending in a colon
    are text, not menus. Items separated by whitespace only
    must average at most ``max_spaced_item_chars`` characters: menu entries are words ('国内新闻'),
    a chapter title's halves are phrases ('蔡夫人议献荆州'), and the average is of the items that hold
    Han (a Latin word set off by spaces, '按唯一 ID 前缀或完整 Thread ID 导出', shortens no phrase)."""
    line = line.strip()
    if not line or SENTENCE_PUNCT.search(line):
        return False
    if len(line) <= max_keyword_line_chars and _keyword_re(keywords).search(line):
        return True
    if HEADING.search(line) or GLOSS.search(line) or line.endswith("：") or is_heading(line):
        return False  # a line ending in a colon (冒号, a pause mark of GB/T 15834) introduces what follows
    explicit = NAV_SEPARATORS.search(line) is not None
    parts = [s for s in (NAV_SEPARATORS.split(line) if explicit else line.split()) if s]
    items = [s for s in parts if _WORDLIKE.search(s)]  # an icon or a dash between the words is no item
    needed = min_items if explicit else min_items + 1
    if len(items) < needed or any(len(s) > max_item_chars for s in items):
        return False
    if explicit:
        return True
    # Whitespace-separated items must be short and mostly Han, or an English sentence or a
    # spaced title would look like a menu (a short line: regexes beat the numpy scan's fixed cost).
    # Short means the items with Han: a Latin word or a number set off by spaces, as Chinese
    # typesetting sets them ('按唯一 ID 前缀导出'), makes no phrase around it shorter.
    n = sum(map(len, parts))
    han_items = [s for s in items if HAN_RUN.search(s)]
    return (
        bool(han_items)
        and sum(map(len, han_items)) <= max_spaced_item_chars * len(han_items)
        and sum(map(len, HAN_RUN.findall(line))) >= 0.5 * n
    )


def remove_navigation_lines(
    text: str,
    keywords: tuple[str, ...],
    min_items: int,
    max_item_chars: int,
    max_keyword_line_chars: int,
    max_spaced_item_chars: int = 5,
) -> tuple[str, int]:
    """Lines with sentence punctuation, or with an item too long for a menu and no navigation
    keyword, are kept after one regex call each; only the others are judged item by item. Lines
    of code blocks and tables are kept (``cd /usr/local/bin`` is no breadcrumb; ``syntax_lines``),
    and a line is judged without its code spans."""
    long_item, keyword = _long_item(max_item_chars), _keyword_re(keywords)
    lines = text.split("\n")
    fenced = syntax_lines(lines) if has_syntax(text) else [False] * len(lines)
    out, removed = [], 0
    for line, code in zip(lines, fenced):
        # a heading is a title; a bullet and HTML tags are no menu items; a code span is a word of its line
        judged = line if is_heading(line) else without_html(without_bullet(line))
        judged = _CODE_AND_SPACE.sub("", code_spans_as(judged, "\x00"))
        if (
            code
            or SENTENCE_PUNCT.search(judged)
            or (
                long_item.search(judged)
                and not (len(judged.strip()) <= max_keyword_line_chars and keyword.search(judged))
            )
        ):
            out.append(line)
        elif is_navigation_line(
            judged, keywords, min_items, max_item_chars, max_keyword_line_chars, max_spaced_item_chars
        ):
            removed += 1
        else:
            out.append(line)
    return ("\n".join(out), removed) if removed else (text, 0)
