"""The two corpora the seed samples rather than writes: the raw crawl (the quality model's
negatives, GPT-3 App. A) and the reference corpus of good text (its positives, and part of the spam
model's ham).

Raw crawl: every record of a crawl directory as the pipeline's readers extract it
(``etl.read.records.parse_file``: WARC responses through HTML extraction, WET conversions, JSONL lines),
before any cleaning rule: breadcrumbs, bylines, spam, English and short pages included. Records the
readers reject (no text) are left out: they never reach a classifier. The readers are pure Python
(no Spark); going through them, rather than a second parser here, is what makes the sample the text
the chain's classifiers see.

Reference: a JSONL file of ``{"id", "text", "source", "genre"}`` (``python -m demo.reference
--output data/reference`` writes one), or, without a file, ``demo.reference.reference_documents()``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

RAW_FORMATS = ("warc", "wet", "jsonl")


def raw_crawl_records(crawl_dir: str | Path) -> list[dict]:
    """{"doc_id", "format", "text"} of every readable record under crawl_dir, sorted by doc_id
    (the order of the files on disk does not matter)."""
    from etl.read.records import ReaderConfig, detect_format, parse_file

    root = Path(crawl_dir)
    paths = sorted(p for p in root.rglob("*") if p.is_file() and detect_format(str(p)))
    if not paths:
        raise FileNotFoundError(f"no crawl files (WARC, WET, JSONL) under {root}: run python -m demo.crawl first")
    rows = []
    for path in paths:
        for row in parse_file(str(path), path.read_bytes(), ReaderConfig()):
            if row["kind"] == "record" and row["reason"] is None and (row["text"] or "").strip():
                rows.append({"doc_id": row["doc_id"], "format": row["format"], "text": row["text"]})
    return sorted(rows, key=lambda r: r["doc_id"])


def crawl_fingerprint(crawl_dir: str | Path) -> dict:
    """What SEED.json records of the crawl: its directory, generator seed and MANIFEST.json's sha256."""
    manifest = Path(crawl_dir) / "MANIFEST.json"
    if not manifest.is_file():
        return {"path": str(crawl_dir), "manifest_sha256": None}
    data = manifest.read_bytes()
    return {
        "path": str(crawl_dir),
        "seed": json.loads(data).get("seed"),
        "manifest_sha256": hashlib.sha256(data).hexdigest(),
    }


def load_reference(path: str | Path | None) -> tuple[list[dict], dict]:
    """(documents, what SEED.json records of them). Documents need ``text``; ``genre`` defaults
    to ``source`` or "unknown"; empty texts are skipped."""
    if path is None:
        from demo.reference import reference_documents

        docs, where = reference_documents(), {"path": "demo.reference.reference_documents()"}
    else:
        data = Path(path).read_bytes()
        docs = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
        where = {"path": str(path), "sha256": hashlib.sha256(data).hexdigest()}
    docs = [
        {"id": d.get("id", ""), "text": d["text"], "genre": d.get("genre") or d.get("source") or "unknown"}
        for d in docs
        if (d.get("text") or "").strip()
    ]
    if not docs:
        raise ValueError(f"reference corpus {where['path']} has no documents with text")
    genres: dict[str, int] = {}
    for d in docs:
        genres[d["genre"]] = genres.get(d["genre"], 0) + 1
    return docs, {**where, "documents": len(docs), "genres": dict(sorted(genres.items()))}
