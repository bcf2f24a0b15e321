"""jobs.judge_rules (issue 17): rule variants judged by the dev perplexity of proxy models.

Fast part: the variants file, the config keys, the report's statistics and the training side on
hand-made shards (a Markov "language" the dev set is written in, against uniform noise). Slow
part: the whole job on a small demo crawl (baseline against the rules switched off), its report
in Chromium, a second run for reproducibility, and the refusals that need real builds.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from etl.judge import BASELINE, JudgeError, as_overrides, read_variants
from etl.judge_report import TIMINGS, _seed_stats, _vs_baseline
from jobs.config import parse_override
from tests import shard_fixture
from train.proxy import ProxyConfig, ProxyError, ProxyRun, check_runs, train_one

V = 64        # the synthetic vocabulary
SHA = "a" * 64  # the synthetic tokenizer's "sha256"


@pytest.fixture(scope="module", autouse=True)
def _no_ray_left():
    """Whatever Ray this module starts (2 CPUs) goes with it: test_train_lm needs its own."""
    yield
    import ray

    ray.shutdown()


# --- variants file and keys ---------------------------------------------------------------------

def test_variants_file_adds_the_baseline_first_and_flattens_nested_tables(tmp_path):
    f = tmp_path / "v.toml"
    f.write_text('[short_ok]\n"rules.length.min_chars" = 50\n[nested.rules.ads]\nenabled = false\n', encoding="utf-8")
    v = read_variants(f)
    assert list(v) == [BASELINE, "short_ok", "nested"]
    assert v == {BASELINE: {}, "short_ok": {"rules.length.min_chars": 50}, "nested": {"rules.ads.enabled": False}}


@pytest.mark.parametrize("body, match", [
    ('[v]\n"tokenizer.vocab_size" = 4000\n', "one tokenizer for all variants"),
    ('[v]\n"spark.master" = "local[1]"\n', "changes only"),
    ('[v]\n"judge.seeds" = [1, 2]\n', "changes only"),
    ('v = 3\n', "not a table"),
])
def test_variants_outside_the_build_sections_are_refused(tmp_path, body, match):
    f = tmp_path / "v.toml"
    f.write_text(body, encoding="utf-8")
    with pytest.raises(JudgeError, match=match):
        read_variants(f)


def test_variant_values_reach_the_config_loader_unchanged():
    keys = {"a.s": 'quote " and 中文 \\ tab\t', "a.b": False, "a.f": 0.7, "a.i": -3, "a.l": ["x", 1.5],
            "a.inf": math.inf}
    assert dict(parse_override(o) for o in as_overrides(keys)) == keys


def test_an_unknown_variant_key_is_refused_before_any_work(tmp_path, caplog):
    from jobs.judge_rules import main

    f = tmp_path / "v.toml"
    f.write_text('[typo]\n"rules.length.min_charz" = 300\n', encoding="utf-8")
    code = main(["--input", str(tmp_path / "nothing"), "--variants", str(f), "--dev", str(tmp_path / "none.jsonl"),
                 "--output", str(tmp_path / "out")])
    assert code == 2
    assert "variant typo" in caplog.text and "rules.length.min_charz" in caplog.text
    assert not (tmp_path / "out").exists()


# --- the report's statistics --------------------------------------------------------------------

def _runs(name, losses):
    return [{"variant": name, "seed": s, "status": "ok", "dev_loss": x, "dev_curve": [[10, x]], "train_loss": []}
            for s, x in enumerate(losses)]


def test_a_difference_counts_only_beyond_the_seed_spread():
    base = _seed_stats(_runs("b", [3.0, 3.1]), [0, 1])  # ppl 20.09, 22.20: spread 2.11
    near = _seed_stats(_runs("n", [3.05, 3.15]), [0, 1])
    far = _seed_stats(_runs("f", [3.5, 3.55]), [0, 1])
    assert base["spread_dev_ppl"] == pytest.approx(math.exp(3.1) - math.exp(3.0))
    assert _vs_baseline(near, base)["exceeds_spread"] is False
    worse = _vs_baseline(far, base)
    assert worse["exceeds_spread"] is True and worse["diff"] > 0 and worse["verdict"] == "worse than the baseline"


def test_a_failed_seed_is_left_out_and_named():
    runs = _runs("v", [3.0, 3.2])
    runs[1] = {"variant": "v", "seed": 1, "status": "failed", "error": "WorkerCrashedError: gone"}
    s = _seed_stats(runs, [0, 1])
    assert s["seeds_ok"] == [0] and s["spread_dev_ppl"] is None
    assert s["runs"][1] == {"seed": 1, "status": "failed", "error": "WorkerCrashedError: gone"}


# --- the training side on hand-made shards ------------------------------------------------------

def _markov(rng: random.Random, n: int) -> list[int]:
    """The dev set's "language": each token has three likely successors."""
    t, out = rng.randrange(1, V), []
    for _ in range(n):
        t = rng.choices([(t * 7 + 1) % (V - 1) + 1, (t * 13 + 5) % (V - 1) + 1, (t * 3 + 2) % (V - 1) + 1],
                        [0.6, 0.3, 0.1])[0]
        out.append(t)
    return out


