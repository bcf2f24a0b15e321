"""Contact identifiers in Chinese web text, obfuscations included, for ``contact_density``
(``filters.quality.signals``): how spam and ad pages hand the reader on to a phone, QQ or WeChat account.

What counts as one identifier (``contact_spans`` gives their character spans, overlapping spans
merged into one):

1. **A cue near an id.** A cue (``CUE_KINDS``: 微信 and its spellings, any wei-sounding character
   then any xin-sounding one (徽信 薇信 威芯 卫星 …), V信 vx wx 微x 加V …; QQ and 扣扣 企鹅 蔻蔻 …;
   电话 手机 热线 tel ☎ …) followed, across at most ``FILLER_CHARS``
   characters of filler (whitespace, brackets, colons, dashes, slashes and 号 码 是 为 群 同 加 …),
   by a digit run with at least ``MIN_ID_DIGITS`` digits (``MIN_PHONE_DIGITS`` after a phone
   cue), or, after a WeChat/QQ cue, by a WeChat-style id (a letter, then 5-19 letters, digits,
   ``_`` or ``-``) holding a digit or ``_``/``-`` or written right after a colon, or by ASCII
   letters then a digit run (``yr⑧⑨⑧⑦⑤⑧``). A digit run directly followed by a cue
   (``12345678（微信同号）``) counts the same way.
2. **A bare mainland mobile**: a digit run, not touching letters, whose separator-delimited
   groups give exactly 11 digits ``1[3-9]x xxxx xxxx`` (the libphonenumber check of
   ``filters.text.pii.valid_mobile``); ``+86``/``86`` in front is allowed.
3. **A URL** (``http(s)://``, ``www.``) or a bare domain with a common top-level domain, the dot
   possibly written 点; an **e-mail address** (``filters.text.pii``'s pattern).

Digit runs: digits written ASCII, full-width, as Chinese numerals (零〇一二三四五六七八九幺 and
壹贰叁…), circled or parenthesised (①⑴⒈❶➀➊⓵) or mathematical bold (𝟏), with at most two
separator characters (spaces, dashes, dots, underscores, slashes, brackets) between digits. They
are folded to ASCII by one translate table (``fold_digits``) before they are judged.

Not counted: dates (a run that starts like 2021-01-01, 1998/1/1), years and prices (too few
digits, no cue), statute numbers (第一百二十条: 百 and 十 are not digits, so no run), ISBN and
other long numbers (not 11 digits, no cue).

Speed: numpy finds where an id can be (clusters of at least ``MIN_ID_DIGITS`` digit-like characters
at most 2 apart, ASCII words of at least 6 characters, dots between ASCII letters); the regular
expressions and cue searches run in small windows there, not over the whole text. A pass of a
regular expression over Chinese text costs ~6 ms per million characters even when nothing
matches; on People's Daily this module takes ~5 ms per MB."""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from filters.text.pii import EMAIL, MOBILE, PLACEHOLDERS, find_pii, valid_mobile

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
_FOLD = str.maketrans(
    {
        **{k: v for src, dst in _DIGIT_FOLD_SOURCES.items() for k, v in zip(src, dst)},
        **{chr(cp): str((cp - _MATH_DIGITS[0]) % 10) for cp in range(_MATH_DIGITS[0], _MATH_DIGITS[1] + 1)},
    }
)
_D = f"[0-9{''.join(_DIGIT_FOLD_SOURCES)}\\U{_MATH_DIGITS[0]:08x}-\\U{_MATH_DIGITS[1]:08x}]"
_SEP = r"[ \t\u3000\u00a0\-－_.．·—–/／()（）]"  # between the digits of one run (never a newline)
_RUN = re.compile(f"{_D}(?:{_SEP}{{0,2}}{_D})*+")  # possessive: a run is always taken whole
_GROUP = re.compile(f"{_D}+")
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_ID_CHARS = "_-"  # besides ASCII letters and digits, in WeChat ids

