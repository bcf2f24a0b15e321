"""The whole corpus chain (read → clean → classify → dedup → tokenize → shards), measured for
what grows with the crawl (issue 14): each input kind at two sizes in one run, and the marginal
throughput per core, (MB_large − MB_small) / (s_large − s_small) / cores, next to the whole-run
figure, so Spark's fixed costs neither hide nor flatter the per-record cost.

    python -m bench.bench_corpus [--quick] [--cores 2] [--crawl-copies 8] [--plain-mb 8 64]

Inputs (made once, cached under --out): the demo-shaped crawl (``demo.scaled_crawl``: copy 0 is
the demo crawl, the large one has --crawl-copies copies) and plain Chinese text in one JSONL file
(``demo.plain_text``) at the two --plain-mb sizes. The build runs as ``make demo`` runs it: both
demo classifiers (``make demo-models``), personal-data redaction, dedup with verification,
decontamination against the demo's evaluation sets (``demo.eval_set``, made once under --out),
tokenization and shards, with a fixed tokenizer trained once (cached) so every timed run only
encodes.

Per run: seconds and MB/s per core of each stage (report.json ``job.stage_seconds``); read+clean
and classify are one fused pass in the build, so read+clean is also run alone into Spark's no-op
sink and classify is the difference (``--no-split`` skips it). Anchors in the same run: the same
per-document functions in one plain Python process on the small input of each kind (Spark's
per-core efficiency = marginal MB/s per core ÷ plain MB/s, goal ≥ 0.8), jieba against the native
segmentation engine, and the peak memory of the driver and of a Python worker. Spark session
start is excluded; a warm-up build runs first. The machine is shared: the load average is
printed, and one run is one sample (--repeats for medians).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from base.log import setup_logging
from bench import corpus_anchor as anchor

FUSED = "read_clean_classify"  # the first of report.json's job.stage_seconds; the others are taken as they come
QUICK = {"max_docs": 1500, "big_line_mb": 1.0, "plain_mb": (2.0, 16.0), "segment_chars": 300_000}


def build(spark, cfg, inputs: list[str], out: Path) -> dict[str, Any]:
    """The chain as the job runs it; the one place to adapt when the job's library entry moves."""
    from etl.corpus import build_corpus

    return build_corpus(cfg, inputs, str(out), overwrite=True, spark=spark)


def load_build_config(overrides: list[str]):
    from etl.corpus import BuildConfig
    from jobs.build_corpus import DEFAULT_CONFIG
    from jobs.config import load_config

    return load_config(BuildConfig, DEFAULT_CONFIG, overrides)


def spark_read_clean(spark, cfg, inputs: list[str]) -> float:
    """Seconds of read + clean alone into the no-op sink."""
    from etl.clean.stage import clean_stage
    from etl.read.readers import read_raw
    from etl.runtime.progress import Counters

    t0 = time.perf_counter()
    raw, _ = read_raw(spark, inputs, cfg.reader, Counters(spark.sparkContext))
    clean_stage(raw, cfg.rules).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def tokenizer_dir(spark, args, overrides: list[str], small_crawl: list[str]) -> Path:
    """A tokenizer trained once on the small crawl's documents (by a build, which also warms up)."""
    target = args.out / f"tokenizer-v{args.vocab}{'-quick' if args.quick else ''}"
    if not (target / "metadata.json").exists():
        out = args.out / "runs" / "tokenizer-build"
        build(spark, load_build_config(overrides), small_crawl, out)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(out / "tokenizer", target)
    return target


def one_run(spark, cfg, inputs: list[str], out: Path, split: bool) -> dict[str, Any]:
    anchor.reset_peaks()
    with anchor.CpuMeter() as cpu:
        report = build(spark, cfg, inputs, out)
    mem = anchor.memory_peaks()
    stage = dict(report["job"]["stage_seconds"])
    run = {
        "mb": report["input"]["bytes"] / 1e6,
        "records": report["input"]["records"],
        "documents": report["documents"],
        "rejected": report["rejected"],
        "duplicates": report["duplicates"],
        "tokens": report["shards"]["total_tokens"],
        "elapsed_s": report["job"]["elapsed_s"],
        "cpu_s": round(cpu.seconds, 1),
        "stage_s": stage,
        "memory": mem,
    }
    if split:
        rc = spark_read_clean(spark, cfg, inputs)
        run["stage_s"] = {
            "read_clean": round(rc, 2),
            "classify": round(max(stage[FUSED] - rc, 0.0), 2),
            **{s: v for s, v in stage.items() if s != FUSED},
        }
    return run


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(runs[0])
    out["elapsed_s"] = statistics.median(r["elapsed_s"] for r in runs)
    out["cpu_s"] = statistics.median(r["cpu_s"] for r in runs)
    out["stage_s"] = {s: statistics.median(r["stage_s"][s] for r in runs) for s in runs[0]["stage_s"]}
    return out


