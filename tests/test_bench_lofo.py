"""The leave-one-family-out bench's pure parts (bench.evals.lofo, bench.evals.lofo_data): a family held
out of the seed file, held-out pages, sets merged with unique ids, and lofo.json from hand-made
outputs of the cleaning job. No Spark."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from bench.evals.lofo import FULL, TRAIN_FLAGS, lofo_report, model_key, pick_families, run_of, trained_model
from bench.evals.lofo_data import heldout_pages, hold_out, merge_sets, page_body, seed_families, seed_family

ROOT = Path(__file__).resolve().parent.parent


def _line(rid: str, label: str, text: str) -> str:
    return json.dumps({"text": text, "label": label, "id": rid}, ensure_ascii=False)


SEED_LINES = [
    _line("spam-local_seo-00000", "spam", "晋江火焰批发"),
    _line("ham-news-00000", "ham", "新华社北京电\u2028第二行"),
    _line("spam-contact_ad-00000", "spam", "出手机，加微信"),
    _line("spam-local_seo-00001", "spam", "常德火焰价格"),
    _line("ham-forum-00000", "ham", "楼主说得对"),
]


def test_seed_family_is_the_middle_of_a_spam_id():
    assert seed_family({"id": "spam-fake_medicine-00012", "label": "spam"}) == "fake_medicine"
    assert seed_family({"id": "ham-reviews-00001", "label": "ham"}) is None
    with pytest.raises(ValueError):
        seed_family({"id": "spam00012", "label": "spam"})
    assert seed_families(SEED_LINES) == {"contact_ad": 1, "local_seo": 2}


def test_hold_out_drops_the_family_and_keeps_every_other_line_byte_for_byte():
    kept = hold_out(SEED_LINES, "local_seo")
    assert kept == [SEED_LINES[1], SEED_LINES[2], SEED_LINES[4]]
    assert hold_out(SEED_LINES, "contact_ad") == [SEED_LINES[i] for i in (0, 1, 3, 4)]
    with pytest.raises(ValueError):
        hold_out(SEED_LINES, "gambling")


def test_the_real_seed_names_the_ten_families():
    from demo.seed.spam import FAMILIES

    seed = ROOT / "data" / "seed" / "spam.jsonl"
    if not seed.exists():
        pytest.skip("no data/seed (python -m demo.seed)")
    lines = [line for line in seed.read_text(encoding="utf-8").split("\n") if line.strip()]
    assert set(seed_families(lines)) == set(FAMILIES)


def test_page_body_takes_the_byline_off():
    assert page_body("标题\n\n来源：某站　发布时间：2026-01-15 03:05\n\n第一段\n\n第二段") == "标题\n第一段\n第二段"
    assert page_body("标题\n第一段\n第二段") == "标题\n第一段\n第二段"


def test_heldout_pages_are_fresh_and_labelled():
    pages = heldout_pages(["local_seo", "planted"], 3, 1, [])
    assert [p["family"] for p in pages] == ["local_seo"] * 3 + ["planted"] * 3
    assert {p["label"] for p in pages} == {"spam"} and len({p["id"] for p in pages}) == 6
    # a page the training file holds (whatever its byline) is never drawn again
    again = heldout_pages(["local_seo", "planted"], 3, 1, [pages[0]["text"], pages[4]["text"]])
    bodies = {page_body(p["text"]) for p in again}
    assert page_body(pages[0]["text"]) not in bodies and page_body(pages[4]["text"]) not in bodies
    assert again[1]["text"] != pages[1]["text"]  # and the draws after it move on


def test_merge_sets_makes_ids_and_families_unique_per_set():
    a = [{"id": "x1", "text": "甲", "label": "spam", "family": "loan", "source": "s"}]
    b = [
        {"id": "x1", "text": "乙", "label": "spam", "family": "loan"},
        {"id": "x2", "text": "丙", "label": "good", "family": "qa"},
    ]
    merged = merge_sets({"seed": a, "ood_blind": b})
    assert [r["id"] for r in merged] == ["seed:x1", "ood_blind:x1", "ood_blind:x2"]
    assert [r["family"] for r in merged] == ["seed/loan", "ood_blind/loan", "ood_blind/qa"]
    assert [r["set"] for r in merged] == ["seed", "ood_blind", "ood_blind"]
    assert merged[0]["source"] == "s" and "source" not in merged[1]
    with pytest.raises(ValueError):
        merge_sets({"a": a + a})
    with pytest.raises(ValueError):
        merge_sets({"a/b": a})


def _labels() -> list[dict]:
    """Two seed families (4 pages each), one OOD family, two good genres, chrome in two sets."""
    rows = [("seed", "spam", "a", i, "") for i in range(4)] + [("seed", "spam", "b", i, "") for i in range(4)]
    rows += [("ood", "spam", "seo", i, "") for i in range(5)]
    rows += [("ood", "good", "statute", i, "第一条 甲\n第二条 乙") for i in range(2)]
    rows += [("ood", "good", "poetry", i, "床前明月光\n疑是地上霜") for i in range(4)]
    rows += [("ood", "chrome", "login", i, "") for i in range(2)] + [("web", "chrome", "404", 0, "")]
    out = [{"id": f"{s}:{f}{i}", "text": t, "label": lab, "family": f"{s}/{f}", "set": s} for s, lab, f, i, t in rows]
    return out


def _outputs(labels: list[dict], removed: set[str], texts: dict[str, str] | None = None) -> tuple[list, list]:
    docs = [
        {"doc_id": r["id"], "text": (texts or {}).get(r["id"], r["text"])} for r in labels if r["id"] not in removed
    ]
    rejected = [{"doc_id": i, "stage": "classify", "reason": "spam"} for i in sorted(removed)]
    return docs, rejected


def test_lofo_report_takes_each_family_from_its_own_run():
    labels = _labels()
    # full model: every seed page (it was trained on them), 4 of 5 seo, 1 poem, one chrome page of ood
    full = {f"seed:{f}{i}" for f in "ab" for i in range(4)} | {f"ood:seo{i}" for i in range(4)}
    full |= {"ood:poetry0", "ood:login0"}
    runs = {
        FULL: _outputs(labels, full, {"ood:statute1": "第一条 甲"}),  # statute 1 loses a line
        "without-a": _outputs(labels, {"seed:a0"}),  # a: 1 of 4 without its own pages
        "without-b": _outputs(labels, {"seed:b0", "seed:b1", "seed:b2"}),
    }
    report = lofo_report(labels, runs, {"a", "b"}, lambda s: s)
    fam = report["families"]
    assert (fam["seed/a"]["share"], fam["seed/a"]["run"], fam["seed/a"]["full_share"]) == (0.25, "without-a", 1.0)
    assert (fam["seed/b"]["share"], fam["seed/b"]["run"]) == (0.75, "without-b")
    assert (fam["ood/seo"]["share"], fam["ood/seo"]["run"], fam["ood/seo"]["lofo"]) == (0.8, FULL, True)
    assert report["macro_removal"] == pytest.approx((0.25 + 0.75 + 0.8) / 3)
    assert (report["worst_family"], report["worst_removal"]) == ("seed/a", 0.25)
    genres = report["good_kept_by_genre"]
    assert genres["ood/poetry"] == {
        "n": 4,
        "kept": 3,
        "share": 0.75,
        "lines": 6,
        "lines_removed": 0,
        "lines_share": 0.0,
    }
    assert (genres["ood/statute"]["share"], genres["ood/statute"]["lines_share"]) == (1.0, 0.25)
    assert report["chrome_removed"] == {
        "ood": {"n": 2, "removed": 1, "share": 0.5},
        "web": {"n": 1, "removed": 0, "share": 0.0},
    }
    met = {t["target"]: t["met"] for t in report["targets"]}
    assert met == {
        "LOFO macro removal": False,
        "worst family removal": False,
        "good kept, worst genre": False,
        "good lines removed, worst genre": False,
    }
    where = {t["target"]: t["where"] for t in report["targets"]}
    assert list(where.values()) == [None, "seed/a", "ood/poetry", "ood/statute"]
    assert report["unaccounted"] == []


def test_only_full_leaves_seed_families_out_of_the_macro():
    labels = _labels()
    removed = {f"seed:{f}{i}" for f in "ab" for i in range(4)} | {f"ood:seo{i}" for i in range(5)}
    report = lofo_report(labels, {FULL: _outputs(labels, removed)}, set(), lambda s: s)
    assert not report["families"]["seed/a"]["lofo"] and report["families"]["seed/a"]["run"] == FULL
    assert (report["macro_removal"], report["worst_family"]) == (1.0, "ood/seo")
    met = {t["target"]: t["met"] for t in report["targets"]}
    assert met["LOFO macro removal"] and met["worst family removal"] and met["good lines removed, worst genre"]


def test_run_of_and_pick_families():
    assert run_of("seed/loan", {"loan"}) == "without-loan"
    assert run_of("seed/loan", set()) == FULL and run_of("ood/loan", {"loan"}) == FULL
    available = ["ood/loan", "ood_blind/fake_review", "seed/loan", "seed/planted"]
    assert pick_families(None, available) == available
    assert pick_families("loan", available) == ["ood/loan", "seed/loan"]
    assert pick_families("ood_blind/fake_review,planted", available) == ["ood_blind/fake_review", "seed/planted"]
    with pytest.raises(SystemExit):
        pick_families("nope", available)


def test_the_retrains_use_make_demos_flags():
    """TRAIN_FLAGS against the Makefile's rule for make demo's classifiers: retrained models must
    differ from make demo's in their training file only."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    rule = re.search(r"^\$\(DEMO_OUT\)/models/%/metadata\.json:.*?\n\n", makefile, re.S | re.M)
    assert rule, "the Makefile's rule for make demo's classifiers moved"
    assert sorted(re.findall(r"--set (classifier\.\S+)", rule.group(0))) == sorted(TRAIN_FLAGS)


def test_a_model_is_cached_by_the_sha256_of_its_training_data(tmp_path, monkeypatch):
    monkeypatch.setattr("bench.evals.lofo._run", lambda cmd, log: pytest.fail(f"trained: {cmd}"))
    data = "".join(f"{line}\n" for line in SEED_LINES).encode()
    model = tmp_path / f"spam-{model_key(hashlib.sha256(data).hexdigest())}"
    model.mkdir()
    (model / "metadata.json").write_text("{}")
    assert trained_model(data, tmp_path, tmp_path / "train.log") == (model, hashlib.sha256(data).hexdigest())
