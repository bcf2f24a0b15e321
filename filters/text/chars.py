"""Character classes, NFKC + lower case, and the text statistics every recipe reads (length, Han
ratio, date and time stamps).

Speed (issue 14): a document is scanned once into a table of per-code-point class bits (numpy,
one gather), which gives the counts the length and Han-ratio rules read and tells which
transforms can change anything (``filters.pangu.transforms``: a transform that cannot is
skipped). What comes out is what the plain per-line code gave (``tests/test_clean_parity.py``)."""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache
from typing import Iterable, NamedTuple

import numpy as np

from filters.text.markdown import prose_rows
from filters.text.table_cache import disk_cached

# Han ideographs: CJK Unified Ideographs, Ext. A, compatibility ideographs, Ext. B-I (planes 2-3).
HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2EBEF), (0x30000, 0x323AF))
HAN_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef\U00030000-\U000323af"
HAN_RUN = re.compile(f"[{HAN_CLASS}]+")
WHITESPACE = re.compile(r"\s+")
# sentence punctuation; "." and "," only before whitespace or the end. Written to start with one
# character class (the same matches as "[。！？；，!?;]|[.,](?=\s|$)"): sre then scans for it fast.
SENTENCE_PUNCT = re.compile(r"[。！？；，!?;.,](?:(?<=[。！？；，!?;])|(?=\s|$))")
DECORATIVE_ASCII = "*#=~_-+^"  # ASCII rule characters ("=====", "-----") count as decorative

# Class bits, one byte per code point (``char_table``).
HAN = 1  # Han ideograph (HAN_RANGES)
SPACE = 2  # str.isspace(): what str.split() and regex \s split on
REMOVED = 4  # Cc (but tab, LF, CR), Cf, Co, Cs: always removed
DECORATIVE = 8  # BMP So/Sk, DECORATIVE_ASCII, all of plane 1: removed in runs
FOLD = 16  # NFKC may change the text here (not NFKC-stable alone, combining, or a composition's 2nd part)
PUNCT = 32  # punctuation: Unicode P*, and the dashes DASHES
LATIN = 64  # a Latin letter (a letter whose Unicode name has LATIN: ASCII, full-width, pinyin with tones)
WRITTEN = 128  # a unit of writing: a letter (L*, Han included, unassigned Han code points too), a
# combining mark (Mn, Mc) or a digit (N*)
# Dashes that Unicode files as symbols: box-drawing horizontals, typeset as the Chinese dash (破折号)
# in much traditional and older text ("一個世紀才盤點──百年大計"), and the wave dash (浪纹线: ～, 〜,
# ~ after NFKC), a connecting mark of GB/T 15834-2011 ("1～2天") and a dictionary's stand-in for
# its headword ("清～。凌～"): punctuation where they stand in a sentence.
DASHES = "\u2500\u2501\uff5e\u301c~"


class CharScan(NamedTuple):
    """One pass over a text: its code points, their class bits, the OR of all bits, counts."""

    codes: np.ndarray  # uint32 code points
    classes: np.ndarray  # uint8 class bits per code point
    flags: int  # OR of every class present
    visible: int  # non-whitespace characters
    han: int  # Han ideographs
    punct: int  # punctuation (PUNCT)
    written: int  # units of writing (``written_units``)


@lru_cache(maxsize=None)
@disk_cached("chars")
def char_table() -> np.ndarray:
    """Class bits of every code point, from the Unicode database of this Python (built once per
    process, ~0.5 s)."""
    table = np.zeros(sys.maxunicode + 1, dtype=np.uint8)
    for lo, hi in HAN_RANGES:
        table[lo : hi + 1] |= HAN
    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        cat = unicodedata.category(c)
        if cat == "Cn":
            continue
        if c.isspace():
            table[cp] |= SPACE
        if cat in ("Cf", "Co", "Cs") or (cat == "Cc" and cp not in (0x09, 0x0A, 0x0D)):
            table[cp] |= REMOVED
        elif (cat in ("So", "Sk") and cp <= 0xFFFF) or 0x10000 <= cp < 0x20000:
            table[cp] |= DECORATIVE
        if cat[0] == "P":
            table[cp] |= PUNCT
        if cat[0] in "LN" or (cat in ("Mn", "Mc") and not (0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF)):
            table[cp] |= WRITTEN | (LATIN if cat[0] == "L" and "LATIN" in unicodedata.name(c, "") else 0)
        if unicodedata.combining(c) or (cat not in ("Cs",) and unicodedata.normalize("NFKD", c) != c):
            table[cp] |= FOLD
        decomposition = unicodedata.decomposition(c).split()
        if len(decomposition) == 2 and not decomposition[0].startswith("<"):
            table[int(decomposition[1], 16)] |= FOLD  # can be composed with what precedes it
    table[0x10000:0x20000] |= DECORATIVE  # unassigned plane-1 code points too, as before
    table[[ord(c) for c in DECORATIVE_ASCII]] |= DECORATIVE
    table[[ord(c) for c in DASHES]] |= PUNCT
    for lo, hi in HAN_RANGES:
        table[lo : hi + 1] |= WRITTEN  # unassigned Han code points are Han (HAN) and so letters
    # Hangul: a vowel jamo composes with a leading jamo (a trailing jamo only with an LV syllable,
    # which decomposes, so is FOLD already)
    table[0x1161:0x1176] |= FOLD
    return table


