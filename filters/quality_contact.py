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
    "".join(chr(0x1D7CE + i) for i in range(50)): "0123456789" * 5,  # mathematical bold/double/sans digits
}
_FOLD = str.maketrans({k: v for src, dst in _DIGIT_FOLD_SOURCES.items() for k, v in zip(src, dst)})
_DIGIT_CLASS = "0-9" + "".join(_DIGIT_FOLD_SOURCES)  # a regex class body (no metacharacters in it)
_D = f"[{_DIGIT_CLASS}]"
_SEP = r"[ \t\u3000\u00a0\-－_.．·—–/／]"
_RUN = f"{_D}(?:{_SEP}{{0,2}}{_D})*+"  # possessive: a run is always taken whole
_NOT_ASCII_ALNUM = "(?![A-Za-z0-9])"

_WECHAT = ("微信|徽信|薇信|威信|维信|卫信|危信|微心|威心|微芯|[VvＶｖ]信|微[xXｘＸ]|加[VvＶｖ]|加微|"
           "(?i:(?<![a-z])(?:vx|wx|ｖｘ|ｗｘ|weixin|wechat)(?![a-z]))")
_QQ = "扣扣|企鹅|蔻蔻|寇寇|抠抠|叩叩|秋秋|(?i:(?<![a-z])(?:qq|ＱＱ|q群|q号)(?![a-z]))"
_PHONE = "电话|手机|热线|座机|致电|拨打|来电|联系|咨询|☎|☏|📞|📱|✆|(?i:(?<![a-z])(?:tel|call|phone)(?![a-z]))"
CUES = f"(?P<wechat>{_WECHAT})|(?P<qq>{_QQ})|(?P<phone>{_PHONE})"
_FILLER = r"[ \t\u3000\u00a0:：\-—/／|｜()（）\[\]【】「」\"“”'、,，+＋号码是为群同加或及私聊搜添备注请]"
_LETTER_ID = r"[A-Za-z][A-Za-z0-9_\-]{5,19}+(?![A-Za-z0-9_\-])"
_CUE_THEN_ID = re.compile(f"(?:{CUES})(?P<fill>{_FILLER}{{0,{FILLER_CHARS}}}?)"
                          f"(?:(?P<run>{_RUN}){_NOT_ASCII_ALNUM}|(?P<word>{_LETTER_ID}))")
_ID_THEN_CUE = re.compile(f"(?<![A-Za-z0-9{_DIGIT_CLASS}])(?P<run>{_RUN})[ \\t\u3000]{{0,2}}[(（【\\[]?(?:同号)?(?:{CUES})")
_BARE_RUN = re.compile(f"(?<![A-Za-z0-9{_DIGIT_CLASS}]){_D}(?:{_SEP}{{0,2}}{_D}){{10,}}+{_NOT_ASCII_ALNUM}")
_GROUP = re.compile(f"{_D}+")
_DATE = re.compile(r"(?:19|20)\d\d[-./_ ]{1,2}[01]?\d(?:[-./_ ]{1,2}[0-3]?\d)?")  # matched at a run's start
_TLD = "com|cn|net|org|cc|top|vip|xyz|info|me|io|tv|club|site|shop|app|link|co|biz|ltd|wang|online"
_URL = re.compile(r"(?i:https?://[^\s<>\"'，。、；！？）)】]+|www(?:\.|点)[a-z0-9\-]+(?:(?:\.|点)[a-z0-9\-]+)*|"
                  f"(?<![a-z0-9@.\\-])[a-z0-9](?:[a-z0-9\\-]{{0,61}}[a-z0-9])?(?:\\.|点)(?:{_TLD})(?![a-z0-9]))")


def fold_digits(s: str) -> str:
    """Digit variants (full-width, Chinese numerals, circled, …) to ASCII digits."""
    return s.translate(_FOLD)


def _digits(run: str) -> str:
    return "".join(filter(str.isdigit, fold_digits(run))) if run else ""


def _is_date(run: str) -> bool:
    return _DATE.match(fold_digits(run)) is not None


def _cue_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in _CUE_THEN_ID.finditer(text):
        if m["run"] is not None:
            need = MIN_PHONE_DIGITS if m["phone"] else MIN_ID_DIGITS
            if len(_digits(m["run"])) >= need and not _is_date(m["run"]):
                spans.append(m.span("run"))
        elif not m["phone"]:  # a WeChat/QQ id written with letters
            word = m["word"]
            if any(c.isdigit() or c in "_-" for c in word) or m["fill"].rstrip().endswith((":", "：")):
                spans.append(m.span("word"))
    for m in _ID_THEN_CUE.finditer(text):
        need = MIN_PHONE_DIGITS if m["phone"] else MIN_ID_DIGITS
        if len(_digits(m["run"])) >= need and not _is_date(m["run"]):
            spans.append(m.span("run"))
    return spans


def _mobile_spans(text: str) -> list[tuple[int, int]]:
    """11-digit mobiles inside long digit runs, aligned on the run's digit groups (so a list of
    numbers separated by spaces gives each number, and a 19-digit card number none)."""
    spans = []
    for run in _BARE_RUN.finditer(text):
        groups = [(g.start(), g.end(), fold_digits(g.group())) for g in _GROUP.finditer(run.group())]
        i = 0
        while i < len(groups):
            j, digits = i, ""
            while j < len(groups) and len(digits) < 11:
                digits += groups[j][2]
                j += 1
            if len(digits) == 13 and digits.startswith("86"):
                digits = digits[2:]  # +86 written without a separator
            if len(digits) == 11 and digits[0] == "1" and digits[1] in "3456789" and valid_mobile(digits):
                spans.append((run.start() + groups[i][0], run.start() + groups[j - 1][1]))
                i = j
            else:
                i += 1
    return spans


def contact_spans(text: str) -> list[tuple[int, int]]:
    """Sorted, non-overlapping (start, end) spans of contact identifiers in ``text`` (overlapping
    finds, such as the domain inside an e-mail address, merged)."""
    spans = _cue_spans(text) + _mobile_spans(text) + [m.span() for m in _URL.finditer(text)]
    if "@" in text or "＠" in text:
        spans += [(s.start, s.end) for s in find_pii(text, (EMAIL,))]
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
