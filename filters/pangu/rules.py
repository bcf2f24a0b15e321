"""The drop rules of PanGu-α §3.1.1. Each returns ``KEEP`` or ``Verdict(False, reason)``;
reasons are the names the ledger counts."""

from __future__ import annotations

import re
from typing import NamedTuple

from filters.text.chars import SENTENCE_PUNCT, TextStats
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


def too_short(stats: TextStats, min_chars: int) -> Verdict:
    """Fewer than ``min_chars`` non-whitespace characters."""
    return KEEP if stats.visible >= min_chars else Verdict(False, TOO_SHORT)


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
