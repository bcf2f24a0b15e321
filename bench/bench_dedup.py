"""Fuzzy dedup: this project's dedup stage against a BigCode-style PySpark job, Spark MLlib
MinHashLSH, datasketch and text-dedup, on one generated corpus, in one run; and
(``--shingle-sweep``) LSH false positives per shingle size.

    python -m bench.bench_dedup --mb 64 --repeats 3 [--out out/bench-dedup] [--shingle-sweep 3 4 5 6 7]
    python -m bench.bench_dedup --methods job bigcode datasketch --repeats 3        # the quick comparison
    python -m bench.bench_dedup --methods job --job-set verify=measure --job-set minhash.bands=20

The corpus (``bench.corpora.dedup_corpus``: Chinese documents sharing site templates and stock phrases,
with injected near-duplicate families) is generated into OUT/corpus-<mb>mb-seed<seed> once and
reused. Methods (``bench.dedup_methods``), each from reading the Parquet to writing its result,
all on the same shingles (character n-grams of ``filters.dedup.minhash.normalise`` text), threshold
and, where they band, the same bands x rows: job (``etl.dedup.stage``, Spark local[2]), bigcode
(``bench.peers.bigcode_dedup``, Spark local[2]), mllib (10 one-hash tables, local[2]), datasketch and
text-dedup (one process each).

Timing: Spark session start excluded for every system; one untimed warm-up of the job and of the
BigCode job first (warm JVM, Python workers started, as a cluster's long-lived executors are);
then --repeats rounds, each running job, bigcode and datasketch in turn (so a change of the
shared machine's load hits all three alike), medians reported; MLlib and text-dedup (minutes
each) run --slow-repeats times after them. Each run also records the CPU seconds of the whole
process tree (driver, JVM, Python workers; ``harness.CpuMeter`` samples each process, so
workers that exit mid-run still count) and the 1-minute load average before it. For the job,
the Spark jobs it started, grouped by phase ("dedup: <phase>" job descriptions), with their
seconds, and the driver's wall seconds per phase.

Measures, each against exact Jaccard of the shingle sets. Ground truth is evaluated on a union:
every pair within an injected family plus every pair any method reported; the positives are
those with Jaccard >= t (with MLlib in the run the union is all but complete: its 10 one-hash
tables make any pair with Jaccard >= 0.8 a candidate with probability >= 1 - 0.2^10, and it
keeps every candidate within the distance). Precision = reported pairs with Jaccard >= t /
reported pairs; recall = positives whose two documents end in one component of the method's
reported pairs (union-find on the driver; for the job that is "same final keeper");
documents removed = documents on a reported pair - components. docs/s per core divides by the
cores used (2 for local[2], 1 for one process). Output: OUT/result.json, OUT/shingle_sweep.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import statistics
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq

from base.log import setup_logging
from bench import dedup_methods as dm
from bench import harness
from bench.bench_shingle import shingle_sets, shingle_sweep, sweep_markdown
from bench.corpora.dedup_corpus import CorpusParams, Pair, corpus_dir, ensure_corpus, family_pairs
from bench.harness import CpuMeter
from etl.dedup.stage import DedupConfig
from filters.dedup import minhash as mh
from jobs.config import load_config

log = logging.getLogger("zhcorpus.bench")
CORES = 2  # Spark local[CORES]
METHODS = ("job", "bigcode", "mllib", "datasketch", "text_dedup")
FAST = ("job", "bigcode", "datasketch")  # interleaved, --repeats each; the others --slow-repeats
LABELS = {
    "job": f"this job (etl.dedup.stage), Spark local[{CORES}]",
    "bigcode": f"BigCode-style PySpark MinHash-LSH (RDD, large/small-star), local[{CORES}]",
    "mllib": f"Spark MLlib MinHashLSH ({dm.MLLIB_TABLES} tables) + approxSimilarityJoin, local[{CORES}]",
    "datasketch": "datasketch MinHashLSH, 1 process",
    "text_dedup": "text-dedup 0.4.1 minhash, 1 process",
}
CORES_OF = {"job": CORES, "bigcode": CORES, "mllib": CORES, "datasketch": 1, "text_dedup": 1}


def load(corpus: Path) -> tuple[list[str], list[str], list[dict]]:
    """(doc_ids, texts, truth rows) in doc_id order."""
    docs = pq.read_table(corpus / "documents", columns=["doc_id", "text"]).sort_by("doc_id")
    truth = pq.read_table(corpus / "truth.parquet").sort_by("doc_id").to_pylist()
    if [t["doc_id"] for t in truth] != docs.column("doc_id").to_pylist():
        raise ValueError(f"{corpus}: truth.parquet and documents/ list different doc_ids")
    return docs.column("doc_id").to_pylist(), docs.column("text").to_pylist(), truth


def components(pairs: set[Pair]) -> dict[str, str]:
    """Union-find: node -> its component's root, for every node on a pair."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in parent}