WECHAT, QQ, PHONE = "wechat", "qq", "phone"
# cue -> kind; ASCII cues are matched in any case (listed lower-case), and only when no ASCII
# letter touches them
# WeChat (weixin) is respelt with any character read wei and any read xin (徽信, 薇信, 威芯, 卫星 …):
# all of them are cues, so a new pairing needs no new entry
_WEI, _XIN = "微威薇维卫危徽唯伟巍围", "信心芯杏星新欣鑫馨辛"
CUE_KINDS = {
    **dict.fromkeys([w + x for w in _WEI for x in _XIN], WECHAT),
    **dict.fromkeys("加微信 加微 v信 ｖ信 v心 v芯 微x 微ｘ 加v 加ｖ vx wx ｖｘ ｗｘ weixin wechat".split(), WECHAT),
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


_CUES = "|".join(sorted({v for cue in CUE_KINDS for v in _case_variants(cue)}, key=len, reverse=True))
_FILLER = r"[ \t\u3000\u00a0:：\-—/／|｜()（）\[\]【】「」\"“”'、,，+＋号码是为群同加或及私聊搜添备注请]"
_CUE_BEFORE = re.compile(f"(?P<cue>{_CUES})(?P<fill>{_FILLER}{{0,{FILLER_CHARS}}})\\Z")  # searched in a window
_CUE_WINDOW = 8 + FILLER_CHARS  # the longest cue spelling plus the filler
_CUE_AFTER = re.compile(f"[ \\t\u3000]{{0,2}}[(（【\\[]?(?:同号)?(?P<cue>{_CUES})")
_LETTER_ID = re.compile(r"[A-Za-z][A-Za-z0-9_\-]{5,19}")  # WeChat: 6-20 characters, a letter first
_ID_HEAD_MAX = 19  # ASCII characters of an id written before its digits (WeChat: 6-20 in all)
_ID_HEAD = re.compile(f"[A-Za-z][A-Za-z0-9_\\-]{{0,{_ID_HEAD_MAX - 1}}}\\Z")  # searched in a window
_ID_HEAD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_DATE = re.compile(r"(?:19|20)\d\d[-./_ ]{1,2}[01]?\d(?:[-./_ ]{1,2}[0-3]?\d)?")  # matched at a run's start
_TLD = "com|cn|net|org|cc|top|vip|xyz|info|me|io|tv|club|site|shop|app|link|co|biz|ltd|wang|online"
_URL = re.compile(r"https?://[^\s<>\"'，。、；！？）)】]+", re.IGNORECASE)
_WWW = re.compile(r"www(?:\.|点)[a-z0-9\-]+(?:(?:\.|点)[a-z0-9\-]+)*", re.IGNORECASE)
LINK_OPEN = "(（<《[【"  # a web address right after one of these is a link target, not a contact
_SCHEME = re.compile(r"^(?:[a-z][a-z0-9+.\-]*://)?(?:www(?:\.|点))?")
_HOST_END = re.compile(r"[/?#:]")
_TLD_AFTER_DOT = re.compile(f"[.点](?:{_TLD})(?![a-z0-9])", re.IGNORECASE)
_DOMAIN_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\Z", re.IGNORECASE)


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


class _Cue(NamedTuple):
    kind: str
    fill: str  # what stands between the cue and the id
    glued: bool  # an ASCII cue that touches the id ("QQ12345678")


def _cue(m: re.Match | None, text: str) -> _Cue | None:
    """The cue a ``_CUE_BEFORE``/``_CUE_AFTER`` match found, unless it is an ASCII cue inside a
    longer ASCII word ("tel" in "hotel")."""
    if m is None:
        return None
    start, end = m.span("cue")
    word = m["cue"]
    if word.isascii() and (
        (start and text[start - 1].isascii() and text[start - 1].isalpha())
        or (end < len(text) and text[end].isascii() and text[end].isalpha())
    ):
        return None
    fill = m.groupdict().get("fill") or ""
    return _Cue(CUE_KINDS[word.lower().translate(_FULLWIDTH_UPPER)], fill, word.isascii() and not fill)


def _cue_before(text: str, start: int) -> _Cue | None:
    return _cue(_CUE_BEFORE.search(text, max(0, start - _CUE_WINDOW), start), text)


def _run_ids(text: str, run: re.Match) -> list[tuple[int, int]]:
    """The ids in one maximal digit run: each mainland mobile in it, or else the whole run when a
    cue stands right before or after it."""
    start, end = run.span()
    if end - start < MIN_ID_DIGITS:
        return []
    digits = len(_digits(run.group()))
    if digits < MIN_ID_DIGITS or (end < len(text) and text[end] in _ASCII_ALNUM):
        return []  # too short, or the head of a code such as "12345abc"
    cue = _cue_before(text, start)
    if start and text[start - 1] in _ID_HEAD_CHARS and not (cue and cue.glued):
        return _headed_id(text, start, end)  # "abc12345" is an id only as a WeChat/QQ id after a cue
    mobiles = _mobiles(run.group()) if digits >= 11 else []
    if mobiles:
        return [(start + s, start + e) for s, e in mobiles]
    cue = cue or _cue(_CUE_AFTER.match(text, end), text)
    return [(start, end)] if cue and _id_run(run.group(), cue.kind) else []


def _headed_id(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A WeChat/QQ id written as ASCII letters then a digit run (``yr⑧⑨⑧⑦⑤⑧④⓪``, ``k７３７９５９``),
    when a WeChat or QQ cue stands before it; otherwise the run is part of some code."""
    head = _ID_HEAD.search(text, max(0, start - _ID_HEAD_MAX), start)
    if head is None or (head.start() and text[head.start() - 1] in _ID_HEAD_CHARS):
        return []
    cue = _cue_before(text, head.start())
    return [(head.start(), end)] if cue and cue.kind != PHONE and not cue.glued else []


def _letter_ids(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """A WeChat/QQ id written with letters: the ASCII word text[start:end], after a cue."""
    if not _LETTER_ID.fullmatch(text, start, end):
        return []
    cue = _cue_before(text, start)
    if cue is None or cue.kind == PHONE or cue.glued or not _letter_id(text[start:end], cue.fill):
        return []
    return [(start, end)]


def _clusters(positions: np.ndarray, max_gap: int, min_size: int) -> list[tuple[int, int]]:
    """(first, last + 1) of each cluster of sorted ``positions`` whose neighbours are at most
    ``max_gap`` apart and that holds at least ``min_size`` of them."""
    if len(positions) < min_size:
        return []
    cut = np.flatnonzero(np.diff(positions) > max_gap)
    first, last = np.append(0, cut + 1), np.append(cut, len(positions) - 1)
    big = last - first + 1 >= min_size
    return list(zip(positions[first[big]].tolist(), (positions[last[big]] + 1).tolist()))


_DIGIT_LIKE, _ID_CHAR = 1, 2


@lru_cache(maxsize=None)
def _char_kinds() -> np.ndarray:
    """uint8 per code point: _DIGIT_LIKE (ASCII digits and every digit ``fold_digits`` folds),
    _ID_CHAR (ASCII letters and digits, ``_``, ``-``)."""
    table = np.zeros(sys.maxunicode + 1, dtype=np.uint8)
    table[[ord(c) for c in "0123456789" + "".join(_DIGIT_FOLD_SOURCES)]] |= _DIGIT_LIKE
    table[_MATH_DIGITS[0] : _MATH_DIGITS[1] + 1] |= _DIGIT_LIKE
    table[[ord(c) for c in "".join(sorted(_ASCII_ALNUM)) + _ID_CHARS]] |= _ID_CHAR
    return table


def _id_spans(text: str, kinds: np.ndarray) -> list[tuple[int, int]]:
    """Digit-run and letter ids. numpy finds where they can be (clusters of >= MIN_ID_DIGITS
    digits at most 2 characters apart, ASCII words of >= 6 characters); the regular expressions
    and cue searches run there only, not over the whole text."""
    spans = []
    for lo, hi in _clusters(np.flatnonzero(kinds & _DIGIT_LIKE), 3, MIN_ID_DIGITS):
        for run in _RUN.finditer(text, lo, hi):
            spans += _run_ids(text, run)
    for lo, hi in _clusters(np.flatnonzero(kinds & _ID_CHAR), 1, 6):
        spans += _letter_ids(text, lo, hi)
    return spans


_valid_mobile = lru_cache(maxsize=4096)(valid_mobile)  # a spam page repeats its number; libphonenumber is slow


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
        if len(digits) == 11 and digits[0] == "1" and digits[1] in "3456789" and _valid_mobile(digits):
            spans.append((groups[i][0], groups[j - 1][1]))
            i = j
        else:
            i += 1
    return spans


def _url_matches(text: str):
    """What ``_URL.finditer(text)`` yields: every match begins 4 or 5 characters (http, https)
    before a "://", so ``match`` is tried there, in order, from the end of the last match."""
    pos = 0
    for sep in re.finditer("://", text):
        for start in (sep.start() - 5, sep.start() - 4):
            if start >= pos:
                m = _URL.match(text, start)
                if m:
                    yield m
                    pos = m.end()


def _web_spans(text: str, codes: np.ndarray, kinds: np.ndarray) -> list[tuple[int, int]]:
    """URLs, www. addresses, bare domains (the dot possibly written 点), e-mail addresses. A bare
    domain is looked for only at dots between an ASCII letter or digit and an ASCII letter."""
    spans = [m.span() for m in _url_matches(text)] if "://" in text else []
    if "www" in text or "WWW" in text:
        spans += [m.span() for m in _WWW.finditer(text)]
    dots = np.flatnonzero((codes[1:-1] == ord(".")) | (codes[1:-1] == ord("点"))) + 1
    dots = dots[((kinds[dots - 1] & _ID_CHAR) != 0) & ((kinds[dots + 1] & _ID_CHAR) != 0)]
    for dot in dots.tolist():
        m = _TLD_AFTER_DOT.match(text, dot)
        label = m and _DOMAIN_LABEL.search(text, max(0, dot - 63), dot)
        if label:
            spans.append((label.start(), m.end()))
    if "@" in text or "＠" in text:
        spans += [(s.start, s.end) for s in find_pii(text, (EMAIL,), personal_only=False)]
    return spans


def _merged(spans: list[tuple[int, int]], ids: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
    """``spans`` sorted and merged where they overlap, each with whether it holds an id span."""
    merged: list[list] = []
    for s, e in sorted(spans):
        if merged and s < merged[-1][1]:
            merged[-1][1] = max(e, merged[-1][1])
        else:
            merged.append([s, e, False])
    starts = [m[0] for m in merged]
    for s, _ in ids:  # an id lies inside exactly one merged span: the last one starting at or before it
        merged[bisect_right(starts, s) - 1][2] = True
    return [(s, e, is_id) for s, e, is_id in merged]


# The placeholders of what the personal-data stage redacted before the quality stage reads the text:
# a phone number or an e-mail address the page offered is still offered, and counts as the id it
# was (the reference profile counts contacts on text that was never redacted).
REDACTED = (PLACEHOLDERS[MOBILE], PLACEHOLDERS[EMAIL])
_REDACTED = re.compile("|".join(map(re.escape, REDACTED)))


def _spans(text: str, codes: np.ndarray | None) -> list[tuple[int, int, bool]]:
    if codes is None:
        codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    kinds = _char_kinds()[codes]
    ids = _id_spans(text, kinds)
    if "<" in text and any(p in text for p in REDACTED):
        ids += [m.span() for m in _REDACTED.finditer(text)]
    return _merged(ids + _web_spans(text, codes, kinds), ids)


def contact_spans(text: str, codes: np.ndarray | None = None) -> list[tuple[int, int]]:
    """Sorted, non-overlapping (start, end) spans of contact identifiers in ``text`` (overlapping
    finds, such as the domain inside an e-mail address, merged). ``codes``: the text's code
    points (uint32), when the caller has them."""
    return [(s, e) for s, e, _ in _spans(text, codes)]


def site_key(address: str) -> str:
    """The site a web address hands the reader to: its host, lower-cased, without scheme or
    ``www.``; an e-mail address is its own key."""
    a = address.lower()
    if "@" in a or "＠" in a:
        return a
    return _HOST_END.split(_SCHEME.sub("", a), maxsplit=1)[0]


def contact_counts(joined: str, doc_starts: np.ndarray, codes: np.ndarray | None = None) -> np.ndarray:
    """Contacts handed to the reader, per document of ``joined`` (documents joined by ``"\\n"``,
    document i starting at character ``doc_starts[i]``; no pattern crosses a newline, so none
    crosses documents). Every phone, QQ or WeChat id counts (spam repeats its number). A web or
    e-mail address counts once per site and document, and not at all as a link target, written
    right after an opening bracket (``anchor (https://…)``, Markdown's ``[a](…)``, ``<…>``): a
    page that cites one site ten times, or renders its hyperlinks, hands over no contact (issue
    32: technical Q&A pages lost to this rule)."""
    spans = _spans(joined, codes)
    counts = np.zeros(len(doc_starts))
    if not spans:
        return counts
    starts = np.fromiter((s for s, _, _ in spans), dtype=np.int64, count=len(spans))
    docs = (np.searchsorted(doc_starts, starts, side="right") - 1).tolist()
    sites: set[tuple[int, str]] = set()
    for (s, e, is_id), doc in zip(spans, docs):
        if is_id:
            counts[doc] += 1
        elif not (s and joined[s - 1] in LINK_OPEN):
            sites.add((doc, site_key(joined[s:e])))
    for doc, _ in sites:
        counts[doc] += 1
    return counts
