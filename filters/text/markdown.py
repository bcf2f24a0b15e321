"""Markdown in crawled text (issue 32, item 3): which lines and spans are code, and a text's prose.

Chinese technical pages are prose around code. PanGu-α's rules and the quality statistics are
about the prose: the Han ratio counts it alone, the decoration, menu and duplicate-paragraph rules
leave code as it is (``filters.pangu.transforms``), and the statistics of ``filters.quality.signals`` describe it.

Code (CommonMark 0.31 §4.5, §6.1): a code fence is a line of at least three backticks or tildes,
indented by at most three spaces (a backtick fence's info string holds no backtick); the block runs
to a line of the same character at least as long with nothing after it but spaces. A code span is
a run of backticks and the next run of the same length on the same line. Two departures, both
against text passing as code: a fence never closed is no block (CommonMark runs it to the end of
the document; in a crawl it is a stray rule of backticks), and a block or span that reads as
Chinese prose (``looks_like_code``) stays prose.

Markup (``prose``): thematic breaks (``---``), strong emphasis (``**`` and ``__``), heading,
bullet and quote markers, the pipes and the delimiter row of a GFM table (a row is its cells, one
space apart), link and image destinations, HTML tags and comments. The words they mark stay.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from filters.text.pii import PLACEHOLDERS

_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(?:.*?[^`])?\1(?!`)")
# Chinese sentence punctuation: prose has one about every 10-20 characters, code almost none (a
# comma in a comment). Text with one per PROSE_PUNCT_EVERY visible characters or more is prose.
SENTENCE_MARKS = re.compile("[，。！？；：、]")
PROSE_PUNCT_EVERY = 30
_SPACE = re.compile(r"\s+")

_HEADING = re.compile(r"^ {0,3}#{1,6}(?=[ \t]+\S)", re.M)  # with a title: a line of ##### is a rule
_BULLET = re.compile(r"^[ \t]*[-*+](?=[ \t])")
_QUOTE = re.compile(r"^ {0,3}(?:>[ \t]?)+")
# a thematic break (CommonMark 0.31 §4.1): three or more of one of - * _ alone on a line
_BREAK = re.compile(r"^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$")
_LINK_DEST = re.compile(r"(?<=\])\([^()\s]*(?:[ \t]+\"[^\"\n]*\")?\)")
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
# (not the placeholders of filters.text.pii: what the personal-data stage redacted is text of the
# page, and a redacted contact is still one it offered)
_PLACEHOLDER = "|".join(sorted(re.escape(p[1:-1]) for p in set(PLACEHOLDERS.values())))
_HTML = re.compile(rf"<!--.*?-->|<(?!(?:{_PLACEHOLDER})>)/?[A-Za-z][A-Za-z0-9-]*(?:[ \t\n][^<>]*)?/?>", re.S)
# Any of these may be markup: the texts without one are returned by ``prose`` as they are (the
# substrings first: ``in`` is ~3x faster than the regular expression on Chinese text).
_MARKUP = re.compile(r"`|~~~|\]\(|<[A-Za-z!/]|\||^ {0,3}(?:#{1,6}[ \t]|>|[-*+][ \t]|[-*_]{3})", re.M)
MAX_TABLE_GAP = 2  # blank lines between a table's rows on a page spaced out by its conversion from HTML
_MARKUP_HINTS = ("`", "|", "<", "](", "#", ">", "- ", "* ", "+ ", "-\t", "*\t", "+\t", "---", "***", "___")


def has_code(text: str) -> bool:
    """Whether ``text`` can hold Markdown code at all (a backtick, or a tilde fence)."""
    return "`" in text or "~~~" in text


def looks_like_code(text: str) -> bool:
    """Code, not Chinese prose set in a box (a quotation, a poem, a payload hidden from the rules):
    fewer than one Chinese sentence mark per PROSE_PUNCT_EVERY visible characters. Code in a
    Chinese programming language (``如果 i 等于 2 则``) is code."""
    visible = len(text) - sum(map(len, _SPACE.findall(text)))
    return len(SENTENCE_MARKS.findall(text)) * PROSE_PUNCT_EVERY < visible


def code_lines(lines: list[str]) -> list[bool]:
    """Per line: inside a fenced code block (its fence lines included)."""
    out, start, fence = [False] * len(lines), 0, None
    for i, line in enumerate(lines):
        m = _FENCE_LINE.match(line) if ("`" in line or "~" in line) else None
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence, start = m.group(1), i
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2).strip():
            if looks_like_code("\n".join(lines[start + 1 : i])):
                out[start : i + 1] = [True] * (i + 1 - start)
            fence = None
    return out


def code_spans(line: str) -> list[re.Match[str]]:
    """The code spans of one line."""
    return [m for m in _CODE_SPAN.finditer(line) if looks_like_code(m.group())] if "`" in line else []


def without_inline_code(line: str) -> str:
    """``line`` with each code span replaced by a space."""
    spans = code_spans(line)
    if not spans:
        return line
    out, pos = "", 0
    for m in spans:
        out = _join(out, line[pos : m.start()])
        pos = m.end()
    return _join(out, line[pos:])


def code_spans_as(line: str, token: str) -> str:
    """``line`` with each code span replaced by ``token``."""
    spans = code_spans(line)
    if not spans:
        return line
    parts, pos = [], 0
    for m in spans:
        parts += [line[pos : m.start()], token]
        pos = m.end()
    return "".join(parts) + line[pos:]


def _join(left: str, right: str) -> str:
    """``left`` and ``right`` where a code span stood between them: one space, however the span
    was spaced (its padding is no whitespace of the prose)."""
    if not left:
        return right if right.strip() else right.rstrip(" \t")
    return left.rstrip(" \t") + " " + right.lstrip(" \t")


def syntax_lines(lines: list[str]) -> list[bool]:
    """Per line: a line of a fenced code block or a row of a GFM table (its delimiter row
    ``|---|---|`` included). The cleaning rules leave these as they are: a table repeats its header,
    draws its delimiter row with dashes and may list short items; none of it is a duplicated
    paragraph, a rule drawn across the page or a menu."""
    out = code_lines(lines) if any("`" in line or "~~~" in line for line in lines) else [False] * len(lines)
    if any("|" in line for line in lines):
        out = [c or r for c, r in zip(out, _table_rows(lines))]
    return out


def has_syntax(text: str) -> bool:
    """Whether ``text`` can hold a code block, a code span or a table (``syntax_lines``)."""
    return has_code(text) or ("|" in text and "-" in text)


def outside_syntax(text: str, fn: Callable[[str], str]) -> str:
    """``fn`` applied to the text outside code blocks, tables (``syntax_lines``), code spans and
    heading markers, those kept as they are: a rule for decoration must not rewrite ``__init__``,
    ``a == b``, a fence, a table's delimiter row or the ``##`` that makes a line a heading."""
    if not has_syntax(text) and not ("#" in text and _HEADING.search(text)):
        return fn(text)
    lines = text.split("\n")
    out, pending = [], []  # pending: prose lines not yet given to fn (joined: one call a run)
    for line, fenced in zip(lines, syntax_lines(lines)):
        heading = _HEADING.match(line) if "#" in line else None
        if not fenced and "`" not in line and not heading:
            pending.append(line)
            continue
        if pending:
            out.append(fn("\n".join(pending)))
            pending = []
        if fenced:
            out.append(line)
        elif heading and "`" not in line:
            out.append(line[: heading.end()] + fn(line[heading.end() :]))
        else:
            parts, pos = [], 0
            for m in code_spans(line):
                parts += [fn(line[pos : m.start()]), m.group()]
                pos = m.end()
            out.append("".join(parts) + fn(line[pos:]))
    if pending:
        out.append(fn("\n".join(pending)))
    return "\n".join(out)


