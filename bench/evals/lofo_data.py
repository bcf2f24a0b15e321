"""What the leave-one-family-out bench (``bench.evals.lofo``) feeds the chain: the seed's spam file
less one family, fresh pages of every seed family, and one evaluation crawl made of every set.

A seed record's family is the middle of its id: ``demo.seed.build.spam_records`` names each record
``{label}-{kind}-{i:05d}``, and a spam record's kind is its family of ``demo.seed.spam.FAMILIES``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SEED_SET = "seed"  # the set name of the held-out seed pages in the evaluation crawl


def seed_family(record: dict) -> str | None:
    """The spam family of a seed record (``spam-local_seo-00012`` -> ``local_seo``); None for ham."""
    if record.get("label") != "spam":
        return None
    label, _, rest = record["id"].partition("-")
    family, _, number = rest.rpartition("-")
    if label != "spam" or not family or not number.isdigit():
        raise ValueError(f"seed spam record id {record['id']!r} is not spam-FAMILY-NUMBER")
    return family


def seed_families(lines: list[str]) -> dict[str, int]:
    """family -> records, over the spam records of spam.jsonl's lines."""
    out: dict[str, int] = {}
    for line in lines:
        family = seed_family(json.loads(line))
        if family:
            out[family] = out.get(family, 0) + 1
    return dict(sorted(out.items()))


def hold_out(lines: list[str], family: str) -> list[str]:
    """spam.jsonl's lines less the records of ``family``, every other line byte for byte, in order."""
    kept = [line for line in lines if seed_family(json.loads(line)) != family]
    if len(kept) == len(lines):
        raise ValueError(f"no seed record of family {family!r}")
    return kept


def page_body(text: str) -> str:
    """A rendered seed page without the byline ``demo.seed.pages.render_page`` may add: its title
    and paragraphs joined by newlines, what ``demo.seed.build`` calls a page's content."""
    parts = text.split("\n\n")
    return "\n".join([parts[0], *parts[2:]]) if len(parts) > 2 else text


def heldout_pages(families: list[str], per_family: int, seed: int, training_texts: list[str]) -> list[dict]:
    """``per_family`` fresh spam pages of each seed family, from the seed's own generator and its
    source pools (``load_sources(seed)``: the same held-aside text the seed's spam was cut from),
    with an RNG seeded ``{seed}:lofo:{family}`` instead of the seed's ``{seed}:seed:spam.jsonl``.
    No page has the title and paragraphs of a training page (``training_texts``) or of another."""
    from demo.seed.build import _fresh
    from demo.seed.pages import load_sources
    from demo.seed.spam import FAMILIES

    src = load_sources(seed, [])  # the reference feeds ham only
    seen = {page_body(t) for t in training_texts}
    out = []
    for family in families:
        make = FAMILIES[family][1]
        rng = random.Random(f"{seed}:lofo:{family}")
        out += [
            {"id": f"heldout-{family}-{i:04d}", "text": _fresh(make, rng, src, seen), "label": "spam", "family": family}
            for i in range(per_family)
        ]
    return out


def set_name(path: str | Path) -> str:
    """An evaluation set's name: its folder (``data/ood_blind/ood.jsonl`` -> ``ood_blind``)."""
    return Path(path).parent.name


def merge_sets(sets: dict[str, list[dict]]) -> list[dict]:
    """One evaluation crawl from named sets of labelled records (``id``, ``text``, ``label``,
    ``family``): ids become ``{set}:{id}``, families ``{set}/{family}`` (the same family name in two
    sets is two families), each record keeps its ``source`` and gains ``set``. An id twice in
    one set is refused."""
    out = []
    for name, records in sets.items():
        if not name or any(c in name for c in ":/"):
            raise ValueError(f"set name {name!r}: no ':' or '/'")
        ids = [r["id"] for r in records]
        if len(set(ids)) != len(ids):
            raise ValueError(f"set {name}: {len(ids) - len(set(ids))} repeated ids")
        for r in records:
            row = {"id": f"{name}:{r['id']}", "text": r["text"], "label": r["label"]}
            row |= {"family": f"{name}/{r['family']}", "set": name}
            if r.get("source"):
                row["source"] = r["source"]
            out.append(row)
    return out


def read_jsonl(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