def _corpus(root: Path, kind: str, n_docs: int, seed: int, sha: str = SHA) -> str:
    rng = random.Random(f"{kind}:{seed}")
    make = {"clean": lambda: _markov(rng, 60), "noise": lambda: [rng.randrange(1, V) for _ in range(60)]}[kind]
    docs = [(i % 2, "web", make() + [0]) for i in range(n_docs)]
    path = shard_fixture.write_corpus(root, docs, 2, ["web"], eod_id=0, vocab_size=V)
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "tokenizer_sha256": sha}))
    return str(path)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("shards")
    return {"clean": _corpus(root / "clean", "clean", 80, 1), "noise": _corpus(root / "noise", "noise", 40, 2),
            "dev": _corpus(root / "dev", "clean", 30, 3), "tiny": _corpus(root / "tiny", "clean", 0, 4),
            "other_tok": _corpus(root / "other", "clean", 20, 5, sha="b" * 64)}


def _proxy(**train) -> ProxyConfig:
    from train.loop import LoopConfig

    cfg = ProxyConfig(train=LoopConfig(**{"steps": 60, "global_batch": 8, "micro_batch": 8, "lr": 1e-2, "warmup": 5,
                                          "log_every": 20, "eval_every": 20, **train}))
    return cfg.resolved()


def test_every_variant_gets_the_same_budget_and_the_epochs_it_took(shards):
    cfg = _proxy()
    runs = [ProxyRun("clean", 0, shards["clean"], shards["dev"]), ProxyRun("noise", 0, shards["noise"], shards["dev"])]
    checked = check_runs(cfg, runs)
    assert cfg.budget == 60 * 8 * 16
    for name, n_docs in (("clean", 80), ("noise", 40)):
        v = checked["variants"][name]
        assert v["tokens"] == n_docs * 61 and v["epochs"] == pytest.approx(cfg.budget / v["tokens"])
    assert checked["dev"]["eval_batches"] == (30 * 61 - 1) // 16 // 8


@pytest.mark.parametrize("corpus, dev, match", [
    ("tiny", "dev", "variant v: its corpus cannot give one training sample"),
    ("other_tok", "dev", "tokenizer mismatch"),
    ("clean", "tiny", "the dev set cannot give one window"),
])
def test_what_cannot_give_comparable_runs_is_refused_before_training(shards, corpus, dev, match):
    with pytest.raises(ProxyError, match=match):
        check_runs(_proxy(), [ProxyRun("v", 0, shards[corpus], shards[dev])])


@pytest.fixture(scope="module")
def trained(shards):
    cfg = _proxy()
    return {(k, s): train_one(cfg, ProxyRun(k, s, shards[k], shards["dev"]))
            for k in ("clean", "noise") for s in (0, 1)}


def test_the_proxy_sees_data_quality_beyond_the_seed_spread(trained):
    ppl = {k: [math.exp(trained[k, s]["dev_loss"]) for s in (0, 1)] for k in ("clean", "noise")}
    spread = max(max(p) - min(p) for p in ppl.values())
    assert min(ppl["noise"]) - max(ppl["clean"]) > spread, ppl
    assert [step for step, _ in trained["clean", 0]["dev_curve"]] == [20, 40, 60]


def test_same_seed_same_losses_other_seed_other_losses(shards, trained):
    again = train_one(_proxy(), ProxyRun("clean", 0, shards["clean"], shards["dev"]))
    assert again["dev_curve"] == trained["clean", 0]["dev_curve"]
    assert again["train_loss"] == trained["clean", 0]["train_loss"]
    assert trained["clean", 1]["dev_curve"] != trained["clean", 0]["dev_curve"]


@pytest.mark.slow
def test_a_failed_run_is_reported_and_the_others_finish(shards, tmp_path):
    from train.proxy import run_proxies

    runs = [ProxyRun("clean", 0, shards["clean"], shards["dev"]),
            ProxyRun("gone", 0, str(tmp_path / "missing" / "manifest.json"), shards["dev"])]
    results = run_proxies(_proxy(), runs)
    assert [r["status"] for r in results] == ["ok", "failed"]
    assert "missing" in results[1]["error"] and results[0]["dev_loss"] > 0


# --- the whole job on a small demo crawl (slow) -------------------------------------------------

