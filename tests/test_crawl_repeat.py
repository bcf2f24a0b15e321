"""Crawl-level template repetition: the per-document keys (filters.quality.crawl_repeat), the one-process
reference of the crawl aggregation, and the Spark stage held to that reference."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from filters.quality.crawl_repeat import CrawlRepeatConfig, crawl_template_shares, is_template, sampled_keys, span_codes

ALL = CrawlRepeatConfig(modulus=1)  # every n-gram: exact, for the small cases

# A template with slots, as a spam farm fills it (no word of any keyword list).
FRAME = (
    "{city}的朋友们注意了，最近{city}新开了一家{shop}，听说很多人去过以后都说效果非常明显，"
    "而且价格也比其他地方便宜不少，想要了解详细情况的朋友可以直接到店里咨询工作人员，"
    "现在预约还可以享受{n}折优惠，名额有限，先到先得，{city}{shop}期待您的光临。"
)
CITIES = ("杭州", "苏州", "南京", "合肥", "武汉", "长沙", "成都", "西安", "郑州", "济南", "福州", "南昌")
SHOPS = ("养生馆", "美容院", "健身房", "推拿店", "理发店", "茶馆")
PROSE = (
    "秋天的早晨，山里起了薄雾，村口的老槐树只露出半截树冠，像是浮在一片白色的湖面上。",
    "他把旧自行车推进院子，仔细擦去链条上的泥，又给车铃上了一点油，听它清脆地响了两声。",
    "会议讨论了明年的预算安排，代表们对教育和医疗两项支出提出了不同意见，最后决定分两次表决。",
    "这座桥建于清代中期，全长八十多米，由青石砌成，桥墩上的石狮子大多已经风化得看不清面目。",
    "实验表明，在温度较低的情况下，这种材料的导电性能会明显下降，需要加入少量的添加剂来改善。",
    "她在信里写道，北方的冬天虽然寒冷，但屋里有暖气，窗外的雪景也比想象中要好看得多。",
)


def _template_pages(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [FRAME.format(city=rng.choice(CITIES), shop=rng.choice(SHOPS), n=rng.randint(5, 9)) for _ in range(n)]


def _prose_pages(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.sample(PROSE, 3)) + f"第{i}页。" for i in range(n)]


def test_keys_ignore_punctuation_width_whitespace_and_digits():
    a = "今天上午，市政府召开了第3次新闻发布会，介绍全市春季植树造林的进展情况。"
    b = "今天上午 市政府召开了第７次新闻发布会!介绍全市春季植树造林的进展情况"
    assert np.array_equal(sampled_keys(a, ALL), sampled_keys(b, ALL))
    assert span_codes("Ａ1，b").tobytes() == span_codes("a0b").tobytes()
    c = "今天上午，市政府召开了第3次新闻发布会，介绍全省春季植树造林的进展情况。"  # one character differs
    assert not np.array_equal(sampled_keys(a, ALL), sampled_keys(c, ALL))


def test_sampling_keeps_the_same_spans_everywhere():
    cfg = CrawlRepeatConfig(modulus=4)
    page = _template_pages(1)[0]
    every, some = set(sampled_keys(page, ALL).tolist()), set(sampled_keys(page, cfg).tolist())
    assert some < every and 0.1 < len(some) / len(every) < 0.45
    assert len(sampled_keys("短短的一句话", ALL)) == 0  # fewer span characters than the n-gram


def test_batch_keys_equal_the_per_document_keys():
    """The vectorised batch (what the Spark stage runs) against ``sampled_keys`` text by text, on
    the reference corpus and odd inputs (empty, shorter than an n-gram, full-width, surrogates,
    digits only), in chunks small enough that texts straddle them."""
    import filters.quality.crawl_repeat as cr
    from demo.sources import news_pages

    texts = [title + "\n" + "\n".join(paras) for title, paras, _ in news_pages()[:1500]] + [
        "",
        "短",
        "ＡＢＣ１２３４５６７８９０ａｂｃ",
        "x\ud800y" * 20,
        "1234567890" * 3,
    ]
    rng = random.Random(3)
    texts += [
        "".join(
            rng.choice(
                "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处府十"
            )
        )
        for _ in range(200)
    ]
    for chunk in (1 << 20, 512):
        cr.CHUNK_CHARS, saved = chunk, cr.CHUNK_CHARS
        try:
            got = cr.batch_keys(texts, ALL if chunk == 512 else CrawlRepeatConfig())
        finally:
            cr.CHUNK_CHARS = saved
        cfg = ALL if chunk == 512 else CrawlRepeatConfig()
        for j, t in enumerate(texts):
            want = cr.document_keys(t, cfg)
            mine = got.doc == j
            spans, clauses = mine & (got.kind == cr.SPAN), mine & (got.kind == cr.CLAUSE)
            assert np.array_equal(got.keys[spans], want.spans), j
            assert np.array_equal(got.keys[clauses], want.clauses), j
            assert np.array_equal(got.weight[clauses], want.weights), j
            assert np.array_equal(got.context[spans], want.span_contexts), j
            assert np.array_equal(got.context[clauses], want.clause_contexts), j
            assert got.chars[j] == want.chars and got.n_spans[j] == len(want.spans)
    copies = cr.batch_keys(["甲乙丙丁，戊己庚辛壬癸。", "甲乙丙丁戊己庚辛 壬癸", "甲乙丙丁戊己庚辛壬"], ALL).ident
    assert copies[0] == copies[1] != copies[2]


def test_template_pages_are_templates_and_prose_is_not():
    cfg = CrawlRepeatConfig(modulus=2)
    pages, prose = _template_pages(40), [p + "。" + q for p, q in zip(PROSE, reversed(PROSE))]
    shares, n_keys = crawl_template_shares(pages + prose, cfg)
    assert all(is_template(s, n, cfg) for s, n in zip(shares[:40], n_keys[:40]))
    assert not any(is_template(s, n, cfg) for s, n in zip(shares[40:], n_keys[40:]))


STOCK = (
    "东西收到了很满意",
    "包装非常严实",
    "客服态度很热情",
    "发货速度超级快",
    "和图片上一模一样",
    "性价比真的很高",
    "用了几天感觉不错",
    "会推荐给朋友们",
    "做工比想象的好",
    "颜色也很正",
)


def test_pages_of_stock_clauses_are_templates():
    """A farm that strings short stock phrases in random order repeats no 10-character span
    across pages (the joins differ) but every clause; with clauses off it goes unseen."""
    rng = random.Random(5)
    pages = ["，".join(rng.sample(STOCK, 7)) + "。" for _ in range(30)]
    prose = [p + q for p, q in zip(PROSE, reversed(PROSE))]
    cfg = CrawlRepeatConfig(modulus=1)
    shares, n = crawl_template_shares(pages + prose, cfg)
    assert all(is_template(s, k, cfg) for s, k in zip(shares[:30], n[:30]))
    assert not any(is_template(s, k, cfg) for s, k in zip(shares[30:], n[30:]))
    off = CrawlRepeatConfig(modulus=1, min_clause=0)
    shares, n = crawl_template_shares(pages, off)
    assert sum(is_template(s, k, off) for s, k in zip(shares, n)) < 15


def test_exact_copies_count_once():
    """A text posted many times (re-punctuated or not) is dedup's business, not a template."""
    cfg = CrawlRepeatConfig(modulus=2)
    one = _template_pages(1)[0]
    copies = [one, one.replace("，", ","), one.replace("，", " ")] * 4
    shares, _ = crawl_template_shares(copies + _prose_pages(3), cfg)
    assert np.all(shares[:12] == 0.0)
    # made different by a word appended to each, they are near copies (MinHash's business): their
    # sentences are held verbatim; with the word inside the sentence, they are a template
    appended = [c + CITIES[i] + "分店" for i, c in enumerate(copies)]
    assert np.all(crawl_template_shares(appended, cfg)[0] < 0.1)
    inside = [c.replace("期待您的光临", CITIES[i] + "分店期待您的光临") for i, c in enumerate(copies)]
    assert np.all(crawl_template_shares(inside, cfg)[0] > 0.8)


