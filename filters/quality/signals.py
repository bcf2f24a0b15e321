"""Label-free document statistics for Chinese (issue 23, item 1): the line rules of C4 and
RefinedWeb, Gopher's repetition and stop-word statistics (Rae et al. 2021, App. A), and character
ratios, defined on characters and rjieba words (HMM off), never on whitespace tokens. They carry
no thresholds: a Spark stage derives those from a reference corpus, FineWeb-2 style.

Units (each statistic's docstring in ``SIGNALS`` uses them):

- *visible character*: a character that is not whitespace (``str.isspace``), as in
  ``filters.text.chars``; every character is exactly one of Han (``filters.text.chars.HAN_RANGES``), Latin
  letter (a letter whose Unicode name has LATIN: ASCII, full-width, pinyin with tones), other
  letter (kana, Hangul, …, and combining marks), digit (Unicode N*: ASCII, full-width, ①, 〇),
  punctuation (Unicode P*), symbol (everything else visible: S*, private use, unassigned, format
  characters, variation selectors and enclosing marks: emoji, ※★◆, box drawing, ``|``).
- *line*: a piece of the text between ``"\\n"`` characters (``"\\r"`` is whitespace), stripped;
  empty lines are not lines. A line's characters are its visible characters.
- *paragraph*: a block of consecutive lines between empty lines; a text with fewer than two such
  blocks has its lines as paragraphs.
- *word*: a token of ``rjieba.cut(text, hmm=False)`` (``filters.text.segment``, engine rjieba, HMM
  off) holding at least one Han, letter or digit character; punctuation, symbol and whitespace
  tokens are not words. A word's characters are ``len(word)``.

*Prose*: every statistic is of a text's prose (``filters.text.markdown.prose``): Markdown code blocks,
code spans and markup (heading, bullet and quote markers, table pipes, link destinations, HTML
tags) are taken out first. A text of code alone has no prose.

Empty and whitespace-only texts (no lines, words or visible characters) get 0.0 for every
statistic; no statistic is ever NaN.

Speed (``python -m bench.bench_quality``): a batch is processed as one text (documents joined by
``"\\n"``, in chunks of ``CHUNK_CHARS``). One numpy gather of a per-code-point table classifies
every character; line statistics come from binary searches of visible-character positions at line
boundaries; words and lines are keyed by polynomial hashes read off prefix sums of the code points
(``filters.quality.repeat``), and repetition from sorts of those keys over the whole chunk;
contact ids are looked for only where numpy finds clusters of digits or ASCII words
(``filters.quality.contact``). No Python runs per character or per word; per document there is
the segmenter call."""

from __future__ import annotations

import itertools
import re
import sys
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal, NamedTuple

import numpy as np

from filters.quality import repeat as rep
from filters.quality.contact import contact_counts
from filters.quality.words import FUNCTION_WORDS
from filters.text.chars import DASHES, HAN_RANGES, STAMP, stamp_digits, utf8_safe
from filters.text.markdown import prose_rows
from filters.text.segment import get_segmenter
from filters.text.table_cache import disk_cached

SHORT_LINE_CHARS = 10  # a line with fewer visible characters is short (RefinedWeb/C4 line rules count short lines)
SEPARATOR_SHARE = 0.3  # separator + inner whitespace share of a stripped line that makes it a separator line
MENU_MIN_ITEMS = 3  # "首页 > 新闻 > 正文": at least 3 items …
MENU_MAX_ITEM_CHARS = 8  # … none longer than 8 characters (cf. the navigation rule's max_item_chars)
MAX_CLOSERS = 3  # closing quotes/brackets skipped after sentence-final punctuation: 。”）
CHUNK_CHARS = 1 << 20  # characters per internal chunk: bounds the numpy arrays (~40 bytes per character)

SENTENCE_FINAL = "。｡．.！!？?…‥⋯；;：:"
CLOSERS = "”’\"'」』）)】]》〉〕｝}］〗〙＂＇"
SEPARATORS = "|｜¦‖_＿>＞<＜»«›‹·•・‧∙⋅/／\\＼-－—–―─━═~～→←⇒⇐▶►▸◀◆◇■□●○★☆▪▫*＊=＝+＋#＃"

