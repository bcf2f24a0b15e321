"""Classifier seed data: byte-identical per seed, exact counts per label and kind, no repeated
text, spam from the seed's own generator (nothing of the demo crawl's templates or the ad-keyword
list), ham with every reference genre, and the quality file built the GPT-3 way (hq = reference,
lq = raw crawl records exactly as the readers extract them)."""

from __future__ import annotations

import ast
import hashlib
import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from demo.crawl import AD_KEYWORDS_FILE, SENSITIVE_DIR, TermMatcher, build_demo_crawl, inject, read_word_lists
from demo.crawl.plan import MIN_CHARS
from demo.seed import __main__ as seed_cli
from demo.seed import build_seed_data, spam_words
from demo.seed.build import apportion
from demo.seed.pages import window
from demo.seed.raw import load_reference, raw_crawl_records
from demo.seed.spam import FAMILIES
from demo.seed.spam_parts import number
from demo.sources import news_pages

N = 100
SEED_DIR = Path(__file__).resolve().parents[1] / "demo" / "seed"
GENRES = ("news", "statute", "glossary")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path]:
    """A small demo crawl (400 source pages) and a reference JSONL of three genres."""
    root = tmp_path_factory.mktemp("inputs")
    build_demo_crawl(root / "crawl", max_docs=400, min_mb=0, big_line_mb=0.05)
    pages = [p for p in news_pages() if len(p[1]) >= 2][-300:]
    lines = [
        json.dumps(
            {"id": f"r{i}", "text": "\n".join([t, *paras]), "source": "test", "genre": GENRES[i % 3]},
            ensure_ascii=False,
        )
        for i, (t, paras, _) in enumerate(pages)
    ]
    (root / "reference.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "crawl", root / "reference.jsonl"


def _build(out: Path, inputs, seed: int = 7, n: int = N) -> dict:
    return build_seed_data(out, seed=seed, n_per_label=n, crawl_dir=inputs[0], reference=inputs[1])


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory, inputs) -> Path:
    out = tmp_path_factory.mktemp("seed") / "a"
    _build(out, inputs)
    return out


def _records(root: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (root / name).read_text(encoding="utf-8").splitlines()]


def _tree(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())}


def _kind(record: dict) -> str:
    return record["id"].split("-")[1]


def test_same_seed_gives_identical_bytes(seed_dir, inputs, tmp_path):
    _build(tmp_path / "b", inputs)
    first, second = _tree(seed_dir), _tree(tmp_path / "b")
    assert sorted(first) == ["SEED.json", "quality.jsonl", "spam.jsonl"]
    assert [name for name in first if first[name] != second[name]] == []


def test_other_seed_gives_other_data(seed_dir, inputs, tmp_path):
    _build(tmp_path / "c", inputs, seed=8)
    for name in ("spam.jsonl", "quality.jsonl"):
        assert (tmp_path / "c" / name).read_bytes() != (seed_dir / name).read_bytes()


def test_each_label_and_family_has_its_count(seed_dir):
    spam = _records(seed_dir, "spam.jsonl")
    assert all(set(r) == {"text", "label", "id"} for r in spam)
    assert Counter(r["label"] for r in spam) == {"spam": N, "ham": N}
    # shares x 100, hand-apportioned: every family is there in its share
    assert Counter(_kind(r) for r in spam if r["label"] == "spam") == {
        "local_seo": 14,
        "contact_ad": 12,
        "get_rich": 10,
        "fake_medicine": 10,
        "gambling": 10,
        "loan": 10,
        "keyword_list": 8,
        "link_farm": 8,
        "fragment_soup": 10,
        "planted": 8,
    }
    assert Counter(_kind(r) for r in spam if r["label"] == "ham") == {
        "reference": 30,
        "listed": 10,
        "news": 20,
        "reviews": 25,
        "forum": 15,
    }
    assert Counter(r["label"] for r in _records(seed_dir, "quality.jsonl")) == {"hq": N, "lq": N}


def test_no_text_or_id_repeats_within_a_file(seed_dir):
    for name in ("spam.jsonl", "quality.jsonl"):
        records = _records(seed_dir, name)
        assert len({r["text"] for r in records}) == len(records) == 2 * N
        assert len({r["id"] for r in records}) == len(records)
        assert all(r["id"].startswith(r["label"] + "-") for r in records)