@lru_cache(maxsize=None)
def _bit_counter() -> np.ndarray:
    """(256, 8) 0/1: which bits each class byte has. ``bincount(classes) @ it`` counts the
    characters having each bit, in one call."""
    return ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.int64)


def scan(text: str) -> CharScan:
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    classes = char_table()[codes]
    per_bit = (np.bincount(classes, minlength=256) @ _bit_counter()).tolist()
    flags = sum(1 << i for i, n in enumerate(per_bit) if n)
    written = per_bit[7]  # WRITTEN
    if per_bit[6]:  # a Latin word counts once: the letters less the letters that continue a word
        latin = (classes & LATIN) != 0
        written -= int(np.count_nonzero(latin[1:] & latin[:-1]))
    return CharScan(codes, classes, flags, len(codes) - per_bit[1], per_bit[0], per_bit[5], written)


@lru_cache(maxsize=None)
def _decompositions() -> tuple[np.ndarray, np.ndarray, dict[str, str]]:
    """The full compatibility decomposition (NFKD) of every FOLD code point whose NFKD differs
    from it: (code point -> its NFKD where that is one code point, else itself; uint8 1 where it
    is longer; {character: NFKD} of those longer ones)."""
    table = char_table()
    single = np.arange(len(table), dtype=np.uint32)
    multi = np.zeros(len(table), np.uint8)
    longer = {}
    for cp in np.flatnonzero(table & FOLD).tolist():
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        d = unicodedata.normalize("NFKD", c)
        if len(d) == 1:
            single[cp] = ord(d)
        elif d != c:
            multi[cp], longer[c] = 1, d
    return single, multi, longer


def nfkc_lower_batch(texts: list[str]) -> list[str]:
    """``[unicodedata.normalize("NFKC", t).lower() for t in texts]``, for a batch at once. Every
    FOLD character is replaced by its NFKD (one gather for those of one code point, a
    ``str.replace`` per distinct longer one), which leaves NFKD, hence NFKC, of a text as it was;
    CPython's quick check (exact when it says yes) then passes most texts as they are, and only
    the others are normalised. The texts are joined by NUL for the whole-batch steps (a starter
    that composes with nothing, outside FOLD). ~4x faster than normalising each text, on
    plain Chinese text, where nearly every document holds full-width punctuation."""
    if not texts:
        return []
    joined = "\x00".join(texts)
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32)
    fold = (char_table()[codes] & FOLD) != 0
    if not fold.any():
        return [t.lower() for t in texts]
    parts = _decomposed(joined, codes, fold)
    parts = parts.split("\x00") if len(texts) > 1 else [parts]
    if len(parts) != len(texts):  # a text holds NUL itself
        return [unicodedata.normalize("NFKC", t).lower() for t in texts]
    return [_nfkc(t).lower() for t in parts]


def nfkc_lower(text: str, scanned: CharScan | None = None) -> str:
    """``unicodedata.normalize("NFKC", text).lower()`` the way of ``nfkc_lower_batch``, for one
    text; ``scanned``: ``scan(text)``, when the caller has it."""
    s = scanned if scanned is not None else scan(text)
    if not s.flags & FOLD:
        return text.lower()  # no code point NFKC could change
    return _nfkc(_decomposed(text, s.codes, (s.classes & FOLD) != 0)).lower()


def _decomposed(text: str, codes: np.ndarray, fold: np.ndarray) -> str:
    """``text`` (code points ``codes``, ``fold`` where FOLD) with every FOLD character replaced by
    its NFKD: the same NFKD, hence the same NFKC."""
    single, multi, longer = _decompositions()
    out = single[codes].tobytes().decode("utf-32-le", "surrogatepass")
    longer_at = multi[codes[fold]] != 0
    if longer_at.any():
        for cp in np.unique(codes[fold][longer_at]).tolist():
            out = out.replace(chr(cp), longer[chr(cp)])
    return out


