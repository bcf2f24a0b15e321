"""Small drawn pieces of the seed's spam (``demo.seed.spam``): contact lines in many spellings,
numbers written to dodge filters, web addresses, separators, and the keyword slots, half from the
seed's own pools and half from a lexicon of real words (``demo.seed.lexicon``)."""

from __future__ import annotations

import random
from collections.abc import Callable

from demo.seed.lexicon import lexicon
from demo.seed.spam_words import (
    CN_DIGITS,
    DOMAINS,
    GOODS,
    PHONE,
    PLACES,
    PRODUCTS,
    QQ,
    SURNAMES,
    TITLES,
    TRADES,
    WECHAT,
)

FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
SEPARATORS = ("_", "-", "|", "，", " ", "、", "——", "/", "｜", "丨", "·", "◆", "▏", "  ")
EMOJI = ("🔥", "✅", "👉", "💰", "❤", "⭐", "🎁", "📞", "‼", "★", "√", "→", "☞", "◆", "💥", "🧧")
# contact labels spelled as they are read aloud or typed around filters: a first character
# sounding like 微 / 威 and a second like 信, or the letter forms; likewise for QQ
WEI = ("微", "威", "薇", "维", "唯", "蔚", "围", "伟", "V", "v", "W")
XIN = ("信", "芯", "❤", "星", "杏", "x", "X")
LEXICON_SHARE = 0.5  # keyword slots filled from the lexicon rather than the seed's pools (ours)


def number(rng: random.Random, digits: str) -> str:
    """digits written as spammers write them to dodge filters: grouped, spaced, dotted,
    full-width, in Han numerals or a mix."""
    style = rng.choice(("plain", "plain", "dash", "space", "dot", "wide", "han", "mixed"))
    if style == "dash" and len(digits) == 11:
        return f"{digits[:3]}-{digits[3:7]}-{digits[7:]}"
    if style == "space":
        return " ".join(digits[i : i + 4] for i in range(0, len(digits), 4))
    if style == "dot":
        return ".".join(digits[i : i + 3] for i in range(0, len(digits), 3))
    if style == "wide":
        return digits.translate(FULL_WIDTH)
    if style == "han":
        return "".join(CN_DIGITS[int(d)] for d in digits)
    if style == "mixed":
        return "".join(CN_DIGITS[int(d)] if rng.random() < 0.4 else d for d in digits)
    return digits


def mobile(rng: random.Random) -> str:
    return f"1{rng.choice('3456789')}{rng.randrange(10**9):09d}"


def _handle(rng: random.Random) -> str:
    letters = "".join(rng.choice("abcdefghjkmnpqrstwxyz") for _ in range(rng.randint(2, 6)))
    return rng.choice((number(rng, mobile(rng)), f"{letters}{rng.randrange(10**3, 10**8)}", letters + "_" + letters))


def wechat_label(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(WECHAT)
    return rng.choice(WEI) + rng.choice(XIN)


def contact(rng: random.Random) -> str:
    """One contact line: phone, WeChat or QQ in one of many spellings."""
    roll = rng.random()
    colon = rng.choice(("：", ":", " ", "号", "→", "➕", ""))
    if roll < 0.4:
        return f"{rng.choice(PHONE)}{colon}{number(rng, mobile(rng))}"
    if roll < 0.75:
        return f"{rng.choice(('联系', '', '找我', '搜'))}{wechat_label(rng)}{colon}{_handle(rng)}"
    return f"{rng.choice(QQ)}{colon}{number(rng, str(rng.randrange(10**5, 10**10)))}"


def domain(rng: random.Random) -> str:
    name = "".join(rng.choice("abcdefghjkmnpqrstwxyz") for _ in range(rng.randint(3, 7)))
    host = rng.choice(("www.", "m.", "", "")) + name + str(rng.randint(1, 999) if rng.random() < 0.5 else "")
    return f"{host}.{rng.choice(DOMAINS)}"


def person(rng: random.Random) -> str:
    return rng.choice(SURNAMES) + rng.choice(TITLES)


def sep(rng: random.Random) -> str:
    return rng.choice(SEPARATORS)


def emoji(rng: random.Random) -> str:
    return rng.choice(EMOJI) * rng.randint(0, 3) if rng.random() < 0.4 else ""


def thing(rng: random.Random) -> str:
    """A keyword's object: a trade or goods of the seed's pools, or any common noun."""
    if rng.random() < LEXICON_SHARE:
        return rng.choice(lexicon().nouns)
    return rng.choice(TRADES + GOODS + PRODUCTS)


def place(rng: random.Random) -> str:
    return rng.choice(lexicon().places) if rng.random() < LEXICON_SHARE else rng.choice(PLACES)


def pick(rng: random.Random, *pools: tuple[str, ...], k: int = 1) -> list[str]:
    """k draws from the pools joined."""
    joined = [w for pool in pools for w in pool]
    return [rng.choice(joined) for _ in range(k)]


def lines(rng: random.Random, makers: list[Callable[[], str]], lo: int, hi: int) -> list[str]:
    """lo to hi lines, each from a maker drawn at random."""
    return [rng.choice(makers)() for _ in range(rng.randint(lo, hi))]
