"""Bytes -> text for crawled pages: charset choice, decode-quality checks, HTML -> main text.

Charset order: the HTTP header, then ``<meta charset>``, then detection (resiliparse's
uchardet-based ``detect_encoding``), then UTF-8. Every GB2312/GBK label is decoded as GB18030
(its superset: pages labelled gb2312 routinely use GBK characters) and Big5 as Big5-HKSCS. The
first candidate whose text passes the quality checks wins; if none does, the record is rejected
with the failing check's reason. Mislabelled pages are therefore recovered, never kept garbled.
Pure Python: no Spark.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import detect_encoding
from resiliparse.parse.html import HTMLTree

from filters.text.chars import HAN_RANGES, HAN_RUN

UNDECODABLE = "undecodable"  # mostly U+FFFD under every candidate charset
MOJIBAKE = "mojibake"  # decodes, but into rare ideographs / Latin-1 debris

_GB_LABELS = {
    "gb2312",
    "gbk",
    "x-gbk",
    "cp936",
    "ms936",
    "windows-936",
    "gb_2312-80",
    "csgb2312",
    "euc-cn",
    "x-euc-cn",
    "chinese",
    "iso-ir-58",
    "csiso58gb231280",
    "gb18030",
    "gb-18030",
}
_BIG5_LABELS = {"big5", "big-5", "x-x-big5", "cn-big5", "csbig5", "cp950", "big5-hkscs", "big5hkscs"}
_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{2,40})""", re.I)
_LATIN1_MOJIBAKE = re.compile("[\u00c2-\u00f4][\u0080-\u00bf\u2010-\u203a\u0152-\u0192\u02c6\u02dc\u20ac\u2122]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def canonical_charset(label: str | None) -> str | None:
    """A Python codec name for an HTTP/HTML charset label, or None if unknown."""
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    if label in _GB_LABELS:
        return "gb18030"
    if label in _BIG5_LABELS:
        return "big5hkscs"
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    return "utf-8" if name in ("utf-8", "utf_8") else name


def http_charset(content_type: str | None) -> str | None:
    if not content_type:
        return None
    m = re.search(r"charset\s*=\s*([^;\s]+)", content_type, re.I)
    return m.group(1) if m else None


def meta_charset(body: bytes) -> str | None:
    m = _META_CHARSET.search(body[:8192])
    return m.group(1).decode("ascii", "replace") if m else None


@lru_cache(maxsize=1)
def common_han() -> frozenset[str]:
    """Ideographs of GB2312 (6,763 simplified) and Big5 level 1 (5,401 frequent traditional):
    correctly decoded Chinese is > 99 % these; Big5 read as GBK (and similar mix-ups) is not."""
    chars = set()
    for lead in range(0xB0, 0xF8):
        for trail in range(0xA1, 0xFF):
            chars.update(bytes((lead, trail)).decode("gb2312", "ignore"))
    for lead in range(0xA4, 0xC7):
        for trail in list(range(0x40, 0x7F)) + list(range(0xA1, 0xFF)):
            chars.update(bytes((lead, trail)).decode("big5", "ignore"))
    return frozenset(c for c in chars if HAN_RUN.fullmatch(c))


_NOT_HAN, _RARE_HAN, _COMMON_HAN = 0, 1, 2


@lru_cache(maxsize=1)
def han_kinds() -> np.ndarray:
    """Per code point (uint8, 1.1 MB): not Han, Han outside ``common_han()``, common Han; one
    lookup per character where a set test per ideograph cost 6x more."""
    kinds = np.zeros(0x110000, np.uint8)
    for lo, hi in HAN_RANGES:
        kinds[lo : hi + 1] = _RARE_HAN
    kinds[np.fromiter(map(ord, common_han()), np.int64)] = _COMMON_HAN
    return kinds


@dataclass(frozen=True)
class QualityLimits:
    max_replacement_ratio: float  # U+FFFD among non-ASCII characters
    max_rare_han_ratio: float  # ideographs outside common_han() among all ideographs
    min_han_for_rare_check: int  # too few ideographs say nothing about the charset


def quality_problem(text: str, limits: QualityLimits) -> str | None:
    """None if the text looks correctly decoded, else UNDECODABLE or MOJIBAKE."""
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))
    if non_ascii == 0:
        return None
    if text.count("\ufffd") > limits.max_replacement_ratio * non_ascii:
        return UNDECODABLE
    # UTF-8 read as Latin-1/cp1252 ('ä¸\xadæ–‡'): every CJK character leaves a lead+continuation pair.
    if non_ascii >= 20 and len(_LATIN1_MOJIBAKE.findall(text)) > 0.15 * non_ascii:
        return MOJIBAKE
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    kinds = np.bincount(han_kinds()[codes], minlength=3)
    rare, han = int(kinds[_RARE_HAN]), int(kinds[_RARE_HAN] + kinds[_COMMON_HAN])
    if han >= limits.min_han_for_rare_check and rare > limits.max_rare_han_ratio * han:
        return MOJIBAKE
    return None


@dataclass(frozen=True)
class Decoded:
    text: str | None
    charset: str | None
    reason: str | None


_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13))


def binary_ratio(body: bytes) -> float:
    """Share of C0 control bytes (not tab/newline/form feed/CR): ~0 in text, ~9 % in random bytes."""
    return (len(body) - len(body.translate(None, _CONTROL_BYTES))) / len(body) if body else 0.0


def decode_bytes(body: bytes, declared: list[str | None], limits: QualityLimits, detect: bool = True) -> Decoded:
    """Try the declared labels in order, then detection, then UTF-8; first clean decode wins.
    Binary content (many control bytes) is undecodable under any label."""
    if binary_ratio(body) > limits.max_replacement_ratio:
        return Decoded(None, None, UNDECODABLE)
    candidates: list[str] = []
    for label in declared:
        name = canonical_charset(label)
        if name and name not in candidates:
            candidates.append(name)
    if detect:
        name = canonical_charset(detect_encoding(body[:65536]))
        if name and name not in candidates:
            candidates.append(name)
    if "utf-8" not in candidates:
        candidates.append("utf-8")
    first_problem = None
    for name in candidates:
        try:
            text = body.decode(name, errors="replace")
        except (LookupError, UnicodeError):  # codec exists for lookup but cannot decode (rare)
            continue
        problem = quality_problem(text, limits)
        if problem is None:
            return Decoded(sanitize(text), name, None)
        first_problem = first_problem or problem
    return Decoded(None, None, first_problem or UNDECODABLE)


def sanitize(s: str | None) -> str | None:
    """Remove lone surrogates (they cannot be encoded to UTF-8, so Arrow would refuse them) and NULs."""
    if s is None:
        return None
    return _SURROGATES.sub("", s).replace("\x00", "")


def html_to_text(html: str, main_content: bool) -> tuple[str | None, str]:
    """(title, main text) with scripts, styles and boilerplate (nav, header, footer) dropped."""
    tree = HTMLTree.parse(html)
    title = tree.title.strip() if tree.title else None
    text = extract_plain_text(
        tree,
        main_content=main_content,
        alt_texts=False,
        links=False,
        form_fields=False,
        noscript=False,
        list_bullets=False,
    )
    return sanitize(title) or None, sanitize(text) or ""