ARTICLES = (
    "盗窃公私财物数额较大的或者多次盗窃入户盗窃携带凶器盗窃扒窃的处三年以下有期徒刑拘役或者管制并处或者单处罚金。",
    "故意伤害他人身体的处三年以下有期徒刑拘役或者管制犯前款罪致人重伤的处三年以上十年以下有期徒刑。",
    "以非法占有为目的诈骗公私财物数额较大的处三年以下有期徒刑拘役或者管制并处或者单处罚金。",
    "在公共场所当众实施猥亵行为或者聚众实施的处五年以上有期徒刑数额特别巨大的依照前款的规定处罚。",
)


def test_sentences_quoted_verbatim_are_copies_not_templates():
    """Pages that each quote three of four long articles of a statute (with a line of their own) hold
    the articles' keys in one context each: quotations, not a template, unless ``min_copy`` is 0
    (every key's context its page: the rule before it). A frame whose sentences change slot words
    is a template either way (``test_template_pages_are_templates_and_prose_is_not``)."""
    rng = random.Random(7)
    pages = [f"第{i}页，转载自网友的整理。\n" + "\n".join(rng.sample(ARTICLES, 3)) for i in range(12)]
    for min_copy, want in ((32, False), (0, True)):
        cfg = CrawlRepeatConfig(modulus=1, min_copy=min_copy)
        shares, n = crawl_template_shares(pages + _prose_pages(3), cfg)
        assert [is_template(s, k, cfg) for s, k in zip(shares[:12], n[:12])] == [want] * 12, min_copy


