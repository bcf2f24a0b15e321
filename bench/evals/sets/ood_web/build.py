"""Assemble the third out-of-domain set (web genres) and write ``ood.jsonl`` and ``MANIFEST.json``.

Records as ``bench.evals.sets.ood.build`` and ``bench.evals.sets.ood_blind.build`` write them: ``id``, ``text``,
``title``, ``source``, ``label`` (always "good": this set measures what the chain wrongly removes,
it brings no new spam family), ``family`` (the genre), ``script``. Ids are
``oodw-good-{family}-{n:04d}``. The same config gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.evals.sets.ood_blind.build import good_documents, with_ids, write_set
from bench.evals.sets.ood_web import good
from bench.evals.sets.ood_web.extract import DEBS, TECH_DOCS


@dataclass(frozen=True)
class WebConfig:
    seed: int = 0
    traditional_share: float = 0.25  # of each genre's pages, converted with OpenCC s2t
    good_limit: int | None = None  # pages per genre at most (None: all the sample gives); tests use a few


def web_documents(cfg: WebConfig = WebConfig()) -> list[dict]:
    """The records in file order (shuffled, so genres interleave as a crawl's files do)."""
    rng = random.Random(cfg.seed)
    records = with_ids([{**d, "label": "good"} for d in good_documents(rng, cfg, good.GENRES)], "oodw")
    rng.shuffle(records)
    return records


def sources() -> list[dict]:
    """Every shipped file with the packages it was cut from, their licences and its sha256."""
    out = []
    for name, families in (
        ("tech_doc.jsonl", "tech_doc"),
        ("qa.jsonl", "qa"),
        ("poems.jsonl", "poetry"),
        ("sayings.jsonl", "list, forum"),
    ):
        path = good.DATA / name
        entry = {"family": families, "file": f"bench/evals/sets/ood_web/data/{name}"}
        if name == "tech_doc.jsonl":
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
            entry["packages"] = [
                {"package": r["package"], "version": r["version"], "licence": r["licence"], "file": r["file"]}
                for r in rows
            ]
            entry["wheels_sha256"] = {w: sha for w, (sha, _, _) in TECH_DOCS.items()}
        else:
            dist, ver, licence, _ = good.SOURCES[families.split(",")[0]]
            deb = f"{dist}_{ver}_all.deb"
            entry.update({"package": f"{dist} (Debian)", "version": ver, "licence": licence, "deb_sha256": DEBS[deb]})
        entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        out.append(entry)
    out.append(
        {
            "family": "forum",
            "package": "zhcorpus bench.evals.sets.ood_web",
            "licence": "the project's own",
            "what": "thread layout (users, floors, time stamps, quotes, signatures, titles) around real entries",
        }
    )
    return out


def write(output: Path, cfg: WebConfig = WebConfig()) -> dict:
    """Write ``ood.jsonl`` and ``MANIFEST.json`` under ``output``; returns the manifest."""
    return write_set(output, "ood_web", web_documents(cfg), asdict(cfg), sources())
