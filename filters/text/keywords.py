"""Keyword lists and an Aho-Corasick matcher (ahocorasick-rs) for sensitive words and ad keywords.

List files are UTF-8, one term a line; ``#`` lines are comments, and a ``# version: X`` header
names the list's version. Terms and documents are matched NFKC-normalised and lower-cased, so
full-width ``ＱＱ`` matches ``qq``.

Speed (issue 14): ``normalise`` skips NFKC when ``filters.text.chars.scan`` finds no code point NFKC
could change, and replaces the others by their decomposition (``filters.text.chars.nfkc_lower``: full-width
forms, the ideographic space, compatibility ideographs, "…") before CPython's quick check; the matcher is the Rust
``aho-corasick`` crate (overlapping matches: every occurrence of every term, as before).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

import ahocorasick_rs

from filters.text.chars import CharScan, nfkc_lower

# The bundled lists, through importlib.resources: a path from __file__ breaks when the project is
# imported from a zip (spark-submit --py-files), where these are zip members, not files.
SENSITIVE_DIR = files("filters").parent / "sensitive_words"
AD_KEYWORDS_FILE = files("filters") / "resources" / "ad_keywords.txt"
REPORTING = "reporting"  # sensitive_words/safety/reporting.txt: a register (filters/quality/safety.py)


def normalise(text: str, scanned: CharScan | None = None) -> str:
    """NFKC, then lower case. ``scanned`` is ``filters.text.chars.scan(text)`` when the caller has it."""
    return nfkc_lower(text, scanned)  # FOLD characters replaced by their NFKD, then the quick check


@dataclass(frozen=True)
class KeywordList:
    category: str
    version: str
    terms: tuple[str, ...]


def list_lines(path: Path | Traversable) -> tuple[str, list[tuple[int, str]]]:
    """The list file format (sensitive_words/README.md): (its ``# version:``, or "unversioned";
    the (line number, stripped line) of every non-blank, non-comment line)."""
    version, lines = "unversioned", []
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if line.startswith("#"):
            key, _, value = line.lstrip("#").partition(":")
            if key.strip() == "version" and value.strip():
                version = value.strip()
        elif line:
            lines.append((lineno, line))
    return version, lines


def read_list(path: Path | Traversable, category: str | None = None) -> KeywordList:
    version, lines = list_lines(path)
    terms = [normalise(line) for _, line in lines]
    return KeywordList(category or path.stem, version, tuple(dict.fromkeys(terms)))


def read_lists_dir(directory: Path | Traversable) -> list[KeywordList]:
    lists = sorted((p for p in directory.iterdir() if p.name.endswith(".txt")), key=lambda p: p.name)
    if not lists:
        raise FileNotFoundError(f"no keyword lists (*.txt) in {directory}")
    return [read_list(p) for p in lists]


class KeywordMatcher:
    """Distinct-term hits per category (or per list), in one pass over the text."""

    def __init__(self, lists: list[KeywordList]):
        self.lists = lists
        owners: dict[str, set[int]] = {}
        for i, kl in enumerate(lists):
            for term in kl.terms:
                if term:  # an empty term matches nothing (and the automaton refuses it)
                    owners.setdefault(term, set()).add(i)
        self._terms = list(owners)
        self._owners = [tuple(sorted(owners[t])) for t in self._terms]
        self._automaton: ahocorasick_rs.AhoCorasick | None = None  # built on first use

    @property
    def fingerprint(self) -> str:
        """sha256 over every (category, term): recorded in reports so runs name their lists."""
        h = hashlib.sha256()
        for kl in sorted(self.lists, key=lambda k: k.category):
            for term in kl.terms:
                h.update(f"{kl.category}\t{term}\n".encode())
        return h.hexdigest()

    @property
    def versions(self) -> dict[str, str]:
        return {kl.category: kl.version for kl in self.lists}

    def hits_by_list(self, text: str, normalised: bool = False) -> list[set[str]]:
        """The distinct terms found, per list (in ``lists`` order)."""
        found: list[set[str]] = [set() for _ in self.lists]
        if not self._terms or not text:
            return found
        if self._automaton is None:
            self._automaton = ahocorasick_rs.AhoCorasick(self._terms)
        matched = {
            i
            for i, _, _ in self._automaton.find_matches_as_indexes(
                text if normalised else normalise(text), overlapping=True
            )
        }
        for i in matched:
            for owner in self._owners[i]:
                found[owner].add(self._terms[i])
        return found

    def hits(self, text: str, normalised: bool = False) -> dict[str, set[str]]:
        """category -> distinct terms found. Pass ``normalised=True`` with ``normalise(text)``
        to share one normalisation between several matchers."""
        return by_category(self.lists, self.hits_by_list(text, normalised))


def by_category(lists: list[KeywordList], per_list: list[set[str]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for kl, terms in zip(lists, per_list):
        if terms:
            found.setdefault(kl.category, set()).update(terms)
    return found


def distinct_terms(hits: dict[str, set[str]]) -> int:
    return len(set().union(*hits.values())) if hits else 0