def test_min_docs_is_the_count_of_other_texts():
    cfg = CrawlRepeatConfig(modulus=1, min_docs=5)
    pages = _template_pages(4)
    shares, _ = crawl_template_shares(pages + _prose_pages(2), cfg)
    assert np.all(shares[:4] == 0.0)  # four holders: under min_docs
    shares, _ = crawl_template_shares(_template_pages(5) + _prose_pages(2), cfg)
    assert np.all(shares[:5] > 0.5)


@pytest.mark.slow
def test_spark_stage_matches_the_reference(spark):
    import pyarrow as pa

    from etl.quality.crawl_repeat import REASON, SHARE, crawl_repeat_stage, keyed
    from etl.read import records as rec

    cfg = CrawlRepeatConfig(modulus=2, min_docs=20, max_share=0.5)  # 15 kept template pages: not enough alone
    rng = random.Random(11)  # 25 pages quoting the same articles: quotations, not templates
    quotes = [f"第{i}页，网友整理。\n" + "\n".join(rng.sample(ARTICLES, 4)) for i in range(25)]
    texts = _template_pages(30) + _prose_pages(6) + [PROSE[0]] * 3 + ["太短"] + quotes
    rows = [
        {
            "kind": rec.RECORD,
            "source_file": f"f{i % 3}",
            "offset": i,
            "text": t,
            "stage": "quality" if i < 30 and i % 2 else None,  # half the template pages rejected by another rule:
            "reason": "other_rule" if i < 30 and i % 2 else None,  # still evidence of the template
            "quality_flags": None,
        }
        for i, t in enumerate(texts)
    ]
    rows.append(dict(rows[0], offset=999, text=None, stage="read", reason="unreadable"))  # no text: not counted
    rows.append(dict(rows[0], kind=rec.FILE, offset=None, text=None))
    df = spark.createDataFrame(pa.Table.from_pylist(rows).to_pandas())
    out = {(r.source_file, r.offset): r for r in crawl_repeat_stage(df, cfg).rows.collect()}
    # the build's way: the reading task cut the keys; the rule then runs in the JVM, no Python operator
    cut = spark.createDataFrame(keyed(df, cfg).toArrow())  # as persisted: no Python under it
    stage = crawl_repeat_stage(cut, cfg).rows
    assert "MapInArrow" not in str(stage._jdf.queryExecution().executedPlan())
    assert sorted(map(tuple, stage.collect())) == sorted(map(tuple, out.values()))
    want, n_keys = crawl_template_shares(texts, cfg)
    for i, t in enumerate(texts):
        r = out[(f"f{i % 3}", i)]
        if n_keys[i] == 0:
            assert r[SHARE] is None and r.reason is None
            continue
        assert r[SHARE] == pytest.approx(want[i], abs=1e-6)
        if i < 30 and i % 2:
            assert r.reason == "other_rule" and r.stage == "quality"
            continue
        assert (r.reason == REASON) == is_template(want[i], n_keys[i], cfg)
        assert (r.reason == REASON) == (REASON in (r.quality_flags or []))
    assert out[("f0", 999)].reason == "unreadable" and out[("f0", 999)][SHARE] is None
    assert all(out[(f"f{i % 3}", i)].reason == REASON for i in range(0, 30, 2))  # the template pages left
    assert not any(out[(f"f{i % 3}", i)].reason for i in range(len(texts) - len(quotes), len(texts)))