def evaluate(pairs: set[Pair], jacc: dict[Pair, float], positives: set[Pair], t: float) -> dict:
    """Precision of the reported pairs, recall of the positives through the pairs' components,
    documents removed (nodes - components)."""
    comp = components(pairs)
    good = sum(jacc[p] >= t for p in pairs)
    found = sum(a in comp and comp.get(a) == comp.get(b) for a, b in positives)
    return {
        "pairs": len(pairs),
        "precision": round(good / len(pairs), 4) if pairs else None,
        "recall": round(found / len(positives), 4) if positives else None,
        "false_positive_pairs": len(pairs) - good,
        "missed_positive_pairs": len(positives) - found,
        "documents_removed": len(comp) - len(set(comp.values())),
    }


def ground_truth(
    ids: list[str], texts: list[str], fam: set[Pair], reported: list[set[Pair]], p: mh.MinHashParams
) -> tuple[dict[Pair, float], set[Pair]]:
    """Exact Jaccard of every family pair and every reported pair; the positives (>= t)."""
    index = {d: i for i, d in enumerate(ids)}
    sets = shingle_sets(texts, p.shingle)
    union = fam.union(*reported)
    jacc = {(a, b): mh.jaccard(sets[index[a]], sets[index[b]]) for a, b in union}
    return jacc, {pair for pair, j in jacc.items() if j >= p.threshold}


def measure(fn) -> tuple[float | None, set[Pair], dict, float, float]:
    """(seconds, pairs, facts, CPU seconds of the process tree, 1-minute load before) of one run."""
    load = os.getloadavg()[0]
    with CpuMeter() as cpu:
        seconds, pairs, facts = fn()
    return seconds, pairs, facts, cpu.seconds, load


def runners(spark, cfg: DedupConfig, corpus: Path, out: Path, mllib_limit_s: float) -> dict:
    p = cfg.minhash.resolved()
    return {
        "job": lambda: dm.run_job(spark, cfg, corpus, out / "job"),
        "bigcode": lambda: dm.run_bigcode(spark, p, corpus, out / "bigcode"),
        "mllib": lambda: dm.run_mllib(spark, p, corpus, out / "mllib", mllib_limit_s),
        "datasketch": lambda: dm.run_datasketch(p, corpus, out / "datasketch"),
        "text_dedup": lambda: dm.run_text_dedup(p, corpus, out / "text_dedup"),
    }


def run_all(
    spark,
    cfg: DedupConfig,
    corpus: Path,
    out: Path,
    methods: list[str],
    repeats: int,
    slow_repeats: int,
    mllib_limit_s: float,
) -> dict[str, list[tuple]]:
    """Every run of every method: {method: [(seconds, pairs, facts, cpu, load), ...]}."""
    run = runners(spark, cfg, corpus, out, mllib_limit_s)
    for name in ("job", "bigcode"):  # untimed warm-up
        if name in methods or ("mllib" in methods and name == "job"):
            run[name]()
    runs: dict[str, list[tuple]] = {m: [] for m in methods}
    for rnd in range(repeats):
        for name in [m for m in FAST if m in methods]:
            runs[name].append(measure(run[name]))
            log.info(
                "round %d %s: %.1f s (cpu %.1f s, load %.1f)",
                rnd + 1,
                name,
                runs[name][-1][0] or -1,
                runs[name][-1][3],
                runs[name][-1][4],
            )
    for name in [m for m in methods if m not in FAST]:
        for _ in range(slow_repeats):
            runs[name].append(measure(run[name]))
            log.info("%s: %s s (cpu %.1f s)", name, runs[name][-1][0], runs[name][-1][3])
    return runs