RULES_OFF = {  # the harmful variant: PanGu-α's rules switched off, so spam, ads, navigation, dumps flow in
    "rules.length.min_chars": 0, "rules.length.min_han_ratio": 0.0, "rules.length.title_only_slack_chars": 0,
    "rules.length.bare_title_max_chars": 0, "rules.ads.enabled": False, "rules.sensitive.enabled": False,
    "rules.navbar.enabled": False, "rules.paragraphs.enabled": False}
TINY = ["spark.master=local[2]", "tokenizer.vocab_size=2000", "tokenizer.character_coverage=0.98",
        "judge.min_dev_documents=5", "proxy.model.seq_len=32", "proxy.model.dim=32", "proxy.model.ffn_dim=64",
        "proxy.model.n_layers=2", "proxy.data.seq_len=32", "proxy.train.steps=150", "proxy.train.eval_every=50"]
PLANTED = 3


def _variants(path: Path, variants: dict[str, dict]) -> str:
    path.write_text("".join(f"[{name}]\n" + "".join(f"{json.dumps(k)} = {json.dumps(v)}\n" for k, v in keys.items())
                            for name, keys in variants.items()), encoding="utf-8")
    return str(path)


def _judge(inputs: list[str], variants: str, dev: str, out: Path, extra: list[str] = ()) -> int:
    from jobs.judge_rules import main

    sets = [a for s in TINY + list(extra) for a in ("--set", s)]
    return main(["--input", *inputs, "--variants", variants, "--dev", dev, "--output", str(out), *sets])


@pytest.fixture(scope="module")
def judged(spark, tmp_path_factory):
    from demo.crawl import build_demo_crawl
    from demo.dev_set import write as write_dev

    root = tmp_path_factory.mktemp("judge")
    build_demo_crawl(root / "crawl", max_docs=300, min_mb=0, big_line_mb=0.2)
    dev = write_dev(root / "crawl", root / "dev", n_docs=40, n_planted=PLANTED)
    inputs = [str(root / "crawl" / d) for d in ("warc", "wet", "jsonl")]
    variants = _variants(root / "variants.toml", {"rules_off": RULES_OFF})
    assert _judge(inputs, variants, str(root / "dev" / "dev.jsonl"), root / "out") == 0
    return {"root": root, "out": root / "out", "inputs": inputs, "variants": variants, "dev": dev,
            "report": json.loads((root / "out" / "judge.json").read_text(encoding="utf-8"))}


@pytest.mark.slow
def test_the_harmful_variant_ranks_below_the_baseline_beyond_the_seed_spread(judged):
    r = judged["report"]
    assert r["ranking"] == [BASELINE, "rules_off"], r["ranking"]
    base, harmful = r["variants"][BASELINE], r["variants"]["rules_off"]
    assert len(base["dev_ppl"]) == len(harmful["dev_ppl"]) == 2
    spread = max(base["spread_dev_ppl"], harmful["spread_dev_ppl"])
    assert harmful["mean_dev_ppl"] - base["mean_dev_ppl"] > spread
    assert harmful["vs_baseline"]["exceeds_spread"] is True
    moved = {(m["from"], m["to"]): m["records"] for m in harmful["ledger_moves"]}
    assert moved[("clean/too_short", "kept")] > 0 and moved[("clean/advertisement", "kept")] > 0
    assert harmful["documents"] > base["documents"]


@pytest.mark.slow
def test_every_run_trains_on_the_same_token_budget(judged):
    r, out = judged["report"], judged["out"]
    assert r["budget"] == {"tokens": 150 * 16 * 32, "steps": 150}
    for name, v in r["variants"].items():
        assert v["epochs"] == pytest.approx(r["budget"]["tokens"] / v["tokens"])
        for seed in r["seeds"]:
            run = json.loads((out / "runs" / name / f"seed-{seed}.json").read_text())
            assert run["train_loss"][-1][0] == r["budget"]["steps"]  # every run ran every step


@pytest.mark.slow
def test_the_dev_set_never_overlaps_training_documents(judged, spark):
    from filters.minhash import MinHashParams, normalise

    r, out = judged["report"], judged["out"]
    n = MinHashParams().shingle
    shingles = lambda t: {t[i:i + n] for i in range(max(1, len(t) - n + 1))}  # noqa: E731
    dev = [shingles(normalise(t)) for t in spark.read.parquet(str(out / "dev" / "dedup" / "documents")).toPandas().text]
    worst = 0.0
    for name in r["variants"]:
        for text in spark.read.parquet(str(out / "variants" / name / "documents")).toPandas().text:
            s = shingles(normalise(text))
            worst = max([worst] + [len(s & d) / len(s | d) for d in dev])
    assert worst < r["config"]["baseline"]["dedup"]["minhash"]["threshold"], worst
    assert len(dev) == r["dev"]["documents"] == 40 + PLANTED - r["dev"]["overlap_removed"]
    removed = set(spark.read.parquet(str(out / "dev" / "dedup" / "duplicates")).toPandas().doc_id)
    assert {f"dev:{i}" for i in judged["dev"]["planted"]} <= removed


