"""The whole chain on the hand-built crawl: every record in exactly one of documents / rejected /
duplicates, shards that decode back to the kept documents, and a report page that renders."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest

from etl.corpus import BuildConfig
from etl.corpus import build_corpus as run
from jobs.config import load_config
from tests import crawl_fixture

pytestmark = pytest.mark.slow
TINY_TOKENIZER = ["tokenizer.vocab_size=600", "tokenizer.character_coverage=0.98"]


# An evaluation set: one of the fixture's paragraphs (matched by n-grams wherever a page embeds it)
# and a phrase shorter than the n-gram (matched whole).
EVAL_ITEMS = [{"id": "q1", "text": crawl_fixture.P[3]}, {"id": "q2", "text": crawl_fixture.P[5][10:22]}]
PHONE = "13812345678"


def _extra_inputs(root):
    """A page with a mobile number (redacted by default) and the evaluation set (not an input)."""
    page = crawl_fixture.doc(4, 6) + f"\n联系电话：{PHONE[:3]} {PHONE[3:7]} {PHONE[7:]}，欢迎来电咨询。"
    (root / "in" / "pii.jsonl").write_text(
        json.dumps({"id": "pii-1", "text": page}, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    evals = root / "evals" / "demo_bench.jsonl"
    evals.parent.mkdir()
    evals.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in EVAL_ITEMS), encoding="utf-8")
    return evals


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("chain")
    crawl_fixture.build(root / "in")
    evals = _extra_inputs(root)
    cfg = load_config(
        BuildConfig, None, TINY_TOKENIZER + ["shards.num_shards=3", f"decontaminate.eval_sets=['{evals}']"]
    )
    report = run(cfg, [str(root / "in")], str(root / "out"), spark=spark)
    read = lambda name: spark.read.parquet(str(root / "out" / name)).toPandas()  # noqa: E731
    return {
        "root": root,
        "out": root / "out",
        "report": report,
        "docs": read("documents"),
        "rejected": read("rejected"),
        "dups": read("duplicates"),
    }


def test_every_record_is_in_exactly_one_output(built):
    r, docs, rejected, dups = built["report"], built["docs"], built["rejected"], built["dups"]
    ids = [*docs.doc_id, *rejected.doc_id, *dups.doc_id]
    assert len(ids) == len(set(ids)) == r["input"]["records"]
    assert (len(docs), len(rejected), len(dups)) == (r["documents"], r["rejected"], r["duplicates"])
    assert r["balanced"] and r["duplicates"] > 0  # the fixture's pages reuse paragraphs: there are duplicates
    # a duplicate names the kept copy, or one that decontamination dropped after dedup
    contaminated = set(rejected.doc_id[rejected.reason == "contaminated"])
    assert set(dups.duplicate_of) <= set(docs.doc_id) | contaminated
    per_file = Counter()
    for f in r["files"].values():
        assert f["records"] == f["documents"] + f["rejected"] + f.get("duplicates", 0)
        per_file["duplicates"] += f.get("duplicates", 0)
    assert per_file["duplicates"] == r["duplicates"]
    assert json.loads((built["out"] / "report.json").read_text(encoding="utf-8"))["balanced"]


def test_shards_decode_back_to_the_kept_documents(built):
    from base.manifest import open_shards
    from filters.tokenizer import ZhTokenizer

    tok = ZhTokenizer.load(built["out"] / "tokenizer")
    manifest = built["out"] / "shards" / "manifest.json"
    decoded = []
    for ds in open_shards(str(manifest)):  # verifies every sha256 and count against the manifest
        for i in range(len(ds)):
            ids = ds[i].tolist()
            assert ids[-1] == tok.eod_id and tok.eod_id not in ids[:-1]
            decoded.append(tok.decode(ids[:-1]))
    assert Counter(decoded) == Counter(built["docs"].text)
    shards = built["report"]["shards"]
    assert shards["documents"] == len(built["docs"]) and shards["num_shards"] == 3
    assert sum(shards["tokens_per_source"].values()) == shards["total_tokens"]


def test_report_page_renders_its_plots_in_chromium(built, tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    from etl.report.html import PLOTS

    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver_bin, "make browser installs Debian's chromium and chromium-driver"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path}/profile"):
        opts.add_argument(arg)
    browser = webdriver.Chrome(service=Service(driver_bin), options=opts)
    try:
        browser.get((built["out"] / "report.html").as_uri())
        for plot in PLOTS:
            fig = browser.find_element(By.ID, f"plot-{plot}")
            svg = fig.find_element(By.TAG_NAME, "svg")  # every plot has data in this build
            assert svg.size["width"] > 200 and svg.size["height"] > 100, plot
            marks = svg.find_elements(By.CSS_SELECTOR, "path, line, rect")  # matplotlib's paths, or drawn directly
            assert len(marks) > 10, plot
        r = built["report"]
        cell = lambda key: browser.find_element(By.CSS_SELECTOR, f'#ledger td[data-key="{key}"]').text  # noqa: E731
        assert cell("input records") == f"{r['input']['records']:,}"
        assert cell("duplicates") == f"{r['duplicates']:,}"
        assert cell("balanced") == "True"
        body = browser.find_element(By.TAG_NAME, "body").text
        assert f"tokens: {r['shards']['total_tokens']:,}" in body  # issue 35: separators as elsewhere
        assert browser.save_screenshot(str(tmp_path / "report.png")) and (tmp_path / "report.png").stat().st_size
    finally:
        browser.quit()


def test_decontamination_drops_pages_with_evaluation_text_and_only_those(built):
    docs, rejected, r = built["docs"], built["rejected"], built["report"]
    dropped = rejected[rejected.reason == "contaminated"]
    assert len(dropped) > 0 and set(dropped.stage) == {"decontaminate"}
    for text in dropped.text:  # each contains an item: whole paragraph (n-grams) or the short phrase (whole)
        assert any(item["text"] in text for item in EVAL_ITEMS)
    for text in docs.text:
        assert not any(item["text"] in text for item in EVAL_ITEMS)
    assert set(dropped.detail.str.split(":").str[0]) == {"demo_bench"}
    bench = r["decontaminate"]["benchmarks"]["demo_bench"]
    assert (bench["ngram_items"], bench["whole_items"]) == (1, 1) and bench["documents_hit"] == len(dropped)
    assert r["rejected_by_stage"]["decontaminate"]["reasons"]["contaminated"] == len(dropped)


def test_personal_data_is_redacted_in_documents_and_counted(built):
    docs, r = built["docs"], built["report"]
    page = docs[docs.doc_id == "pii-1"].iloc[0]
    assert "联系电话：<PHONE>，" in page.text and dict(page.pii_redacted) == {"mobile": 1}
    assert r["pii"]["kinds"]["mobile"]["spans"] == 1 and r["transforms"]["pii_mobile_spans_redacted"] == 1
    assert not any(PHONE in t.replace(" ", "") for t in docs.text)


def test_dedup_job_on_the_built_documents(built, tmp_path, caplog):
    """jobs.dedup end to end: deduplicated documents stay as they are; an old key is refused."""
    from jobs import dedup as dedup_job

    docs = str(built["out"] / "documents")
    assert dedup_job.main(["--input", docs, "--output", str(tmp_path / "d"), "--set", "dedup.verify=enforce"]) == 0
    report = json.loads((tmp_path / "d" / "report.json").read_text(encoding="utf-8"))
    assert report["balanced"] and report["documents"] == len(built["docs"]) and report["duplicates"] == 0
    assert report["dedup"]["verification"]["mode"] == "enforce"
    assert not (tmp_path / "d" / "_dedup_keys").exists()
    assert dedup_job.main(["--input", docs, "--output", str(tmp_path / "e"), "--set", "verify=off"]) == 2
    assert "verify was renamed: use dedup.verify" in caplog.text and not (tmp_path / "e").exists()


def test_the_first_phase_leaves_no_cache_behind(spark, tmp_path):
    """``Marked.unpersist`` lets go of what the first phase persisted, with the template rule on (the
    rows it joined its shares to) and off (the cache the rows are derived from, not the derived frame)."""
    from etl.documents import read_clean_classify
    from etl.runtime.progress import Counters

    crawl_fixture.build(tmp_path / "in")
    persistent = spark.sparkContext._jsc.getPersistentRDDs  # the cached frames, once materialised
    for setting in ("quality.template.enabled=true", "quality.enabled=false"):
        cfg = load_config(BuildConfig, None, [setting])
        before = persistent().size()
        marked = read_clean_classify(
            spark,
            [str(tmp_path / "in")],
            cfg.reader,
            cfg.rules,
            cfg.pii,
            cfg.quality,
            cfg.classify,
            Counters(spark.sparkContext),
        )
        assert sum(marked.text_bytes()) > 0 and persistent().size() > before
        marked.unpersist()
        assert persistent().size() == before, setting
