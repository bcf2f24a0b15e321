"""Contact identifiers in Chinese web text, obfuscations included, for ``contact_density``
(``filters.quality``): how spam and ad pages hand the reader on to a phone, QQ or WeChat account.

What counts as one identifier (``contact_spans`` gives their character spans, overlapping spans
merged into one):

1. **A cue near an id.** A cue (``CUES``: 微信 and its spellings 徽信 薇信 威信 维信 V信 vx wx 微x
   加V …; QQ and 扣扣 企鹅 蔻蔻 …; 电话 手机 热线 tel ☎ …) followed, across at most ``FILLER_CHARS``
   characters of filler (whitespace, brackets, colons, dashes, slashes and 号 码 是 为 群 同 加 …),
   by a digit run with at least ``MIN_ID_DIGITS`` digits (``MIN_PHONE_DIGITS`` after a phone
   cue), or, after a WeChat/QQ cue, by a WeChat-style id (a letter, then 5-19 letters, digits,
   ``_`` or ``-``) holding a digit or ``_``/``-`` or written right after a colon. A digit run
   directly followed by a cue (``12345678（微信同号）``) counts the same way.
2. **A bare mainland mobile**: a digit run, not touching letters, whose separator-delimited
   groups give exactly 11 digits ``1[3-9]x xxxx xxxx`` (the libphonenumber check of
   ``filters.pii.valid_mobile``); ``+86``/``86`` in front is allowed.
3. **A URL** (``http(s)://``, ``www.``) or a bare domain with a common top-level domain, the dot
   possibly written 点; an **e-mail address** (``filters.pii``'s pattern).

Digit runs: digits written ASCII, full-width, as Chinese numerals (零〇一二三四五六七八九幺 and
壹贰叁…), circled or parenthesised (①⑴⒈❶➀➊⓵) or mathematical bold (𝟏), with at most two
separator characters (spaces, dashes, dots, underscores, slashes) between digits. They are folded
to ASCII by one translate table (``fold_digits``) before they are judged.

Not counted: dates (a run that starts like 2021-01-01, 1998/1/1), years and prices (too few
digits, no cue), statute numbers (第一百二十条: 百 and 十 are not digits, so no run), ISBN and
other long numbers (not 11 digits, no cue)."""

from __future__ import annotations

import re

import numpy as np

from filters.pii import EMAIL, find_pii, valid_mobile

MIN_ID_DIGITS = 5  # QQ numbers start at 5 digits (10001 was the first account)
MIN_PHONE_DIGITS = 7  # a local landline number has 7-8 digits
FILLER_CHARS = 6  # "微信号码：" / "QQ群号：" / "电话(同微信)：" fit

_DIGIT_FOLD_SOURCES = {
    "０１２３４５６７８９": "0123456789",
    "零〇一二三四五六七八九幺": "001234567891",
    "壹贰叁肆伍陆柒捌玖貳參陸": "123456789236",
    "⓪①②③④⑤⑥⑦⑧⑨": "0123456789",
    "⑴⑵⑶⑷⑸⑹⑺⑻⑼": "123456789",
    "⒈⒉⒊⒋⒌⒍⒎⒏⒐": "123456789",
    "❶❷❸❹❺❻❼❽❾": "123456789",
    "➀➁➂➃➄➅➆➇➈": "123456789",
    "➊➋➌➍➎➏➐➑➒": "123456789",
    "⓵⓶⓷⓸⓹⓺⓻⓼⓽": "123456789",
}
_MATH_DIGITS = (0x1D7CE, 0x1D7FF)  # mathematical bold, double-struck, sans-serif, monospace digits
_FOLD = str.maketrans({**{k: v for src, dst in _DIGIT_FOLD_SOURCES.items() for k, v in zip(src, dst)},
                       **{chr(cp): str((cp - _MATH_DIGITS[0]) % 10) for cp in range(_MATH_DIGITS[0], _MATH_DIGITS[1] + 1)}})
_D = f"[0-9{''.join(_DIGIT_FOLD_SOURCES)}\\U{_MATH_DIGITS[0]:08x}-\\U{_MATH_DIGITS[1]:08x}]"
_SEP = r"[ \t\u3000\u00a0\-－_.．·—–/／()（）]"  # between the digits of one run (never a newline)
# Every pass over the text starts with a literal or a character class, so sre skips ahead fast
# (a lookbehind or a group in front makes it try every position: 10x slower); what a lookbehind
# would test is checked in Python on the few matches.
_RUN = f"{_D}(?:{_SEP}{{0,2}}{_D})*+"  # possessive: a run is always taken whole
_BARE_RUN = re.compile(f"{_D}(?:{_SEP}{{0,2}}{_D}){{10,}}+")
_GROUP = re.compile(f"{_D}+")
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_ID_CHARS = _ASCII_ALNUM | {"_", "-"}

