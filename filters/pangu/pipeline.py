"""The rule-based cleaning of one document, composed from ``filters.pangu.transforms`` and
``filters.pangu.rules`` drops. Build a ``Cleaner`` once per worker (it holds the OpenCC converter and
the Aho-Corasick automaton); call it per document.

A document is scanned once (``filters.text.chars.scan``): the scan's class bits let every transform that
cannot change the text be skipped, and its counts serve the length and Han-ratio rules unless a
transform removed more than whitespace (then the cleaned text is scanned again). The NFKC +
lower-case text is made only for documents that reach the keyword rules, and one automaton finds
the ad and the sensitive terms together."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from filters.pangu import rules
from filters.pangu import transforms as tf
from filters.pangu.config import RulesConfig
from filters.text import chars as tx
from filters.text.convert import T2S
from filters.text.keywords import (
    AD_KEYWORDS_FILE,
    REPORTING,
    SENSITIVE_DIR,
    KeywordList,
    KeywordMatcher,
    by_category,
    normalise,
    read_list,
    read_lists_dir,
)


@dataclass
class Cleaned:
    text: str  # the document after the transforms (what the rules saw)
    reason: str | None  # None = kept
    sensitive_hits: dict[str, int] = field(default_factory=dict)  # category -> distinct terms
    symbols_removed: int = 0
    nav_lines_removed: int = 0
    dup_paragraphs_removed: int = 0
    converted: bool = False  # traditional -> simplified changed the text
    stats: tx.TextStats = tx.TextStats(0, 0)  # of the cleaned text (tx.text_stats)

    @property
    def keep(self) -> bool:
        return self.reason is None


class Cleaner:
    def __init__(self, cfg: RulesConfig):
        self.cfg = cfg
        self._t2s = T2S(cfg.convert.opencc_config) if cfg.convert.enabled else None
        ads_file = Path(cfg.ads.keywords_file) if cfg.ads.keywords_file else AD_KEYWORDS_FILE
        ads = read_list(ads_file, category="advertisement")
        extra = tuple(normalise(k) for k in cfg.ads.extra_keywords)
        self.ads = KeywordMatcher([KeywordList(ads.category, ads.version, ads.terms + extra)])
        lists_dir = Path(cfg.sensitive.lists_dir) if cfg.sensitive.lists_dir else SENSITIVE_DIR
        self.sensitive = KeywordMatcher(read_lists_dir(lists_dir))
        # a register, not a category: its terms mark text about the schemes (SensitiveConfig)
        self.reporting = read_list(SENSITIVE_DIR / "safety" / f"{REPORTING}.txt", category=REPORTING)
        # one automaton for all: list 0 is the ads list, the last the reporting markers, the
        # sensitive lists in between
        self._terms = KeywordMatcher(self.ads.lists + self.sensitive.lists + [self.reporting])

    def __call__(self, text: str, title: str | None = None) -> Cleaned:
        cfg = self.cfg
        scanned = tx.scan(text)
        source = text  # the text ``scanned`` was made from
        text, symbols = tf.remove_special_symbols(text, cfg.symbols.min_decorative_run, scanned)
        converted = False
        if self._t2s is not None:
            simplified = self._t2s.convert(text, scanned if text is source else None)
            converted = simplified != text
            text = simplified
            title = self._t2s.convert(title) if title else title
        nav = 0
        if cfg.navbar.enabled:
            n = cfg.navbar
            text, nav = tf.remove_navigation_lines(
                text, n.keywords, n.min_items, n.max_item_chars, n.max_keyword_line_chars, n.max_spaced_item_chars
            )
        dups = 0
        if cfg.paragraphs.enabled:
            text, dups = tf.remove_duplicate_paragraphs(text, cfg.paragraphs.min_chars)
        if symbols or converted or nav or dups:
            source, scanned = text, tx.scan(text)
        # from here on the text only loses whitespace: the counts stay, the code points may not
        text = tf.normalise_lines(text)
        stats = tx.text_stats(text, scanned)  # the length of the whole text, the Han ratio of its prose
        out = Cleaned(text, None, {}, symbols, nav, dups, converted, stats)
        out.reason = self._verdict(text, title, out, scanned if text is source else None)
        return out

    def _verdict(self, text: str, title: str | None, out: Cleaned, scanned: tx.CharScan | None) -> str | None:
        """``scanned``: this very text's scan, or None."""
        cfg = self.cfg
        for verdict in (
            rules.title_only(
                text, title, cfg.length.title_only_slack_chars, cfg.length.bare_title_max_chars, out.stats.visible
            ),
            rules.too_short(out.stats, cfg.length.min_chars, text, cfg.length.verse_min_chars),
            rules.low_han_ratio(out.stats, cfg.length.min_han_ratio),
        ):
            if not verdict.keep:
                return verdict.reason
        if not (cfg.ads.enabled or cfg.sensitive.enabled):
            return None
        # one NFKC + lower-case pass and one automaton for both keyword rules
        normalised = normalise(text, scanned)
        found = self._terms.hits_by_list(normalised, normalised=True)
        if cfg.ads.enabled:
            verdict = rules.advertisement(by_category(self.ads.lists, found[:1]), cfg.ads.min_distinct_hits)
            if not verdict.keep:
                return verdict.reason
        if cfg.sensitive.enabled:
            hits = by_category(self.sensitive.lists, found[1:-1])
            out.sensitive_hits = {cat: len(terms) for cat, terms in sorted(hits.items())}
            markers = cfg.sensitive.report_min_markers
            terms = set().union(*found[1:-1])
            report = (
                len(terms) > cfg.sensitive.max_distinct_hits
                and markers > 0
                and len(found[-1]) >= markers
                and not rules.stuffed(normalised, terms)
            )
            verdict = rules.sensitive_words(hits, cfg.sensitive.max_distinct_hits, report)
            if not verdict.keep:
                return verdict.reason
        return None
