"""Keyword lists and an Aho-Corasick matcher (pyahocorasick) for sensitive words and ad keywords.

List files are UTF-8, one term a line; ``#`` lines are comments, and a ``# version: X`` header
names the list's version. Terms and documents are matched NFKC-normalised and lower-cased, so
full-width ``ＱＱ`` matches ``qq``.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

import ahocorasick

# The bundled lists, through importlib.resources: a path from __file__ breaks when the project is
# imported from a zip (spark-submit --py-files), where these are zip members, not files.
SENSITIVE_DIR = files("filters").parent / "sensitive_words"
AD_KEYWORDS_FILE = files("filters") / "resources" / "ad_keywords.txt"


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


@dataclass(frozen=True)
class KeywordList:
    category: str
    version: str
    terms: tuple[str, ...]


def read_list(path: Path | Traversable, category: str | None = None) -> KeywordList:
    version, terms = "unversioned", []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("#"):
            key, _, value = line.lstrip("#").partition(":")
            if key.strip() == "version" and value.strip():
                version = value.strip()
            continue
        if line:
            terms.append(normalise(line))
    return KeywordList(category or path.stem, version, tuple(dict.fromkeys(terms)))


def read_lists_dir(directory: Path | Traversable) -> list[KeywordList]:
    lists = sorted((p for p in directory.iterdir() if p.name.endswith(".txt")), key=lambda p: p.name)
    if not lists:
        raise FileNotFoundError(f"no keyword lists (*.txt) in {directory}")
    return [read_list(p) for p in lists]


class KeywordMatcher:
    """Distinct-term hits per category, in one pass over the text."""

    def __init__(self, lists: list[KeywordList]):
        self.lists = lists
        self._automaton = ahocorasick.Automaton()
        owners: dict[str, set[str]] = {}
        for kl in lists:
            for term in kl.terms:
                owners.setdefault(term, set()).add(kl.category)
        for term, cats in owners.items():
            self._automaton.add_word(term, (term, tuple(sorted(cats))))
        if owners:
            self._automaton.make_automaton()
        self._empty = not owners

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

    def hits(self, text: str, normalised: bool = False) -> dict[str, set[str]]:
        """category -> distinct terms found. Pass ``normalised=True`` with ``normalise(text)``
        to share one normalisation between several matchers."""
        found: dict[str, set[str]] = {}
        if self._empty or not text:
            return found
        for _end, (term, cats) in self._automaton.iter(text if normalised else normalise(text)):
            for cat in cats:
                found.setdefault(cat, set()).add(term)
        return found


def distinct_terms(hits: dict[str, set[str]]) -> int:
    return len(set().union(*hits.values())) if hits else 0
