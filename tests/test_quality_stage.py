"""The quality stage in the Spark chain: a reference profile made by jobs.train_fluency, every
signal a column of documents/ and rejected/, thresholds with their provenance in report.json,
documents failing a rule rejected with the rule as reason (filter), every document kept with
its flags (annotate), report.html's signal plots."""

from __future__ import annotations

import json
import logging
import random

import pytest

from etl.corpus import CleanConfig, clean_corpus
from etl.quality.stage import QualityConfig, quality_columns

pytestmark = pytest.mark.slow

CITIES = ("长春", "江门", "洛阳", "南充", "贵阳", "银川", "常德", "包头")
SEO = "\n".join(
    f"{c}净水器价格表_{c}净水器厂家_{c}净水器最新_{c}净水器排行榜\n{c}净水器哪家好？{c}净水器价格？"
    f"本页为您整理{c}净水器价格表，{c}净水器口碑排名前十名单。"
    for c in CITIES
)
LINKS = "\n".join(
    f"{t}最新动态　2021年{m}月{d}日"
    for t, m, d in (
        ("烟台网线布线市场行情", 3, 13),
        ("绵阳搬家公司", 2, 5),
        ("威海电动车行业发展前景", 2, 24),
        ("江门除甲醛联系方式", 10, 17),
        ("钢结构厂房常见问题", 5, 5),
        ("如何挑选地暖安装", 9, 17),
        ("家政服务必须知道的五件事", 8, 20),
        ("惠州家政服务市场", 10, 20),
        ("家政服务十大品牌排名", 5, 22),
        ("家政服务的作用与功效", 12, 11),
        ("衡阳祛斑联系方式汇总", 2, 18),
    )
)
CASINO = (
    "线上娱乐城火爆开业，首充送100%彩金，每日返水1.5%，猜大小猜单双，在线下注，赔率全网最高，"
    "提现秒到账，真人荷官实时发牌，老虎机、捕鱼、体育投注应有尽有。"
) * 3


@pytest.fixture(scope="module")
def profile(spark, tmp_path_factory):
    """A fluency model and reference profile of 600 People's Daily pages, by the job itself."""
    from demo.sources import news_pages
    from jobs import train_fluency

    root = tmp_path_factory.mktemp("reference")
    pages = news_pages()[:600]
    with open(root / "ref.jsonl", "w", encoding="utf-8") as f:
        for title, paras, _ in pages:
            f.write(json.dumps({"text": "\n".join([title, *paras])}, ensure_ascii=False) + "\n")
    assert train_fluency.main(["--reference", str(root / "ref.jsonl"), "--output", str(root / "model")]) == 0
    held_out = ["\n".join([t, *p]) for t, p, _ in news_pages()[1000:1040] if sum(map(len, p)) >= 300]
    return root / "model", held_out


def _inputs(tmp, news):
    rng = random.Random(0)
    words = "".join(news[:5]).replace("\n", "")
    salad = "，".join("".join(rng.sample(words, 6)) for _ in range(80)) + "。"
    rows = [{"id": f"news-{i}", "text": t} for i, t in enumerate(news[:12])]
    rows += [
        {"id": "short", "text": "一句太短的话。"},
        {"id": "seo", "text": SEO},
        {"id": "links", "text": LINKS},
        {"id": "casino", "text": CASINO},
        {"id": "salad", "text": salad},
    ]
    path = tmp / "in.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _run(spark, tmp, profile, mode):
    model, news = profile
    cfg = CleanConfig(quality=QualityConfig(mode=mode, profile=str(model)))
    out = tmp / mode
    report = clean_corpus(cfg, [_inputs(tmp, news)], str(out), spark=spark)
    docs = spark.read.parquet(str(out / "documents")).toPandas().set_index("doc_id")
    rejected = spark.read.parquet(str(out / "rejected")).toPandas().set_index("doc_id")
    return report, docs, rejected


