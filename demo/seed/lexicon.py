"""Real words to fill the slots of the seed's spam (``demo.seed.spam``): common nouns and place
names from jieba's dictionary (MIT; a dependency of the project), so that the keywords an SEO page
or a keyword list stacks are drawn from thousands of words, not from a short list a model could
learn by heart. What such a page shares with unseen spam is its shape (a keyword and its search
suffixes, separators, contact lines), and that is what the spam model should learn."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

NOUN_MIN_FREQ = 300  # jieba frequency floor for a common noun (tag n): ~6,000 words (ours)
PLACE_MIN_FREQ = 100  # for a place name (tag ns): ~1,900 words (ours)
MIN_LEN, MAX_LEN = 2, 4


@dataclass(frozen=True)
class Lexicon:
    nouns: tuple[str, ...]
    places: tuple[str, ...]
    path: str  # the dictionary read, relative to its package


def _dict_path() -> Path:
    spec = importlib.util.find_spec("jieba")  # located without importing jieba (its import is slow)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("jieba is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "dict.txt"


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """Nouns and places of jieba's dict.txt (``word freq tag`` a line), in file order."""
    nouns, places = [], []
    for line in _dict_path().read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) != 3 or not MIN_LEN <= len(parts[0]) <= MAX_LEN or not parts[1].isdigit():
            continue
        word, freq, tag = parts[0], int(parts[1]), parts[2]
        if tag == "n" and freq >= NOUN_MIN_FREQ:
            nouns.append(word)
        elif tag == "ns" and freq >= PLACE_MIN_FREQ:
            places.append(word)
    return Lexicon(tuple(nouns), tuple(places), "jieba/dict.txt")
