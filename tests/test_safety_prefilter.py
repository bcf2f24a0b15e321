"""The safety prefilter (filters/quality/safety_prefilter.py) against the one it replaced (issue 35).

Until issue 35 the safety layer derived each pattern's requirement and leading strings from the
parse tree of CPython's internal ``re._parser``; ``filters.quality.safety_prefilter`` now parses the
patterns itself. The old derivation is kept below, verbatim, as the reference: on every bundled
pattern, on hand-written patterns of every construct the parser reads and on random patterns
built from them, both give the same requirements and leading strings, and scorers built with
either give the same hits, scores and verdicts on the demo crawl, the seed sets and the reference
corpus. The reference needs ``re._parser`` (CPython 3.11+); without it this file is skipped.
No Spark."""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

import pytest

from filters.quality import safety
from filters.quality import safety_prefilter as new
from filters.quality.safety import SafetyScorer

sre_parse = pytest.importorskip("re._parser")
sre = pytest.importorskip("re._constants")

ROOT = Path(__file__).resolve().parent.parent

# --- the reference: filters/quality/safety.py before issue 35, verbatim -------------------------------

_MAX_EXACT = 64  # strings an exact set may hold before expansion stops (bounds the automaton)
_MAX_ALTERNATIVES = 16  # alternatives of a requirement before they collapse into one set
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)

Conjunction = tuple[frozenset[str], ...]  # every set must be hit
Requirement = list[Conjunction]  # one alternative must hold; [] = nothing to rely on


class _GiveUp(Exception):
    """A construct the analysis does not model soundly (case-insensitive matching)."""


def old_requirement(pattern: str) -> Requirement:
    """What every match of ``pattern`` contains (see above); [] when there is nothing to rely on.
    Sound by construction: literals, small classes, groups, alternation, repeats with a minimum
    of 1 and zero-width assertions are modelled; anything else ends a literal run."""
    try:
        parsed = sre_parse.parse(pattern)
        if parsed.state.flags & re.IGNORECASE:
            return []
        return _sequence(parsed.data)[1]
    except (_GiveUp, RecursionError):
        return []


def _usable(strings: set[str]) -> bool:
    return bool(strings) and "" not in strings


def _best(conj: Conjunction) -> frozenset[str]:
    """The set of a conjunction to keep when alternatives collapse: longest shortest string, then fewest."""
    return max(conj, key=lambda c: (min(map(len, c)), -len(c)))


def _collapse(req: Requirement) -> Requirement:
    """One alternative holding one set (the union of each alternative's best set): weaker, still sound."""
    return [(frozenset().union(*(_best(c) for c in req)),)] if req else []


def _sequence(items: list) -> tuple[set[str] | None, Requirement]:
    """(every string the sequence can match, when that set is small, else None; its requirement)."""
    run, exact, sets, multi = {""}, True, [], []
    for op, av in items:
        ex, req = _node(op, av)
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


def _branch(alternatives: list) -> tuple[set[str] | None, Requirement]:
    alts = [_sequence(p.data) for p in alternatives]
    exact = set().union(*(e for e, _ in alts)) if all(e is not None for e, _ in alts) else None
    req = [c for _, r in alts for c in r] if all(r for _, r in alts) else []
    if len(req) > _MAX_ALTERNATIVES:
        req = _collapse(req)
    return (exact if exact is not None and len(exact) <= _MAX_EXACT else None), req


def _node(op, av) -> tuple[set[str] | None, Requirement]:
    """(exact strings, requirement) of one parsed node; see ``_sequence``."""
    if op is sre.LITERAL:
        return {chr(av)}, []
    if op is sre.IN:
        return _class_chars(av), []
    if op is sre.SUBPATTERN:
        if av[1] & re.IGNORECASE:
            raise _GiveUp
        return _sequence(av[3].data)
    if op is sre.ATOMIC_GROUP:
        return _sequence(av.data)
    if op is sre.BRANCH:
        return _branch(av[1])
    if op in _REPEATS:
        lo, hi, sub = av
        ex, req = _sequence(sub.data)
        if lo == 0:
            return (ex | {""} if ex is not None and hi == 1 else None), []
        if lo == hi == 1:
            return ex, req
        return None, req or ([(frozenset(ex),)] if ex is not None and _usable(ex) else [])
    if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        return {""}, []  # zero width: transparent
    return None, []  # any character, a negated literal, a back-reference...


def _class_chars(items: list) -> set[str] | None:
    """The characters of a small positive class ``[...]``, else None."""
    chars: set[str] = set()
    for op, av in items:
        if op is sre.LITERAL:
            chars.add(chr(av))
        elif op is sre.RANGE and av[1] - av[0] < _MAX_EXACT:
            chars.update(map(chr, range(av[0], av[1] + 1)))
        else:
            return None  # NEGATE, CATEGORY (\d, \s...), a wide range
    return chars if len(chars) <= _MAX_EXACT else None