WECHAT, QQ, PHONE = "wechat", "qq", "phone"
# cue -> kind; ASCII cues are matched in any case (listed lower-case), and only when no ASCII
# letter touches them
CUE_KINDS = {
    **dict.fromkeys("微信 加微信 徽信 薇信 威信 维信 卫信 危信 微心 威心 微芯 v信 ｖ信 微x 微ｘ 加v 加ｖ 加微 vx wx ｖｘ ｗｘ "
                    "weixin wechat".split(), WECHAT),
    **dict.fromkeys("扣扣 企鹅 蔻蔻 寇寇 抠抠 叩叩 秋秋 qq ｑｑ q群 q号".split(), QQ),
    **dict.fromkeys("电话 手机 热线 座机 致电 拨打 来电 联系 咨询 ☎ ☏ 📞 📱 ✆ tel phone".split(), PHONE),
}
_FULLWIDTH_UPPER = str.maketrans("ＶＸＱＷ", "ｖｘｑｗ")


def _case_variants(cue: str) -> set[str]:
    """The spellings of a cue the pattern lists: every case mix of one or two letters (vx, Vx,
    vX, VX; full-width too), lower, UPPER and Capitalised forms of longer ones (WeChat added)."""
    up = str.maketrans("ｖｘｑｗ", "ＶＸＱＷ")
    if len([c for c in cue if c.isalpha() and (c.isascii() or c in "ｖｘｑｗ")]) <= 2:
        variants = {""}
        for c in cue:
            variants = {v + x for v in variants for x in {c, c.upper().translate(up)}}
        return variants
    return {cue, cue.upper(), cue.capitalize()} | ({"WeChat"} if cue == "wechat" else set())


_CUE = re.compile("|".join(sorted({v for cue in CUE_KINDS for v in _case_variants(cue)}, key=len, reverse=True)))
_FILLER = r"[ \t\u3000\u00a0:：\-—/／|｜()（）\[\]【】「」\"“”'、,，+＋号码是为群同加或及私聊搜添备注请]"
_LETTER_ID = r"[A-Za-z][A-Za-z0-9_\-]{5,19}+(?![A-Za-z0-9_\-])"
_ID_AFTER_CUE = re.compile(f"(?P<fill>{_FILLER}{{0,{FILLER_CHARS}}}?)"
                           f"(?:(?P<run>{_RUN})(?![A-Za-z0-9])|(?P<word>{_LETTER_ID}))")
_RUN_BEFORE_CUE = re.compile(f"(?P<run>{_RUN})[ \\t\\u3000]{{0,2}}[(（【\\[]?(?:同号)?\\Z")
_RUN_LOOKBACK = 40  # characters searched for a run written before its cue
_DATE = re.compile(r"(?:19|20)\d\d[-./_ ]{1,2}[01]?\d(?:[-./_ ]{1,2}[0-3]?\d)?")  # matched at a run's start
_TLD = "com|cn|net|org|cc|top|vip|xyz|info|me|io|tv|club|site|shop|app|link|co|biz|ltd|wang|online"
_URL = re.compile(r"https?://[^\s<>\"'，。、；！？）)】]+", re.I)
_WWW = re.compile(r"www(?:\.|点)[a-z0-9\-]+(?:(?:\.|点)[a-z0-9\-]+)*", re.I)
_TLD_AFTER_DOT = re.compile(f"[.点](?:{_TLD})(?![a-z0-9])", re.I)
_DOMAIN_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\Z", re.I)


def fold_digits(s: str) -> str:
    """Digit variants (full-width, Chinese numerals, circled, …) to ASCII digits."""
    return s.translate(_FOLD)


def _digits(run: str) -> str:
    return "".join(filter(str.isdigit, fold_digits(run)))


def _id_run(run: str, kind: str) -> bool:
    """A digit run next to a cue of ``kind`` is an id: enough digits, and not a date."""
    need = MIN_PHONE_DIGITS if kind == PHONE else MIN_ID_DIGITS
    return len(_digits(run)) >= need and not _DATE.match(fold_digits(run))