@pytest.mark.slow
def test_reference_spans_are_never_template_spans(spark, tmp_path):
    """Spans the reference corpus holds are natural text (legal formulae, set phrases), however
    many pages of a crawl repeat them; the file is verified before use, and spans of other
    settings are not used."""
    import json

    import pandas as pd
    import pyarrow.parquet as pq

    from etl.quality.crawl_repeat import (
        REASON,
        SPANS_FILE,
        SPANS_META,
        crawl_repeat_stage,
        reference_spans,
        write_reference_spans,
    )
    from etl.read import records as rec
    from filters.classifiers.classify import ModelError

    cfg = CrawlRepeatConfig(modulus=2)
    pages = _template_pages(20)
    meta = write_reference_spans(spark.createDataFrame(pd.DataFrame({"text": [FRAME]})), tmp_path, cfg)
    assert meta["keys"] > 10 and (tmp_path / SPANS_FILE).is_file()
    rows = spark.createDataFrame(
        pd.DataFrame(
            {
                "kind": rec.RECORD,
                "source_file": "f",
                "offset": range(len(pages)),
                "text": pages,
                "stage": None,
                "reason": None,
                "quality_flags": None,
            }
        )
    )
    reference, summary = reference_spans(spark, str(tmp_path), cfg)
    assert summary["reference_spans"]["keys"] == meta["keys"]
    with_reference = crawl_repeat_stage(rows, cfg, reference=reference, keep_counts=True)
    assert not any(r.reason == REASON for r in with_reference.rows.collect())
    without = crawl_repeat_stage(rows, cfg, keep_counts=True)
    assert all(r.reason == REASON for r in without.rows.collect())
    # the executors drop the reference's keys as they cut them: never counted, never kept for the nightly
    held = set(pq.read_table(tmp_path / SPANS_FILE).column("key").to_pylist())
    assert held & set(without.counts.toPandas()["key"])
    assert not held & set(with_reference.counts.toPandas()["key"])
    assert reference_spans(spark, str(tmp_path), CrawlRepeatConfig(modulus=4))[0] is None  # other settings
    data = bytearray((tmp_path / SPANS_FILE).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / SPANS_FILE).write_bytes(bytes(data))
    with pytest.raises(ModelError, match="checksum"):
        reference_spans(spark, str(tmp_path), cfg)
    assert json.loads((tmp_path / SPANS_META).read_text())["ngram"] == cfg.ngram


@pytest.mark.slow
def test_a_farm_a_few_pages_a_night_is_seen_with_the_nights_before(spark):
    """The nightly keeps each version's key counts: three template pages a night are under
    min_docs alone, six over two nights are not."""
    import pandas as pd

    from etl.quality.crawl_repeat import COUNT_COLUMNS, REASON, crawl_repeat_stage
    from etl.read import records as rec

    cfg = CrawlRepeatConfig(modulus=2, min_docs=5, max_share=0.5)
    pages = _template_pages(6, seed=9)

    def night(texts: list[str]):
        return spark.createDataFrame(
            pd.DataFrame(
                {
                    "kind": rec.RECORD,
                    "source_file": "f",
                    "offset": range(len(texts)),
                    "text": texts,
                    "stage": None,
                    "reason": None,
                    "quality_flags": None,
                }
            )
        )

    first = crawl_repeat_stage(night(pages[:3]), cfg, keep_counts=True)
    assert not any(r.reason == REASON for r in first.rows.collect())
    counts = first.counts.toPandas()
    assert tuple(counts.columns) == COUNT_COLUMNS and counts["texts"].max() == 3
    prior = spark.createDataFrame(counts)
    alone = crawl_repeat_stage(night(pages[3:]), cfg)
    assert not any(r.reason == REASON for r in alone.rows.collect())
    second = crawl_repeat_stage(night(pages[3:]), cfg, prior_counts=prior)
    assert all(r.reason == REASON for r in second.rows.collect())