def figures(small: dict, large: dict, cores: int, plain: dict) -> dict[str, Any]:
    """Whole-run and marginal MB/s per core, per stage and for the chain; efficiency vs plain."""

    def per_core(mb: float, s: float) -> float | None:
        return round(mb / s / cores, 3) if s > 0 else None

    d_mb = large["mb"] - small["mb"]
    out = {
        "whole_run_mb_s_per_core": {
            k: per_core(r["mb"], r["elapsed_s"]) for k, r in (("small", small), ("large", large))
        },
        "marginal_mb_s_per_core": per_core(d_mb, large["elapsed_s"] - small["elapsed_s"]),
        # core-seconds the processes actually used (JVM + Python driver + workers): robust to load
        "marginal_mb_per_cpu_s": per_core(d_mb * cores, large["cpu_s"] - small["cpu_s"]),
        "stages": {},
    }
    for s in large["stage_s"]:
        out["stages"][s] = {
            "small_s": small["stage_s"][s],
            "large_s": large["stage_s"][s],
            "large_mb_s_per_core": per_core(large["mb"], large["stage_s"][s]),
            "marginal_mb_s_per_core": per_core(d_mb, large["stage_s"][s] - small["stage_s"][s]),
        }
    if out["marginal_mb_s_per_core"]:
        out["efficiency_vs_plain_python"] = round(out["marginal_mb_s_per_core"] / plain["mb_s"], 3)
    if out["marginal_mb_per_cpu_s"]:
        out["cpu_efficiency_vs_plain_python"] = round(out["marginal_mb_per_cpu_s"] / plain["mb_per_cpu_s"], 3)
    return out


def run_kind(spark, args, cfg, name: str, small: list[str], large: list[str]) -> dict[str, Any]:
    runs = {}
    for size, inputs in (("small", small), ("large", large)):
        out = args.out / "runs" / f"{name}-{size}"
        runs[size] = median_run([one_run(spark, cfg, inputs, out, not args.no_split) for _ in range(args.repeats)])
        logging.getLogger("zhcorpus").warning(
            "%s %s: %.1f MB in %.1f s", name, size, runs[size]["mb"], runs[size]["elapsed_s"]
        )
    plain = anchor.plain_chain(small, cfg, str(args.out / "runs" / f"{name}-small" / "documents"), cfg.tokenizer.model)
    return {"runs": runs, "plain_python": plain, **figures(runs["small"], runs["large"], args.cores, plain)}


def inputs_for(args) -> dict[str, tuple[list[str], list[str]]]:
    from demo.plain_text import PlainTextParams, ensure_plain_text
    from demo.scaled_crawl import ensure_scaled_crawl

    max_docs, big_line = (QUICK["max_docs"], QUICK["big_line_mb"]) if args.quick else (None, 10.0)
    crawl = ensure_scaled_crawl(
        args.out / f"crawl-x{args.crawl_copies}{'-quick' if args.quick else ''}", args.crawl_copies, max_docs, big_line
    )
    mbs = QUICK["plain_mb"] if args.quick else tuple(args.plain_mb)
    plain = [str(ensure_plain_text(args.out, PlainTextParams(mb=mb))) for mb in mbs]
    return {"crawl": (crawl[:3], crawl), "plain": ([plain[0]], [plain[1]])}