# Exclusive character categories: bits 0-2 of the table.
SPACE, HAN, LATIN, LETTER, DIGIT, PUNCT, SYMBOL = range(7)
N_CATS = 8
_CAT = 7
END = 8  # SENTENCE_FINAL
CLOSE = 16  # CLOSERS
SEP = 32  # SEPARATORS


class Signal(NamedTuple):
    name: str
    bad_when: Literal["high", "low"]  # which tail of the reference distribution a rule would cut
    description: str


SIGNALS: tuple[Signal, ...] = (
    Signal(
        "line_punct_frac",
        "low",
        "lines whose last character is in SENTENCE_FINAL, or that end in 1-3 CLOSERS "
        "right after such a character (。” ！」 。）), over lines",
    ),
    Signal(
        "short_line_frac",
        "high",
        f"lines with fewer than SHORT_LINE_CHARS ({SHORT_LINE_CHARS}) characters "
        "that do not end in punctuation (menu items, bare labels; not a verse or a clause: 春眠不觉晓，), "
        "over lines",
    ),
    Signal(
        "separator_line_frac",
        "high",
        "separator lines over lines; a separator line (a) has SEPARATORS plus "
        "inner whitespace >= 30 % of its stripped length (whitespace included), or (b) holds >= 2 separators and "
        "no other punctuation, and its runs of other visible characters number >= 3, each <= 8 characters",
    ),
    Signal(
        "date_line_frac",
        "high",
        "lines that end in a date or time stamp (DATE_END: 2018年3月13日, 10-20, "
        "2024-02-24, 3月5日, 12:30) next to another such line, over lines: the shape of link "
        "farms and article lists (a dated post header followed by its post is not counted)",
    ),
    Signal(
        "dup_line_char_frac",
        "high",
        "characters of lines that repeat an earlier line (stripped, exact) of the "
        "same text, over visible characters (Gopher)",
    ),
    Signal(
        "dup_para_char_frac",
        "high",
        "characters of paragraphs that repeat an earlier paragraph, over visible characters (Gopher)",
    ),
    *(
        Signal(
            f"top{n}_word_cov",
            "high",
            f"characters of the words covered by the most frequent word {n}-gram "
            "occurring >= 2 times (ties: more characters, then first), overlaps once, over characters in words; "
            "0 if no n-gram repeats (Gopher)",
        )
        for n in rep.TOP_NS
    ),
    *(
        Signal(
            f"dup{n}_word_cov",
            "high",
            f"characters of the words covered by word {n}-grams occurring >= 2 times, "
            "overlaps once, over characters in words (Gopher)",
        )
        for n in rep.DUP_NS
    ),
    Signal(
        "function_word_ratio",
        "low",
        "words in quality.words.FUNCTION_WORDS, over words (Gopher's stop-word rule, modern and classical Chinese)",
    ),
    Signal("function_word_distinct", "low", "distinct FUNCTION_WORDS among the words (a count)"),
    Signal(
        "symbol_ratio",
        "high",
        "symbol characters over visible characters (the symbols of a Markdown table's cells not counted)",
    ),
    Signal(
        "digit_ratio",
        "high",
        "digit characters over visible characters, the digits of date and time stamps "
        "(filters.text.chars.STAMP) left out of both: a forum stamps every post",
    ),
    Signal("latin_ratio", "high", "Latin letters over visible characters"),
    Signal(
        "punct_ratio",
        "low",
        "punctuation characters over visible characters (prose needs it; keyword lists "
        "and word salad lack it; heavy decoration shows in symbol_ratio and separator_line_frac)",
    ),
    Signal(
        "contact_density",
        "high",
        "contact identifiers (quality.contact.contact_spans: phone, QQ, WeChat, URL, "
        "e-mail, obfuscations included) per 1,000 visible characters",
    ),
    Signal(
        "han_ratio",
        "low",
        "Han characters over units of writing: letters and digits, a word of Latin letters as one unit; "
        "not punctuation or symbols, nor the digits of stamps and of a Markdown table's cells "
        "(filters.text.chars.han_ratio)",
    ),
)
SIGNAL_NAMES = tuple(s.name for s in SIGNALS)