@pytest.mark.slow
def test_the_report_page_matches_judge_json_in_chromium(judged, tmp_path):
    import shutil

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    from etl.judge_html import PLOTS, fmt

    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver_bin, "make browser installs Debian's chromium and chromium-driver"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path}/profile"):
        opts.add_argument(arg)
    browser = webdriver.Chrome(service=Service(driver_bin), options=opts)
    r = judged["report"]
    try:
        browser.get((judged["out"] / "judge.html").as_uri())
        assert not browser.find_elements(By.TAG_NAME, "script")
        for plot in PLOTS:
            svg = browser.find_element(By.ID, f"plot-{plot}").find_element(By.TAG_NAME, "svg")
            assert svg.size["width"] > 200 and svg.size["height"] > 100, plot
            assert len(svg.find_elements(By.TAG_NAME, "path")) > 10, plot
        cell = lambda key: browser.find_element(By.CSS_SELECTOR, f'td[data-key="{key}"]')  # noqa: E731
        for name, v in r["variants"].items():
            expect = {"mean_dev_ppl": v["mean_dev_ppl"], "spread_dev_ppl": v["spread_dev_ppl"],
                      "tokens": v["tokens"], "documents": v["documents"], "epochs": v["epochs"]}
            expect.update({f"dev_ppl:{s}": p for s, p in zip(v["seeds_ok"], v["dev_ppl"])})
            expect.update({f"dev_loss:{s}": x for s, x in zip(v["seeds_ok"], v["dev_loss"])})
            for key, value in expect.items():
                td = cell(f"{name}:{key}")
                assert json.loads(td.get_attribute("data-value")) == value and td.text == fmt(value), (name, key)
        rows = browser.find_elements(By.CSS_SELECTOR, "#ranking tr td:nth-child(2)")
        assert [td.text for td in rows] == r["ranking"]
        assert cell("dev:overlap_removed").text == fmt(r["dev"]["overlap_removed"])
    finally:
        browser.quit()


@pytest.mark.slow
def test_the_same_seeds_give_the_same_judge_json(judged):
    again = judged["root"] / "again"
    assert _judge(judged["inputs"], judged["variants"], str(judged["root"] / "dev" / "dev.jsonl"), again) == 0
    first = {k: v for k, v in judged["report"].items() if k != TIMINGS}
    second = {k: v for k, v in json.loads((again / "judge.json").read_text(encoding="utf-8")).items() if k != TIMINGS}
    assert second == first


@pytest.fixture(scope="module")
def small_input(judged):
    """Twelve news articles as one JSONL input, and the first run's tokenizer: builds in seconds."""
    root = judged["root"] / "small"
    root.mkdir()
    lines = (judged["root"] / "dev" / "dev.jsonl").read_text(encoding="utf-8").splitlines()
    docs = [json.loads(line) for line in lines]
    (root / "in.jsonl").write_text("".join(json.dumps({"id": f"in-{i}", "text": d["text"]}, ensure_ascii=False) + "\n"
                                           for i, d in enumerate(docs[:12])), encoding="utf-8")
    return {"root": root, "input": str(root / "in.jsonl"), "docs": docs[:12],
            "tokenizer": f"tokenizer.model={judged['out'] / 'variants' / BASELINE / 'tokenizer'}"}


@pytest.mark.slow
def test_a_variant_that_keeps_nothing_is_refused_before_training(small_input, caplog):
    root = small_input["root"]
    variants = _variants(root / "empty.toml", {"keeps_nothing": {"rules.length.min_chars": 10**9}})
    code = _judge([small_input["input"]], variants, small_input["input"], root / "out-empty",
                  [small_input["tokenizer"]])
    assert code == 2 and "variant keeps_nothing kept no documents" in caplog.text
    assert not (root / "out-empty").exists() and "proxy run" not in caplog.text


@pytest.mark.slow
def test_a_dev_set_that_overlaps_everything_is_refused_before_training(small_input, caplog):
    root = small_input["root"]
    dev = root / "copies.jsonl"  # the input's own articles, with a few characters changed
    dev.write_text("".join(json.dumps({"text": d["text"].replace("的", "之", 2)}, ensure_ascii=False) + "\n"
                           for d in small_input["docs"]), encoding="utf-8")
    code = _judge([small_input["input"]], _variants(root / "none.toml", {}), str(dev), root / "out-dev",
                  [small_input["tokenizer"]])
    assert code == 2 and "the dev set overlaps the training documents: 12 of 12" in caplog.text
    assert not (root / "out-dev").exists() and "proxy run" not in caplog.text
