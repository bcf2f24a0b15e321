"""Good web pages of five genres rendered from the shipped sample (``data/``, see data/LICENSES.md):
one function per genre, each returning dicts with ``text``, ``title``, ``source``, ``family``.

Every source item is used once, so no two pages share content. Layouts vary per page the way
different sites set the same material:

- ``tech_doc``: a package's Markdown README cut at its ``##`` sections, consecutive sections
  joined until a page holds TECH_MIN_CHARS characters, TECH_MIN_PROSE of them Han characters of
  prose; kept as Markdown (fences, inline code, tables, lists);
- ``qa``: the Debian FAQ, one question a page (short ones joined within a chapter), as
  ``问：/答：``, ``Q:/A:`` or a heading and its answer;
- ``poetry``: anthology pages of 4-7 poems, title and author lines, a couplet or a clause a line;
- ``list``: numbered lists of sayings of one classic (``1. ``, ``1、``, ``（1）``, ``- ``);
- ``forum``: threads: an opening post and short replies sharing sayings, floor headers with or
  without a time stamp, quotes of an earlier floor, signatures under a user's every post. The
  threads are assembled here (users, floors, times and the thread titles are generated); every
  post's text is a real entry of fortunes-zh.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from filters.text.markdown import prose

DATA = Path(__file__).parent / "data"
SOURCES = {  # family -> (distribution, version, licence, shipped file)
    "tech_doc": ("19 wheels (data/LICENSES.md)", "", "MIT / Apache-2.0", "tech_doc.jsonl"),
    "qa": ("debian-faq-zh-cn", "11.1", "Debian FAQ licence (verbatim and translated copies)", "qa.jsonl"),
    "poetry": ("fortunes-zh", "2.98", "GPL-3.0+", "poems.jsonl"),
    "list": ("fortunes-zh", "2.98", "GPL-3.0+", "sayings.jsonl"),
    "forum": ("fortunes-zh", "2.98", "GPL-3.0+", "sayings.jsonl"),
}
TECH_MIN_CHARS = 500  # a page's Markdown holds at least this many characters
TECH_MIN_PROSE = 150  # and this many Han characters of prose (PanGu-α's length floor): code alone is no Chinese page
QA_MIN_CHARS = 300
POEMS_PER_PAGE = (4, 7)
LIST_ITEMS = (8, 16)
LIST_PAGES = 120  # of the ~180 the sayings give, a seeded sample
REPLIES = (4, 10)
FORUM_THREADS = 120
REPLY_MAX_CHARS = 160  # a reply is a short post; longer entries open threads
LIST_SOURCES = ("谚语", "道德经")  # a list page takes sayings of one of these; the forum the others
HAN = re.compile(r"[\u4e00-\u9fff]")
# List pages, threads, anthology pages and a chapter's last Q&A page take items until they hold
# this many characters: the set holds no page under PanGu-α's 150-character floor, whose fate on
# short pages is issue 32's item 5 (the judge), not this set's question.
PAGE_MIN_CHARS = 200


def _source(family: str, extra: str = "") -> str:
    dist, ver, _, name = SOURCES[family]
    return f"{extra or dist}{'==' + ver if ver else ''}:{name}"


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def markdown_sections(text: str) -> list[str]:
    """The text cut before every ``## `` heading that is not inside a fenced code block."""
    sections, current, fence = [], [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(```|~~~)", line)
        if m:
            fence = None if fence == m.group(1) else fence or m.group(1)
        if fence is None and line.startswith("## ") and current:
            sections.append("\n".join(current).strip())
            current = []
        current.append(line)
    sections.append("\n".join(current).strip())
    return [s for s in sections if s]


def _prose_han(text: str) -> int:
    return len(HAN.findall(prose(text)))


def tech_doc_documents(rng: random.Random) -> list[dict]:
    """Pages of consecutive sections holding TECH_MIN_CHARS characters and TECH_MIN_PROSE Han
    characters of prose (outside code and markup: a section that is a code block under a heading
    is no page of its own, it goes with the prose next to it)."""
    docs = []
    for row in _rows("tech_doc.jsonl"):
        page: list[str] = []
        name = row["package"]
        for section in markdown_sections(row["text"]):
            page.append(section)
            text = "\n\n".join(page)
            if len(text) >= TECH_MIN_CHARS and _prose_han(text) >= TECH_MIN_PROSE:
                heading = re.match(r"^#+\s*(.+)", page[0])
                docs.append(
                    {
                        "title": f"{heading.group(1).strip() if heading else name} - {name} 文档",
                        "text": text,
                        "source": f"{name}=={row['version']}:{row['file']}",
                        "family": "tech_doc",
                    }
                )
                page = []
        if page and docs and docs[-1]["source"].startswith(f"{name}=="):
            docs[-1]["text"] += "\n\n" + "\n\n".join(page)  # a short last part stays with the page before
    return docs


def _sample(rng: random.Random, docs: list[dict], k: int) -> list[dict]:
    """``k`` of ``docs`` (all if fewer), in their order."""
    return [docs[i] for i in sorted(rng.sample(range(len(docs)), min(k, len(docs))))]


def _qa_block(row: dict, style: int) -> str:
    if style == 0:
        return f"问：{row['question']}\n答：{row['answer']}"
    if style == 1:
        return f"Q：{row['question']}\n\nA：{row['answer']}"
    return f"{row['question']}\n\n{row['answer']}"


def qa_documents(rng: random.Random) -> list[dict]:
    """One page per question; questions of one chapter joined until a page holds QA_MIN_CHARS."""
    rows = _rows("qa.jsonl")
    docs, page = [], []
    for i, row in enumerate(rows):
        page.append(row)
        last = i == len(rows) - 1 or rows[i + 1]["chapter"] != row["chapter"]
        if sum(len(r["question"]) + len(r["answer"]) for r in page) >= QA_MIN_CHARS or last:
            if docs and sum(len(r["question"]) + len(r["answer"]) for r in page) < PAGE_MIN_CHARS:
                docs[-1]["text"] += "\n\n" + "\n\n".join(_qa_block(r, rng.randrange(3)) for r in page)
                page = []
                continue  # a chapter's short last question goes with the page before
            style = rng.randrange(3)
            head = [f"Debian 常见问题：{row['chapter']}", ""] if rng.random() < 0.5 else []
            docs.append(
                {
                    "title": page[0]["question"],
                    "text": "\n".join(head) + "\n\n".join(_qa_block(r, style) for r in page),
                    "source": _source("qa"),
                    "family": "qa",
                }
            )
            page = []
    return docs


def _clauses(lines: list[str]) -> list[str]:
    return [s for line in lines for s in re.split(r"(?<=[，。？！；：])", line) if s.strip()]


def poetry_documents(rng: random.Random) -> list[dict]:
    poems = _rows("poems.jsonl")
    docs, i = [], 0
    while i < len(poems):
        n = rng.randint(*POEMS_PER_PAGE)
        while i + n < len(poems) and sum(len("".join(p["lines"])) for p in poems[i : i + n]) < PAGE_MIN_CHARS:
            n += 1
        if sum(len("".join(p["lines"])) for p in poems[i + n :]) < PAGE_MIN_CHARS:
            n = len(poems) - i  # a short remainder goes on this page
        page, i = poems[i : i + n], i + n
        layout = rng.randrange(3)
        body: list[str] = []
        for p in page:
            lines = _clauses(p["lines"]) if layout == 2 else p["lines"]
            if layout == 1:
                body += [f"{p['title']}　{p['author']}"] + lines + [""]
            else:
                body += [p["title"], f"作者：{p['author']}", ""] + lines + [""]
        name = "唐诗三百首" if page[0]["collection"] == "tang300" else "宋诗选"
        docs.append(
            {
                "title": f"{name}（{page[0]['title']}等{len(page)}首）",
                "text": "\n".join([f"{name}选读", ""] + body).strip(),
                "source": _source("poetry"),
                "family": "poetry",
            }
        )
    return docs


def _split_sayings(rng: random.Random) -> tuple[dict[str, list[dict]], list[dict]]:
    """(list sources -> their sayings, the others for the forum), each in file order."""
    lists: dict[str, list[dict]] = {k: [] for k in LIST_SOURCES}
    rest = []
    for row in _rows("sayings.jsonl"):
        key = next((k for k in LIST_SOURCES if k in row["source"]), None)
        (lists[key] if key and len(row["text"]) <= 120 else rest).append(row)
    return lists, rest


MARKERS = (lambda i: f"{i}. ", lambda i: f"{i}、", lambda i: f"（{i}）", lambda i: "- ")


def list_documents(rng: random.Random) -> list[dict]:
    lists, _ = _split_sayings(rng)
    docs = []
    for key, rows in lists.items():
        i = 0
        while i < len(rows):
            n = rng.randint(*LIST_ITEMS)
            while i + n < len(rows) and sum(len(r["text"]) for r in rows[i : i + n]) < PAGE_MIN_CHARS:
                n += 1
            if sum(len(r["text"]) for r in rows[i + n :]) < PAGE_MIN_CHARS:
                n = len(rows) - i  # a short remainder goes on this page
            page, i = rows[i : i + n], i + n
            mark = rng.choice(MARKERS)
            items = [mark(k) + r["text"].replace("\n", "") for k, r in enumerate(page, 1)]
            title = f"{key}精选{len(page)}则"
            intro = [f"{title}（第{len(docs) + 1}期）", ""] if rng.random() < 0.5 else []
            docs.append({"title": title, "text": "\n".join(intro + items), "source": _source("list"), "family": "list"})
    return _sample(rng, docs, LIST_PAGES)


HANDLE_STEMS = ("书虫", "晚风", "山野闲人", "老李", "kiwi", "青山", "夜读人", "小桥流水", "北冥有鱼", "阿德")
THREAD_TITLES = ("分享几句喜欢的话", "读书摘抄", "今天读到的一句话", "大家最近在读什么？", "每日一句")


def _user(rng: random.Random) -> str:
    return f"{rng.choice(HANDLE_STEMS)}{rng.randrange(10, 999)}"


def _stamp(rng: random.Random) -> str:
    day = f"20{rng.randrange(10, 24)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
    return f"{day} {rng.randrange(24):02d}:{rng.randrange(60):02d}"


def forum_documents(rng: random.Random) -> list[dict]:
    _, rows = _split_sayings(rng)
    openers = [r for r in rows if len(r["text"]) > REPLY_MAX_CHARS]
    replies = [r for r in rows if len(r["text"]) <= REPLY_MAX_CHARS]
    docs, i = [], 0
    while i + REPLIES[1] < len(replies):
        n = rng.randint(*REPLIES)
        while i + n < len(replies) and sum(len(r["text"]) for r in replies[i : i + n]) < PAGE_MIN_CHARS:
            n += 1
        opener = [openers[len(docs)]] if len(docs) < len(openers) and rng.random() < 0.5 else []
        posts, i = opener + replies[i : i + n], i + n
        layout = rng.randrange(3)
        users = [_user(rng) for _ in range(rng.randint(2, 5))]
        signature = {u: rng.random() < 0.3 for u in users}
        title = rng.choice(THREAD_TITLES)
        lines = [f"主题：{title}", ""] if rng.random() < 0.5 else []
        for floor, post in enumerate(posts, 1):
            user = users[0] if floor == 1 else rng.choice(users)
            text = post["text"] + (f"\n——{post['source']}" if rng.random() < 0.5 else "")
            if layout == 0:
                lines.append(f"{'楼主' if floor == 1 else f'{floor}楼'} {user}")
            elif layout == 1:
                lines.append(f"{user} 发表于 {_stamp(rng)}")
            else:
                lines.append(f"#{floor} {user}：")
            if floor > 2 and rng.random() < 0.3:
                quoted = rng.randrange(1, floor)
                lines += [f"引用 {quoted}楼 的发言：", "> " + posts[quoted - 1]["text"].split("\n")[0]]
            lines.append(text)
            if signature[user]:
                lines += ["----", f"签名：{user}的读书笔记"]
            lines.append("")
        docs.append({"title": title, "text": "\n".join(lines).strip(), "source": _source("forum"), "family": "forum"})
    return _sample(rng, docs, FORUM_THREADS)


GENRES = {
    "tech_doc": tech_doc_documents,
    "qa": qa_documents,
    "poetry": poetry_documents,
    "list": list_documents,
    "forum": forum_documents,
}
