"""The drop rules of PanGu-α §3.1.1. Each returns ``KEEP`` or ``Verdict(False, reason)``;
reasons are the names the ledger counts."""

from __future__ import annotations

import re
from typing import NamedTuple

from filters.text.chars import HAN_CLASS, SENTENCE_PUNCT, TextStats
from filters.text.keywords import distinct_terms


class Verdict(NamedTuple):
    keep: bool
    reason: str | None = None


KEEP = Verdict(True)

TITLE_ONLY = "title_only"
TOO_SHORT = "too_short"
LOW_HAN_RATIO = "low_han_ratio"
ADVERTISEMENT = "advertisement"
SENSITIVE_WORDS = "sensitive_words"


def title_only(
    text: str, title: str | None, slack_chars: int, bare_title_max_chars: int, visible: int | None = None
) -> Verdict:
    """The page is nothing but its title: the body is the title (plus a few characters), or,
    without a known title, one short line with no sentence punctuation. ``visible``: the text's
    non-whitespace characters, when the caller has counted them."""
    if title:
        t = "".join(title.split())  # without whitespace (str.split and regex \s agree on it)
        if not t:
            return KEEP
        body = "".join(text.split())
        if t in body and len(body) - len(t) * body.count(t) < slack_chars:
            return Verdict(False, TITLE_ONLY)
        return KEEP
    if visible is not None and visible > bare_title_max_chars:
        return KEEP
    body = "".join(text.split())
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if len(lines) == 1 and len(body) <= bare_title_max_chars and not SENTENCE_PUNCT.search(lines[0]):
        return Verdict(False, TITLE_ONLY)
    return KEEP


def too_short(stats: TextStats, min_chars: int, text: str = "", verse_min_chars: int = 0) -> Verdict:
    """Fewer than ``min_chars`` non-whitespace characters, unless the text is ``verse`` of at least
    ``verse_min_chars`` (0 = no exception): a quatrain is a whole text in 24 to 32 characters."""
    if stats.visible >= min_chars:
        return KEEP
    if 0 < verse_min_chars <= stats.visible and verse(text):
        return KEEP
    return Verdict(False, TOO_SHORT)


# Verse (ours): lines of short Han clauses, each line ending on clause punctuation, under header
# lines (a collection's theme, 《title》, the poet) that hold no punctuation of their own.
VERSE_CLAUSE_END = re.compile(r"[，。？！；、,?!;：:]")
VERSE_LINE_END = re.compile(r"[，。？！；,?!;]$")
VERSE_CLAUSE = re.compile(f"[{HAN_CLASS}]{{3,7}}")  # 三言 to 七言; a ci's lines lie within it too
VERSE_HEADER = re.compile(r"[^，。？！；、,?!;：:.\s]{1,16}")
VERSE_MIN_CLAUSES = 4
VERSE_MIN_LINES = 0.8


def verse_line(line: str) -> bool:
    """A line of verse: clauses of 3 to 7 Han characters alone, one or two of them (a line, a
    couplet), or more of one length (a regulated poem written as one paragraph)."""
    clauses = [c for c in VERSE_CLAUSE_END.split(line) if c]
    if not all(VERSE_CLAUSE.fullmatch(c) for c in clauses):
        return False
    return len(clauses) <= 2 or len({len(c) for c in clauses}) == 1


def verse(text: str) -> bool:
    """Whether ``text`` is verse: every non-empty line either ends on clause punctuation or is a
    header of at most 16 characters without punctuation; at least 80 % of the punctuated lines are
    ``verse_line``s, and they hold four clauses or more. Prose and a short review run clauses of
    every length into one line; a short advert's lines hold digits, Latin and symbols, or
    punctuation inside a line that does not end on it."""
    lines = verse_lines = clauses = 0
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        if not VERSE_LINE_END.search(line):
            if not VERSE_HEADER.fullmatch(line):
                return False
            continue
        lines += 1
        if verse_line(line):
            verse_lines += 1
            clauses += len(VERSE_CLAUSE_END.findall(line))
    return clauses >= VERSE_MIN_CLAUSES and verse_lines >= VERSE_MIN_LINES * lines


def low_han_ratio(stats: TextStats, min_ratio: float) -> Verdict:
    """Han ideographs are less than ``min_ratio`` of the non-whitespace characters."""
    return KEEP if stats.han_ratio >= min_ratio else Verdict(False, LOW_HAN_RATIO)


def advertisement(hits: dict[str, set[str]], min_distinct_hits: int) -> Verdict:
    """Drop at ``min_distinct_hits`` or more distinct ad keywords (``KeywordMatcher.hits``)."""
    return Verdict(False, ADVERTISEMENT) if distinct_terms(hits) >= min_distinct_hits else KEEP


# Clause ends for ``stuffed``: a term that fills a clause on its own was put there, not written
# about (the enumeration comma 、 is not one: statutes list drugs with it).
CLAUSE = re.compile(r"[，,。；;！!？?：:\n\r\t]+")


def stuffed(text: str, terms: set[str]) -> bool:
    """Whether one of ``terms`` stands alone as a clause of ``text`` (``，成人视频，``): keywords
    injected into a page, which its reporting vocabulary does not excuse. ``text`` normalised as
    the terms are (NFKC, lower case)."""
    return any(clause.strip() in terms for clause in CLAUSE.split(text))


def sensitive_words(hits: dict[str, set[str]], max_distinct_hits: int, report: bool = False) -> Verdict:
    """Drop when MORE than ``max_distinct_hits`` distinct sensitive terms occur (PanGu-α: > 3),
    unless the document is a ``report`` (a statute, a judgment, a news report on a crackdown names
    the drugs and the games it is about: ``SensitiveConfig.report_min_markers``)."""
    return Verdict(False, SENSITIVE_WORDS) if distinct_terms(hits) > max_distinct_hits and not report else KEEP
