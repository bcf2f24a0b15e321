"""The rule-based cleaning of one document, composed from ``filters.text`` transforms and
``filters.rules`` drops. Build a ``Cleaner`` once per worker (it holds the OpenCC converter and
the Aho-Corasick automata); call it per document."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import opencc

from filters import rules, text as tx
from filters.config import RulesConfig
from filters.keywords import AD_KEYWORDS_FILE, SENSITIVE_DIR, KeywordList, KeywordMatcher, normalise, read_list, read_lists_dir


@dataclass
class Cleaned:
    text: str  # the document after the transforms (what the rules saw)
    reason: str | None  # None = kept
    sensitive_hits: dict[str, int] = field(default_factory=dict)  # category -> distinct terms
    symbols_removed: int = 0
    nav_lines_removed: int = 0
    dup_paragraphs_removed: int = 0
    converted: bool = False  # traditional -> simplified changed the text
    stats: tx.TextStats = tx.TextStats(0, 0)  # of the cleaned text

    @property
    def keep(self) -> bool:
        return self.reason is None


class Cleaner:
    def __init__(self, cfg: RulesConfig):
        self.cfg = cfg
        self._opencc = opencc.OpenCC(cfg.convert.opencc_config) if cfg.convert.enabled else None
        ads_file = Path(cfg.ads.keywords_file) if cfg.ads.keywords_file else AD_KEYWORDS_FILE
        ads = read_list(ads_file, category="advertisement")
        extra = tuple(normalise(k) for k in cfg.ads.extra_keywords)
        self.ads = KeywordMatcher([KeywordList(ads.category, ads.version, ads.terms + extra)])
        lists_dir = Path(cfg.sensitive.lists_dir) if cfg.sensitive.lists_dir else SENSITIVE_DIR
        self.sensitive = KeywordMatcher(read_lists_dir(lists_dir))

    def __call__(self, text: str, title: str | None = None) -> Cleaned:
        cfg = self.cfg
        text, symbols = tx.remove_special_symbols(text, cfg.symbols.min_decorative_run)
        converted = False
        if self._opencc is not None:
            simplified = self._opencc.convert(text)
            converted = simplified != text
            text = simplified
            title = self._opencc.convert(title) if title else title
        nav = 0
        if cfg.navbar.enabled:
            n = cfg.navbar
            text, nav = tx.remove_navigation_lines(text, n.keywords, n.min_items, n.max_item_chars,
                                                   n.max_keyword_line_chars)
        dups = 0
        if cfg.paragraphs.enabled:
            text, dups = tx.remove_duplicate_paragraphs(text, cfg.paragraphs.min_chars)
        text = tx.normalise_lines(text)
        out = Cleaned(text, None, {}, symbols, nav, dups, converted, tx.text_stats(text))
        out.reason = self._verdict(text, title, out)
        return out

    def _verdict(self, text: str, title: str | None, out: Cleaned) -> str | None:
        cfg = self.cfg
        folded = normalise(text)  # one NFKC + lower-case pass shared by both keyword matchers
        checks = [
            lambda: rules.title_only(text, title, cfg.length.title_only_slack_chars, cfg.length.bare_title_max_chars),
            lambda: rules.too_short(out.stats, cfg.length.min_chars),
            lambda: rules.low_han_ratio(out.stats, cfg.length.min_han_ratio),
        ]
        if cfg.ads.enabled:
            checks.append(lambda: rules.advertisement(folded, self.ads, cfg.ads.min_distinct_hits, normalised=True))
        for check in checks:
            verdict = check()
            if not verdict.keep:
                return verdict.reason
        if cfg.sensitive.enabled:
            hits = self.sensitive.hits(folded, normalised=True)
            out.sensitive_hits = {cat: len(terms) for cat, terms in sorted(hits.items())}
            verdict = rules.sensitive_words(hits, cfg.sensitive.max_distinct_hits)
            if not verdict.keep:
                return verdict.reason
        return None