def test_spun_pages_keep_the_stretches_between_swaps():
    """Issue 32: a spinner swaps a word for a synonym every few characters. One stock article with a
    slot every 7th character, each filled from 6 synonyms page by page, on 40 pages: an 8-character
    span holds one slot (about 7 pages agree on it: held) on 6 of 7 offsets, a 10-character span two
    slots (36 fillings, 1 page each) on 3 of 7. The default span length sees the farm, 10 does not,
    and prose stays prose."""
    rng = random.Random(7)
    stock = "".join(PROSE).replace("，", "").replace("。", "")
    fixed = [stock[i : i + 6] for i in range(0, 6 * 16, 6)]
    swaps = [rng.sample("甲乙丙丁戊己庚辛壬癸子丑寅卯辰巳", 6) for _ in fixed]
    pages = ["".join(f + rng.choice(s) for f, s in zip(fixed, swaps)) + "。" for _ in range(40)]
    prose = [p + q for p, q in zip(PROSE, reversed(PROSE))]
    cfg = CrawlRepeatConfig(modulus=1, min_clause=0)
    assert cfg.ngram == CrawlRepeatConfig().ngram == 8
    shares, n = crawl_template_shares(pages + prose, cfg)
    assert all(is_template(s, k, cfg) for s, k in zip(shares[:40], n[:40]))
    assert not any(is_template(s, k, cfg) for s, k in zip(shares[40:], n[40:]))
    ten = CrawlRepeatConfig(ngram=10, modulus=1, min_clause=0)
    shares, n = crawl_template_shares(pages, ten)
    assert sum(is_template(s, k, ten) for s, k in zip(shares, n)) <= 2


class _Root:
    """A corpus root on a local folder, as etl.nightly's (is_dir, read_text, uri)."""

    def __init__(self, path):
        self.path = path

    def is_dir(self, rel: str) -> bool:
        return (self.path / rel).is_dir()

    def read_text(self, rel: str) -> str | None:
        return (self.path / rel).read_text(encoding="utf-8") if (self.path / rel).exists() else None

    def uri(self, rel: str) -> str:
        return str(self.path / rel)


def test_nightly_counts_only_keys_cut_the_same_way(tmp_path):
    """Keys cut with another span length never match tonight's, nor counts made before contexts were
    counted (no ``min_copy``): a version built before a change of settings is left out of the
    template history (with a warning), the others are counted."""
    from etl.quality.crawl_repeat import template_history

    cfg = CrawlRepeatConfig()
    settings = {"ngram": cfg.ngram, "modulus": cfg.modulus, "min_clause": cfg.min_clause, "min_copy": cfg.min_copy}
    versions = {
        "v000001": {**settings, "ngram": 10},
        "v000002": settings,
        "v000003": settings,
        "v000005": {k: v for k, v in settings.items() if k != "min_copy"},
    }
    for v, template in versions.items():
        (tmp_path / "versions" / v / "template_keys").mkdir(parents=True)
        report = {"config": {"quality": {"template": template}}}
        (tmp_path / "versions" / v / "report.json").write_text(json.dumps(report), encoding="utf-8")
    (tmp_path / "versions" / "v000004").mkdir()  # no template_keys/ (the rule was off)
    got = template_history(_Root(tmp_path), ["v000001", "v000002", "v000003", "v000004", "v000005"], cfg)
    assert got == [str(tmp_path / "versions" / v / "template_keys") for v in ("v000002", "v000003")]


@pytest.mark.slow
def test_key_counts_shuffle_the_keys_once(spark):
    """The distinct (key, text) pairs and the count per key both aggregate inside one shuffle by
    key (two, distinct then count, before): the keys are the template rule's bulk."""
    import pandas as pd

    from etl.quality.crawl_repeat import key_counts

    keys = spark.createDataFrame(pd.DataFrame({"key": [1, 1, 2, 1], "ident": [7, 7, 7, 8], "context": [5, 5, 5, 3]}))
    counts = key_counts(keys)
    assert sorted(map(tuple, counts.collect())) == [(1, 2, 3, 5), (2, 1, 5, 5)]
    final = str(counts._jdf.queryExecution().executedPlan()).split("== Initial Plan ==")[0]  # AQE prints both
    assert final.count("Exchange") == 1
