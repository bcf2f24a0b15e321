"""Leave-one-family-out (LOFO): how much spam of a family the chain removes when nothing that learns
from labels has seen that family (issue 32, item 1).

    python -m bench.evals.lofo [--sets data/ood/ood.jsonl ...] [--only-full] [--families a,b]
        [--set key=value ...] [--output out/bench/lofo] [--report out/bench/lofo.json]

The evaluation crawl is every set of ``--sets`` (default: those of data/ood, data/ood_blind and
data/ood_web that exist) plus ``--heldout`` fresh pages of each of the seed's ten spam families
(``demo.seed.spam.FAMILIES``, a new RNG seed, no page of the training file), in one JSONL with ids
``{set}:{id}`` and families ``{set}/{family}``. Runs of ``python -m jobs.clean`` on it, each with
``make demo``'s quality model and fluency profile and a spam model trained with ``make demo``'s
flags (``TRAIN_FLAGS``):

- ``full``: the spam model of the whole seed (data/seed/spam.jsonl). No family of an evaluation
  set is in the seed, so this one run is every such family's LOFO run; it also gives good
  documents kept and good lines removed per genre, and chrome-only pages removed per set.
- ``without-FAMILY``, one per seed family: the spam model of the seed less that family's records;
  only that family's held-out pages are scored on it.

The spam classifier is all that learns from spam labels. The quality model learns hq (reference)
against lq (raw demo crawl), not families, and the fluency profile the reference alone: both are
``make demo``'s in every run. Trained models are cached by the sha256 of their training file
(OUTPUT/models/spam-SHA): a rerun trains nothing. Writes REPORT (lofo.json) and prints its table;
each run's output is OUTPUT/clean/RUN, its log OUTPUT/logs/RUN.log.

``--only-full`` skips the per-family retrains (a quick look: the seed families are then scored by
the model that was trained on them, marked ``lofo: false`` and left out of the macro average).
``--families`` limits the families reported (``local_seo``, or ``ood_blind/fake_review``) and the
retrains to the seed families named.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

from bench import harness
from bench.evals.lofo_data import (
    SEED_SET,
    heldout_pages,
    hold_out,
    merge_sets,
    read_jsonl,
    seed_families,
    set_name,
    write_jsonl,
)
from bench.evals.ood import _pct, clean_command, ood_metrics, read_outputs

DEFAULT_SETS = ("data/ood/ood.jsonl", "data/ood_blind/ood.jsonl", "data/ood_web/ood.jsonl")
# make demo's spam model (Makefile, $(DEMO_OUT)/models/%/metadata.json): tests/test_bench_lofo.py
# checks the Makefile still passes these
TRAIN_FLAGS = (
    "classifier.threshold_rule=keep_reference",
    "classifier.keep_share=0.998",
    "classifier.within_boundary=true",
)
FULL = "full"
# issue 32, item 1: (name, lofo.json key, ">=" or "<=", bound, the key that says where)
TARGETS = (
    ("LOFO macro removal", "macro_removal", ">=", 0.85, None),
    ("worst family removal", "worst_removal", ">=", 0.60, "worst_family"),
    ("good kept, worst genre", "min_good_kept", ">=", 0.98, "min_good_kept_genre"),
    ("good lines removed, worst genre", "max_lines_removed", "<=", 0.005, "max_lines_removed_genre"),
)


def run_of(family: str, retrained: set[str]) -> str:
    """The run that scores a family (``{set}/{family}``): its own retrain, else the full model."""
    set_, _, name = family.partition("/")
    return f"without-{name}" if set_ == SEED_SET and name in retrained else FULL


def family_rows(labels: list[dict], runs: dict[str, tuple[list, list]], retrained: set[str]) -> dict:
    """``{set}/{family}`` -> {set, n, removed, share, run, lofo, full_share} for every spam family
    of ``labels``; ``runs`` maps a run to its (documents, rejected) rows. ``full_share`` is the full
    model's removal, the in-distribution figure for a seed family."""
    out = {}
    for family in sorted({r["family"] for r in labels if r["label"] == "spam"}):
        mine = [r for r in labels if r["family"] == family and r["label"] == "spam"]
        run = run_of(family, retrained)
        spam = ood_metrics(mine, *runs[run])["spam"][family]
        full = ood_metrics(mine, *runs[FULL])["spam"][family] if run != FULL else spam
        set_ = mine[0]["set"]
        out[family] = {
            "set": set_,
            "n": spam["n"],
            "removed": spam["hit"],
            "share": spam["share"],
            "run": run,
            "lofo": run != FULL or set_ != SEED_SET,  # the full model was trained on the seed's families
            "full_share": full["share"],
        }
    return out


