"""Personal data in Chinese web text: find it, then redact it, drop the document, or leave it.

Kinds: mainland mobile numbers, landline numbers with an area code, 18-digit resident ID numbers
(GB 11643-1999 check digit and a real birth date), bank card numbers (16-19 digits, Luhn), e-mail
addresses, IPv4 and IPv6 addresses. Digits and separators may be full-width (``１３８－１２３４``),
as Chinese pages often write them; a span is matched in the original text, so a placeholder
replaces exactly what was written, prefixes such as ``+86`` and ``（010）`` included.

How, and why by hand where it is:
- Phone numbers are validated by ``phonenumbers`` (Google's libphonenumber metadata: which
  prefixes are allocated mobile ranges, which area codes exist, how long a local number is, and
  that 400/800 numbers are business lines, not personal ones). Its ``PhoneNumberMatcher`` is not
  used for finding them: it scans every position of the text in Python; ours runs a regular
  expression over digit runs only and asks ``phonenumbers`` about the few candidates.
- ID numbers, Luhn, e-mail: no maintained library knows the GB 11643 check digit; Luhn is eight
  lines; e-mail validators check deliverability (DNS), not whether a string in prose is an address.
- IP addresses are validated by the standard library's ``ipaddress``; by default only public
  (globally routable) addresses count, as in datatrove's ``PIIFormatter``: ``192.168.1.1`` in a
  router manual is not anybody's personal data.

Precision guards: digit kinds must not touch other digits or ASCII letters; a number that follows
a label such as 订单号 / 单号 / 编号 / ISBN is an identifier of a thing, not of a person; an e-mail
whose "domain" ends in a file extension (``icon@2x.png``) is a file name.

Speed: one regular expression finds maximal digit runs (digits with at most two separators
between them); only runs of at least 7 characters are examined, by kind, inside the run. E-mail
is looked for only in texts with an ``@``, IPv6 only in texts with ``::`` or 7 colons.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from dataclasses import dataclass
from typing import Mapping

import phonenumbers

MOBILE, LANDLINE, ID_NUMBER, BANK_CARD, EMAIL, IPV4, IPV6 = (
    "mobile",
    "landline",
    "id_number",
    "bank_card",
    "email",
    "ipv4",
    "ipv6",
)
KINDS = (MOBILE, LANDLINE, ID_NUMBER, BANK_CARD, EMAIL, IPV4, IPV6)
PLACEHOLDERS = {
    MOBILE: "<PHONE>",
    LANDLINE: "<PHONE>",
    ID_NUMBER: "<ID_NUMBER>",
    BANK_CARD: "<BANK_CARD>",
    EMAIL: "<EMAIL>",
    IPV4: "<IP>",
    IPV6: "<IP>",
}
REDACT, DROP, OFF = "redact", "drop", "off"
MODES = (REDACT, DROP, OFF)
# When two candidates overlap, the longer wins; on equal length, the earlier kind here.
_PRIORITY = {k: i for i, k in enumerate((EMAIL, ID_NUMBER, BANK_CARD, MOBILE, LANDLINE, IPV4, IPV6))}

_D = "[0-9０-９]"
_SEP = "[ \u00a0\u3000\\-－‐–—.．]"  # between digit groups: spaces, dashes, dots (half and full width)
_NOT_D = "(?![0-9０-９A-Za-zＡ-Ｚａ-ｚ])"
# not right after a digit or letter, nor after a digit and a decimal point: the fraction of a
# decimal number (0.24050189427673058) is no phone, identity or card number
_NO_D_BEFORE = "(?<![0-9０-９A-Za-zＡ-Ｚａ-ｚ])(?<![0-9０-９][.．])"
_CC = "(?:[(（]?(?:[+＋]|00|００)[8８][6６][)）]?[ \\-－]?)"  # +86 / 0086 / (+86)
# A digit run: optional ( and + prefix, digits with up to two separators or brackets between them.
_RUN = re.compile(r"[(（]?[+＋]?[0-9０-９](?:[ \u00a0\u3000\-－‐–—.．()（）]{0,2}[0-9０-９])*[XxＸｘ]?")
_MIN_RUN = 7  # "1.1.1.1" is the shortest candidate of any digit kind

_PATTERNS = {
    MOBILE: re.compile(f"(?:{_CC}|{_NO_D_BEFORE})[1１][3-9３-９]{_D}(?:{_SEP}?{_D}{{4}}){{2}}{_NOT_D}"),
    LANDLINE: re.compile(
        f"(?:{_CC}[(（]?[0０]?|{_NO_D_BEFORE}[(（]?[0０])[1-9１-９]{_D}{{1,2}}[)）]?{_SEP}?"
        f"[2-9２-９]{_D}{{2,3}}{_SEP}?{_D}{{4}}{_NOT_D}"
    ),
    ID_NUMBER: re.compile(f"{_NO_D_BEFORE}[1-9１-９]{_D}{{5}}{_SEP}?{_D}{{8}}{_SEP}?{_D}{{3}}[0-9０-９XxＸｘ]{_NOT_D}"),
    BANK_CARD: re.compile(f"{_NO_D_BEFORE}{_D}{{4}}(?:{_SEP}?{_D}{{4}}){{3}}(?:{_SEP}?{_D}{{1,3}})?{_NOT_D}"),
    IPV4: re.compile(
        f"(?<![0-9０-９A-Za-z.．]){_D}{{1,3}}(?:[.．]{_D}{{1,3}}){{3}}(?![0-9０-９A-Za-z]|[.．][0-9０-９])"
    ),
}
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}[@＠]"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+([A-Za-z]{2,24})(?![A-Za-z0-9\-])"
)
_IPV6 = re.compile(r"(?<![0-9A-Fa-f:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![0-9A-Za-z:])")
_FILE_SUFFIXES = frozenset(
    {
        "png",
        "jpg",
        "jpeg",
        "gif",
        "svg",
        "webp",
        "bmp",
        "ico",
        "js",
        "css",
        "html",
        "htm",
        "php",
        "json",
        "xml",
        "txt",
        "pdf",
        "zip",
        "mp3",
        "mp4",
    }
)
# Addresses that name no person: the role mailboxes of RFC 2142 (§3-5) and of mailing-list software
# (``listmaster``, ``request@bugs.debian.org``, ``debian-user-request@``), and any address at a
# mailing-list host (``debian-user@lists.debian.org``: the local part is a list's name).
ROLE_MAILBOXES = frozenset(
    {"info", "marketing", "sales", "support", "abuse", "noc", "security", "postmaster", "hostmaster"}
    | {"usenet", "news", "webmaster", "www", "uucp", "ftp", "listmaster", "request", "mailer-daemon"}
)
_LIST_MAILBOX_SUFFIXES = ("-request", "-owner", "-bounces")
_LIST_HOSTS = ("lists.", "list.")
_LINK_BEFORE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s<>\"'，。；！？（）]*/\Z")  # a URL up to a path's "/"
_LINK_WINDOW = 300
# A number right after one of these labels names a thing (an order, a book, a product), not a person.
_NOT_PERSONAL_LABEL = re.compile(
    r"(?:订单号|订单编号|单号|编号|流水号|交易号|ISBN|isbn|书号|发票号码|发票代码|批准文号|条形码|条码|序列号|"
    r"专利号|合同号|工号|学号|货号|型号|商品编码|准考证号|邮编|邮政编码)[\s:：#＃是为]{0,3}$"
)
_LABEL_WINDOW = 12
_FULLWIDTH = str.maketrans("０１２３４５６７８９Ｘｘ", "0123456789Xx")
_NON_DIGIT = re.compile(r"[^0-9Xx]")
_ID_WEIGHTS = [pow(2, 17 - i, 11) for i in range(17)]


@dataclass(frozen=True)
class Span:
    kind: str
    start: int
    end: int


def digits_of(s: str) -> str:
    """ASCII digits (and X) of a matched string, separators and prefixes removed."""
    return _NON_DIGIT.sub("", s.translate(_FULLWIDTH))


def id_check_digit(first17: str) -> str:
    """GB 11643-1999: weights 2^(17-i) mod 11; check = (12 - sum mod 11) mod 11, 10 written X."""
    c = (12 - sum(int(d) * w for d, w in zip(first17, _ID_WEIGHTS)) % 11) % 11
    return "X" if c == 10 else str(c)


def valid_id_number(digits: str) -> bool:
    if len(digits) != 18 or not digits[:17].isdigit() or digits[0] == "0":
        return False
    try:
        born = dt.date(int(digits[6:10]), int(digits[10:12]), int(digits[12:14]))
    except ValueError:
        return False
    return 1900 <= born.year <= 2099 and id_check_digit(digits[:17]) == digits[17].upper()


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def valid_bank_card(digits: str) -> bool:
    # Issuer numbers start 2-6 or 9 (ISO/IEC 7812 major industry identifiers of card issuers,
    # 9 for older domestic debit cards); 0, 1, 7 and 8 are not payment cards.
    return 16 <= len(digits) <= 19 and digits[0] in "234569" and len(set(digits)) > 2 and luhn_ok(digits)


def _phone_type(national: str) -> int | None:
    try:
        num = phonenumbers.parse(national, "CN")
    except phonenumbers.NumberParseException:
        return None
    return phonenumbers.number_type(num) if phonenumbers.is_valid_number(num) else None


def valid_mobile(match: str) -> bool:
    digits = digits_of(match)
    national = digits[-11:]
    return len(national) == 11 and _phone_type(national) in (
        phonenumbers.PhoneNumberType.MOBILE,
        phonenumbers.PhoneNumberType.FIXED_LINE_OR_MOBILE,
    )


def valid_landline(match: str) -> bool:
    digits = digits_of(match)
    if match.lstrip("(（").startswith(("+", "＋", "00", "００")):
        digits = digits[2:] if match.lstrip("(（")[0] in "+＋" else digits[4:]
        digits = digits if digits.startswith("0") else "0" + digits
    if not digits.startswith("0") or not 10 <= len(digits) <= 12:
        return False
    return _phone_type(digits) in (
        phonenumbers.PhoneNumberType.FIXED_LINE,
        phonenumbers.PhoneNumberType.FIXED_LINE_OR_MOBILE,
    )


def valid_ipv4(match: str, public_only: bool) -> bool:
    parts = match.translate(_FULLWIDTH).replace("．", ".").split(".")
    if any(len(p) > 1 and p[0] == "0" for p in parts) or parts[0] == "0":
        return False  # leading zeros: a version or a section number, not an address
    try:
        ip = ipaddress.IPv4Address(".".join(parts))
    except ValueError:
        return False
    return ip.is_global if public_only else True


def outline_number(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` numbers its line ("12.2.1.1. 邮件列表的行为准则是什么？",
    "## 8.1.6.1、dpkg-deb"): at the line's start (after spaces or heading, quote and bullet marks)
    and followed by a full stop, a 、 or a closing bracket. A section number of a manual or a FAQ,
    not an address: an address in a line is what it says about something."""
    line_start = text.rfind("\n", 0, start) + 1
    return text[end : end + 1] in _OUTLINE_AFTER and not text[line_start:start].strip(_OUTLINE_MARKS)


