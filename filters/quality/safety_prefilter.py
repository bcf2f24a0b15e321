"""Which safety patterns can match a text at all: the literals every match must contain.

Running every pattern of ``filters.quality.safety`` over every document costs ~0.6 CPU s per category per
5.5 MB of news (Python's ``re`` tries each position), and most documents contain none of the
literals a pattern needs. So, like RE2's prefilter, each pattern gets a **requirement** in
disjunctive normal form: a list of alternatives, each a conjunction of string sets, such that
every match contains a string of every set of at least one alternative. One Aho-Corasick pass
finds which strings occur, and only the patterns whose requirement holds run. A pattern with no
usable requirement (its literals are all optional, or classes like ``\\d``) runs on every text.
``leading`` gives the strings every match begins with, so such a pattern is tried with
``re.match`` only where they occur.

The patterns are ours (``sensitive_words/safety/*.patterns`` and ``safety.extra_patterns``), and
``filters.quality.safety.check_pattern`` has compiled each with ``re`` before it gets here, so this module
reads them with its own small parser of the syntax they use, not with the interpreter's internal
one:

- literal characters and escapes (``\\n``, ``\\.``, ``\\x41``, ``\\u4e00``, ``\\N{...}``, octal);
- classes ``[...]`` (ranges, negation, ``\\d``-style categories inside);
- ``\\d \\D \\s \\S \\w \\W``, ``.``, anchors (``^ $ \\A \\Z \\b \\B``) and lookarounds (zero width);
- groups ``(...)``, ``(?:...)``, ``(?P<name>...)``, ``(?>...)``, comments ``(?#...)``;
- alternation ``|``; repeats ``? * + {m} {m,} {,n} {m,n}``, lazy (``?``) or possessive (``+``).

Anything else (inline flags such as ``(?i)``, conditionals ``(?(1)...)``) gives no requirement:
the pattern runs on every text. That is always sound, only slower.

The tree it builds has the shape ``re``'s own parser gives (CPython 3.11-3.13): alternatives that
begin alike share that prefix, alternatives of single characters are one class, a non-capturing
group is spliced into its sequence, a repeated one is the repeat's body. The requirements are
therefore the same as those the safety layer derived from ``re``'s parse tree before (issue 35;
``tests/test_safety_prefilter.py`` compares both on every bundled pattern and on documents).
"""

from __future__ import annotations

import unicodedata

# Node kinds of the parse tree: (kind, argument) tuples, as ``re``'s parser writes them.
LIT = "literal"  # a code point
NOT_LIT = "not_literal"  # a code point, negated ([^x])
IN = "in"  # a class: tuple of items (LIT, code) / (RANGE, (lo, hi)) / (CATEGORY, letter) / (NEGATE, None)
RANGE, CATEGORY, NEGATE = "range", "category", "negate"  # class items
ANY = "any"  # "."
AT = "at"  # ^ $ \A \Z \b \B (the argument names which)
ASSERT = "assert"  # a lookahead or lookbehind: zero width
GROUP = "group"  # a capturing group: (number, body)
ATOMIC = "atomic"  # (?>...): body
BRANCH = "branch"  # alternatives: tuple of bodies
REPEAT = "repeat"  # (min, max, body); max = MAX_REPEAT when unbounded
GROUPREF = "groupref"  # a back-reference
MAX_REPEAT = 1 << 32

_MAX_EXACT = 64  # strings an exact set may hold before expansion stops (bounds the automaton)
_MAX_ALTERNATIVES = 16  # alternatives of a requirement before they collapse into one set

Conjunction = tuple[frozenset[str], ...]  # every set must be hit
Requirement = list[Conjunction]  # one alternative must hold; [] = nothing to rely on

_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}  # \b: in a class only
_CATEGORIES = frozenset("dDsSwW")
_ANCHORS = frozenset("AbBZ")
_HEX, _OCT, _DIGITS = frozenset("0123456789abcdefABCDEF"), frozenset("01234567"), frozenset("0123456789")
_FLAGS = frozenset("aiLmsuxt-")


class _GiveUp(Exception):
    """A construct the analysis does not model (inline flags, conditionals): no requirement."""


class Seq(list):
    """A parsed sequence of nodes. Equal only to itself, as ``re``'s ``SubPattern``: two
    alternatives share a leading group or repeat only when it is the same object (never)."""

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