@lru_cache(maxsize=None)
@disk_cached("signal-chars")
def char_table() -> np.ndarray:
    """uint8 per code point: the category (bits 0-2) and the END, CLOSE, SEP flags (~0.3 s, once
    per process)."""
    table = np.full(sys.maxunicode + 1, SYMBOL, dtype=np.uint8)  # planes 4-16: unassigned or private use
    for cp in itertools.chain(range(0x40000), range(0xE0000, 0xE0200)):
        c = chr(cp)
        if c.isspace():
            table[cp] = SPACE
            continue
        cat = unicodedata.category(c)
        if cat[0] == "L":
            table[cp] = LATIN if "LATIN" in unicodedata.name(c, "") else LETTER
        elif cat[0] == "N":
            table[cp] = DIGIT
        elif cat[0] == "P":
            table[cp] = PUNCT
        elif cat in ("Mn", "Mc") and not (0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF):
            table[cp] = LETTER  # combining marks belong to their letter; variation selectors to their emoji
    table[[ord(c) for c in DASHES]] = PUNCT  # dashes Unicode files as symbols (filters.text.chars.DASHES)
    for lo, hi in HAN_RANGES:
        table[lo : hi + 1] = HAN  # the ranges of filters.text.chars, unassigned code points included
    for chars, flag in ((SENTENCE_FINAL, END), (CLOSERS, CLOSE), (SEPARATORS, SEP)):
        table[[ord(c) for c in chars]] |= flag
    return table