def good_by_genre(metrics: dict) -> dict:
    """``ood_metrics``' good documents and good lines, one row per genre."""
    out = {}
    for genre, g in metrics["good"].items():
        if genre != "all":
            ln = metrics["good_lines"].get(genre, {"lines": 0, "removed": 0, "share": None})
            out[genre] = {"n": g["n"], "kept": g["hit"], "share": g["share"]}
            out[genre] |= {"lines": ln["lines"], "lines_removed": ln["removed"], "lines_share": ln["share"]}
    return out


def chrome_by_set(labels: list[dict], rejected: list[dict]) -> dict:
    removed = {r["doc_id"] for r in rejected}
    out: dict[str, dict] = {}
    for r in labels:
        if r["label"] == "chrome":
            row = out.setdefault(r["set"], {"n": 0, "removed": 0})
            row["n"] += 1
            row["removed"] += r["id"] in removed
    return {s: {**v, "share": v["removed"] / v["n"]} for s, v in sorted(out.items())}


def lofo_report(labels: list[dict], runs: dict[str, tuple[list, list]], retrained: set[str], to_simplified) -> dict:
    """lofo.json's figures from the labelled crawl and each run's (documents, rejected) rows."""
    families = family_rows(labels, runs, retrained)
    counted = {f: v["share"] for f, v in families.items() if v["lofo"] and v["share"] is not None}
    worst = min(counted, key=counted.get) if counted else None
    full = ood_metrics([r for r in labels if r["label"] != "spam"], *runs[FULL], to_simplified)
    genres = good_by_genre(full)
    kept = {g: v["share"] for g, v in genres.items() if v["share"] is not None}
    lines = {g: v["lines_share"] for g, v in genres.items() if v["lines_share"] is not None}
    report = {
        "macro_removal": sum(counted.values()) / len(counted) if counted else None,
        "worst_family": worst,
        "worst_removal": counted.get(worst),
        "min_good_kept": min(kept.values(), default=None),
        "min_good_kept_genre": min(kept, key=kept.get) if kept else None,
        "max_lines_removed": max(lines.values(), default=None),
        "max_lines_removed_genre": max(lines, key=lines.get) if lines else None,
        "families": families,
        "good_kept_by_genre": genres,
        "chrome_removed": chrome_by_set(labels, runs[FULL][1]),
        "unaccounted": full["unaccounted"],
    }
    return {**report, "targets": target_checks(report)}


def target_checks(report: dict) -> list[dict]:
    out = []
    for name, key, op, bound, where in TARGETS:
        v = report[key]
        met = None if v is None else (v >= bound if op == ">=" else v <= bound)
        out.append({"target": name, "value": v, "op": op, "bound": bound, "met": met, "where": report.get(where)})
    return out