# ---------------------------------------------------------------- the parser


class _Source:
    """The pattern as tokens: one character, or a backslash with the character after it."""

    def __init__(self, pattern: str):
        self.text, self.pos, self.groups = pattern, 0, 0

    @property
    def next(self) -> str | None:
        if self.pos >= len(self.text):
            return None
        return self.text[self.pos : self.pos + 2] if self.text[self.pos] == "\\" else self.text[self.pos]

    def get(self) -> str | None:
        token = self.next
        if token is None:
            raise _GiveUp  # unexpected end (re.compile refuses these before)
        self.pos += len(token)
        return token

    def match(self, char: str) -> bool:
        if self.next == char:
            self.pos += len(char)
            return True
        return False

    def take_while(self, allowed: frozenset[str], most: int) -> str:
        out = ""
        while len(out) < most and self.pos < len(self.text) and self.text[self.pos] in allowed:
            out += self.text[self.pos]
            self.pos += 1
        return out

    def until(self, end: str) -> str:
        stop = self.text.find(end, self.pos)
        if stop < 0:
            raise _GiveUp
        out, self.pos = self.text[self.pos : stop], stop + 1
        return out


def parse(pattern: str) -> Seq:
    """The parse tree of ``pattern`` (a sequence of ``(kind, argument)`` nodes); raises
    ``_GiveUp`` for a construct outside the syntax above."""
    source = _Source(pattern)
    tree = _alternation(source)
    if source.next is not None:
        raise _GiveUp  # an unbalanced ")"
    return tree


def _alternation(source: _Source) -> Seq:
    items = [_sequence_of(source)]
    while source.match("|"):
        items.append(_sequence_of(source))
    if len(items) == 1:
        return items[0]
    out = Seq()
    while all(items) and all(item[0] == items[0][0] for item in items):  # a common prefix goes first
        out.append(items[0][0])
        for item in items:
            del item[0]
    chars = []  # alternatives of one character (or a positive class) each are one class
    for item in items:
        if len(item) != 1 or item[0][0] not in (LIT, IN) or (item[0][0] == IN and item[0][1][0][0] == NEGATE):
            break
        chars.extend([item[0]] if item[0][0] == LIT else item[0][1])
    else:
        out.append((IN, tuple(dict.fromkeys(chars))))
        return out
    out.append((BRANCH, tuple(items)))
    return out


def _sequence_of(source: _Source) -> Seq:
    seq = Seq()
    while source.next is not None and source.next not in "|)":
        token = source.get()
        if token[0] == "\\":
            seq.append(_escape(source, token, in_class=False))
        elif token == "[":
            seq.append(_class(source))
        elif token in "*+?{":
            _repeat(source, token, seq)
        elif token == ".":
            seq.append((ANY, None))
        elif token in "^$":
            seq.append((AT, token))
        elif token == "(":
            _group(source, seq)
        else:
            seq.append((LIT, ord(token)))
    for i in range(len(seq) - 1, -1, -1):  # a non-capturing group is spliced into its sequence
        if seq[i][0] == GROUP and seq[i][1][0] is None:
            seq[i : i + 1] = seq[i][1][1]
    return seq


def _escape(source: _Source, token: str, in_class: bool) -> tuple:
    c = token[1:]
    if not c:
        raise _GiveUp  # a trailing backslash
    if c in _CATEGORIES:
        return (IN, ((CATEGORY, c),)) if not in_class else (CATEGORY, c)
    if c in _ANCHORS and not (in_class and c == "b"):
        if in_class:
            raise _GiveUp
        return (AT, token)
    if c in _ESCAPES:
        return (LIT, _ESCAPES[c])
    if c in ("x", "u", "U"):
        digits = source.take_while(_HEX, {"x": 2, "u": 4, "U": 8}[c])
        return (LIT, int(digits, 16))
    if c == "N":
        if not source.match("{"):
            raise _GiveUp
        return (LIT, ord(unicodedata.lookup(source.until("}"))))
    if c == "0" or (in_class and c in _OCT):
        return (LIT, int(c + source.take_while(_OCT, 2), 8))
    if c in _DIGITS:  # octal (three octal digits) or a back-reference
        if in_class:
            raise _GiveUp
        escape = c + source.take_while(_DIGITS, 1)
        if len(escape) == 2 and escape[0] in _OCT and escape[1] in _OCT and source.next in _OCT:
            return (LIT, int(escape + source.get(), 8))
        return (GROUPREF, int(escape))
    return (LIT, ord(c))