def old_leading(pattern: str) -> frozenset[str] | None:
    """Strings one of which every match of ``pattern`` begins with (its opening literals, through
    groups, alternations and repeats of at least one), or None when there are none to rely on."""
    try:
        parsed = sre_parse.parse(pattern)
        found = None if parsed.state.flags & re.IGNORECASE else _leading(parsed.data)
    except (_GiveUp, RecursionError):
        return None
    return frozenset(found) if found else None


def _leading(items: list) -> set[str] | None:
    run = {""}  # every match begins with one of these
    for op, av in items:
        ex, _ = _node(op, av)
        if ex is not None and "" not in ex and len(run) * len(ex) <= _MAX_EXACT:
            run = {a + b for a in run for b in ex}
            continue
        if run != {""}:
            return run
        if op is sre.SUBPATTERN:
            return _leading(av[3].data)
        if op is sre.BRANCH:
            parts = [_leading(b.data) for b in av[1]]
            return set().union(*parts) if all(parts) else None
        if op in _REPEATS and av[0] >= 1:
            return _leading(av[2].data)
        return None
    return run if run != {""} else None


# --- the comparisons ------------------------------------------------------------------------------

# One or more patterns for every construct filters/quality/safety_prefilter.py reads, and the shapes
# ``re``'s parser rewrites (shared prefixes, one-character alternatives, spliced groups).
HAND_WRITTEN = [
    "(不用|无需|免)(抵押|担保)",
    r"(首充|首存)[^。\n]{0,10}(送|返)\d+",
    r"(存|充)\d+元?(送|返|赠)\d+",
    "彩金|彩票|彩民",  # a shared prefix: 彩 then a class
    "让一球|让半球|让两球",  # a shared prefix, then different tails
    "a|b|[cd]|e",  # one-character alternatives: one class
    "a|b|[^cd]",  # a negated class stays a branch
    "(?:仅剩)+\\d",  # a repeated non-capturing group: its body repeats
    "(?:限时|仅限)(?:今日|本周)抢购",  # spliced groups
    "(?:ab|ac)d|(?:ab|ac)e",
    "(?P<n>日赚)\\d+(?P=n)",
    "(日赚)\\d+\\1",
    "(?=加微)加(微|薇)信?",
    "(?<!不)包(过|下款)",
    "(?!正规)平台(?<=台)直营",
    "^官网|下载$",
    "\\b(vip|svip)\\d\\B",
    "\\Aabc\\Z",
    "(?>百家乐|龙虎)斗?",
    "(?#comment with | and \\) )加群",
    "[a-f0-9]{32}",
    "[\u4e00-\u9fa5]{2,4}娱乐",  # a wide range: no exact set
    "[\u4e00-\u4e10]城",  # a narrow one: its characters
    "[]a]x|[^]b]y",
    "[a-]z|[-a]z",
    "[\\d.]+倍|[\\w]送",
    "[\\x41-\\x43]k|\\u4e00\\U00004e01\\N{EM DASH}",
    "\\x41\\101\\0\\07\\n\\t\\.\\*\\(\\)",
    "[\\b\\n\\t\\012]x",
    "a{3}|a{2,}|a{,2}b|a{2,5}?c|a{1,1}d|a{0,1}e",
    "x{|x{}|x{a}|x{1,a}|x{,}y",
    "a*?b|a+?c|a??d|a*+e|a++f|a?+g",
    "(a|b)(c|d)(e|f)(g|h)(i|j)(k|l)(m|n)",  # 128 strings: beyond the exact bound
    "(a|bc|d)(e|fg)|(h|ij)k",
    "((a|b)c|(d|e)f)+g",
    "(.|x)y|.+z",
    "(红利|奖金){2,}",
    "(红利|奖金)*",
    "(红利)?(奖金)?",
    "(" + "|".join(f"词{i}" for i in range(20)) + ")",  # many alternatives
    "|".join(f"(a{i}|b{i})c{i}" for i in range(10)),  # alternatives that collapse
    "a|",  # an empty alternative
    "ab|a",
    "()x",
    "(a)(b)|(a)(c)",  # capturing groups are never a shared prefix
    "[a][b]|[a][c]",
    "x(?:)y",
]


def _bundled() -> list[str]:
    return [p for _, p, _ in SafetyScorer()._patterns]


def test_every_bundled_pattern_gets_the_reference_requirement_and_leading_strings():
    patterns = _bundled()
    assert len(patterns) > 100, "the bundled lists were not read"
    differ = [p for p in patterns if new.requirement(p) != old_requirement(p) or new.leading(p) != old_leading(p)]
    assert not differ, differ
    assert sum(bool(new.requirement(p)) for p in patterns) > 90  # the comparison is not of empties


