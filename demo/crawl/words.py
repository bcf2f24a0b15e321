"""The project's ad-keyword and sensitive-word lists, and matching their terms the way the
filters do, so injected pages exercise exactly the lists the cleaning job uses."""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .model import PROJECT_ROOT


@dataclass(frozen=True)
class WordLists:
    ad_keywords: tuple[str, ...]
    sensitive: tuple[str, ...]
    files: tuple[tuple[str, str], ...]  # (path relative to the project, sha256)


def read_word_lists(ad_keywords_file: Path, sensitive_dir: Path) -> WordLists:
    """One term a line, `#` comments; the format filters/text/keywords.py reads."""
    paths = [Path(ad_keywords_file), *sorted(Path(sensitive_dir).glob("*.txt"))]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing or len(paths) < 2:
        raise FileNotFoundError(f"word lists missing: {missing or sensitive_dir}")
    terms = []
    for p in paths:
        lines = (ln.strip() for ln in p.read_text(encoding="utf-8").splitlines())
        terms.append(tuple(dict.fromkeys(ln for ln in lines if ln and not ln.startswith("#"))))
    files = tuple((_relative(p), hashlib.sha256(p.read_bytes()).hexdigest()) for p in paths)
    sensitive = tuple(dict.fromkeys(t for ts in terms[1:] for t in ts))
    return WordLists(terms[0], sensitive, files)


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return path.name


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


class TermMatcher:
    """Distinct list terms in a text, matched NFKC-normalised and lower-cased (as the filters do)."""

    def __init__(self, terms: tuple[str, ...]):
        self._by_first: dict[str, list[str]] = {}
        for term in sorted({_norm(t) for t in terms if t}):
            self._by_first.setdefault(term[0], []).append(term)

    def hits(self, text: str) -> set[str]:
        norm = _norm(text)
        firsts = set(norm).intersection(self._by_first)
        return {t for c in firsts for t in self._by_first[c] if t in norm}


@lru_cache(maxsize=4)
def matcher(terms: tuple[str, ...]) -> TermMatcher:
    """The TermMatcher of a word list, built once per list."""
    return TermMatcher(terms)