def summarise(name: str, runs: list[tuple], n_docs: int, jacc, positives, t: float) -> dict:
    secs = [r[0] for r in runs]
    finished = all(s is not None for s in secs)
    r = {
        "label": LABELS[name],
        "cores": CORES_OF[name],
        "runs": len(runs),
        "seconds_each": [None if s is None else round(s, 2) for s in secs],
        "cpu_seconds_each": [round(r[3], 1) for r in runs],
        "load_1m_before_each": [round(r[4], 1) for r in runs],
        "seconds": round(statistics.median(secs), 2) if finished else None,
        **runs[-1][2],
    }
    if finished:
        r["docs_per_s_per_core"] = round(n_docs / r["seconds"] / r["cores"], 1)
        r["cpu_seconds"] = round(statistics.median(x[3] for x in runs), 1)
        r.update(evaluate(runs[-1][1], jacc, positives, t))
    return r


def compare(
    spark,
    cfg: DedupConfig,
    corpus: Path,
    out: Path,
    methods: list[str],
    repeats: int,
    slow_repeats: int,
    mllib_limit_s: float,
) -> dict:
    """Run the chosen methods and evaluate them against exact Jaccard."""
    p = cfg.minhash.resolved()
    ids, texts, truth = load(corpus)
    runs = run_all(spark, cfg, corpus, out, methods, repeats, slow_repeats, mllib_limit_s)
    fam = family_pairs(truth)
    jacc, positives = ground_truth(ids, texts, fam, [r[-1][1] for r in runs.values() if r], p)
    gt_comp = components(positives)
    res = {
        "documents": len(ids),
        "threshold": p.threshold,
        "shingle": p.shingle,
        "bands": p.bands,
        "rows": p.rows,
        "repeats": repeats,
        "slow_repeats": slow_repeats,
        "ground_truth": {
            "family_pairs": len(fam),
            "evaluated_pairs": len(jacc),
            "positives": len(positives),
            "positives_outside_families": len(positives - fam),
            "documents_removed": len(gt_comp) - len(set(gt_comp.values())),
        },
        "methods": {name: summarise(name, r, len(ids), jacc, positives, p.threshold) for name, r in runs.items() if r},
    }
    if "job" in res["methods"]:
        res["job_phases"] = job_phases([r[2] for r in runs["job"]])
    res["ratios"] = ratios(res["methods"])
    return res


def job_phases(facts: list[dict]) -> list[dict]:
    """Per phase of the job: Spark jobs, median summed Spark-job seconds, median driver seconds."""
    names = [g["phase"] for g in facts[-1]["spark_jobs"]]
    driver = [f["stage"]["seconds"] for f in facts]
    rows = []
    for name in names:
        groups = [next((g for g in f["spark_jobs"] if g["phase"] == name), None) for f in facts]
        short = name.removeprefix("dedup: ")
        rows.append(
            {
                "phase": name,
                "spark_jobs": groups[-1]["jobs"],
                "spark_job_seconds": round(statistics.median(g["seconds"] for g in groups if g), 2),
                "driver_seconds": round(statistics.median(d.get(short, 0.0) for d in driver), 2),
            }
        )
    return rows


def ratios(m: dict) -> dict:
    out = {}
    job = m.get("job", {})
    if not job.get("seconds"):
        return out
    for name, label in (
        ("mllib", "MLlib seconds / job seconds (target >= 30)"),
        ("bigcode", "BigCode-style seconds / job seconds (target >= 2)"),
    ):
        if m.get(name, {}).get("seconds"):
            out[label] = round(m[name]["seconds"] / job["seconds"], 2)
    for name, label in (
        ("datasketch", "job docs/s per core / datasketch (target >= 3)"),
        ("text_dedup", "job docs/s per core / text-dedup"),
    ):
        if m.get(name, {}).get("seconds"):
            out[label] = round(job["docs_per_s_per_core"] / m[name]["docs_per_s_per_core"], 2)
    return out


def _cell(v) -> str:
    return "–" if v is None else f"{v:,}" if isinstance(v, int) else str(v)


