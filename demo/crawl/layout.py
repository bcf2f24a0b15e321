"""The pages split into output files (``Chunk``), with the broken records planted and every page
given its URL, id and crawl time in file order."""

from __future__ import annotations

import math
import random
import uuid
from dataclasses import dataclass
from datetime import timedelta

from .broken import data_dump_rows, plant_jsonl, plant_warc
from .model import CRAWL_START, ID_NAMESPACE, MIB, SITES, Doc

DOCS_PER_FILE = {"warc": 500, "wet": 800, "jsonl": 1000}
MIN_FILES = {"warc": 3, "wet": 1, "jsonl": 2}  # WARC: plain+broken, malformed .gz, truncated .gz


@dataclass
class Chunk:
    """The pages of one output file, and how the file may be stored."""

    stem: str  # path under the output dir, without ".gz"
    fmt: str
    docs: list[Doc]
    compress: str  # "always", "never" or "prefer" (left plain only to reach min_mb)
    truncate_last: bool = False


def _split(docs: list[Doc], fmt: str) -> list[list[Doc]]:
    n = max(MIN_FILES[fmt], math.ceil(len(docs) / DOCS_PER_FILE[fmt]))
    return [docs[i * len(docs) // n : (i + 1) * len(docs) // n] for i in range(n)]


def layout_files(docs: list[Doc], seed: int, big_line_mb: float) -> list[Chunk]:
    """Split the pages into files, plant the broken records, and give every page its URL, id and
    crawl time in file order. The first WARC and JSONL files stay plain, the second are always
    gzipped; the last WARC file is gzipped so that its last member can be truncated."""
    rng = random.Random(f"{seed}:layout")
    by_fmt = {fmt: _split([d for d in docs if d.fmt == fmt], fmt) for fmt in MIN_FILES}
    plant_warc(by_fmt["warc"], rng)
    plant_jsonl(by_fmt["jsonl"][0], rng)
    chunks = []
    for i, part in enumerate(by_fmt["warc"]):
        last = i == len(by_fmt["warc"]) - 1
        policy = "never" if i == 0 else "always" if i == 1 or last else "prefer"
        chunks.append(Chunk(f"warc/demo-{i:05d}.warc", "warc", part, policy, truncate_last=last))
    chunks += [Chunk(f"wet/demo-{i:05d}.warc.wet", "wet", part, "always") for i, part in enumerate(by_fmt["wet"])]
    chunks += [
        Chunk(f"jsonl/part-{i:05d}.jsonl", "jsonl", part, "never" if i == 0 else "always" if i == 1 else "prefer")
        for i, part in enumerate(by_fmt["jsonl"])
    ]
    big = Doc(
        "全部A股实时行情数据",
        data_dump_rows(rng, int(big_line_mb * MIB)),
        "web",
        SITES["data"][0],
        kind="big_line",
        fmt="jsonl",
    )
    chunks.append(Chunk("jsonl/part-big.jsonl", "jsonl", [big], "never"))
    _stamp(chunks, seed, rng)
    return chunks


def _stamp(chunks: list[Chunk], seed: int, rng: random.Random) -> None:
    i = 0
    for chunk in chunks:
        for d in chunk.docs:
            i += 1
            d.timestamp = CRAWL_START + timedelta(seconds=7 * i + rng.randrange(7))
            host = f"mirror.{d.site.host}" if d.kind == "exact_duplicate" else d.site.host
            d.url = f"http://{host}/{d.site.section}/{d.timestamp:%Y%m%d}/{i:06d}.html"
            d.doc_id = str(uuid.uuid5(ID_NAMESPACE, f"{seed}|{d.url}"))
            d.file = chunk.stem