def _seg_sum(mask: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per segment [start, end): how many True in ``mask``."""
    c = np.concatenate(([0], np.cumsum(mask, dtype=np.int64)))
    return c[ends] - c[starts]


_D = "[0-9０-９]"
# A date or time stamp at the end of a line (issue 23: link-farm pages list titles with dates).
DATE_END = re.compile(
    f"(?:{_D}{{2,4}}[-/.年]{_D}{{1,2}}(?:[-/.月]{_D}{{1,2}}日?)?|{_D}{{1,2}}月{_D}{{1,2}}日"
    f"|{_D}{{1,2}}[:：]{_D}{{2}}(?:[:：]{_D}{{2}})?)[ \t\u3000]*[)）]?[ \t\u3000]*$",
    re.M,
)


_DATE_TAIL = " \t\u3000)）"  # what DATE_END allows after a stamp
_TAIL_CODES = np.array([ord(c) for c in _DATE_TAIL], dtype=np.uint32)
_DATE_LAST = np.array([ord(c) for c in "0123456789０１２３４５６７８９日"], dtype=np.uint32)  # a stamp's last character
_DATE_MAX = 11  # characters of the longest stamp DATE_END takes: 2018-03-13日


def _date_lines(
    joined: str, codes: np.ndarray, line_starts: np.ndarray, line_doc: np.ndarray, lines: _Lines, n_docs: int
) -> np.ndarray:
    """date_line_frac: lines of each document whose end matches DATE_END and whose previous or
    next non-empty line does too, over its non-empty lines (a dated line is never empty). A list
    of links gives each item a date; a forum thread or a news page dates each post or story in a
    header line followed by its text, and a dated header alone is no list (issue 32: forum
    threads lost to this rule). A stamp ends at a line's last character outside
    _DATE_TAIL, which must be in _DATE_LAST, and starts at most _DATE_MAX characters before it:
    DATE_END is searched in that window of those lines only (the lines a search of the whole
    text finds, 10x faster)."""
    if not len(codes):
        return np.zeros(n_docs)
    line_ends = np.append(line_starts[1:] - 1, len(codes))
    stamp_end = line_ends - 1  # the last character, unless it is in _DATE_TAIL
    tail = np.flatnonzero((line_ends > line_starts) & np.isin(codes[np.maximum(stamp_end, 0)], _TAIL_CODES))
    for i, lo, hi in zip(tail.tolist(), line_starts[tail].tolist(), line_ends[tail].tolist()):
        stamp_end[i] = lo + len(joined[lo:hi].rstrip(_DATE_TAIL)) - 1
    ok = stamp_end >= line_starts
    ok[ok] = np.isin(codes[stamp_end[ok]], _DATE_LAST)
    candidates = np.flatnonzero(ok)
    window = np.maximum(line_starts[candidates], stamp_end[candidates] + 1 - _DATE_MAX)
    dated = [
        i
        for i, lo, hi in zip(candidates.tolist(), window.tolist(), line_ends[candidates].tolist())
        if DATE_END.search(joined, lo, hi)
    ]
    # the non-empty lines, in order, that are dated; one counts only beside another (issue 32)
    stamped = np.zeros(len(lines.doc), dtype=bool)
    stamped[np.searchsorted(lines.first, line_starts[np.array(dated, dtype=np.int64)])] = True
    paired = stamped[1:] & stamped[:-1] & (lines.doc[1:] == lines.doc[:-1])  # line k and k + 1
    listed = np.zeros(len(stamped), dtype=bool)
    listed[1:] |= paired
    listed[:-1] |= paired
    return _frac(np.bincount(lines.doc[listed], minlength=n_docs), np.bincount(lines.doc, minlength=n_docs))


def _frac(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros(len(den)), where=den > 0)


class _Lines(NamedTuple):
    doc: np.ndarray  # document of each non-empty line
    chars: np.ndarray  # its visible characters
    first: np.ndarray  # position of its first visible character in the chunk
    last: np.ndarray  # position of its last visible character
    is_first: np.ndarray  # first non-empty line of a paragraph block (before the one-block rule)


def _line_signals(
    t: np.ndarray,
    line_starts: np.ndarray,
    line_doc: np.ndarray,
    n_docs: int,
    table: np.ndarray,
    out: dict[str, np.ndarray],
) -> _Lines:
    """line_punct_frac, short_line_frac, separator_line_frac into ``out``; the non-empty lines.
    ``table``: per line, a row of a Markdown table, which is neither a separator nor a short line
    (its cells are short by design and may hold ``/`` or ``-``).
    Works on the positions of visible (and separator) characters, found by binary search per
    line, so nothing but one ``flatnonzero`` runs over every character."""
    line_ends = np.append(line_starts[1:] - 1, len(t))
    cat = t & _CAT
    vis_pos = np.flatnonzero(cat != SPACE)
    lo, hi = np.searchsorted(vis_pos, line_starts), np.searchsorted(vis_pos, line_ends)
    ne = np.flatnonzero(hi > lo)
    lo, hi, ls, le, doc = lo[ne], hi[ne], line_starts[ne], line_ends[ne], line_doc[ne]
    chars = hi - lo
    first, last = vis_pos[lo], vis_pos[hi - 1]
    # sentence-final punctuation, possibly followed by up to MAX_CLOSERS closing quotes/brackets
    k = hi - 1  # index in vis_pos of the character looked at
    ended = (t[last] & END) != 0
    for _ in range(MAX_CLOSERS):
        step = ~ended & ((t[vis_pos[k]] & CLOSE) != 0) & (k > lo)
        k = k - step
        ended |= step & ((t[vis_pos[k]] & END) != 0)
    stripped = last - first + 1
    sep = _count_in(np.flatnonzero(t & SEP), ls, le)
    separator = (sep + stripped - chars) >= SEPARATOR_SHARE * stripped
    menu = (sep >= 2) & (_count_in(np.flatnonzero((cat == PUNCT) & ((t & SEP) == 0)), ls, le) == 0)
    if menu.any():
        separator |= menu & _menu_items(t, cat != SPACE, line_starts, ne)
    lines = np.bincount(doc, minlength=n_docs)
    out["line_punct_frac"] = _frac(np.bincount(doc, ended, n_docs), lines)
    bare = ((t[last] & _CAT) != PUNCT) | ((t[last] & SEP) != 0)  # ends in a letter, digit, symbol or separator
    cells = table[ne]
    out["short_line_frac"] = _frac(np.bincount(doc, (chars < SHORT_LINE_CHARS) & bare & ~cells, n_docs), lines)
    out["separator_line_frac"] = _frac(np.bincount(doc, separator & ~cells, n_docs), lines)
    prev_empty = np.ones(len(ne), dtype=bool)
    prev_empty[1:] = (ne[1:] - ne[:-1] > 1) | (doc[1:] != doc[:-1])
    return _Lines(doc, chars, first, last, prev_empty)


def _count_in(positions: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """How many of the sorted ``positions`` lie in each [start, end)."""
    return np.searchsorted(positions, ends) - np.searchsorted(positions, starts)


def _menu_items(t: np.ndarray, vis: np.ndarray, line_starts: np.ndarray, ne: np.ndarray) -> np.ndarray:
    """For the non-empty lines ``ne``: whether the line's runs of visible non-separator characters
    number >= MENU_MIN_ITEMS and none is longer than MENU_MAX_ITEM_CHARS."""
    item = vis & ((t & SEP) == 0)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], item.view(np.int8), [0]))))
    run_start, run_len = edges[::2], edges[1::2] - edges[::2]
    run_line = np.searchsorted(line_starts, run_start, side="right") - 1  # runs never cross "\n"
    items = np.bincount(run_line, minlength=len(line_starts))[ne]
    long_items = np.bincount(run_line[run_len > MENU_MAX_ITEM_CHARS], minlength=len(line_starts))[ne]
    return (items >= MENU_MIN_ITEMS) & (long_items == 0)


def _repeated_line_signals(
    prefix: rep.Prefix, lines: _Lines, n_docs: int, visible: np.ndarray, out: dict[str, np.ndarray]
) -> None:
    """dup_line_char_frac and dup_para_char_frac into ``out``."""
    keys = rep.doc_keys(rep.substring_keys(prefix, lines.first, lines.last + 1), lines.doc)
    dup = rep.first_occurrence(keys)
    out["dup_line_char_frac"] = _frac(np.bincount(lines.doc[dup], lines.chars[dup], n_docs), visible)
    blocks = np.bincount(lines.doc, lines.is_first, n_docs)
    is_first = lines.is_first | (blocks[lines.doc] < 2)  # one block: its lines are the paragraphs
    starts = np.flatnonzero(is_first)
    para_doc, para_chars = lines.doc[starts], np.add.reduceat(lines.chars, starts) if len(starts) else starts
    dup = rep.first_occurrence(rep.doc_keys(rep.block_keys(keys, is_first), para_doc))
    out["dup_para_char_frac"] = _frac(np.bincount(para_doc[dup], para_chars[dup], n_docs), visible)


class _KeyTable(NamedTuple):
    keys: np.ndarray  # the function words' keys, in id order
    slots: np.ndarray  # int16 per value of key >> shift: the id of the function word there, or -1
    shift: int


@lru_cache(maxsize=None)
def _function_word_table() -> _KeyTable:
    """FUNCTION_WORDS by ``substring_keys``, with a direct-address table on the keys' top 20 bits
    (the first bit window in which no two function words share a slot): one gather per word
    instead of a binary search."""
    keys = rep.text_keys(sorted(FUNCTION_WORDS))
    for shift in range(44, -1, -4):
        slot = keys >> np.uint64(shift) & np.uint64((1 << 20) - 1)
        if len(np.unique(slot)) == len(keys):
            slots = np.full(1 << 20, -1, dtype=np.int16)
            slots[slot] = np.arange(len(keys))
            return _KeyTable(keys, slots, shift)
    raise AssertionError("no collision-free 20-bit window among the function words' keys")


def _function_word_ids(keys: np.ndarray) -> np.ndarray:
    """Each key's function-word id, or -1."""
    table = _function_word_table()
    ids = table.slots[(keys >> np.uint64(table.shift) & np.uint64((1 << 20) - 1)).astype(np.intp)].astype(np.intp)
    return np.where((ids >= 0) & (table.keys[ids] == keys), ids, -1)  # an id of -1 reads the last key


def _word_spans(words: list[list[str]], text_lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, document) of every word in the chunk (the texts joined by one newline)."""
    per_doc = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    lengths = np.fromiter(map(len, itertools.chain.from_iterable(words)), dtype=np.int64, count=int(per_doc.sum()))
    doc = np.repeat(np.arange(len(words)), per_doc)
    if not np.array_equal(np.bincount(doc, lengths, len(words)), text_lengths):
        raise ValueError("words do not spell their texts (each cut must join to its text)")
    ends = np.cumsum(lengths) + doc  # every earlier text adds its joining "\n"
    return ends - lengths, ends, doc


def _word_signals(
    words: list[list[str]], text_lengths: np.ndarray, t: np.ndarray, prefix: rep.Prefix, out: dict[str, np.ndarray]
) -> None:
    """Word n-gram coverage and function words into ``out``. ``words``: each text's cut; ``t``:
    the table values of the chunk."""
    n_docs = len(words)
    starts, ends, doc = _word_spans(words, text_lengths)
    cat = t & _CAT
    word_char = (cat != SPACE) & (cat != PUNCT) & (cat != SYMBOL)
    kept = np.flatnonzero(_seg_sum(word_char, starts, ends) > 0)
    starts, ends, doc = starts[kept], ends[kept], doc[kept]
    lengths = ends - starts
    keys = rep.substring_keys(prefix, starts, ends)
    word_chars = np.bincount(doc, lengths, n_docs)
    for n, covered in rep.ngram_coverage(keys, lengths, doc, n_docs).items():
        name = f"top{n}_word_cov" if n in rep.TOP_NS else f"dup{n}_word_cov"
        out[name] = _frac(covered, word_chars)
    fw = _function_word_ids(keys)
    is_fw = fw >= 0
    out["function_word_ratio"] = _frac(np.bincount(doc, is_fw, n_docs), np.bincount(doc, minlength=n_docs))
    pairs = np.sort(doc[is_fw] * len(FUNCTION_WORDS) + fw[is_fw])  # np.sort: ~10x np.unique's hashing here
    first = np.ones(len(pairs), dtype=bool)
    first[1:] = pairs[1:] != pairs[:-1]
    out["function_word_distinct"] = np.bincount(pairs[first] // len(FUNCTION_WORDS), minlength=n_docs).astype(float)


def _chunk_signals(texts: Sequence[str], words: list[list[str]], rows: Sequence[list[int]]) -> dict[str, np.ndarray]:
    """Every signal for ``texts`` (one chunk), ``words[i]`` being the cut of ``texts[i]`` and
    ``rows[i]`` its lines that are table rows (``markdown.prose_rows``)."""
    n_docs = len(texts)
    joined = "\n".join(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n_docs)
    doc_starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    t = char_table()[codes]
    char_doc = np.repeat(np.arange(n_docs), lengths + 1)[: len(codes)]  # a joining "\n" goes with the text before it
    counts = np.bincount(char_doc * N_CATS + (t & _CAT), minlength=n_docs * N_CATS).reshape(n_docs, N_CATS)
    visible = counts[:, 1:].sum(axis=1)
    out: dict[str, np.ndarray] = {}
    line_starts = np.concatenate(([0], np.flatnonzero(codes == 10) + 1))
    line_doc = np.searchsorted(doc_starts, line_starts, side="right") - 1
    prefix = rep.prefix_hashes(codes)
    first_line = np.searchsorted(line_starts, doc_starts)
    table = np.zeros(len(line_starts), dtype=bool)
    table[[int(first_line[d]) + i for d, r in enumerate(rows) for i in r]] = True
    lines = _line_signals(t, line_starts, line_doc, n_docs, table, out)
    out["date_line_frac"] = _date_lines(joined, codes, line_starts, line_doc, lines, n_docs)
    _repeated_line_signals(prefix, lines, n_docs, visible, out)
    _word_signals(words, lengths, t, prefix, out)
    stamps = [(m.start(), stamp_digits(m.group())) for m in STAMP.finditer(joined)]
    # the symbols and figures in a Markdown table's cells (a ✅ column, a benchmark's timings): data
    cell_symbols = cell_figures = np.zeros(n_docs, dtype=np.int64)
    if table.any():  # per character only for a chunk that has a table
        in_table = np.repeat(table, np.diff(np.append(line_starts, len(codes))))
        cell_symbols = np.bincount(char_doc[in_table & ((t & _CAT) == SYMBOL)], minlength=n_docs)
        cell_figures = np.bincount(char_doc[in_table & ((t & _CAT) == DIGIT)], minlength=n_docs)
    stamped = _stamped(stamps, char_doc, n_docs)  # digits of date and time stamps (filters.text.chars.STAMP)
    out["symbol_ratio"] = _frac(counts[:, SYMBOL] - cell_symbols, visible)
    for name, cat in (("latin_ratio", LATIN), ("punct_ratio", PUNCT)):
        out[name] = _frac(counts[:, cat], visible)
    # a forum thread stamps every post: a stamp's digits are no figures of the text (issue 32)
    out["digit_ratio"] = _frac(counts[:, DIGIT] - stamped, visible - stamped)
    # filters.text.chars.TextStats.han_ratio: Han over units of writing, a Latin word one unit; the
    # digits of a stamp and the figures of a table (a cell's stamp among them) are no unit of writing
    if table.any():
        stamped = _stamped([(at, n) for at, n in stamps if not in_table[at]], char_doc, n_docs) + cell_figures
    latin = (t & _CAT) == LATIN
    word_tails = np.bincount(char_doc[1:][latin[1:] & latin[:-1]], minlength=n_docs)
    written = counts[:, HAN] + counts[:, LETTER] + counts[:, LATIN] + counts[:, DIGIT] - word_tails - stamped
    out["han_ratio"] = _frac(counts[:, HAN], written)
    out["contact_density"] = _frac(1000.0 * contact_counts(joined, doc_starts, codes), visible)
    return {name: out[name].astype(np.float32) for name in SIGNAL_NAMES}


def _stamped(stamps: list[tuple[int, int]], char_doc: np.ndarray, n_docs: int) -> np.ndarray:
    """Per text, the digits of the stamps ``(position, digits)``."""
    if not stamps:
        return np.zeros(n_docs, dtype=np.int64)
    at, n = np.array(stamps, dtype=np.int64).T
    return np.bincount(char_doc[at], n, n_docs).astype(np.int64)


def _chunks(texts: Sequence[str]) -> list[slice]:
    """Consecutive slices of ``texts`` of about CHUNK_CHARS characters (a longer text alone)."""
    out, start, size = [], 0, 0
    for i, text in enumerate(texts):
        if size and size + len(text) > CHUNK_CHARS:
            out.append(slice(start, i))
            start, size = i, 0
        size += len(text) + 1
    out.append(slice(start, len(texts)))
    return out


def cut(text: str) -> list[str]:
    """rjieba's HMM-off cut (``filters.text.segment``). rjieba takes UTF-8 only: a text with lone
    surrogates is cut with U+FFFD in their place, which keeps every word's length, and lengths
    are all the statistics read of the words."""
    try:
        return get_segmenter("rjieba", hmm=False).cut(text)
    except UnicodeEncodeError:
        return get_segmenter("rjieba", hmm=False).cut(utf8_safe(text))


def signals_batch(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Every signal of ``SIGNALS`` for each text: {name: float32 array of len(texts)}, in
    ``SIGNALS`` order. Each text is segmented once (``cut``); ``doc_signals`` gives the same
    values one text at a time. The statistics describe a text's prose (``filters.text.markdown.prose``):
    Markdown code and markup are taken out first, so that code counts neither as symbols, nor as
    lines without punctuation, nor as repeated lines, and a table's pipes or a heading's ``##``
    make no separator line."""
    read = [prose_rows(t) for t in texts]
    texts, rows = [r[0] for r in read], [r[1] for r in read]
    if not texts:
        return {name: np.zeros(0, dtype=np.float32) for name in SIGNAL_NAMES}
    parts = [_chunk_signals(texts[s], [cut(x) for x in texts[s]], rows[s]) for s in _chunks(texts)]
    return {name: np.concatenate([p[name] for p in parts]) for name in SIGNAL_NAMES}


def doc_signals(text: str, words: list[str] | None = None) -> dict[str, float]:
    """Every signal of ``SIGNALS`` for one text (its prose, as ``signals_batch``). ``words``: the
    text's rjieba HMM-off cut, when the caller has it; the words must spell the text (their lengths
    are checked: ValueError); a text holding code is cut again, as its prose."""
    read, rows = prose_rows(text)
    if read is not text:  # words are the cut of the text, not of its prose
        text, words = read, None
    values = _chunk_signals([text], [cut(text) if words is None else list(words)], [rows])
    return {name: float(values[name][0]) for name in SIGNAL_NAMES}
