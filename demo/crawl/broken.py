"""The deliberately broken records: which pages are broken where (planted while the pages are
laid out into files), and the damage done to them when they are rendered. Each broken record
carries one ``KINDS`` kind of the "broken" group; the cleaning job must survive every one.
The truncated last gzip member of the last WARC file is cut in ``files``."""

from __future__ import annotations

import json
import random
import re

from .model import SITES, Doc

JSONL_BROKEN = (
    "invalid_json",
    "missing_text",
    "empty_text",
    "lone_surrogate",
    "nul_chars",
    "nul_chars",
)  # planted in the first JSONL file


def _breakable(docs: list[Doc], k: int, rng: random.Random) -> list[Doc]:
    pool = [d for d in docs if d.kind == "clean" and not d.has_copies]
    if len(pool) < k:
        raise ValueError("too few clean pages to break in one file; raise max_docs")
    return rng.sample(pool, k)


def plant_warc(chunks: list[list[Doc]], rng: random.Random) -> None:
    """File 0 (plain): a header line without a colon, NUL bytes, an empty body. File 1: a
    non-numeric Content-Length, random bytes served as text/html. Last file: its last gzip
    member truncated."""
    first, second, last = chunks[0], chunks[1], chunks[-1]
    colonless, nul = _breakable(first, 2, rng)
    colonless.kind, colonless.defect, nul.kind = "malformed_warc_header", "no_colon", "nul_bytes"
    (bad_length,) = _breakable(second, 1, rng)
    bad_length.kind, bad_length.defect = "malformed_warc_header", "bad_length"
    site = SITES["news"][0]
    first.insert(
        rng.randint(0, len(first)), Doc("", [], "web", site, kind="empty_body", fmt="warc", charset="utf8_header")
    )
    second.insert(
        rng.randint(0, len(second)),
        Doc("", [], "web", site, kind="binary_garbage", fmt="warc", charset="binary_garbage"),
    )
    (victim,) = _breakable(last, 1, rng)
    last.remove(victim)
    last.append(victim)
    victim.kind = "truncated_record"


def plant_jsonl(chunk: list[Doc], rng: random.Random) -> None:
    for d, kind in zip(_breakable(chunk, len(JSONL_BROKEN), rng), JSONL_BROKEN):
        d.kind = kind


def data_dump_rows(rng: random.Random, target_bytes: int) -> list[str]:
    """Stock-quote rows whose JSON-escaped text reaches target_bytes (the big_line record)."""
    rows, size = [], 0
    while size < target_bytes:
        row = (
            f"代码{rng.randrange(600000, 605000)} 价格{rng.uniform(2, 200):.2f} "
            f"涨跌{rng.uniform(-10, 10):+.2f}% 成交{rng.randrange(100, 10**6)}手"
        )
        rows.append(row)
        size += len(row.encode("utf-8")) + 2  # + the escaped newline
    return rows


def html_paragraphs(d: Doc) -> list[str]:
    """d's paragraphs, with NUL bytes inserted for a nul_bytes page (seeded by its doc_id)."""
    paras = list(d.paras)
    if d.kind == "nul_bytes":
        prng = random.Random(d.doc_id)
        for _ in range(3):
            i = prng.randrange(len(paras))
            pos = prng.randint(0, len(paras[i]))
            paras[i] = paras[i][:pos] + "\x00" * prng.randint(1, 4) + paras[i][pos:]
    return paras


def damage_warc_record(d: Doc, record: bytes) -> bytes:
    """Hand-made damage on warcio's bytes; the WARC header block comes first in the record."""
    if d.defect == "no_colon":
        return record.replace(b"WARC-Target-URI: ", b"WARC-Target-URI ", 1)
    if d.defect == "bad_length":
        return re.sub(rb"Content-Length: \d+\r\n", b"Content-Length: abc\r\n", record, count=1)
    return record


def json_dumps(d: Doc, obj: dict) -> str:
    """obj as one JSON line, damaged as d's kind asks (JSONL_BROKEN; seeded by its doc_id)."""
    obj, prng, ascii_only = dict(obj), random.Random(d.doc_id), False
    if d.kind == "missing_text":
        del obj["text"]
    elif d.kind == "empty_text":
        obj["text"] = ""
    elif d.kind in ("lone_surrogate", "nul_chars"):
        char, n = ("\ud800", 1) if d.kind == "lone_surrogate" else ("\x00", 3)
        for _ in range(n):
            pos = prng.randint(0, len(obj["text"]))
            obj["text"] = obj["text"][:pos] + char + obj["text"][pos:]
        ascii_only = d.kind == "lone_surrogate"  # "\ud800" escape: valid JSON, invalid Unicode
    line = json.dumps(obj, ensure_ascii=ascii_only)
    if d.kind == "invalid_json":
        line = line[: len(line) // 2]  # cut inside the text string
    return line
