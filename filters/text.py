"""Character classes and the text transforms of PanGu-α §3.1.1 (symbols, navigation bars,
duplicated paragraphs). Each transform returns the new text and how much it removed."""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache
from typing import NamedTuple

# Han ideographs: CJK Unified Ideographs, Ext. A, compatibility ideographs, Ext. B-I (planes 2-3).
HAN_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef\U00030000-\U000323af"
HAN_RUN = re.compile(f"[{HAN_CLASS}]+")
WHITESPACE = re.compile(r"\s+")
SENTENCE_PUNCT = re.compile(r"[。！？；，!?;]|[.,](?=\s|$)")


def han_count(text: str) -> int:
    return len("".join(HAN_RUN.findall(text)))


def visible_len(text: str) -> int:
    """Characters that are not whitespace: the unit of the 150-character and 60 % rules."""
    return sum(map(len, text.split()))


def han_ratio(text: str) -> float:
    n = visible_len(text)
    return han_count(text) / n if n else 0.0


class TextStats(NamedTuple):
    visible: int  # non-whitespace characters
    han: int  # Han ideographs

    @property
    def han_ratio(self) -> float:
        return self.han / self.visible if self.visible else 0.0


def text_stats(text: str) -> TextStats:
    """Counted once per document; the length and Han-ratio rules both read it."""
    return TextStats(visible_len(text), han_count(text))


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
    """(always-removed code points, decorative class body), built once per process from the
    Unicode database: Cc (but tab/newline/CR), Cf, Co, Cs are removed outright; BMP So/Sk, ASCII
    rule characters and all of plane 1 (emoji, pictographs, styled math letters, historic
    scripts: no Chinese there) are 'decorative'. Plane 1 is one range on purpose: sre tests
    astral ranges one by one, and the ~300 exact So/Sk ranges made this regex 10x slower."""
    removed, decorative = [], []
    for cp in range(sys.maxunicode + 1):
        cat = unicodedata.category(chr(cp))
        if cat in ("Cf", "Co", "Cs") or (cat == "Cc" and cp not in (0x09, 0x0A, 0x0D)):
            removed.append(cp)
        elif cat in ("So", "Sk") and cp <= 0xFFFF:
            decorative.append(cp)
    decorative.extend(map(ord, "*#=~_-+^"))
    decorative = sorted(set(decorative)) + list(range(0x10000, 0x20000))
    return re.compile(f"[{_ranges(removed)}]+"), _ranges(decorative)


@lru_cache(maxsize=None)
def _decorative_run(min_run: int) -> re.Pattern[str]:
    _, deco = _symbol_patterns()
    return re.compile(f"[{deco}]{{{max(min_run, 1)},}}")


def remove_special_symbols(text: str, min_decorative_run: int) -> tuple[str, int]:
    """Drop control/format/private-use/surrogate code points and runs of decorative symbols;
    normalise line ends to ``\\n``. Returns (text, characters removed)."""
    removed_re, _ = _symbol_patterns()
    before = len(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = removed_re.sub("", text)
    text = _decorative_run(min_decorative_run).sub("", text)
    return text, before - len(text)


def normalise_lines(text: str) -> str:
    """Strip each line, collapse blank-line runs to one, trim the document."""
    lines = [line.strip() for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def remove_duplicate_paragraphs(text: str, min_chars: int) -> tuple[str, int]:
    """Keep the first occurrence of every paragraph (line); later exact repeats (ignoring
    whitespace) of at least ``min_chars`` visible characters are removed."""
    seen: set[str] = set()
    out, removed = [], 0
    for line in text.split("\n"):
        key = WHITESPACE.sub("", line)
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


NAV_SEPARATORS = re.compile(r"\s*(?:>>|»|›|>|\||｜|/|·|•|→)\s*")


def is_navigation_line(line: str, keywords: tuple[str, ...], min_items: int, max_item_chars: int,
                       max_keyword_line_chars: int) -> bool:
    """A menu-like line: 'A | B | C', '首页 > 新闻 > 正文', '新闻 体育 娱乐 财经', or a short
    line holding a navigation keyword ('当前位置', '返回顶部', ...)."""
    line = line.strip()
    if not line or SENTENCE_PUNCT.search(line):
        return False
    if len(line) <= max_keyword_line_chars and _keyword_re(keywords).search(line):
        return True
    explicit = NAV_SEPARATORS.search(line) is not None
    items = [s for s in (NAV_SEPARATORS.split(line) if explicit else line.split()) if s]
    needed = min_items if explicit else min_items + 1
    if len(items) < needed or any(len(s) > max_item_chars for s in items):
        return False
    # Whitespace-separated items must be mostly Han, or an English sentence would look like a menu.
    return explicit or han_ratio(line) >= 0.5


def remove_navigation_lines(text: str, keywords: tuple[str, ...], min_items: int, max_item_chars: int,
                            max_keyword_line_chars: int) -> tuple[str, int]:
    out, removed = [], 0
    for line in text.split("\n"):
        if is_navigation_line(line, keywords, min_items, max_item_chars, max_keyword_line_chars):
            removed += 1
        else:
            out.append(line)
    return "\n".join(out), removed
