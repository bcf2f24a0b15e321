"""Good long-form pages rendered from the shipped sample (``data/``, see data/LICENSES.md): one
function per genre, each returning dicts with ``text``, ``title``, ``source``, ``family``.

Every source item is used once, so no two good pages share content (a dedup stage must not see
near-duplicates that the set itself made). Layouts vary per page the way different sites set the
same material: dictionary pages with ①-style or "1." senses, sayings with ``──`` or ``——``, poems
one clause a line.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

DATA = Path(__file__).parent / "data"
SOURCES = {  # family -> (distribution, version, licence, shipped file)
    "dictionary": ("jionlp", "1.5.31", "Apache-2.0", "char_dictionary.tsv"),
    "sayings": ("jionlp", "1.5.31", "Apache-2.0", "xiehouyu.tsv"),
    "qa": ("jionlp", "1.5.31", "Apache-2.0", "qa.jsonl"),
    "poetry": ("sanjiu-apk-builder", "0.1.1", "MIT", "poems.jsonl"),
}
CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮⑯⑰⑱⑲⑳"
SAYINGS_PER_PAGE = 35
QA_MIN_CHARS = 300  # questions are joined on one page until it holds this many characters
POEMS_PER_PAGE = (4, 6)


def _source(family: str) -> str:
    dist, ver, _, name = SOURCES[family]
    return f"{dist}=={ver}:{name}"


def _read(family: str) -> str:
    return (DATA / SOURCES[family][3]).read_text(encoding="utf-8")


def senses(definition: str) -> list[tuple[str, list[str]]]:
    """``"[diū]1.遗失。2.扔：~果皮。[bàn]1.粪肥。"`` -> [("diū", ["遗失。", "扔：～果皮。"]), ("bàn", [...])]."""
    out = []
    for reading, body in re.findall(r"\[([^\]]*)\]([^\[]*)", definition.replace("~", "～")):
        parts = [p.strip() for p in re.split(r"(?:^|(?<=[。）)；”]))\s*\d{1,2}\.", body) if p.strip()]
        out.append((reading, parts or [body.strip()]))
    return out


def _entry(char: str, definition: str, layout: int) -> list[str]:
    lines = []
    for reading, parts in senses(definition):
        if layout == 0:
            lines += [f"【{char}】 {reading}"] + [f"{i}. {p}" for i, p in enumerate(parts, 1)]
        elif layout == 1:
            lines.append(f"{char}（{reading}）　" + "".join(f"{CIRCLED[min(i, 19)]}{p}" for i, p in enumerate(parts)))
        else:
            lines += [f"{char}", f"拼音：{reading}", "基本解释："] + [f"（{i}）{p}" for i, p in enumerate(parts, 1)]
    return lines


def dictionary_documents(rng: random.Random) -> list[dict]:
    """One page per run of entries of a radical, as the sample was cut (extract.CHARS_PER_PAGE)."""
    pages: list[list[tuple[str, str, str]]] = []
    for line in _read("dictionary").splitlines():
        char, radical, definition = line.split("\t")
        if not pages or pages[-1][0][1] != radical or len(pages[-1]) == 14:
            pages.append([])
        pages[-1].append((char, radical, definition))
    docs, seen = [], {}
    for rows in pages:
        radical = rows[0][1]
        seen[radical] = seen.get(radical, 0) + 1
        layout = rng.randrange(3)
        head = [f"{radical}部 第{seen[radical]}页（本页{len(rows)}字，按笔画排列）", ""]
        body = [line for char, _, d in rows for line in _entry(char, d, layout) + ([""] if layout != 1 else [])]
        docs.append(
            {
                "title": f"部首“{radical}”的汉字 - 在线字典",
                "text": "\n".join(head + body).strip(),
                "source": _source("dictionary"),
                "family": "dictionary",
            }
        )
    return docs


SAYING_INTROS = (
    "歇后语是汉语里一种短小、风趣、形象的语句，由前后两部分组成：前一部分像谜面，后一部分像谜底。",
    "下面整理了一组常见的歇后语，前半句打比方，后半句点明意思，读来朗朗上口。",
    "歇后语来自群众的日常口语，说的时候往往只说前半截，听的人自然会意。本页按拼音顺序排列。",
    "这些歇后语多用于口头表达和写作润色，适合语文学习时积累。",
    None,
)
SAYING_DASHES = ("──", "——", "—", " - ")


def sayings_documents(rng: random.Random) -> list[dict]:
    rows = [line.split("\t") for line in _read("sayings").splitlines()]
    docs = []
    for k in range(0, len(rows), SAYINGS_PER_PAGE):
        page = rows[k : k + SAYINGS_PER_PAGE]
        dash, intro = rng.choice(SAYING_DASHES), rng.choice(SAYING_INTROS)
        numbered = rng.random() < 0.4
        lines = [f"{f'{i}. ' if numbered else ''}{a}{dash}{b}" for i, (a, b) in enumerate(page, 1)]
        head = [f"歇后语大全（{page[0][0][0]}—{page[-1][0][0]}）" + (f"：{intro}" if intro else ""), ""]
        docs.append(
            {
                "title": f"歇后语大全 第{k // SAYINGS_PER_PAGE + 1}辑",
                "text": "\n".join(head + lines),
                "source": _source("sayings"),
                "family": "sayings",
            }
        )
    return docs


def _qa_block(row: dict, style: int) -> str:
    kind = row["type"].replace("【", "").replace("】", " ").strip()
    if style == 0:
        return f"问题（{kind}）：\n{row['question']}\n\n参考答案：\n{row['answer']}"
    return f"【{kind}】{row['question']}\n\n答：{row['answer']}"


def qa_documents(rng: random.Random) -> list[dict]:
    """Questions with reference answers, joined in file order until a page holds QA_MIN_CHARS."""
    rows = [json.loads(line) for line in _read("qa").splitlines() if line.strip()]
    docs, page = [], []
    for row in rows:
        page.append(row)
        if sum(len(r["question"]) + len(r["answer"]) for r in page) >= QA_MIN_CHARS or row is rows[-1]:
            style = rng.randrange(2)
            text = "\n\n────────\n\n".join(_qa_block(r, style) for r in page)
            title = re.split(r"[\n？?。]", page[0]["question"])[0][:30]
            docs.append({"title": title, "text": text, "source": _source("qa"), "family": "qa"})
            page = []
    return docs


def _poem_lines(text: str, by_clause: bool) -> list[str]:
    pattern = r"(?<=[，。？！；])" if by_clause else r"(?<=[。？！；])"
    return [s.strip() for s in re.split(pattern, text.replace("\n", "")) if s.strip()]


def poetry_documents(rng: random.Random) -> list[dict]:
    """Anthology pages of POEMS_PER_PAGE poems of one topic, one line per sentence or clause."""
    by_topic: dict[str, list[dict]] = {}
    for line in _read("poetry").splitlines():
        p = json.loads(line)
        by_topic.setdefault(p["topic"], []).append(p)
    docs = []
    for topic, poems in by_topic.items():
        i = 0
        while i < len(poems):
            n = rng.randint(*POEMS_PER_PAGE)
            page, i = poems[i : i + n], i + n
            by_clause = rng.random() < 0.5
            body = []
            for p in page:
                body += [f"《{p['title']}》", p["author"] or "（今人新作）"] + _poem_lines(p["text"], by_clause) + [""]
            docs.append(
                {
                    "title": f"古诗词选读·{topic}",
                    "text": "\n".join([f"{topic}主题诗词", ""] + body).strip(),
                    "source": _source("poetry"),
                    "family": "poetry",
                }
            )
    return docs


GENRES = {
    "dictionary": dictionary_documents,
    "sayings": sayings_documents,
    "qa": qa_documents,
    "poetry": poetry_documents,
}
