"""Decontamination: planted copies of evaluation items (whole, embedded, re-punctuated, in
full width) are caught with their benchmark and item id; pages with no overlap are untouched;
the n-gram boundary is exact; the Spark stage marks, reports, counts and re-runs identically."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from etl.clean.pii import PiiConfig
from etl.decontaminate.stage import DecontaminateConfig
from filters.dedup import decontam as dc
from filters.dedup import minhash as mh
from tests.crawl_fixture import P

N = 13
QA = [  # a made-up reading-comprehension benchmark (not any real benchmark's text)
    ("qa-1", "小明每天早上骑自行车去学校，路上要经过一座石桥和一片稻田，大约需要二十分钟。"),
    ("qa-2", "在一次科学实验中，同学们把种子分别放在光照和黑暗的环境里，观察它们发芽的速度。"),
    ("qa-3", "古代的驿站负责传递公文和接待往来官员，一般每隔三十里设置一处。"),
    ("qa-4", "湖心小岛上的灯塔已经熄灭"),  # 12 characters < N: matched whole
    ("qa-5", "天气很好"),  # 4 characters < min_chars: ignored, counted
]
SENTI = [("s-1", "这家店的服务员态度冷淡，上菜慢，价格还比别家贵了一倍，不会再来了。")]


def items() -> list[dc.EvalItem]:
    return [dc.EvalItem("demo_qa", i, t) for i, t in QA] + [dc.EvalItem("demo_senti", i, t) for i, t in SENTI]


def crawl() -> dict[str, tuple[str, list[str]]]:
    """page id -> (text, expected hits as benchmark:item_id)."""
    page = P[0] + "\n" + P[1]
    return {
        "whole": (QA[0][1], ["demo_qa:qa-1"]),
        "embedded": (P[2] + QA[1][1] + P[3], ["demo_qa:qa-2"]),
        "repunctuated": (
            P[4] + "古代的驿站 负责传递公文、和接待往来官员！一般每隔三十里设置一处" + P[5],
            ["demo_qa:qa-3"],
        ),
        "fullwidth_and_two_sets": (
            P[6] + QA[2][1][:20] + "\n" + SENTI[0][1] + P[7],
            ["demo_qa:qa-3", "demo_senti:s-1"],
        ),
        "short_whole": (page + "远处，湖心小岛上的灯塔已经熄灭了。", ["demo_qa:qa-4"]),
        "short_ignored": (page + "今天天气很好。", []),
        "clean_1": (page, []),
        "clean_2": (P[3] + "\n" + P[5] + "\n" + P[7], []),
    }


@pytest.fixture(scope="module")
def matcher() -> dc.Matcher:
    return dc.Matcher(dc.EvalIndex(items(), n=N, min_chars=8))


def test_planted_copies_are_caught_and_clean_pages_are_not(matcher):
    for name, (text, expected) in crawl().items():
        assert [str(h) for h in matcher.hits(text)] == expected, name


def test_a_batch_gets_the_hits_of_each_text(matcher):
    """``hits_batch`` (the stage's way: the batch normalised at once) against ``hits`` text by text,
    on the planted pages, full-width and traditional forms, combining marks, a lone surrogate, empty."""
    texts = [t for t, _ in crawl().values()]
    texts += [
        "",
        "\u0301" + QA[0][1],
        QA[1][1].replace("，", ","),
        "ＡＢＣ" + QA[2][1],
        "\ud800" + SENTI[0][1],
        P[0] * 3,
    ]
    assert matcher.hits_batch(texts) == [matcher.hits(t) for t in texts]
    assert any(matcher.hits_batch(texts))


def test_how_a_hit_was_made(matcher):
    assert {h.how for h in matcher.hits(crawl()["whole"][0])} == {dc.NGRAM}
    assert [h.how for h in matcher.hits(crawl()["short_whole"][0])] == [dc.WHOLE]


def test_the_ngram_boundary_is_exact():
    """Reference: a page shares exactly k consecutive normalised characters with the item."""
    item = QA[2][1]
    m = dc.Matcher(dc.EvalIndex([dc.EvalItem("b", "x", item)], n=N))
    norm = mh.normalise(item)
    assert m.hits(P[0] + norm[3 : 3 + N] + P[1])
    assert not m.hits(P[0] + norm[3 : 3 + N - 1] + P[1])


def test_short_items_are_counted_not_skipped_silently():
    s = dc.EvalIndex(items(), n=N, min_chars=8).summary()
    assert s["demo_qa"] == {
        "items": 5,
        "ngram_items": 3,
        "whole_items": 1,
        "ignored_items": 1,
        "ngrams": sum(len(mh.shingle_hashes(mh.normalise(t), N)) for _, t in QA[:3]),
    }
    assert s["demo_senti"]["ngram_items"] == 1


def test_a_shared_ngram_is_reported_for_each_benchmark_and_first_item():
    same = "这是两个评测集里都有的同一段文字，用来检查归属。"
    idx = dc.EvalIndex([dc.EvalItem("b", "2", same), dc.EvalItem("a", "9", same), dc.EvalItem("a", "1", same)], n=N)
    assert [str(h) for h in dc.Matcher(idx).hits(P[0] + same)] == ["a:9", "b:2"]  # file order within "a"


def test_ngram_default_is_guarded():
    with pytest.raises(ValueError):
        dc.EvalIndex(items(), n=1)


# --- the Spark stage -----------------------------------------------------------------------


def write_sets(tmp_path) -> list[str]:
    qa = tmp_path / "demo_qa.jsonl"
    qa.write_text("\n".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) for i, t in QA) + "\n", "utf-8")
    senti = tmp_path / "demo_senti"  # a directory is one benchmark; ids from the "id" field
    senti.mkdir()
    (senti / "test.jsonl").write_text(
        json.dumps({"id": "s-1", "text": SENTI[0][1]}, ensure_ascii=False) + "\n", "utf-8"
    )
    return [str(qa), str(senti)]


def docs_frame(spark):
    rows = [(f"d-{name}", text, f"file-{i % 2}.warc") for i, (name, (text, _)) in enumerate(sorted(crawl().items()))]
    return spark.createDataFrame(rows, "doc_id string, text string, source_file string")


def test_load_eval_sets(tmp_path):
    sets = write_sets(tmp_path)
    loaded = {(it.benchmark, it.item_id) for it in load_sets(sets)}
    assert loaded == {("demo_qa", i) for i, _ in QA} | {("demo_senti", "s-1")}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "no text"}\n', "utf-8")
    with pytest.raises(ValueError, match="text"):
        load_sets([str(bad)])
    with pytest.raises(ValueError, match="both benchmark"):
        load_sets([sets[0], sets[0]])


def load_sets(paths):
    from etl.decontaminate.stage import load_eval_sets

    return load_eval_sets(paths)


@pytest.mark.slow
def test_stage_drop_report_off_and_rerun(spark, tmp_path):
    from pyspark.sql import functions as F

    from etl.decontaminate.stage import (
        CONTAMINATED,
        DECONTAM_STAGE,
        DecontaminateConfig,
        decontaminate_stage,
        decontaminate_summary,
        prepare,
    )

    sets, docs = write_sets(tmp_path), docs_frame(spark)
    cfg = DecontaminateConfig(eval_sets=tuple(sets), ngram=N, mode="drop")
    prepared = prepare(spark, cfg)
    out = decontaminate_stage(docs, cfg, prepared)
    rows = {r.doc_id: r for r in out.collect()}
    for name, (_text, expected) in crawl().items():
        r = rows[f"d-{name}"]
        assert [f"{h.benchmark}:{h.item_id}" for h in r.contamination] == expected
        assert (r.stage, r.reason, r.detail) == (
            (DECONTAM_STAGE, CONTAMINATED, expected[0]) if expected else (None, None, None)
        )
    summary, dropped = decontaminate_summary(out, prepared)
    assert summary["documents_dropped"] == summary["documents_hit"] == 5
    assert summary["benchmarks"]["demo_qa"]["documents_hit"] == 5 and summary["benchmarks"]["demo_qa"]["items_hit"] == 4
    assert summary["benchmarks"]["demo_qa"]["ignored_items"] == 1
    expected_files: dict[str, int] = {}
    for i, (name, (_t, hits)) in enumerate(sorted(crawl().items())):
        if hits:
            expected_files[f"file-{i % 2}.warc"] = expected_files.get(f"file-{i % 2}.warc", 0) + 1
    assert dropped == expected_files
    again = decontaminate_stage(docs, cfg, prepare(spark, cfg))
    assert sorted(map(tuple, again.collect())) == sorted(map(tuple, out.collect()))

    report = decontaminate_stage(docs, DecontaminateConfig(eval_sets=tuple(sets), ngram=N, mode="report"))
    assert report.where(F.col("reason").isNotNull()).count() == 0
    assert report.where(F.size("contamination") > 0).count() == 5
    off = decontaminate_stage(docs, DecontaminateConfig(ngram=N))  # no eval sets: off
    assert off.where(F.col("contamination").isNotNull()).count() == 0
    assert sorted(map(tuple, off.select(*docs.columns).collect())) == sorted(map(tuple, docs.collect()))


def test_ledger_moves_drops_from_documents_to_rejected():
    from etl.decontaminate.stage import add_to_ledger

    report = {
        "input": {"records": 10},
        "documents": 6,
        "rejected": 3,
        "duplicates": 1,
        "balanced": True,
        "rejected_by_stage": {"clean": {"total": 3, "reasons": {"too_short": 3}}},
        "files": {
            "a": {"documents": 4, "rejected": 2, "reasons": {"clean/too_short": 2}},
            "b": {"documents": 2, "rejected": 1, "reasons": {"clean/too_short": 1}},
        },
    }
    add_to_ledger(report, {"a": 2})
    assert (report["documents"], report["rejected"], report["balanced"]) == (4, 5, True)
    assert report["files"]["a"] == {
        "documents": 2,
        "rejected": 4,
        "reasons": {"clean/too_short": 2, "decontaminate/contaminated": 2},
    }
    assert report["rejected_by_stage"]["decontaminate"] == {"total": 2, "reasons": {"contaminated": 2}}
    with pytest.raises(ValueError):
        add_to_ledger(report, {"c": 1})


@dataclass(frozen=True)
class _Job:
    pii: PiiConfig = field(default_factory=PiiConfig)
    decontaminate: DecontaminateConfig = field(default_factory=DecontaminateConfig)


def test_config_sections_load_from_set_overrides():
    from jobs.config import load_config

    cfg = load_config(
        _Job,
        None,
        [
            "pii.modes.email=off",
            "pii.mode=drop",
            'decontaminate.eval_sets=["a.jsonl", "b"]',
            "decontaminate.ngram=15",
            "decontaminate.mode=report",
        ],
    )
    assert cfg.pii.resolved()["email"] == "off" and cfg.pii.resolved()["mobile"] == "drop"
    assert cfg.decontaminate == DecontaminateConfig(eval_sets=("a.jsonl", "b"), ngram=15, mode="report")
    assert load_config(_Job).decontaminate.effective_mode == "off"  # no evaluation set


def test_rolling_hashes_equal_minhash_shingles():
    """Reference: filters.dedup.minhash.shingle_hashes (n passes of the polynomial) on texts of many
    lengths, full-width and astral characters included."""
    texts = [mh.normalise(t) for t in P + [QA[0][1] * 40, "𠀀𠀁ａｂｃ１２３汉字" * 3, "短"]]
    for n in (2, 5, 13, 20):
        for t in texts:
            got = dc.ngram_hashes(t, n)
            if len(t) < n:
                assert len(got) == 0
                continue
            assert len(got) == len(t) - n + 1
            assert np.array_equal(np.unique(got), mh.shingle_hashes(t, n)), (n, t[:10])


def test_traditional_items_match_cleaned_simplified_pages():
    item = dc.EvalItem("trad", "t-1", "這家飯店的服務人員態度良好，房間乾淨，早餐種類也很豐富，下次還會再來。")
    page = P[0] + "这家饭店的服务人员态度良好，房间干净，早餐种类也很丰富，下次还会再来。"
    assert [str(h) for h in dc.Matcher(dc.EvalIndex([item], n=N)).hits(page)] == ["trad:t-1"]
    assert dc.Matcher(dc.EvalIndex([item], n=N, t2s=False)).hits(page) == []


def test_demo_eval_set_is_deterministic_and_licensed(tmp_path):
    from demo.eval_set import write

    manifest = write(tmp_path / "a")
    write(tmp_path / "b")
    for name, entry in manifest["benchmarks"].items():
        a, b = (tmp_path / d / entry["file"] for d in ("a", "b"))
        assert a.read_bytes() == b.read_bytes()
        rows = [json.loads(line) for line in a.read_text("utf-8").splitlines()]
        assert len(rows) == entry["items"] == 120 and all(r["text"] and r["id"] for r in rows)
    assert "MIT" in manifest["licence"]
    cloze = [json.loads(line) for line in (tmp_path / "a" / "demo_news_cloze.jsonl").read_text("utf-8").splitlines()]
    assert all("（　　）" in r["text"] and len(r["answer"]) == 2 for r in cloze)
