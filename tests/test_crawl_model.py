"""The crawl's own spam model (issue 32): trained per build on what the rules removed against what
they kept, each page scored by the model of the other fold (filters.classifiers.crawl), and the
Spark stage that runs it on the marked rows (etl.classify.crawl_model)."""

from __future__ import annotations

import logging
import random

import numpy as np
import pytest

from filters.classifiers.classify import preprocess_batch
from filters.classifiers.crawl import FOLDS, KEPT, REMOVED, CrawlModelConfig, other_fold, removed_probs, train_folds

# A farm's pages: sentences of one vocabulary (no word of any keyword list) in varied orders.
FARM = (
    "这款祖传秘方熬制的养生膏采用深山野生药材",
    "连续服用三个疗程就能感受到身体的明显变化",
    "很多老顾客反馈说睡眠质量和精神状态都好了很多",
    "厂家直供没有中间环节所以价格特别实惠",
    "全国各地都可以送货上门收到货满意再付款",
    "每天早晚各一勺用温水冲服口感清甜不苦",
    "适合中老年人长期调理身体增强体质",
    "本周下单的顾客额外赠送两盒体验装",
    "添加客服微信可以领取专属的调理方案",
    "产品已经通过多项检测请大家放心购买",
)
CITIES = ("杭州", "苏州", "南京", "合肥", "武汉", "长沙", "成都", "西安")


def _farm_pages(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(CITIES)}的朋友看过来，" + "，".join(rng.sample(FARM, 6)) + "。" + f"编号{rng.randint(100, 999)}。"
        for _ in range(n)
    ]


def _prose_pages(n: int) -> list[str]:
    from demo.sources import news_pages

    return [title + "\n" + "\n".join(paras) for title, paras, _ in news_pages()[:n]]


def _folds(n: int) -> list[int]:
    return [i % FOLDS for i in range(n)]


class _Constant:
    """A stand-in fastText model whose P(removed) is ``p`` for every line."""

    def __init__(self, p: float):
        self.p = p

    def predict(self, lines, k=2):
        return [(f"__label__{REMOVED}", f"__label__{KEPT}")] * len(lines), [(self.p, 1 - self.p)] * len(lines)


def test_a_page_is_never_scored_by_its_own_folds_model():
    probs = removed_probs([_Constant(0.1), _Constant(0.9)], ["一 页", "二 页", "", "四 页"], [0, 1, 0, 1])
    assert probs.tolist() == [0.9, 0.1, 0.0, 0.1]  # fold 0 by model 1, fold 1 by model 0; no word: 0
    assert all(other_fold(np.arange(FOLDS)) != np.arange(FOLDS))


@pytest.mark.slow
def test_pages_like_the_removed_are_scored_near_them(tmp_path):
    """Removed: 300 pages of a farm. Kept: 400 news articles and 30 pages of the same farm that no
    rule saw (the rules caught 9 in 10). Cross-fitted, the farm's kept pages score over the
    threshold and the news under it."""
    removed, hidden, prose = _farm_pages(300, 0), _farm_pages(30, 1), _prose_pages(400)
    texts = removed + hidden + prose
    labels = [REMOVED] * len(removed) + [KEPT] * (len(hidden) + len(prose))
    lines, folds = preprocess_batch(texts), _folds(len(texts))
    cfg = CrawlModelConfig()
    trained = train_folds(lines, labels, folds, [], cfg, tmp_path)
    assert [t["removed"] for t in trained] == [150, 150] and sum(t["kept"] for t in trained) == 430
    import fasttext

    models = [fasttext.load_model(str(tmp_path / f"fold{f}.bin")) for f in range(FOLDS)]
    probs = removed_probs(models, lines, folds)
    at_hidden, at_prose = probs[len(removed) : len(removed) + len(hidden)], probs[len(removed) + len(hidden) :]
    assert (at_hidden >= cfg.threshold).mean() >= 0.9, at_hidden
    assert (at_prose >= cfg.threshold).sum() <= 2, np.sort(at_prose)[-5:]
    # deterministic: the same lines train the same models
    again = train_folds(lines, labels, folds, [], cfg, tmp_path / "again")
    assert again == trained
    for f in range(FOLDS):
        assert (tmp_path / f"fold{f}.bin").read_bytes() == (tmp_path / "again" / f"fold{f}.bin").read_bytes()


def _rows(spark, removed: list[str], hidden: list[str], prose: list[str], short: list[str], mode: str = "filter"):
    """Marked rows as read → clean → quality → classify leave them: removed pages with a reason
    that is evidence (``contact_spam``), short pages removed as ``too_short`` (no evidence); in
    ``annotate`` mode the same verdicts are flags."""

    def verdict(file: str, i: int, text: str, reason: str | None) -> tuple:
        if reason is None or mode == "annotate":
            return (file, i, "record", text, None, None, None, [reason] if reason else None)
        return (file, i, "record", text, "clean", reason, "x", None)

    rows = [verdict("a.jsonl", i, t, "contact_spam") for i, t in enumerate(removed)]
    rows += [verdict("b.jsonl", i, t, None) for i, t in enumerate(hidden + prose)]
    rows += [verdict("c.jsonl", i, t, "too_short") for i, t in enumerate(short)]
    rows.append(("d.jsonl", 0, "file", None, "read", "empty_file", None, None))
    schema = (
        "source_file string, offset long, kind string, text string, stage string, reason string, detail string,"
        " quality_flags array<string>"
    )
    return spark.createDataFrame(rows, schema)