def _table_rows(lines: list[str]) -> list[bool]:
    """Per line: a row of a GFM table (a line with a pipe right above a delimiter row, that row,
    and the lines with a pipe below it, up to the first line without one). A page turned from HTML
    into text with blank lines after every block spaces its table the same way: a header up to
    MAX_TABLE_GAP blank lines above the delimiter row makes a table whose rows stand that many
    blank lines apart; the blank lines are no rows."""
    out = [False] * len(lines)
    i = 1
    while i < len(lines):
        if "-" in lines[i] and _TABLE_RULE.match(lines[i]):
            gap = 0
            while gap < MAX_TABLE_GAP and i - gap > 1 and not lines[i - 1 - gap].strip():
                gap += 1
            if "|" in lines[i - 1 - gap]:
                step, j = gap + 1, i
                while j + step < len(lines) and "|" in lines[j + step] and _blank(lines[j + 1 : j + step]):
                    j += step
                for k in range(i - step, j + 1, step):
                    out[k] = True
                i = j
        i += 1
    return out


def _blank(lines: list[str]) -> bool:
    return not any(line.strip() for line in lines)


def is_heading(line: str) -> bool:
    """A Markdown (ATX) heading: ``#`` to ``######`` and a space at the start of the line."""
    return "#" in line and _HEADING.match(line) is not None


def without_html(line: str) -> str:
    """``line`` without HTML tags and comments."""
    return _HTML.sub(" ", line) if "<" in line else line


def without_bullet(line: str) -> str:
    """``line`` without its list-item bullet and quote markers."""
    line = _BULLET.sub("", line)
    return _QUOTE.sub("", line) if ">" in line else line


def _unmarked(line: str) -> str:
    line = _EMPHASIS.sub(r"\2", line) if ("**" in line or "__" in line) else line
    line = _HEADING.sub("", line) if "#" in line else line
    line = _BULLET.sub("", line)
    return _QUOTE.sub("", line) if ">" in line else line


def prose(text: str) -> str:
    """``text`` as a reader reads it: the lines of fenced code blocks and the delimiter rows of
    tables emptied, code spans replaced by a space, and the markup (``_unmarked``: strong emphasis,
    heading, bullet and quote markers; table pipes; link destinations; HTML tags) taken out. A text with nothing
    that may be markup is returned as it is."""
    return prose_rows(text)[0]


def prose_rows(text: str) -> tuple[str, list[int]]:
    """``prose(text)`` and the lines of it that are rows of a GFM table (header and body; the
    delimiter row is emptied). A table row is a structure of cells, not a line of the page's
    layout: the line-shape statistics (``filters.quality.signals``: separator, short lines) leave it out."""
    if not any(c in text for c in _MARKUP_HINTS) or not _MARKUP.search(text):
        return text, []
    if "<" in text:
        text = _HTML.sub(" ", text)
    if "](" in text:
        text = _LINK_DEST.sub("", text)
    lines = text.split("\n")
    fenced = code_lines(lines) if has_code(text) else [False] * len(lines)
    table = _table_rows(lines) if "|" in text else [False] * len(lines)
    out, rows = [], []
    for i, (line, code, row) in enumerate(zip(lines, fenced, table)):
        if code or (row and _TABLE_RULE.match(line)) or (line[:1] in " -*_" and _BREAK.match(line)):
            out.append("")
            continue
        line = _unmarked(without_inline_code(line))
        if row:
            rows.append(i)
            line = " ".join(c.strip() for c in line.split("|") if c.strip())
        out.append(line)
    return "\n".join(out), rows