def eval_sets(out: Path) -> list[str]:
    """The demo's evaluation sets (``demo.eval_set``, seed 0), made once under ``out``."""
    from demo.eval_set import write

    root = out / "eval_sets"
    manifest = root / "MANIFEST.json"
    benchmarks = (json.loads(manifest.read_text()) if manifest.exists() else write(root, 0))["benchmarks"]
    return [str(root / b["file"]) for b in benchmarks.values()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small inputs (a capped demo crawl, 2 and 16 MB of text)")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--crawl-copies", type=int, default=8, help="the large crawl, in demo crawls (default: %(default)s)")
    p.add_argument("--plain-mb", type=float, nargs=2, default=(8.0, 64.0), help="plain-text sizes in MiB")
    p.add_argument("--vocab", type=int, default=8000, help="tokenizer vocabulary (demo size: %(default)s)")
    p.add_argument("--models", default="out/demo/models", help="DIR with spam/ and quality/ (make demo-models)")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--no-split", action="store_true", help="skip the read+clean-only runs (no classify split)")
    p.add_argument("--only", choices=("crawl", "plain"), default=None)
    p.add_argument("--out", type=Path, default=Path("out/bench-corpus"))
    args = p.parse_args(argv)
    setup_logging(logging.WARNING)
    for kind in ("spam", "quality", "fluency"):
        if not (Path(args.models) / kind / "metadata.json").exists():
            p.error(f"no {kind} model in {args.models} (make demo-models)")

    from etl.runtime.spark import SparkConfig, session

    t_start, load_start = time.perf_counter(), os.getloadavg()
    inputs = inputs_for(args)
    overrides = [
        f"tokenizer.vocab_size={args.vocab}",
        f"classify.spam_model={args.models}/spam",
        f"classify.quality_model={args.models}/quality",
        f"quality.profile={args.models}/fluency",
        f"decontaminate.eval_sets={json.dumps(eval_sets(args.out))}",
    ]
    spark = session("bench-corpus", SparkConfig(master=f"local[{args.cores}]"))
    tok = tokenizer_dir(spark, args, overrides, inputs["crawl"][0])
    cfg = load_build_config(overrides + [f"tokenizer.model={tok}"])
    build(spark, cfg, inputs["plain"][0], args.out / "runs" / "warm-up")
    result: dict[str, Any] = {"cores": args.cores, "quick": args.quick, "repeats": args.repeats}
    for kind in ("crawl", "plain"):
        if args.only in (None, kind):
            result[kind] = run_kind(spark, args, cfg, kind, *inputs[kind])
    spark.stop()
    survivors = str(args.out / "runs" / f"{'plain' if args.only != 'crawl' else 'crawl'}-small" / "documents")
    result["segmentation"] = segment_anchor(survivors, QUICK["segment_chars"] if args.quick else 1_000_000)
    result["load_average"] = {"start": [round(x, 1) for x in load_start], "end": [round(x, 1) for x in os.getloadavg()]}
    result["bench_s"] = round(time.perf_counter() - t_start)
    (args.out / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    print("\n".join(table(result)))
    return 0


def segment_anchor(documents: str, max_chars: int) -> dict[str, Any]:
    import pyarrow.parquet as pq

    return anchor.segmentation(pq.read_table(documents, columns=["text"]).column("text").to_pylist(), max_chars)


def table(result: dict[str, Any]) -> list[str]:
    """The table of docs/benchmarks.md: per kind and stage, seconds (small → large) and MB/s per core."""
    lines = [
        "| input | stage | s (small → large) | MB/s/core (large run) | marginal MB/s/core |",
        "|---|---|---|---|---|",
    ]
    for kind in ("crawl", "plain"):
        if kind not in result:
            continue
        r = result[kind]
        small, large = r["runs"]["small"], r["runs"]["large"]
        label = f"{kind} {small['mb']:.0f} → {large['mb']:.0f} MB"
        for s, f in r["stages"].items():
            lines.append(
                f"| {label} | {s} | {f['small_s']:.1f} → {f['large_s']:.1f} | {f['large_mb_s_per_core']} | "
                f"{f['marginal_mb_s_per_core']} |"
            )
        lines.append(
            f"| {label} | **chain** | {small['elapsed_s']:.1f} → {large['elapsed_s']:.1f} | "
            f"{r['whole_run_mb_s_per_core']['large']} | **{r['marginal_mb_s_per_core']}** |"
        )
        lines.append(
            f"| {label} | chain, per CPU-second used | {small['cpu_s']:.0f} → {large['cpu_s']:.0f} CPU-s | | "
            f"{r['marginal_mb_per_cpu_s']} MB/CPU-s |"
        )
        pp = r["plain_python"]
        lines.append(
            f"| {label} | plain Python, 1 process (small) | {pp['total_s']:.1f} ({pp['cpu_s']:.1f} CPU-s) | "
            f"{pp['mb_s']} MB/s ({pp['mb_per_cpu_s']} MB/CPU-s) | efficiency {r.get('efficiency_vs_plain_python')}"
            f" (CPU: {r.get('cpu_efficiency_vs_plain_python')}) |"
        )
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