def test_written_texts_reach_the_length_floor(seed_dir):
    short = [r["id"] for r in _records(seed_dir, "spam.jsonl") if sum(not c.isspace() for c in r["text"]) < MIN_CHARS]
    assert short == []


def test_seed_json_matches_the_files(seed_dir, inputs):
    info = json.loads((seed_dir / "SEED.json").read_text(encoding="utf-8"))
    assert info["seed"] == 7 and info["n_per_label"] == N
    for entry in info["files"]:
        data = (seed_dir / entry["path"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["bytes"] == len(data)
        kinds = Counter(r["id"].rsplit("-", 1)[0] for r in _records(seed_dir, entry["path"]))
        assert kinds == {
            f"{label}-{kind}": n for label, per_kind in entry["kinds"].items() for kind, n in per_kind.items() if n
        }
    reference = next(s for s in info["sources"] if s["path"] == str(inputs[1]))
    assert reference["sha256"] == hashlib.sha256(inputs[1].read_bytes()).hexdigest()
    assert reference["genres"] == dict.fromkeys(sorted(GENRES), 100)
    crawl = next(s for s in info["sources"] if s["path"] == str(inputs[0]))
    assert crawl["records"] == len(raw_crawl_records(inputs[0]))


def test_seed_shares_no_template_or_word_list_with_the_crawl():
    """No module of demo.seed imports demo.crawl.inject or the ad-keyword list."""
    for path in sorted(SEED_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert not {"demo.crawl.inject", "demo.crawl.words"} & imported, path.name
        assert not {"AD_KEYWORDS_FILE", "NAV_LINES", "AD_TEMPLATES", "INJECTORS"} & names, path.name
        assert not any(n.startswith("SPAM_") and hasattr(inject, n) for n in names), path.name


def test_every_word_pool_of_the_data_file_is_a_name_of_spam_words():
    """The pools live in demo/seed/data/spam_words.toml; the module names each one, no more, no less,
    as a tuple of non-empty words (or a str of single characters)."""
    pools = spam_words.load_pools()
    names = {n for n in vars(spam_words) if n.isupper() and not n.startswith("_")} - {"WORDS_FILE"}
    assert names == set(pools) and len(pools) > 30
    for name, pool in pools.items():
        assert getattr(spam_words, name) == pool and isinstance(pool, str | tuple) and all(pool), name


def test_spam_holds_no_crawl_template_text_and_no_ad_keyword(seed_dir):
    spam = [r["text"] for r in _records(seed_dir, "spam.jsonl") if r["label"] == "spam"]
    crawl_words = [s for s, _ in inject.SPAM_SERVICES] + list(inject.NAV_LINES) + ["【推广】", "名额有限，详见官网"]
    assert [(w, t[:40]) for t in spam for w in crawl_words if w in t] == []
    ads = TermMatcher(read_word_lists(AD_KEYWORDS_FILE, SENSITIVE_DIR).ad_keywords)
    assert [(sorted(ads.hits(t)), t[:40]) for t in spam if ads.hits(t)] == []


def test_quality_file_is_reference_against_raw_crawl(seed_dir, inputs):
    raw = {r["text"] for r in raw_crawl_records(inputs[0])}
    docs, _ = load_reference(inputs[1])
    records = _records(seed_dir, "quality.jsonl")
    lq = [r for r in records if r["label"] == "lq"]
    assert [r["id"] for r in lq if r["text"] not in raw] == []  # verbatim, as the readers read it
    assert {_kind(r) for r in lq} <= {"warc", "wet", "jsonl"}
    bodies = {d["text"].split("\n")[-1] for d in docs}  # a reference document's last paragraph
    hq = [r for r in records if r["label"] == "hq"]
    assert [r["id"] for r in hq if r["text"].split("\n")[-1] not in bodies] == []
    assert {_kind(r) for r in hq} == set(GENRES)


def test_hq_can_take_a_share_of_crawl_like_pages(inputs, tmp_path):
    """--hq-crawl-like 0.3: 30 of 100 hq records are news windows, review pages and threads in
    the shares .5/.3/.2, the other 70 reference documents; lq is unchanged in size."""
    build_seed_data(tmp_path / "s", seed=7, n_per_label=N, crawl_dir=inputs[0], reference=inputs[1], hq_crawl_like=0.3)
    records = _records(tmp_path / "s", "quality.jsonl")
    hq = Counter(_kind(r) for r in records if r["label"] == "hq")
    assert {k: n for k, n in hq.items() if k.startswith("crawl_")} == {
        "crawl_news": 15,
        "crawl_reviews": 9,
        "crawl_forum": 6,
    }
    assert sum(n for k, n in hq.items() if k in GENRES) == 70
    assert Counter(r["label"] for r in records)["lq"] == N
    info = json.loads((tmp_path / "s" / "SEED.json").read_text(encoding="utf-8"))
    assert info["hq_crawl_like"] == 0.3


def test_ham_has_every_reference_genre_and_reference_text(seed_dir, inputs):
    docs, _ = load_reference(inputs[1])
    ham = [r["text"] for r in _records(seed_dir, "spam.jsonl") if _kind(r) == "reference"]
    assert len(ham) == 30
    # a window's last line is in its document (cut at a sentence end when the window is whole)
    genres = [next((d["genre"] for d in docs if t.split("\n")[-1] in d["text"]), None) for t in ham]
    assert None not in genres and set(genres) == set(GENRES)


def test_number_spellings():
    rng = random.Random(3)
    seen = {number(rng, "13812345678") for _ in range(200)}
    assert {
        "13812345678",
        "138-1234-5678",
        "1381 2345 678",
        "138.123.456.78",
        "１３８１２３４５６７８",
        "幺三八幺二三四五六七八",
    } <= seen


def test_families_shares_sum_to_one():
    assert abs(sum(share for share, _ in FAMILIES.values()) - 1.0) < 1e-9


def test_news_windows_never_reproduce_a_crawl_page_or_its_body():
    rng = random.Random(0)
    for title, paras, _ in news_pages()[:1000]:
        whole = {"\n".join([title, *paras]), "\n".join(paras)}
        windows = {"\n".join(window(rng, (title, paras, "news"))) for _ in range(5)}
        assert windows.isdisjoint(whole), title


def test_apportion_sums_to_n():
    assert apportion(100, {"a": 0.3, "b": 0.25, "c": 0.15, "d": 0.2, "e": 0.1}) == {
        "a": 30,
        "b": 25,
        "c": 15,
        "d": 20,
        "e": 10,
    }
    assert sum(apportion(7, {"a": 1, "b": 1, "c": 1}).values()) == 7


def test_cli_writes_the_files(inputs, tmp_path):
    argv = [
        "--output",
        str(tmp_path / "cli"),
        "--n-per-label",
        "10",
        "--crawl",
        str(inputs[0]),
        "--reference",
        str(inputs[1]),
    ]
    assert seed_cli.main(argv) == 0
    labels = Counter(r["label"] for r in _records(tmp_path / "cli", "quality.jsonl"))
    assert labels == {"hq": 10, "lq": 10}
    with pytest.raises(SystemExit):
        seed_cli.parse_args(["--output", "x", "--n-per-label", "0"])


def test_listed_ham_is_reference_text_set_out_as_a_list(seed_dir):
    """A tenth of the ham is reference text set out as a list: one clause a line without its
    punctuation (bare, numbered, bulleted or dash-paired), or one sentence a line after a label and
    a colon (glossary and question-answer layouts): layout alone must not read as spam to the model."""
    listed = [r["text"] for r in _records(seed_dir, "spam.jsonl") if _kind(r) == "listed"]
    assert listed
    layouts = Counter()
    for text in listed:
        body = [ln for ln in text.split("\n")[1:] if ln.strip()]
        ended = [ln for ln in body if ln.rstrip().endswith(("。", "！", "？", "；"))]
        assert len(body) >= 3 and not any(ln.rstrip().endswith("，") for ln in body), text[:200]
        if ended:  # sentences keep their punctuation only behind a label
            assert all(re.match(r"[^：:。]{1,12}[：:]", ln) for ln in ended), text[:200]
        layouts["labelled" if ended else "clauses"] += 1
    assert layouts["labelled"] and layouts["clauses"], layouts