def _class(source: _Source) -> tuple:
    items: list[tuple] = []
    negate = source.match("^")
    while True:
        this = source.get()
        if this == "]" and items:
            break
        first = _escape(source, this, in_class=True) if this[0] == "\\" else (LIT, ord(this))
        if source.match("-"):
            that = source.get()
            if that == "]":
                items += [first, (LIT, ord("-"))]
                break
            second = _escape(source, that, in_class=True) if that[0] == "\\" else (LIT, ord(that))
            if first[0] != LIT or second[0] != LIT:
                raise _GiveUp
            items.append((RANGE, (first[1], second[1])))
        else:
            items.append(first)
    items = list(dict.fromkeys(items))
    if len(items) == 1 and items[0][0] == LIT:
        return (NOT_LIT, items[0][1]) if negate else items[0]
    return (IN, tuple([(NEGATE, None)] * negate + items))


def _repeat(source: _Source, token: str, seq: Seq) -> None:
    if token == "{":
        here = source.pos
        if source.next == "}":
            seq.append((LIT, ord("{")))
            return
        lo = source.take_while(_DIGITS, 1 << 30)
        hi = source.take_while(_DIGITS, 1 << 30) if source.match(",") else lo
        if not source.match("}"):  # not a repeat: a literal "{"
            seq.append((LIT, ord("{")))
            source.pos = here
            return
        low, high = int(lo or 0), int(hi) if hi else MAX_REPEAT
    else:
        low, high = {"?": (0, 1), "*": (0, MAX_REPEAT), "+": (1, MAX_REPEAT)}[token]
    if not seq or seq[-1][0] in (AT, REPEAT):
        raise _GiveUp  # nothing to repeat, or a repeat of a repeat
    body = seq[-1][1][1] if seq[-1][0] == GROUP and seq[-1][1][0] is None else Seq(seq[-1:])
    if not source.match("?"):  # lazy or possessive: the same strings
        source.match("+")
    seq[-1] = (REPEAT, (low, high, body))


def _group(source: _Source, seq: Seq) -> None:
    number: int | None = None
    kind = GROUP
    if source.match("?"):
        char = source.get()
        if char == "P" and source.match("<"):
            source.until(">")
            source.groups += 1
            number = source.groups
        elif char == "P" and source.match("="):
            source.until(")")
            seq.append((GROUPREF, None))
            return
        elif char == ":":
            pass
        elif char == "#":
            while source.get() != ")":
                pass
            return
        elif char in ("=", "!") or (char == "<" and source.next in ("=", "!")):
            if char == "<":
                source.get()
            body = _alternation(source)
            if not source.match(")"):
                raise _GiveUp
            seq.append((ASSERT, body))
            return
        elif char == ">":
            kind = ATOMIC
        else:  # inline flags, conditionals: not modelled
            raise _GiveUp
    else:
        source.groups += 1
        number = source.groups
    body = _alternation(source)
    if not source.match(")"):
        raise _GiveUp
    seq.append((ATOMIC, body) if kind == ATOMIC else (GROUP, (number, body)))


# ---------------------------------------------------------------- requirements


def requirement(pattern: str) -> Requirement:
    """What every match of ``pattern`` contains (see the module docstring); [] when there is
    nothing to rely on. Sound by construction: literals, small classes, groups, alternation,
    repeats with a minimum of 1 and zero-width assertions are modelled; anything else ends a
    literal run."""
    try:
        return _sequence(parse(pattern))[1]
    except (_GiveUp, RecursionError, ValueError, KeyError):
        return []


def _usable(strings: set[str]) -> bool:
    return bool(strings) and "" not in strings


def _best(conj: Conjunction) -> frozenset[str]:
    """The set of a conjunction to keep when alternatives collapse: longest shortest string, then fewest."""
    return max(conj, key=lambda c: (min(map(len, c)), -len(c)))


def _collapse(req: Requirement) -> Requirement:
    """One alternative holding one set (the union of each alternative's best set): weaker, still sound."""
    return [(frozenset().union(*(_best(c) for c in req)),)] if req else []