def table_lines(report: dict) -> list[str]:
    out = [f"{'spam family':<28}{'pages':>6}{'removed':>9}{'run':>24}{'full model':>12}"]
    for f, v in report["families"].items():
        note = "" if v["lofo"] else "  (trained on it: not LOFO)"
        out.append(f"{f:<28}{v['n']:>6}{_pct(v['share']):>9}{v['run']:>24}{_pct(v['full_share']):>12}{note}")
    out += ["", f"LOFO macro removal {_pct(report['macro_removal'])}, worst {report['worst_family']}"]
    out[-1] += f" {_pct(report['worst_removal'])}"
    out += ["", f"{'good genre (full run)':<28}{'docs':>6}{'kept':>9}{'lines':>8}{'removed':>9}"]
    for g, v in report["good_kept_by_genre"].items():
        out.append(f"{g:<28}{v['n']:>6}{_pct(v['share']):>9}{v['lines']:>8}{_pct(v['lines_share']):>9}")
    out += ["", f"{'chrome-only (full run)':<28}{'pages':>6}{'removed':>9}"]
    out += [f"{s:<28}{v['n']:>6}{_pct(v['share']):>9}" for s, v in report["chrome_removed"].items()]
    if report["unaccounted"]:
        out += ["", f"UNACCOUNTED (in neither output): {len(report['unaccounted'])}"]
    out += ["", "issue-32 targets:"]
    for t in report["targets"]:
        met = "met" if t["met"] else "NOT MET" if t["met"] is False else "n/a"
        value = "n/a" if t["value"] is None else f"{100 * t['value']:.2f}%"
        out.append(f"  {t['target']:<34}{value:>8} {t['op']} {100 * t['bound']:.1f}%  {met:<8}{t['where'] or ''}")
    return out


def model_key(data_sha256: str) -> str:
    """The cache name of a model: its training data and the classifiers' preprocessing version."""
    from filters.classifiers.classify import PREPROCESS_VERSION

    return hashlib.sha256(f"{data_sha256} preprocess v{PREPROCESS_VERSION}".encode()).hexdigest()[:16]


def trained_model(data: bytes, models: Path, log: Path) -> tuple[Path, str]:
    """(model, sha256 of ``data``): the spam model of the training file ``data``, trained with
    TRAIN_FLAGS unless MODELS/spam-SHA already holds it (SHA over the data and the classifiers'
    preprocessing version: a model of other preprocessing is not this one). The training file
    lives only while it trains (MODELS/spam-SHA.jsonl)."""
    sha = hashlib.sha256(data).hexdigest()
    model = models / f"spam-{model_key(sha)}"
    if (model / "metadata.json").exists():
        print(f"  spam model cached: {model}", flush=True)
        return model, sha
    train_file = models / f"{model.name}.jsonl"
    models.mkdir(parents=True, exist_ok=True)
    train_file.write_bytes(data)
    cmd = [sys.executable, "-m", "jobs.train_classifier", "--kind", "spam", "--input", str(train_file)]
    cmd += ["--output", str(model), *(a for f in TRAIN_FLAGS for a in ("--set", f))]
    print(f"  training spam model -> {model}", flush=True)
    _run(cmd, log)
    train_file.unlink()
    return model, sha


def _run(cmd: list[str], log: Path) -> float:
    log.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with log.open("a", encoding="utf-8") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if done.returncode:
        sys.exit(f"failed (exit {done.returncode}), see {log}:\n" + "".join(log.read_text().splitlines(True)[-20:]))
    return time.perf_counter() - t0


def pick_families(requested: str | None, available: list[str]) -> list[str]:
    """``--families``: ``set/family`` or a bare family name (every set's family of that name)."""
    if not requested:
        return available
    picked = []
    for name in (s.strip() for s in requested.split(",") if s.strip()):
        hits = [f for f in available if f == name or f.partition("/")[2] == name]
        if not hits:
            raise SystemExit(f"--families: no family {name!r}; there are {', '.join(available)}")
        picked += [f for f in hits if f not in picked]
    return picked


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.evals.lofo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--sets", nargs="+", help="labelled evaluation sets (JSONL: id, text, label, family)")
    p.add_argument("--seed-dir", default="data/seed", help="the seed (spam.jsonl, SEED.json; default: %(default)s)")
    p.add_argument("--quality-model", default="out/demo/models/quality", help="default: %(default)s")
    p.add_argument("--profile", default="out/demo/models/fluency", help="quality.profile (default: %(default)s)")
    p.add_argument("--heldout", type=int, default=100, help="fresh pages per seed family (default: %(default)s)")
    p.add_argument("--only-full", action="store_true", help="the full-seed run only: no per-family retrain")
    p.add_argument("--families", help="comma-separated families to report (and retrain for): NAME or SET/NAME")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="to jobs.clean")
    p.add_argument("--output", default="out/bench/lofo", help="crawl, models, runs (default: %(default)s)")
    p.add_argument("--report", default="out/bench/lofo.json", help="default: %(default)s")
    args = p.parse_args(argv)
    args.sets = args.sets or [s for s in DEFAULT_SETS if Path(s).exists()]
    names = [set_name(s) for s in args.sets]
    if len(set(names)) != len(names) or SEED_SET in names:
        p.error(f"--sets: set names (their folders) must differ and not be {SEED_SET!r}: {names}")
    return args