_OUTLINE_AFTER = frozenset(".．、)）")
_OUTLINE_MARKS = " \t\u3000#>*-+"


def valid_ipv6(match: str, public_only: bool) -> bool:
    groups = [g for g in match.split(":") if g]
    if len(groups) < 2 or max(map(len, groups)) < 3:  # "::1", "a::b", leftovers of C++ "std::x"
        return False
    try:
        ip = ipaddress.IPv6Address(match)
    except ValueError:
        return False
    return ip.is_global if public_only else True


def _after_label(text: str, start: int) -> bool:
    return bool(_NOT_PERSONAL_LABEL.search(text, max(0, start - _LABEL_WINDOW), start))


_RUN_CHECKS = {
    MOBILE: lambda m, _p: valid_mobile(m),
    LANDLINE: lambda m, _p: valid_landline(m),
    ID_NUMBER: lambda m, _p: valid_id_number(digits_of(m)),
    BANK_CARD: lambda m, _p: valid_bank_card(digits_of(m)),
    IPV4: valid_ipv4,
}


def find_pii(
    text: str, kinds: tuple[str, ...] = KINDS, public_ips_only: bool = True, personal_only: bool = True
) -> list[Span]:
    """Non-overlapping spans of personal data in ``text``, in order. Overlapping candidates
    (a mobile number inside an e-mail address) resolve to the longest, then by kind priority.
    ``personal_only=False``: every e-mail address, a role's or a list's too (``personal_address``):
    what a page offers as a contact, personal or not (``filters.quality.contact``)."""
    found: list[Span] = []
    run_kinds = [k for k in _RUN_CHECKS if k in kinds]
    if run_kinds:
        for run in _RUN.finditer(text):
            s, e = run.span()
            if e - s < _MIN_RUN:
                continue
            for kind in run_kinds:
                # e + 1: the lookahead sees the character after the run (a digit after a final X)
                for m in _PATTERNS[kind].finditer(text, s, e + 1):
                    if (
                        _RUN_CHECKS[kind](m.group(), public_ips_only)
                        and not _after_label(text, m.start())
                        and not (kind == IPV4 and outline_number(text, m.start(), m.end()))
                    ):
                        found.append(Span(kind, m.start(), m.end()))
    if EMAIL in kinds and ("@" in text or "＠" in text):
        found += [
            Span(EMAIL, *m.span())
            for m in email_matches(text)
            if m.group(1).lower() not in _FILE_SUFFIXES and (not personal_only or personal_address(text, m))
        ]
    if IPV6 in kinds and ("::" in text or text.count(":") >= 7):
        found += [Span(IPV6, *m.span()) for m in _IPV6.finditer(text) if valid_ipv6(m.group(), public_ips_only)]
    return _non_overlapping(found)