def markdown(res: dict) -> str:
    """The tables of docs/benchmarks.md: one row per method, the ratios, the job's phases."""
    m, gt = res["methods"], res["ground_truth"]
    lines = [
        "| method | cores | runs | seconds (median) | CPU s | docs/s per core | precision | recall | docs removed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in m.values():
        secs = (
            f"{r['seconds']:.1f}"
            if r["seconds"] is not None
            else f"did not finish ({r.get('skipped') or r.get('limit_s')})"
        )
        cells = [r["label"], r["cores"], r["runs"], secs] + [
            _cell(r.get(k)) for k in ("cpu_seconds", "docs_per_s_per_core", "precision", "recall", "documents_removed")
        ]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    lines.append(f"| ground truth (exact Jaccard ≥ {res['threshold']}) | | | | | | | | {gt['documents_removed']:,} |")
    lines += [f"\n{k}: **{v}**" for k, v in res["ratios"].items()]
    if res.get("job_phases"):
        lines += ["", "| job phase | Spark jobs | Spark job seconds | driver seconds |", "|---|---|---|---|"]
        lines += [
            f"| {r['phase']} | {r['spark_jobs']} | {r['spark_job_seconds']} | {r['driver_seconds']} |"
            for r in res["job_phases"]
        ]
    return "\n".join(lines)


def provenance() -> dict:
    """Git HEAD and digests of the job's sources: the job is under active change."""
    root = Path(__file__).resolve().parent.parent
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    return {
        "git_head": head.stdout.strip() or None,
        **{
            f: hashlib.sha1((root / f).read_bytes()).hexdigest()[:12]
            for f in (
                "etl/dedup/stage.py",
                "etl/dedup/verify.py",
                "etl/dedup/components.py",
                "bench/peers/bigcode_dedup.py",
            )
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=64.0, help="corpus size in MiB of UTF-8 text (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=1, help="corpus seed (another seed: held-out text)")
    ap.add_argument("--out", default="out/bench-dedup", help="corpus cache and outputs (default: %(default)s)")
    ap.add_argument(
        "--methods", nargs="*", default=list(METHODS), help=f"any of {' '.join(METHODS)}; none = only the sweep"
    )
    ap.add_argument(
        "--job-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="DedupConfig override (e.g. verify=measure); minhash.* apply to every method",
    )
    ap.add_argument("--repeats", type=int, default=3, help="rounds of job, bigcode, datasketch (default: %(default)s)")
    ap.add_argument("--slow-repeats", type=int, default=1, help="runs of mllib and text_dedup (default: %(default)s)")
    ap.add_argument("--mllib-limit", type=float, default=1800, help="cancel MLlib after this many seconds")
    ap.add_argument(
        "--shingle-sweep",
        type=int,
        nargs="*",
        default=[],
        metavar="N",
        help="also report LSH false positives and recall per shingle size, e.g. 3 4 5 6 7",
    )
    args = ap.parse_args(argv)
    started = time.time()
    setup_logging()
    if set(args.methods) - set(METHODS):
        ap.error(f"--methods: unknown {sorted(set(args.methods) - set(METHODS))}; choose from {METHODS}")
    out = Path(args.out)
    corpus = corpus_dir(out, args.mb, args.seed)
    manifest = ensure_corpus(corpus, CorpusParams(mb=args.mb, seed=args.seed))
    log.info("corpus %s: %d documents, %.1f MB", corpus, manifest["documents"], manifest["text_bytes"] / 1e6)
    cfg = load_config(DedupConfig, None, args.job_set)
    p = cfg.minhash.resolved()
    corpus_info = {
        k: manifest[k]
        for k in (
            "documents",
            "text_bytes",
            "roles",
            "families",
            "background_jaccard",
            "same_site_background_jaccard",
            "copy_to_original_jaccard",
        )
    }
    if args.methods:
        from etl.runtime.spark import get_spark

        spark = get_spark("bench-dedup", f"local[{CORES}]")
        res = {
            "code": provenance(),
            "corpus": corpus_info,
            "config": cfg.__repr__(),
            **compare(spark, cfg, corpus, out, args.methods, args.repeats, args.slow_repeats, args.mllib_limit),
        }
        spark.stop()
        harness.write_result(out / "result.json", "bench.bench_dedup", args, res, started)
        print(json.dumps(res, ensure_ascii=False, indent=2, default=str))
        print(markdown(res))
    if args.shingle_sweep:
        _, texts, truth = load(corpus)
        rows = shingle_sweep(texts, truth, args.shingle_sweep, p)
        sweep = {"corpus": corpus_info, "threshold": p.threshold, "bands": p.bands, "rows": p.rows, "sizes": rows}
        harness.write_result(out / "shingle_sweep.json", "bench.bench_dedup", args, sweep, started)
        print(sweep_markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
