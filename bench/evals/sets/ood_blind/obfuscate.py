"""How spam pages dodge word matching, one function per trick; ``disguise`` applies a random mix.

Written for this set from how such pages look, not from any keyword list: homophone and
look-alike swaps, symbols between characters, full-width digits, emoji sprinkled in.
"""

from __future__ import annotations

import random

# Contact words and their street spellings (homophones, look-alikes, letters).
CONTACT = {
    "微信": ("薇信", "威信", "VX", "vx", "V信", "徽信", "wei信", "卫星"),
    "QQ": ("扣扣", "企鹅", "Q群", "qq"),
    "加我": ("+我", "家我", "嘉我", "➕我"),
    "电话": ("电话", "Tel", "☎", "电 话"),
    "联系": ("联糸", "联係", "连系", "联xi"),
}
SEPARATORS = ("-", "·", "|", "/", "*", "_", " ", "♥", "※", ".")
EMOJI = "🔥💰🎁✅👉💯🚀📈⭐❤️🧧💎🎉⚡👍🈵🆓📢🔞🤑"
FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def split_chars(word: str, rng: random.Random) -> str:
    """``"加微信"`` -> ``"加-微-信"``."""
    return rng.choice(SEPARATORS).join(word)


def fullwidth_digits(text: str) -> str:
    return text.translate(FULLWIDTH)


def sprinkle_emoji(text: str, rng: random.Random, share: float = 0.15) -> str:
    """An emoji after about ``share`` of the sentence ends."""
    out = []
    for ch in text:
        out.append(ch)
        if ch in "。！!，" and rng.random() < share:
            out.append(rng.choice(EMOJI))
    return "".join(out)


def contact_word(word: str, rng: random.Random) -> str:
    """A street spelling of a contact word, sometimes split by a symbol."""
    w = rng.choice(CONTACT.get(word, (word,)))
    return split_chars(w, rng) if rng.random() < 0.3 and len(w) > 1 else w


def handle(rng: random.Random) -> str:
    """A made-up messenger id: letters and digits, the digits sometimes full-width."""
    s = rng.choice(("kf", "vip", "a", "xx", "hao", "zz", "bb", "yy", "qwe", "mm")) + "".join(
        rng.choice("0123456789") for _ in range(rng.randint(4, 8))
    )
    return fullwidth_digits(s) if rng.random() < 0.3 else s


def phone(rng: random.Random) -> str:
    digits = "1" + rng.choice("3589") + "".join(rng.choice("0123456789") for _ in range(9))
    if rng.random() < 0.3:
        digits = fullwidth_digits(digits)
    if rng.random() < 0.3:
        digits = f"{digits[:3]} {digits[3:7]} {digits[7:]}"
    return digits


def url(rng: random.Random) -> str:
    name = "".join(rng.choice("abcdefghjkmnpqrstuvwxyz") for _ in range(rng.randint(3, 7)))
    num = rng.randint(1, 999)
    tld = rng.choice((".com", ".cc", ".top", ".vip", ".xyz", ".cn", ".net", ".shop", ".ink"))
    form = rng.randrange(4)
    if form == 0:
        return f"https://www.{name}{num}{tld}/"
    if form == 1:
        return f"{name}{num}{tld}"
    if form == 2:
        return f"www．{name}{num}．{tld.strip('.')}"  # full-width dots
    return f"{name} {num} 点 {tld.strip('.')}"


def disguise(text: str, rng: random.Random) -> str:
    """Emoji and full-width digits, each on about half the pages."""
    if rng.random() < 0.5:
        text = sprinkle_emoji(text, rng, rng.choice((0.1, 0.3, 0.6)))
    if rng.random() < 0.4:
        text = fullwidth_digits(text)
    return text