def test_filter_mode_rejects_spam_with_reasons_and_keeps_news(spark, tmp_path, profile):
    report, docs, rejected = _run(spark, tmp_path, profile, "filter")
    assert rejected.loc["seo", "reason"] in {"separator_line_frac_high", "top2_word_cov_high", "dup5_word_cov_high"}
    assert rejected.loc["links", "reason"] == "date_line_frac_high"
    assert rejected.loc["short", ["stage", "reason"]].tolist() == ["clean", "too_short"]
    assert rejected.loc["casino", "reason"] == "unsafe_gambling"
    assert set(rejected.loc[["seo", "links", "casino"], "stage"]) == {"quality"}
    assert all(f"news-{i}" in docs.index for i in range(12)), rejected["reason"].to_dict()
    for frame in (docs, rejected):
        assert set(quality_columns()) <= set(frame.columns)
    assert docs["line_punct_frac"].notna().all() and docs["fluency_ppl"].gt(0).all()
    assert set(docs["fluency_bucket"]) <= {"head", "middle", "tail"}
    q = report["quality"]
    t = q["thresholds"]["date_line_frac"]
    assert t["budget"] == 0.002 and t["bad_when"] == "high" and t["source"]
    assert "fluency_ppl" not in q["thresholds"]  # off by default (filters/quality/screen.py)
    assert q["profile"]["documents"] > 500 and q["distributions"]["kept"]["documents"] == len(docs)
    assert report["rejected_by_stage"]["quality"]["reasons"]["unsafe_gambling"] == 1


def test_default_profile_is_make_demos_when_there_is_one(spark, tmp_path, profile, monkeypatch, caplog):
    """quality.profile's default "auto" (issue 32, item 4): make demo's profile, resolved on the driver
    and recorded with its path and checksum; without one, a WARNING and the reason in report.json."""
    from filters.classifiers.classify import sha256_file

    model, news = profile
    inputs = [_inputs(tmp_path, news)]
    monkeypatch.setenv("ZHCORPUS_AUTO_PROFILE", str(model))
    report = clean_corpus(CleanConfig(), inputs, str(tmp_path / "auto"), spark=spark)
    q = report["quality"]
    assert q["statistical_rules"] == "on" and q["profile"]["requested"] == "auto"
    assert q["profile"]["dir"] == str(model.resolve())
    assert q["profile"]["sha256"] == sha256_file(model / "reference_percentiles.json")
    assert report["rejected_by_stage"]["quality"]["reasons"]["date_line_frac_high"] == 1
    monkeypatch.setenv("ZHCORPUS_AUTO_PROFILE", str(tmp_path / "nowhere"))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="zhcorpus"):
        report = clean_corpus(CleanConfig(), inputs, str(tmp_path / "none"), spark=spark)
    warnings = [r.getMessage() for r in caplog.records if r.name == "zhcorpus" and r.levelno >= logging.WARNING]
    q = report["quality"]
    assert q["statistical_rules"] == "off" and q["profile"] is None and q["thresholds"] == {}
    assert f"no reference profile at {tmp_path / 'nowhere'}" in q["statistical_rules_reason"]
    assert warnings == [f"quality: the statistical rules are off: {q['statistical_rules_reason']}"]
    assert set(report["rejected_by_stage"]["quality"]["reasons"]) == {"unsafe_gambling"}  # safety needs no profile


def test_annotate_mode_keeps_every_document_with_its_flags(spark, tmp_path, profile):
    report, docs, rejected = _run(spark, tmp_path, profile, "annotate")
    assert {"short", "seo", "links", "casino", "salad"} <= set(docs.index) and rejected.empty
    assert report["documents"] == report["input"]["records"]
    assert list(docs.loc["short", "quality_flags"])[0] == "too_short"  # the PanGu-α rule, kept as a flag
    assert "unsafe_gambling" in list(docs.loc["casino", "quality_flags"])
    assert "date_line_frac_high" in list(docs.loc["links", "quality_flags"])
    assert docs.loc["casino", "safety_scores"] is not None