@pytest.mark.parametrize("pattern", HAND_WRITTEN)
def test_hand_written_patterns_get_the_reference_requirement_and_leading_strings(pattern):
    re.compile(pattern)  # only patterns re accepts get here (filters.quality.safety.check_pattern)
    assert new.requirement(pattern) == old_requirement(pattern)
    assert new.leading(pattern) == old_leading(pattern)


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    """A random pattern of the constructs above, over a small alphabet (so alternatives share
    prefixes and one-character alternatives occur often)."""
    parts = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.35:
            atom = rng.choice("ab送返金")
        elif r < 0.45:
            atom = rng.choice(["[ab]", "[^a]", "\\d", ".", "[a-c]", "[送返]", "\\w", "[\\d送]"])
        elif r < 0.5:
            atom = rng.choice(["^", "$", "\\b", "(?=a)", "(?<!b)"])
        elif depth < 2:
            inner = "|".join(_random_pattern(rng, depth + 1) for _ in range(rng.randint(1, 3)))
            atom = rng.choice(["(", "(?:", "(?P<g%d>" % rng.randint(0, 1 << 30)]) + inner + ")"
        else:
            atom = rng.choice("ab")
        if not atom.startswith(("^", "$", "\\b", "(?=", "(?<")) and rng.random() < 0.3:
            atom += rng.choice(["?", "*", "+", "{2}", "{1,3}", "{0,2}", "{2,}", "*?", "++"])
        parts.append(atom)
    return "".join(parts)


def test_random_patterns_get_the_reference_requirement_and_leading_strings():
    rng = random.Random(35)
    checked, differ = 0, []
    for _ in range(3000):
        pattern = "|".join(_random_pattern(rng) for _ in range(rng.randint(1, 3)))
        try:
            re.compile(pattern)
        except re.error:
            continue
        checked += 1
        if new.requirement(pattern) != old_requirement(pattern) or new.leading(pattern) != old_leading(pattern):
            differ.append(pattern)
    assert checked > 2500 and not differ, differ[:10]


def test_constructs_it_does_not_model_run_on_every_text():
    """Inline flags and conditionals give no requirement (the pattern always runs): sound, slower.
    The reference modelled flags other than ``i``; no bundled pattern uses one."""
    for pattern in ("(?i)abc", "(?s:a.b)c", "(?x) a b", "(a)?(?(1)b|c)d", "(?i:abc)"):
        assert new.requirement(pattern) == [] and new.leading(pattern) is None
    assert not [p for p in _bundled() if re.search(r"\(\?[aiLmsux-]|\(\?\(", p)]


def _documents() -> list[str]:
    """The demo crawl (if built), the seed sets, the reference corpus, People's Daily pages and
    the pages of tests/test_safety.py."""
    from demo.sources import news_pages
    from tests.test_safety import NEGATIVES, POSITIVES

    texts = [p for ps in POSITIVES.values() for p in ps] + list(NEGATIVES.values())
    texts += ["\n".join([t, *paras]) for t, paras, _ in news_pages()]
    files = sorted((ROOT / "data" / "demo_crawl" / "jsonl").glob("*.jsonl*"))
    files += sorted((ROOT / "data" / "seed").glob("*.jsonl")) + [ROOT / "data" / "reference" / "reference.jsonl"]
    for path in files:
        if path.is_file():
            with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8", errors="replace") as f:
                texts += [r["text"] for r in map(_record, f) if isinstance(r.get("text"), str) and r["text"]]
    return texts


def _record(line: str) -> dict:
    """A JSON line, or {} for one of the damaged lines the demo crawl holds on purpose."""
    try:
        record = json.loads(line)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def test_scorers_built_with_either_prefilter_find_and_decide_alike(monkeypatch):
    current = SafetyScorer()
    monkeypatch.setattr(safety, "requirement", old_requirement)
    monkeypatch.setattr(safety, "leading", old_leading)
    reference = SafetyScorer()
    # the prefilter itself: the automaton's keys, each pattern's requirement and leading strings
    assert current._keys == reference._keys
    assert current._requirements == reference._requirements and current._always == reference._always
    assert current._leading == reference._leading and current._lead_keys == reference._lead_keys
    texts = _documents()
    assert len(texts) > 2000
    hits = [current.hits(t) for t in texts]
    assert hits == [reference.hits(t) for t in texts]  # the matches each pattern counted
    scores = current.scores_batch(texts)
    assert scores == reference.scores_batch(texts)
    assert [current.verdict(s) for s in scores] == [reference.verdict(s) for s in scores]
    # the documents hold unsafe pages too: 62 of test_safety's pages and People's Daily's alone (a
    # fresh checkout, CI), hundreds more with the demo crawl and the seed built
    assert sum(map(bool, map(current.verdict, scores))) > 50