@pytest.mark.slow
def test_spark_stage_removes_the_farms_unseen_pages(spark):
    from etl.classify.crawl_model import CRAWL_SPAM, crawl_model_stage

    removed, hidden, prose = _farm_pages(300, 0), _farm_pages(30, 1), _prose_pages(400)
    rows = _rows(spark, removed, hidden, prose, _farm_pages(50, 2)).cache()
    cfg = CrawlModelConfig()
    passes = [crawl_model_stage(spark, rows, cfg, "filter", "")]  # a re-run's sameness: the test above
    got = [p.rows.orderBy("source_file", "offset").collect() for p in passes]
    summary = passes[0].summary
    # too_short is no evidence: only the contact_spam pages are the removed side
    assert summary["trained"] and summary["removed_pages"] == 300 and summary["kept_pages"] == 430
    by_file = {}
    for r in got[0]:
        by_file.setdefault(r["source_file"], []).append(r)
    flagged = [r for r in by_file["b.jsonl"] if r["reason"] == CRAWL_SPAM]
    assert all(r["stage"] == "classify" and r["detail"].startswith("crawl model P(removed) ") for r in flagged)
    assert sum(r["offset"] < len(hidden) for r in flagged) >= 0.9 * len(hidden)
    assert sum(r["offset"] >= len(hidden) for r in flagged) <= 2
    assert summary["removed"] == len(flagged)
    # the rows the rules removed keep their verdict; nothing is lost
    assert [r["reason"] for r in by_file["a.jsonl"]] == ["contact_spam"] * 300
    assert [r["reason"] for r in by_file["c.jsonl"]] == ["too_short"] * 50
    assert len(got[0]) == rows.count()
    # annotate mode: a flag, no verdict
    for p in passes:
        p.unpersist()
    rows.unpersist()
    # annotate mode: the rules' verdicts are flags, and so is the crawl model's
    flagged_rows = {(r["source_file"], r["offset"]) for r in flagged}
    note = crawl_model_stage(
        spark, _rows(spark, removed, hidden, prose, _farm_pages(50, 2), "annotate"), cfg, "annotate", ""
    )
    noted = note.rows.collect()
    assert all(r["reason"] is None for r in noted if r["kind"] == "record")
    assert {(r["source_file"], r["offset"]) for r in noted if CRAWL_SPAM in (r["quality_flags"] or [])} == flagged_rows
    assert note.summary["removed_pages"] == 300
    note.unpersist()


@pytest.mark.slow
def test_too_few_removed_pages_train_no_model_and_say_so(spark, caplog):
    from etl.classify.crawl_model import crawl_model_stage

    rows = _rows(spark, _farm_pages(20, 0), [], _prose_pages(300), [])
    with caplog.at_level(logging.INFO, logger="zhcorpus"):
        crawl = crawl_model_stage(spark, rows, CrawlModelConfig(), "filter", "")
    assert crawl.summary["trained"] is False and "20 pages removed" in crawl.summary["why"]
    assert "no crawl model" in caplog.text
    assert crawl.rows is rows and crawl.flagged is None


def test_reference_sample_is_checked_before_use(tmp_path):
    """A profile's reference sample whose bytes changed is refused, not trained on."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from base.artifact import ModelError, sha256_file
    from filters.classifiers.crawl import SAMPLE_FILE, SAMPLE_META, reference_sample

    assert reference_sample(str(tmp_path), 10) == ([], None)  # a profile without one
    pq.write_table(pa.table({"text": ["甲", "乙", "丙"]}), tmp_path / SAMPLE_FILE)
    meta = {"documents": 3, "sha256": sha256_file(tmp_path / SAMPLE_FILE)}
    (tmp_path / SAMPLE_META).write_text(json.dumps(meta), encoding="utf-8")
    texts, summary = reference_sample(str(tmp_path), 2)
    assert texts == ["甲", "乙"] and summary["documents"] == 2
    pq.write_table(pa.table({"text": ["甲", "乙", "丁"]}), tmp_path / SAMPLE_FILE)
    with pytest.raises(ModelError):
        reference_sample(str(tmp_path), 2)


def test_evidence_is_a_spam_like_verdict(spark):
    """A template verdict is no evidence (a rule about repetition across the crawl, whose mistakes on
    copied good pages the model would spread), nor a length, script or title verdict."""
    from etl.classify.crawl_model import evidence, kept

    reasons = ["contact_spam", "unsafe_gambling", "template_share_high", "too_short", "low_han_ratio", None]
    rows = _rows(spark, [], [], [], [])  # the schema
    df = spark.createDataFrame(
        [("f", i, "record", "文本", "quality" if r else None, r, None, None) for i, r in enumerate(reasons)],
        rows.schema,
    )
    cfg = CrawlModelConfig()
    got = df.orderBy("offset").select(evidence(cfg, "filter").alias("e"), kept(cfg, "filter").alias("k")).collect()
    assert [r["e"] for r in got] == [True, True, False, False, False, False]
    assert [r["k"] for r in got] == [False, False, False, False, False, True]