def evaluation_crawl(args: argparse.Namespace, seed_lines: list[str]) -> list[dict]:
    """Every set of ``--sets`` and the held-out seed pages, merged (``merge_sets``)."""
    seed = json.loads((Path(args.seed_dir) / "SEED.json").read_text(encoding="utf-8"))["seed"]
    spam_texts = [r["text"] for r in map(json.loads, seed_lines) if r["label"] == "spam"]
    heldout = heldout_pages(list(seed_families(seed_lines)), args.heldout, seed, spam_texts)
    return merge_sets({SEED_SET: heldout, **{set_name(s): read_jsonl(s) for s in args.sets}})


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.time()
    import opencc

    out = Path(args.output)
    seed_file = Path(args.seed_dir) / "spam.jsonl"
    # split on "\n" only: str.splitlines also splits a JSON string at U+2028 or U+0085
    seed_lines = [line for line in seed_file.read_text(encoding="utf-8").split("\n") if line.strip()]
    print(f"evaluation crawl: {', '.join(args.sets)} + {args.heldout} fresh pages of each seed family", flush=True)
    crawl = evaluation_crawl(args, seed_lines)
    write_jsonl(out / "crawl.jsonl", crawl)
    picked = pick_families(args.families, sorted({r["family"] for r in crawl if r["label"] == "spam"}))
    retrained = set() if args.only_full else {f.partition("/")[2] for f in picked if f.startswith(SEED_SET + "/")}
    plan = [FULL, *(f"without-{f}" for f in sorted(retrained))]
    print(f"{len(crawl)} records, {len(picked)} families; {len(plan)} runs of jobs.clean", flush=True)

    sets = [f"quality.profile={args.profile}", *args.overrides]
    runs, info = {}, {}
    for i, run in enumerate(plan, 1):
        print(f"[{i}/{len(plan)}] {run}", flush=True)
        family = run.removeprefix("without-")
        data = (
            seed_file.read_bytes() if run == FULL else "".join(f"{x}\n" for x in hold_out(seed_lines, family)).encode()
        )
        log = out / "logs" / f"{run}.log"
        log.unlink(missing_ok=True)
        model, sha = trained_model(data, out / "models", log)
        training = str(seed_file) if run == FULL else f"{seed_file} less the {family} records"
        cmd = clean_command(str(out / "crawl.jsonl"), out / "clean" / run, str(model), args.quality_model, sets, False)
        seconds = _run(cmd, log)
        runs[run] = read_outputs(out / "clean" / run)
        info[run] = {"spam_model": str(model), "trained_on": training, "training_sha256": sha}
        info[run]["clean_seconds"] = round(seconds, 1)
        print(f"  jobs.clean {seconds:.0f} s -> {out / 'clean' / run}", flush=True)

    labels = [r for r in crawl if r["label"] != "spam" or r["family"] in picked]
    report = lofo_report(labels, runs, retrained, opencc.OpenCC("t2s").convert)
    result = {
        "command": ["python", "-m", "bench.evals.lofo", *(sys.argv[1:] if argv is None else argv)],
        "sets": args.sets,
        "heldout_per_family": args.heldout,
        "clean_sets": sets,
        "quality_model": args.quality_model,
        "train_flags": list(TRAIN_FLAGS),
        "runs": info,
        **report,
    }
    harness.write_result(args.report, "bench.evals.lofo", args, result, started)
    print("\n".join(table_lines(report)))
    print(f"\nresult: {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