def test_report_html_plots_the_signals(spark, tmp_path, profile):
    from etl.report.html import render

    report, _, _ = _run(spark, tmp_path, profile, "filter")
    page = render(json.loads(json.dumps(report)))
    assert 'id="plot-signals"' in page and "<svg" in page.split('id="plot-signals"')[1][:2000]


@pytest.mark.parametrize("mode", ["filter", "annotate"])
def test_one_pass_marks_the_rows_the_chained_stages_mark(spark, tmp_path, profile, mode):
    """etl.documents.mark_stage (clean, personal data, quality and classify in one mapInArrow)
    against the four stages chained, row for row, with a spam model and the profile."""
    from etl.classify.stage import ClassifyConfig, classify_stage, ship_models
    from etl.clean.pii import PiiConfig, pii_stage
    from etl.clean.stage import clean_stage
    from etl.documents import Marking, mark_stage, marking
    from etl.quality.stage import keep_clean_rejections, prepare, quality_stage
    from etl.read.readers import read_raw
    from etl.read.records import ReaderConfig
    from etl.runtime.progress import Counters
    from filters.classifiers.classify import (
        META_FILE,
        MODEL_FILE,
        TrainParams,
        fasttext_line,
        preprocess,
        preprocess_metadata,
        sha256_file,
        train_fasttext,
    )
    from filters.pangu.config import RulesConfig

    model, news = profile
    lines = [fasttext_line("ham", preprocess(t)) for t in news] + [
        fasttext_line("spam", preprocess(t)) for t in (SEO, LINKS, CASINO) * 4
    ]
    (tmp_path / "train.txt").write_text("".join(lines), encoding="utf-8")
    spam_dir = tmp_path / "spam"
    spam_dir.mkdir()
    train_fasttext(tmp_path / "train.txt", TrainParams(epoch=3))[0].save_model(str(spam_dir / MODEL_FILE))
    (spam_dir / META_FILE).write_text(
        json.dumps(
            {
                "kind": "spam",
                "labels": ["ham", "spam"],
                "positive_label": "spam",
                "threshold": 0.5,
                "sha256": sha256_file(spam_dir / MODEL_FILE),
                **preprocess_metadata(),
            }
        ),
        encoding="utf-8",
    )
    quality = QualityConfig(mode=mode, profile=str(model))
    shipped, prepared, pii = (
        ship_models(spark, ClassifyConfig(spam_model=str(spam_dir))),
        prepare(spark, quality),
        PiiConfig(),
    )
    raw, _ = read_raw(spark, [_inputs(tmp_path, news)], ReaderConfig(), Counters(spark.sparkContext))
    cleaned = clean_stage(raw, RulesConfig())
    chained = classify_stage(
        quality_stage(pii_stage(keep_clean_rejections(cleaned) if mode == "annotate" else cleaned, pii), prepared).drop(
            "clean_rule"
        ),
        shipped,
        drop=mode == "filter",
    )
    m = Marking(RulesConfig(), pii, prepared, shipped)
    fused = mark_stage(raw, m)
    assert fused.schema == chained.schema
    want, got = (sorted(map(repr, frame.collect())) for frame in (chained, fused))
    assert got == want and any("'classify'" in r or "spam_prob=0." in r for r in got)
    # the build's way: the reading task runs the pass itself, one Python operator in the plan
    # (a reader's and a marker's before); with rebalance, the pass runs after the shuffle
    for rebalance, operators in ((False, 1), (True, 2)):
        read, _ = read_raw(
            spark,
            [_inputs(tmp_path, news)],
            ReaderConfig(rebalance=rebalance),
            Counters(spark.sparkContext),
            marking(m),
        )
        assert read.schema == chained.schema
        assert str(read._jdf.queryExecution().executedPlan()).count("MapInArrow") == operators
        assert sorted(map(repr, read.collect())) == want