_AT = re.compile("[@＠]")
_DOMAIN_RUN = re.compile(r"[A-Za-z0-9.\-]*")
_LOCAL_MAX = 64  # characters of an address before its @ (_EMAIL's local part)


def email_matches(text: str):
    """What ``_EMAIL.finditer(text)`` yields, searched only around each @: a match holds one @
    (or ＠), at most _LOCAL_MAX characters after its start, and then only domain characters, so
    it lies between _LOCAL_MAX before the @ and the end of the domain characters after it
    (the windows of nearby @s merged; the look-behind sees the text before a window)."""
    windows: list[tuple[int, int]] = []
    for at in _AT.finditer(text):
        lo, hi = max(0, at.start() - _LOCAL_MAX), _DOMAIN_RUN.match(text, at.end()).end()
        if windows and lo < windows[-1][1]:
            windows[-1] = (windows[-1][0], hi)
        else:
            windows.append((lo, hi))
    for lo, hi in windows:
        yield from _EMAIL.finditer(text, lo, hi)


def personal_address(text: str, m: re.Match[str]) -> bool:
    """Whether the e-mail address ``m`` (of ``email_matches(text)``) may name a person: not a role
    mailbox (``ROLE_MAILBOXES``, a list's ``-request``, ``-owner``, ``-bounces``), not at a
    mailing-list host (``lists.``), and not a message id in a link's path
    (``https://lists.debian.org/20140211193904.GX24404@rzlab.ucr.edu``: right after a ``/`` of a
    URL; after the ``/`` of ``电话/邮箱`` or ``138…/a@b.com`` it is an address)."""
    address = m.group().lower().replace("＠", "@")
    local, _, domain = address.partition("@")
    if local in ROLE_MAILBOXES or local.endswith(_LIST_MAILBOX_SUFFIXES) or domain.startswith(_LIST_HOSTS):
        return False
    if m.start() == 0 or text[m.start() - 1] != "/":
        return True
    link = _LINK_BEFORE.search(text, max(0, m.start() - _LINK_WINDOW), m.start())
    return link is None