def _letter_id(word: str, fill: str) -> bool:
    """A WeChat/QQ id written with letters: it holds a digit, ``_`` or ``-``, or follows a colon."""
    return any(c.isdigit() or c in "_-" for c in word) or fill.rstrip().endswith((":", "："))


def _cue_spans(text: str) -> list[tuple[int, int]]:
    """Ids written next to a cue (after it, or a digit run right before it)."""
    spans = []
    for cue in _CUE.finditer(text):
        start, end = cue.span()
        word = cue.group()
        if word.isascii() and ((start and text[start - 1].isascii() and text[start - 1].isalpha())
                               or (end < len(text) and text[end].isascii() and text[end].isalpha())):
            continue  # "vx" inside "vxworks", "tel" inside "hotel"
        kind = CUE_KINDS[word.lower().translate(_FULLWIDTH_UPPER)]
        m = _ID_AFTER_CUE.match(text, end)
        if m and m["run"] is not None and _mobiles(m["run"]):
            pass  # mobiles, one span each, come from _mobile_spans
        elif m and m["run"] is not None and _id_run(m["run"], kind):
            spans.append(m.span("run"))
        elif m and m["word"] is not None and kind != PHONE and _letter_id(m["word"], m["fill"]):
            spans.append(m.span("word"))
        before = _RUN_BEFORE_CUE.search(text, max(0, start - _RUN_LOOKBACK), start)
        if before and (before.start() == 0 or text[before.start() - 1] not in _ASCII_ALNUM) \
                and _id_run(before["run"], kind):
            spans.append(before.span("run"))
    return spans


def _mobile_spans(text: str) -> list[tuple[int, int]]:
    """Mainland mobiles anywhere: digit runs of 11 or more digits not touching ASCII letters or
    digits, checked group by group (``_mobiles``)."""
    spans = []
    for m in _BARE_RUN.finditer(text):
        start, end = m.span()
        if (start and text[start - 1] in _ASCII_ALNUM) or (end < len(text) and text[end] in _ASCII_ALNUM):
            continue  # part of a code such as "abc13812345678"
        spans += [(start + s, start + e) for s, e in _mobiles(m.group())]
    return spans


def _mobiles(run: str) -> list[tuple[int, int]]:
    """11-digit mobiles in a digit run, aligned on its digit groups (so a list of numbers separated
    by spaces gives each number, and a 19-digit card number none)."""
    groups = [(g.start(), g.end(), fold_digits(g.group())) for g in _GROUP.finditer(run)]
    spans, i = [], 0
    while i < len(groups):
        j, digits = i, ""
        while j < len(groups) and len(digits) < 11:
            digits += groups[j][2]
            j += 1
        if len(digits) == 13 and digits.startswith("86"):
            digits = digits[2:]  # +86 written without a separator
        if len(digits) == 11 and digits[0] == "1" and digits[1] in "3456789" and valid_mobile(digits):
            spans.append((groups[i][0], groups[j - 1][1]))
            i = j
        else:
            i += 1
    return spans


def _web_spans(text: str) -> list[tuple[int, int]]:
    """URLs, www. addresses, bare domains (the dot possibly written 点), e-mail addresses."""
    spans = [m.span() for m in _URL.finditer(text)] if "://" in text else []
    if "www" in text or "WWW" in text:
        spans += [m.span() for m in _WWW.finditer(text)]
    for m in _TLD_AFTER_DOT.finditer(text):
        label = _DOMAIN_LABEL.search(text, max(0, m.start() - 63), m.start())
        if label:
            spans.append((label.start(), m.end()))
    if "@" in text or "＠" in text:
        spans += [(s.start, s.end) for s in find_pii(text, (EMAIL,))]
    return spans


def contact_spans(text: str) -> list[tuple[int, int]]:
    """Sorted, non-overlapping (start, end) spans of contact identifiers in ``text`` (overlapping
    finds, such as the domain inside an e-mail address, merged)."""
    spans = _cue_spans(text) + _mobile_spans(text) + _web_spans(text)
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def contact_counts(joined: str, doc_starts: np.ndarray) -> np.ndarray:
    """Contact identifiers per document of ``joined`` (documents joined by ``"\\n"``, document i
    starting at character ``doc_starts[i]``). No pattern crosses a newline, so none crosses
    documents."""
    spans = contact_spans(joined)
    if not spans:
        return np.zeros(len(doc_starts))
    starts = np.fromiter((s for s, _ in spans), dtype=np.int64, count=len(spans))
    return np.bincount(np.searchsorted(doc_starts, starts, side="right") - 1, minlength=len(doc_starts)).astype(float)