def _sequence(items: Seq) -> tuple[set[str] | None, Requirement]:
    """(every string the sequence can match, when that set is small, else None; its requirement)."""
    run, exact, sets, multi = {""}, True, [], []
    for kind, arg in items:
        ex, req = _node(kind, arg)
        if ex is not None and len(run) * len(ex) <= _MAX_EXACT:
            run = {a + b for a in run for b in ex}
            continue
        exact = False
        if _usable(run):
            sets.append(frozenset(run))  # the literal run so far occurs whole in every match
        run = set(ex) if ex is not None else {""}
        if len(req) == 1:
            sets.extend(req[0])
        elif req:
            multi.append(req)
    if _usable(run):
        sets.append(frozenset(run))
    if not sets and len(multi) == 1:
        return (run if exact else None), multi[0]  # a bare alternation: keep its alternatives
    sets += [_collapse(r)[0][0] for r in multi]
    return (run if exact else None), _conjunction(sets)


def _conjunction(sets: list[frozenset[str]]) -> Requirement:
    """The sets as one alternative, without sets that hold a single character when a set of longer
    strings is there: a set like {大, 小} is hit by most documents and only costs automaton matches."""
    if not sets:
        return []
    long = [c for c in sets if min(map(len, c)) > 1]
    return [tuple(dict.fromkeys(long or sets))]


def _branch(alternatives: tuple[Seq, ...]) -> tuple[set[str] | None, Requirement]:
    alts = [_sequence(p) for p in alternatives]
    exact = set().union(*(e for e, _ in alts)) if all(e is not None for e, _ in alts) else None
    req = [c for _, r in alts for c in r] if all(r for _, r in alts) else []
    if len(req) > _MAX_ALTERNATIVES:
        req = _collapse(req)
    return (exact if exact is not None and len(exact) <= _MAX_EXACT else None), req


def _node(kind: str, arg) -> tuple[set[str] | None, Requirement]:
    """(exact strings, requirement) of one node; see ``_sequence``."""
    if kind == LIT:
        return {chr(arg)}, []
    if kind == IN:
        return _class_chars(arg), []
    if kind == GROUP:
        return _sequence(arg[1])
    if kind == ATOMIC:
        return _sequence(arg)
    if kind == BRANCH:
        return _branch(arg)
    if kind == REPEAT:
        lo, hi, body = arg
        ex, req = _sequence(body)
        if lo == 0:
            return (ex | {""} if ex is not None and hi == 1 else None), []
        if lo == hi == 1:
            return ex, req
        return None, req or ([(frozenset(ex),)] if ex is not None and _usable(ex) else [])
    if kind in (AT, ASSERT):
        return {""}, []  # zero width: transparent
    return None, []  # any character, a negated literal, a back-reference...


def _class_chars(items: tuple) -> set[str] | None:
    """The characters of a small positive class ``[...]``, else None."""
    chars: set[str] = set()
    for kind, arg in items:
        if kind == LIT:
            chars.add(chr(arg))
        elif kind == RANGE and arg[1] - arg[0] < _MAX_EXACT:
            chars.update(map(chr, range(arg[0], arg[1] + 1)))
        else:
            return None  # NEGATE, CATEGORY (\d, \s...), a wide range
    return chars if len(chars) <= _MAX_EXACT else None


def leading(pattern: str) -> frozenset[str] | None:
    """Strings one of which every match of ``pattern`` begins with (its opening literals, through
    groups, alternations and repeats of at least one), or None when there are none to rely on."""
    try:
        found = _leading(parse(pattern))
    except (_GiveUp, RecursionError, ValueError, KeyError):
        return None
    return frozenset(found) if found else None


def _leading(items: Seq) -> set[str] | None:
    run = {""}  # every match begins with one of these
    for kind, arg in items:
        ex, _ = _node(kind, arg)
        if ex is not None and "" not in ex and len(run) * len(ex) <= _MAX_EXACT:
            run = {a + b for a in run for b in ex}
            continue
        if run != {""}:
            return run
        if kind == GROUP:
            return _leading(arg[1])
        if kind == BRANCH:
            parts = [_leading(b) for b in arg]
            return set().union(*parts) if all(parts) else None
        if kind == REPEAT and arg[0] >= 1:
            return _leading(arg[2])
        return None
    return run if run != {""} else None
