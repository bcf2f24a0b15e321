"""Word pools of the seed's own spam (``demo.seed.spam``): places, trades, goods, contact
spellings, money and health claims, read from ``data/spam_words.toml`` (a string there is a pool of
single characters, an array a pool of words; each pool here is a str or a tuple). Written for the
seed alone: nothing there is imported from or copied out of the demo crawl's injectors
(``demo.crawl.inject``) or the project's ad-keyword and sensitive-word lists, so a model trained on
the seed cannot pass by learning the crawl's generator or the rules' lists; no spam record holds a
term of the ad-keyword list (tested), so the model learns what the rule cannot see. Pools are wide
on purpose: a model should learn the kind of page, not a few names."""

from __future__ import annotations

import tomllib
from pathlib import Path

WORDS_FILE = Path(__file__).parent / "data" / "spam_words.toml"


def load_pools(path: Path = WORDS_FILE) -> dict[str, str | tuple[str, ...]]:
    """Every pool of ``path`` by name, arrays as tuples (the generators index and sample them)."""
    with open(path, "rb") as f:
        return {name: v if isinstance(v, str) else tuple(v) for name, v in tomllib.load(f).items()}


_POOLS = load_pools()

PLACES = _POOLS["PLACES"]
AREAS = _POOLS["AREAS"]
TRADES = _POOLS["TRADES"]
GOODS = _POOLS["GOODS"]
ASKS = _POOLS["ASKS"]
SEO_SITES = _POOLS["SEO_SITES"]
SURNAMES = _POOLS["SURNAMES"]
TITLES = _POOLS["TITLES"]
WECHAT = _POOLS["WECHAT"]
QQ = _POOLS["QQ"]
PHONE = _POOLS["PHONE"]
CN_DIGITS = _POOLS["CN_DIGITS"]
NUMBER_STYLES = _POOLS["NUMBER_STYLES"]
PRODUCTS = _POOLS["PRODUCTS"]
SELLING = _POOLS["SELLING"]
GIGS = _POOLS["GIGS"]
PAYS = _POOLS["PAYS"]
MENTOR_LINES = _POOLS["MENTOR_LINES"]
ILLNESSES = _POOLS["ILLNESSES"]
CURES = _POOLS["CURES"]
CLAIMS = _POOLS["CLAIMS"]
PATIENTS = _POOLS["PATIENTS"]
GAMES = _POOLS["GAMES"]
BETS = _POOLS["BETS"]
BONUSES = _POOLS["BONUSES"]
LOAN_NAMES = _POOLS["LOAN_NAMES"]
LOAN_TERMS = _POOLS["LOAN_TERMS"]
SPAM_CHROME = _POOLS["SPAM_CHROME"]
DOMAINS = _POOLS["DOMAINS"]
TAGS = _POOLS["TAGS"]
GAMBLING_WORDS = _POOLS["GAMBLING_WORDS"]
LOAN_WORDS = _POOLS["LOAN_WORDS"]
MEDICINE_WORDS = _POOLS["MEDICINE_WORDS"]
RICH_WORDS = _POOLS["RICH_WORDS"]
AD_WORDS = _POOLS["AD_WORDS"]
PLATFORM_NAMES = _POOLS["PLATFORM_NAMES"]
PLATFORM_SUFFIX = _POOLS["PLATFORM_SUFFIX"]
LOAN_APPS = _POOLS["LOAN_APPS"]
