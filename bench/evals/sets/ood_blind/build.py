"""Assemble the blind out-of-domain set and write ``ood.jsonl`` and ``MANIFEST.json``.

Records as ``bench.evals.sets.ood.build`` writes them: ``id``, ``text``, ``title`` (or null), ``source``,
``label`` ("good", "spam" or "chrome"), ``family``, ``script``. Ids are
``oodb-{label}-{family}-{n:04d}``. The same config gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import opencc

from bench.evals.sets.ood.build import counts
from bench.evals.sets.ood_blind import chrome, good, spam

DATA_BUDGET_BYTES = 2 * 2**20  # the brief: the shipped sample stays under 2 MB


@dataclass(frozen=True)
class BlindConfig:
    seed: int = 0
    spam_per_family: int = 100  # the brief: ~80-120 pages per spam family
    chrome_per_kind: int = 17  # six kinds: ~100 chrome-only pages
    traditional_share: float = 0.25  # of each genre's good pages, converted with OpenCC s2t
    good_limit: int | None = None  # pages per genre at most (None: all the sample gives); tests use a few


def good_documents(rng: random.Random, cfg: BlindConfig, genres: dict | None = None) -> list[dict]:
    """Each genre's pages (``genres``: family -> ``make(rng)``, by default this set's), at most
    ``cfg.good_limit`` a genre, a ``cfg.traditional_share`` of each converted with OpenCC s2t.
    Also the third set's (``bench.evals.sets.ood_web``)."""
    s2t = opencc.OpenCC("s2t")
    docs = []
    for genre, make in (good.GENRES if genres is None else genres).items():
        items = make(rng)[: cfg.good_limit]
        traditional = set(rng.sample(range(len(items)), round(cfg.traditional_share * len(items))))
        for i, d in enumerate(items):
            trad = i in traditional
            docs.append(
                {
                    **d,
                    "label": "good",
                    "script": "traditional" if trad else "simplified",
                    "text": s2t.convert(d["text"]) if trad else d["text"],
                    "title": s2t.convert(d["title"]) if trad and d["title"] else d["title"],
                }
            )
    return docs


def blind_documents(cfg: BlindConfig = BlindConfig()) -> list[dict]:
    """The records in file order (shuffled, so genres interleave as a crawl's files do)."""
    rng = random.Random(cfg.seed)
    goods = good_documents(rng, cfg)
    spams = [{**d, "label": "spam", "script": "simplified"} for d in spam.spam_documents(rng, cfg.spam_per_family)]
    chromes = [
        {**d, "label": "chrome", "script": "simplified"} for d in chrome.chrome_documents(rng, cfg.chrome_per_kind)
    ]
    records = with_ids(goods + spams + chromes, "oodb")
    rng.shuffle(records)
    return records


def with_ids(docs: list[dict], prefix: str) -> list[dict]:
    """The records' shape: ids ``{prefix}-{label}-{family}-{n:04d}``, numbered per (label, family)."""
    records, seen = [], Counter()
    for d in docs:
        key = (d["label"], d["family"])
        seen[key] += 1
        records.append(
            {
                "id": f"{prefix}-{d['label']}-{d['family']}-{seen[key]:04d}",
                "text": d["text"],
                "title": d["title"],
                "source": d["source"],
                "label": d["label"],
                "family": d["family"],
                "script": d["script"],
            }
        )
    return records


def sources() -> list[dict]:
    """Every file the builder reads, with its origin, licence and sha256 (data/LICENSES.md)."""
    out = []
    for family, (dist, ver, licence, name) in good.SOURCES.items():
        path = good.DATA / name
        out.append(
            {
                "family": family,
                "package": dist,
                "version": ver,
                "licence": licence,
                "file": f"bench/evals/sets/ood_blind/data/{name}",
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            }
        )
    out.append(
        {
            "family": "spam, chrome",
            "package": "zhcorpus bench.evals.sets.ood_blind",
            "licence": "the project's own",
            "what": "generators written for this set, without any keyword list, demo or seed template",
        }
    )
    return out


def write(output: Path, cfg: BlindConfig = BlindConfig()) -> dict:
    """Write ``ood.jsonl`` and ``MANIFEST.json`` under ``output``; returns the manifest."""
    return write_set(output, "ood_blind", blind_documents(cfg), asdict(cfg), sources())


def write_set(output: Path, name: str, records: list[dict], config: dict, sources: list[dict]) -> dict:
    """``ood.jsonl`` (one JSON object a line) and ``MANIFEST.json`` under ``output``; the manifest."""
    data = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records).encode("utf-8")
    output.mkdir(parents=True, exist_ok=True)
    (output / "ood.jsonl").write_bytes(data)
    man = {
        "name": name,
        "file": "ood.jsonl",
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "records": len(records),
        "counts": counts(records),
        "config": config,
        "sources": sources,
    }
    (output / "MANIFEST.json").write_text(json.dumps(man, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return man