def _non_overlapping(spans: list[Span]) -> list[Span]:
    if len(spans) < 2:
        return spans
    chosen: list[Span] = []
    for sp in sorted(spans, key=lambda x: (x.start - x.end, _PRIORITY[x.kind], x.start)):
        if all(sp.end <= c.start or sp.start >= c.end for c in chosen):
            chosen.append(sp)
    return sorted(chosen, key=lambda x: x.start)


def redact(text: str, spans: list[Span]) -> str:
    """Each span replaced by its kind's placeholder (spans sorted, non-overlapping)."""
    if not spans:
        return text
    parts, pos = [], 0
    for sp in spans:
        parts += [text[pos : sp.start], PLACEHOLDERS[sp.kind]]
        pos = sp.end
    parts.append(text[pos:])
    return "".join(parts)


def resolve_modes(mode: str, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The mode of every kind: ``mode`` unless ``overrides`` names the kind. Raises ValueError
    on an unknown kind or mode, naming the valid ones."""
    overrides = dict(overrides or {})
    for name, value in [("mode", mode), *((f"modes.{k}", v) for k, v in overrides.items())]:
        if value not in MODES:
            raise ValueError(f"pii.{name} must be one of {list(MODES)}, not {value!r}")
    unknown = sorted(set(overrides) - set(KINDS))
    if unknown:
        raise ValueError(f"pii.modes: unknown kind(s) {unknown}; valid: {list(KINDS)}")
    return {k: overrides.get(k, mode) for k in KINDS}


@dataclass
class PiiResult:
    text: str  # the text with every found span replaced (also when the document is dropped)
    redacted: dict[str, int]  # kind -> spans replaced; empty when nothing was found
    drop_kinds: tuple[str, ...]  # found kinds whose mode is drop: non-empty = drop the document

    @property
    def keep(self) -> bool:
        return not self.drop_kinds


class PiiScrubber:
    """Applies per-kind modes to a text. A dropped document's text is redacted too, so the
    audit copy in ``rejected/`` carries no personal data."""

    def __init__(self, modes: Mapping[str, str], public_ips_only: bool = True):
        self.modes = dict(modes)
        self.kinds = tuple(k for k in KINDS if self.modes.get(k, OFF) != OFF)
        self.public_ips_only = public_ips_only

    def __call__(self, text: str) -> PiiResult:
        spans = find_pii(text, self.kinds, self.public_ips_only) if self.kinds and text else []
        if not spans:
            return PiiResult(text, {}, ())
        counts: dict[str, int] = {}
        for sp in spans:
            counts[sp.kind] = counts.get(sp.kind, 0) + 1
        drop = tuple(k for k in KINDS if k in counts and self.modes[k] == DROP)
        return PiiResult(redact(text, spans), dict(sorted(counts.items())), drop)
