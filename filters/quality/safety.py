"""Per-category safety scoring (issue 23 item 4): gambling, instant-loan, pornography and fraud
promotions, including pages written without a single word of the PanGu-α sensitive-word lists.

Each category has a lexicon (``sensitive_words/safety/<category>.txt``, the format of
``sensitive_words/*.txt``) and a file of regular expressions (``<category>.patterns``, one a line,
the same header comments). A pattern describes a construction of such pages (``(不用|无需|免)
(抵押|担保)``, ``(首充|首存)...(送|返)\\d+``) rather than a fixed word, so new wordings of the
same offer still match. The score of a list is, on the NFKC + lower-case text
(``filters.text.keywords.normalise``):

    distinct lexicon terms found + patterns with a match that overlaps no match counted before

A pattern scores one point however often it matches, and one phrase scores one point even when
two patterns describe it: topic words sit in one pattern (``投注|下注|押注``), so a report that
names five casino games scores one point for them, while a promotion page scores on many distinct
constructions (an offer, a payout claim, a call to action...). The bundled lexicons hold no term
that a pattern of their list matches (tests/test_safety.py checks it).

Two more lists are registers, not categories: ``reporting`` (police, courts, reporters: text ABOUT
the schemes) raises every threshold, ``promotion`` (calls to action, contact ids, give-aways,
urgency: a page that sells) lowers it, down to a floor of the category's own evidence. A
crackdown report that quotes four slogans is spared; a sales page with two slogans and three
selling constructions is not.

Speed: one Aho-Corasick pass (``ahocorasick_rs``) finds the lexicon terms of every list and, for
every pattern, the literals that any match of it must contain (``filters.quality.safety_prefilter``, like
RE2's prefilter); only patterns whose literals occur are run. A pattern whose matches all begin
with known strings (``leading``) is then tried with ``re.match`` where those strings occur instead
of searched over the whole text (the same matches: a search runs that matcher at every position).
The measured speeds, and where every threshold below came from: docs/quality.md, "Safety".

Build a ``SafetyScorer`` once per worker; ``scores`` is pure and thread-safe. The text should
already be in simplified script (the ``Cleaner`` converts with OpenCC before its keyword rules).
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import NamedTuple, Sequence

import ahocorasick_rs

from base.errors import Refusal
from filters.quality.safety_prefilter import leading, requirement
from filters.text.chars import nfkc_lower_batch, utf8_safe
from filters.text.keywords import REPORTING, SENSITIVE_DIR, KeywordList, list_lines, normalise, read_list

log = logging.getLogger("zhcorpus")

SAFETY_DIR = SENSITIVE_DIR / "safety"
CATEGORIES = ("gambling", "loans", "pornography", "fraud")
REASON_PREFIX = "unsafe_"  # verdict reasons: unsafe_gambling, unsafe_loans, ...
# Two lists are registers, not categories: ``reporting`` marks text ABOUT the schemes (police,
# courts, reporters), ``promotion`` marks a page that sells something (calls to action, contact
# ids, give-aways, urgency). ``scores`` counts them like categories; ``verdict`` moves every
# category's threshold up for a report and down for a promotion. They never name a verdict.
PROMOTION = "promotion"
REGISTERS = (REPORTING, PROMOTION)

# A document is unsafe in a category when its score reaches min_score (ours, 2026-11: the lowest
# value that spares all the clean text and the negatives we have; docs/quality.md#safety-thresholds).
MIN_SCORE = {"gambling": 4, "loans": 4, "pornography": 4, "fraud": 4}


@dataclass(frozen=True)
class SafetyConfig:
    # The caller's switch (a cleaning stage skips the layer when False); SafetyScorer always scores.
    enabled: bool = True
    # "" = the bundled sensitive_words/safety/; else a directory of <category>.txt and
    # <category>.patterns files that replaces it (copy the bundled files you want to keep).
    lists_dir: str = ""
    # Per-category threshold (score >= min_score -> unsafe). Categories not named here keep
    # MIN_SCORE's value (docs/quality.md#safety-thresholds); a category of a custom lists_dir
    # that MIN_SCORE lacks must be named here.
    min_score: dict[str, int] = field(default_factory=lambda: dict(MIN_SCORE))
    # User additions, category -> terms (same format as a lexicon line; normalised on load).
    extra_terms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # User additions, category -> regular expressions (checked like a .patterns line).
    extra_patterns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Text about the schemes (ours, docs/quality.md#safety-thresholds): a document with at least
    # report_min_markers distinct terms of reporting.txt is a report, and every threshold rises by
    # report_margin for it.
    report_min_markers: int = 2
    report_margin: int = 2
    # A page that sells (ours, docs/quality.md#safety-thresholds): with at least promo_min_markers
    # distinct promotion markers (promotion.txt, promotion.patterns) every threshold falls by
    # promo_discount, but never below min_evidence points of the category's own.
    promo_min_markers: int = 2
    promo_discount: int = 2
    min_evidence: int = 2
    # Characters scanned from the start of a document (ours, docs/quality.md#safety-thresholds):
    # bounds the cost of a huge page; a promotion shows its offers at the top.
    max_chars: int = 20_000


class PatternError(Refusal):
    """A regular expression that cannot be used; the message names its file and line (or config key)."""


@dataclass(frozen=True)
class PatternList:
    category: str
    version: str
    patterns: tuple[str, ...]
    where: tuple[str, ...]  # per pattern: "file:line" or the config key it came from


class CategoryHits(NamedTuple):
    """What one category found in a text: its score is len(terms) + len(patterns)."""

    terms: frozenset[str]  # distinct lexicon terms found
    patterns: dict[str, str]  # pattern -> its first match in the text

    @property
    def score(self) -> int:
        return len(self.terms) + len(self.patterns)


def check_pattern(pattern: str, where: str) -> re.Pattern:
    """Compile one pattern, or raise PatternError naming ``where`` (``file:line`` or a config key).
    A pattern that matches the empty string is refused too: it would match every document."""
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise PatternError(f"{where}: bad regular expression {pattern!r}: {e}") from e
    if rx.search("") is not None:
        raise PatternError(f"{where}: {pattern!r} matches the empty string (it would match every document)")
    return rx


def read_patterns(path: Path | Traversable, category: str | None = None) -> PatternList:
    """A ``.patterns`` file: UTF-8, one regex a line, ``#`` lines are comments (``# version:`` read),
    blank lines ignored, surrounding whitespace stripped. Every pattern is checked (``check_pattern``)."""
    version, lines = list_lines(path)
    patterns, where = [], []
    for lineno, line in lines:
        check_pattern(line, f"{path}:{lineno}")
        patterns.append(line)
        where.append(f"{path}:{lineno}")
    return PatternList(category or path.name.removesuffix(".patterns"), version, tuple(patterns), tuple(where))


def read_safety_dir(directory: Path | Traversable) -> tuple[dict[str, KeywordList], dict[str, PatternList]]:
    """The lexicons (``*.txt``) and pattern lists (``*.patterns``) of a directory, by category."""
    lexicons = {p.name.removesuffix(".txt"): read_list(p) for p in directory.iterdir() if p.name.endswith(".txt")}
    patterns = {
        p.name.removesuffix(".patterns"): read_patterns(p) for p in directory.iterdir() if p.name.endswith(".patterns")
    }
    if not lexicons and not patterns:
        raise FileNotFoundError(f"no safety lists (*.txt, *.patterns) in {directory}")
    return lexicons, patterns


def with_extras(
    cfg: SafetyConfig, lexicons: dict[str, KeywordList], patterns: dict[str, PatternList]
) -> tuple[dict[str, KeywordList], dict[str, PatternList]]:
    """The lists plus ``cfg.extra_terms`` / ``cfg.extra_patterns``. An extra for a category that
    has no list is an error (a misspelt category would otherwise score alone, unseen)."""
    known = set(lexicons) | set(patterns)
    for key, extra in (("extra_terms", cfg.extra_terms), ("extra_patterns", cfg.extra_patterns)):
        unknown = sorted(set(extra) - known)
        if unknown:
            raise ValueError(f"safety.{key} names unknown categories {unknown}; known: {sorted(known)}")
    lexicons, patterns = dict(lexicons), dict(patterns)
    for cat, terms in cfg.extra_terms.items():
        base = lexicons.get(cat, KeywordList(cat, "unversioned", ()))
        added = tuple(normalise(t.strip()) for t in terms if t.strip())
        lexicons[cat] = KeywordList(cat, base.version, tuple(dict.fromkeys(base.terms + added)))
    for cat, extra in cfg.extra_patterns.items():
        base = patterns.get(cat, PatternList(cat, "unversioned", (), ()))
        keys = tuple(f"safety.extra_patterns.{cat}[{i}]" for i in range(len(extra)))
        for p, key in zip(extra, keys):
            check_pattern(p, key)
        patterns[cat] = PatternList(cat, base.version, base.patterns + tuple(extra), base.where + keys)
    return lexicons, patterns


def _first_free_match(
    rx: re.Pattern, text: str, taken: list[tuple[int, int]], starts: list[int] | None = None
) -> re.Match | None:
    """The first match of ``rx`` that overlaps none of the ``taken`` spans: one phrase scores one
    point even when two patterns of a list describe it (``足不出户、日赚数百``). ``starts``: the
    sorted positions where a match can begin (``leading``), tried with ``rx.match`` instead of
    searching the whole text (the matcher a search runs at each position: the same matches)."""
    if starts is None:
        m = rx.search(text)
        if m is None or not taken:
            return m
        found = rx.finditer(text)
    else:
        found = _matches_at(rx, text, starts)
    for m in found:
        if not any(m.start() < end and start < m.end() for start, end in taken):
            return m
    return None


def _matches_at(rx: re.Pattern, text: str, starts: list[int]):
    """What ``rx.finditer(text)`` yields when every match begins at one of ``starts`` (sorted): a
    match at the first start that has one, then at the first start at or after its end."""
    pos = 0
    for s in starts:
        if s >= pos:
            m = rx.match(text, s)
            if m:
                yield m
                pos = max(m.end(), s + 1)


def thresholds(cfg: SafetyConfig, categories: tuple[str, ...]) -> dict[str, int]:
    """category -> min_score: ``cfg.min_score`` over ``MIN_SCORE``. A name in ``cfg.min_score`` that
    is neither a category nor in MIN_SCORE is an error (a typo), as is a category with no threshold."""
    unknown = sorted(set(cfg.min_score) - set(categories) - set(MIN_SCORE) | set(cfg.min_score) & set(REGISTERS))
    if unknown:
        raise ValueError(f"safety.min_score names unknown categories {unknown}; known: {list(categories)}")
    merged = {**MIN_SCORE, **cfg.min_score}
    missing = [c for c in categories if c not in merged]
    if missing:
        raise PatternError(f"no threshold for safety categories {missing}: set safety.min_score")
    return {c: merged[c] for c in categories}


class SafetyScorer:
    """Per-category safety scores of a text. Build once per worker; see the module docstring."""

    def __init__(self, cfg: SafetyConfig = SafetyConfig()):
        self.cfg = cfg
        directory = Path(cfg.lists_dir) if cfg.lists_dir else SAFETY_DIR
        self.lexicons, self.pattern_lists = with_extras(cfg, *read_safety_dir(directory))
        self.lists = tuple(sorted(set(self.lexicons) | set(self.pattern_lists)))  # categories and registers
        self.categories = tuple(c for c in self.lists if c not in REGISTERS)
        self.thresholds = thresholds(cfg, self.categories)
        # every pattern of every list: (list, pattern, compiled)
        self._patterns = [
            (c, p, re.compile(p))
            for c in self.lists
            for p in (self.pattern_lists[c].patterns if c in self.pattern_lists else ())
        ]
        self._always = []  # patterns without a requirement: run on every text
        self._requirements: list[list[tuple[int, ...]]] = []  # pattern -> alternatives of set ids
        keys: dict[str, tuple[list[str], list[int]]] = {}  # automaton key -> (term of, set ids)
        for cat in self.lists:
            for term in self.lexicons[cat].terms if cat in self.lexicons else ():
                if term:
                    keys.setdefault(term, ([], []))[0].append(cat)
        self._set_owner: list[int] = []  # set id -> pattern
        for i, (_, p, _) in enumerate(self._patterns):
            req = requirement(p)
            if not req:
                self._always.append(i)
            self._requirements.append([])
            for conj in req:
                ids = []
                for strings in conj:
                    ids.append(len(self._set_owner))
                    self._set_owner.append(i)
                    for a in strings:
                        keys.setdefault(a, ([], []))[1].append(ids[-1])
                self._requirements[i].append(tuple(ids))
        self._keys = list(keys)
        self._term_of = [keys[k][0] for k in self._keys]
        self._sets_of = [keys[k][1] for k in self._keys]
        # A pattern whose matches begin with known strings is tried only where those occur
        # (docs/quality.md, "Safety": the speed it measured)
        self._leading = [bool(self._requirements[i] and leading(p)) for i, (_, p, _) in enumerate(self._patterns)]
        self._leads_of: list[list[int]] = [[] for _ in self._keys]  # key -> patterns it can begin
        index = {k: n for n, k in enumerate(self._keys)}
        for i, (_, p, _) in enumerate(self._patterns):
            for a in sorted(leading(p) or ()) if self._leading[i] else ():
                if a not in index:
                    index[a] = len(self._keys)
                    self._keys.append(a)
                    self._term_of.append([])
                    self._sets_of.append([])
                    self._leads_of.append([])
                self._leads_of[index[a]].append(i)
        self._lead_keys = [set() for _ in self._patterns]  # pattern -> the keys it can begin with
        for k, owners in enumerate(self._leads_of):
            for i in owners:
                self._lead_keys[i].add(k)
        self._conjunctions = [[frozenset(c) for c in r] for r in self._requirements]  # for ``<=`` tests
        self._automaton = ahocorasick_rs.AhoCorasick(self._keys) if self._keys else None
        log.debug(
            "safety scorer: %d lexicon terms and anchors, %d patterns (%d always run), categories %s",
            len(self._keys),
            len(self._patterns),
            len(self._always),
            self.categories,
        )

    @property
    def versions(self) -> dict[str, str]:
        """list -> "<lexicon version>/<patterns version>", for run reports."""
        none = "-"
        return {
            c: f"{self.lexicons[c].version if c in self.lexicons else none}/"
            f"{self.pattern_lists[c].version if c in self.pattern_lists else none}"
            for c in self.lists
        }

    @property
    def fingerprint(self) -> str:
        """sha256 over every (category, kind, entry) and the thresholds: names the lists a run used."""
        h = hashlib.sha256()
        for c in self.lists:
            for term in sorted(self.lexicons[c].terms if c in self.lexicons else ()):
                h.update(f"{c}\tterm\t{term}\n".encode())
            for p in self.pattern_lists[c].patterns if c in self.pattern_lists else ():
                h.update(f"{c}\tpattern\t{p}\n".encode())
            if c in self.thresholds:
                h.update(f"{c}\tmin_score\t{self.thresholds[c]}\n".encode())
        cfg = self.cfg
        h.update(
            f"{cfg.report_min_markers} {cfg.report_margin} {cfg.promo_min_markers} {cfg.promo_discount} "
            f"{cfg.min_evidence} {cfg.max_chars}\n".encode()
        )
        return h.hexdigest()

    def hits(self, text: str, normalised: bool = False) -> dict[str, CategoryHits]:
        """list -> what it found, for every category and register. Only the first ``cfg.max_chars``
        characters are scanned. Pass ``normalised=True`` with ``filters.text.keywords.normalise(text)``
        to share one normalisation with other matchers."""
        terms, patterns = self._scan(text, normalised)
        return {c: CategoryHits(frozenset(terms.get(c, ())), patterns.get(c, {})) for c in self.lists}

    def scores(self, text: str, normalised: bool = False) -> dict[str, int]:
        """list -> distinct lexicon terms + matching patterns, for every category and register
        (the registers are absent when the lists directory has no files for them)."""
        terms, patterns = self._scan(text, normalised)
        return {c: len(terms.get(c, ())) + len(patterns.get(c, ())) for c in self.lists}

    def scores_batch(self, texts: Sequence[str]) -> list[dict[str, int]]:
        """``[self.scores(t) for t in texts]``, normalising the batch at once
        (``filters.text.chars.nfkc_lower_batch``)."""
        out = []
        for text in nfkc_lower_batch([t[: self.cfg.max_chars] for t in texts]):
            terms, patterns = self._scan_normalised(text)
            out.append({c: len(terms.get(c, ())) + len(patterns.get(c, ())) for c in self.lists})
        return out

    def _scan(self, text: str, normalised: bool) -> tuple[dict[str, set[str]], dict[str, dict[str, str]]]:
        text = text[: self.cfg.max_chars]
        return self._scan_normalised(text if normalised else normalise(text))

    def _scan_normalised(self, text: str) -> tuple[dict[str, set[str]], dict[str, dict[str, str]]]:
        """(list -> terms found, list -> {pattern: counted match}), for the lists that found any."""
        terms: dict[str, set[str]] = {}
        hit_sets: set[int] = set()
        try:
            found = self._automaton.find_matches_as_indexes(text, overlapping=True) if self._automaton and text else []
        except UnicodeEncodeError:  # lone surrogates: the patterns below then read the same text
            text = utf8_safe(text)
            found = self._automaton.find_matches_as_indexes(text, overlapping=True)
        hit_keys = {k for k, _, _ in found}
        for k in hit_keys:
            for cat in self._term_of[k]:
                terms.setdefault(cat, set()).add(self._keys[k])
            hit_sets.update(self._sets_of[k])
        candidates = set(self._always)
        for i in {self._set_owner[j] for j in hit_sets}:
            if any(conj <= hit_sets for conj in self._conjunctions[i]):
                candidates.add(i)
        # where the candidates' matches can begin: the matches of their leading strings (most
        # matches are of strings that lead patterns which are not candidates: not looked at)
        leads = [i for i in candidates if self._leading[i]]
        starts: dict[int, list[int]] = {i: [] for i in leads}  # pattern -> where its matches can begin
        if leads:
            led = {}  # key -> the candidates it leads
            for i in leads:
                for k in self._lead_keys[i] & hit_keys:
                    led.setdefault(k, []).append(i)
            for k, a in [(k, a) for k, a, _ in found if k in led]:
                for i in led[k]:
                    starts[i].append(a)
        patterns: dict[str, dict[str, str]] = {}
        taken: dict[str, list[tuple[int, int]]] = {}  # list -> spans its patterns have counted
        for i in sorted(candidates):
            cat, pattern, rx = self._patterns[i]
            at = sorted(set(starts[i])) if self._leading[i] else None
            m = _first_free_match(rx, text, taken.setdefault(cat, []), at)
            if m:
                patterns.setdefault(cat, {})[pattern] = m.group()
                taken[cat].append(m.span())
        return terms, patterns

    def threshold(self, category: str, scores: dict[str, int]) -> int:
        """The score ``category`` must reach in a document with these register counts: min_score,
        + report_margin for a report, - promo_discount for a promotion (never below min_evidence)."""
        cfg, t = self.cfg, self.thresholds[category]
        if scores.get(REPORTING, 0) >= cfg.report_min_markers:
            t += cfg.report_margin
        if scores.get(PROMOTION, 0) >= cfg.promo_min_markers:
            t = max(t - cfg.promo_discount, cfg.min_evidence)
        return t

    def verdict(self, scores: dict[str, int]) -> str | None:
        """``unsafe_<category>`` for the highest-scoring category whose score reaches its
        ``threshold`` (ties: the larger excess over it, then the category name), or None."""
        over = [(s - t, s, c) for c in self.categories if (s := scores.get(c, 0)) >= (t := self.threshold(c, scores))]
        if not over:
            return None
        best = min(over, key=lambda o: (-o[1], -o[0], o[2]))
        return REASON_PREFIX + best[2]