def _nfkc(text: str) -> str:
    # text by text: a quick-check "maybe" anywhere makes CPython normalise the whole string
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_safe(text: str) -> str:
    """``text`` with lone surrogates (which no UTF-8 library takes: rjieba, ahocorasick_rs) as
    U+FFFD, one character each, so every offset and length stays the same."""
    return _SURROGATE.sub("\ufffd", text)


def han_count(text: str) -> int:
    return scan(text).han


def visible_len(text: str) -> int:
    """Characters that are not whitespace: the unit of the 150-character rule."""
    return scan(text).visible


def han_ratio(text: str) -> float:
    return text_stats(text).han_ratio


class TextStats(NamedTuple):
    visible: int  # non-whitespace characters of the whole text (code included)
    han: int  # Han ideographs of its prose (``prose``: outside code)
    punct: int = 0  # punctuation (PUNCT) of the whole text
    written: int = 0  # units of writing of its prose (``CharScan.written``)

    @property
    def han_ratio(self) -> float:
        """PanGu-α's "share of Chinese characters", of the text's writing: Han ideographs over its
        units of writing, where a unit is a letter of any script (a Han character, a kana, a Cyrillic
        letter) or a digit, and a word of Latin letters counts as one unit, as a Han character does
        (``Debian`` or ``SQLite`` in Chinese prose is one foreign word, not six characters against
        it). Punctuation and symbols are neither Chinese nor foreign (a dictionary entry, ～（）：；,
        a table's rules, ``|`` and ✅, are as Chinese as their words), nor are the digits of date and
        time stamps (``STAMP``), nor the figures in the cells of a Markdown table (a benchmark's
        timings are data, not a language; ``table_figures``); other digits stay units, each (a page
        of phone numbers is not Chinese text). Counted on the prose (``prose``): code blocks and
        inline code are not the page's language either; a page of code alone has no prose, so a
        ratio of 0."""
        return self.han / self.written if self.written > 0 else 0.0


def text_stats(text: str, scanned: CharScan | None = None) -> TextStats:
    """Counted once per document; the length and Han-ratio rules both read it. ``scanned``:
    ``scan(text)``, when the caller has it. The Han counts are of the prose, the length of the
    whole text."""
    s = scanned if scanned is not None else scan(text)
    read, rows = prose_rows(text)
    p = s if read is text else scan(read)
    if not rows:
        return TextStats(s.visible, p.han, s.punct, p.written - stamp_digits(read))
    lines = read.split("\n")
    cells = set(rows)
    outside = "\n".join(line for i, line in enumerate(lines) if i not in cells)
    figures = table_figures(lines[i] for i in rows)
    return TextStats(s.visible, p.han, s.punct, p.written - stamp_digits(outside) - figures)


def table_figures(rows: Iterable[str]) -> int:
    """Digits (Unicode N*) in the rows of a Markdown table: figures of data, no unit of writing
    (``TextStats.han_ratio``). A stamp in a cell is among them: a stamp never spans two lines."""
    return sum(unicodedata.category(c)[0] == "N" for row in rows for c in row if not c.isspace())


# A date or time stamp (2022-12-16, 2022/12/16 23:38, 23:38:05): notation that every genre carries
# (a forum post's header, a news dateline, a changelog), not a word of any language. Its digits are
# no unit of writing; other digits are, each (a page of phone numbers is not Chinese text).
STAMP = re.compile(
    r"(?<![0-9])(?:[0-9]{4}[-/.][0-9]{1,2}[-/.][0-9]{1,2}(?:[ T]+[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?)?"
    r"|[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?)(?![0-9])"
)
_STAMP_HINT = re.compile("[-/.:](?<=[0-9].)(?=[0-9])")  # a separator between digits: every stamp has one


def stamp_spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, digits) of each match of ``STAMP.finditer(text)``, found by matching STAMP only
    where a digit, a separator and a digit stand together (up to 4 characters before the
    separator: the year of ``2022-12-16``)."""
    out: list[tuple[int, int, int]] = []
    end = 0
    for hint in _STAMP_HINT.finditer(text):
        sep = hint.start()
        if sep < end:
            continue
        for start in range(max(end, sep - 4), sep):
            m = STAMP.match(text, start)
            if m and m.end() > sep:
                out.append((m.start(), m.end(), sum(c.isdigit() for c in m.group())))
                end = m.end()
                break
    return out


def stamp_digits(text: str) -> int:
    """Digits of the date and time stamps in ``text`` (``STAMP``)."""
    return sum(n for _, _, n in stamp_spans(text))
