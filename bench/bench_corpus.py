"""The whole corpus chain (read → clean → classify → dedup → tokenize → shards), measured for
what grows with the crawl (issue 14): each input kind at two sizes in one run, and the marginal
throughput per core, (MB_large − MB_small) / (s_large − s_small) / cores, next to the whole-run
figure, so Spark's fixed costs neither hide nor flatter the per-record cost.

    python -m bench.bench_corpus [--quick] [--cores 2] [--crawl-copies 8] [--plain-mb 8 64]

Inputs (made once, cached under --out): the demo-shaped crawl (``bench.corpora.scaled_crawl``: copy 0 is
the demo crawl, the large one has --crawl-copies copies) and plain Chinese text in one JSONL file
(``bench.corpora.plain_text``) at the two --plain-mb sizes. The build runs as ``make demo`` runs it: both
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

``--engines compiled python`` (the default) builds every input twice in the same session, once
with the compiled per-document pass (``filters.docpass``) and once with the Python reference
(``ZHCORPUS_DOCPASS=0`` for the executors, through ``spark.executorEnv``), and runs the plain
anchor both ways: the per-stage table gives s/MB·core (marginal) for each, their ratio, and the
anchors' s/MB, all from one run. Each build's Spark jobs are counted (the driver's status store).
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
from bench import harness

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


ENGINES = {"compiled": "1", "python": "0"}  # filters.docpass.ENV for each engine


def use_engine(spark, engine: str) -> None:
    """The per-document pass the next builds use: the driver's environment and the executors'
    (``spark.executorEnv``, which PySpark sends with every Python function: new workers start);
    ``spark`` None: the driver's alone (the plain anchor)."""
    from filters.docpass import ENV

    if spark is not None:
        spark.sparkContext.environment[ENV] = ENGINES[engine]
    os.environ[ENV] = ENGINES[engine]


def one_run(spark, cfg, inputs: list[str], out: Path, split: bool) -> dict[str, Any]:
    harness.reset_peaks()
    first = harness.next_job_id(spark)
    with harness.CpuMeter() as cpu:
        report = build(spark, cfg, inputs, out)
    jobs = harness.next_job_id(spark) - first
    mem = harness.memory_peaks()
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
        "spark_jobs": jobs,
        "spark_jobs_by_phase": harness.jobs_by_phase(spark, first),
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


def run_kind(new_session, args, cfg, name: str, small: list[str], large: list[str]) -> dict[str, Any]:
    """Per repeat, each engine in a session of its own (``new_session()``: a dozen builds in one
    session ran the driver out of heap) with a warm-up build, then its small and large builds: the
    engines and sizes interleaved, so that a change of load on the shared machine falls on all of
    them. Medians per engine and size, then each engine's plain anchor."""
    samples: dict[str, dict[str, list]] = {e: {"small": [], "large": []} for e in args.engines}
    for _ in range(args.repeats):
        for engine in args.engines:
            spark = new_session()
            use_engine(spark, engine)
            build(spark, cfg, small, args.out / "runs" / "warm-up")  # this engine's workers, models loaded
            for size, inputs in (("small", small), ("large", large)):
                run_dir = args.out / "runs" / f"{name}-{size}-{engine}"
                samples[engine][size].append(one_run(spark, cfg, inputs, run_dir, not args.no_split))
            spark.stop()
    out: dict[str, Any] = {}
    for engine in args.engines:
        use_engine(None, engine)
        runs = {size: median_run(r) for size, r in samples[engine].items()}
        for size, run in runs.items():
            logging.getLogger("zhcorpus").warning(
                "%s %s (%s): %.1f MB in %.1f s", name, size, engine, run["mb"], run["elapsed_s"]
            )
        survivors = str(args.out / "runs" / f"{name}-small-{engine}" / "documents")
        plain = anchor.plain_chain(small, cfg, survivors, cfg.tokenizer.model)
        out[engine] = {
            "runs": runs,
            "samples_elapsed_s": {k: [r["elapsed_s"] for r in v] for k, v in samples[engine].items()},
            "samples_cpu_s": {k: [r["cpu_s"] for r in v] for k, v in samples[engine].items()},
            "plain": plain,
            **figures(runs["small"], runs["large"], args.cores, plain),
        }
    return out


def inputs_for(args) -> dict[str, tuple[list[str], list[str]]]:
    from bench.corpora.plain_text import PlainTextParams, ensure_plain_text
    from bench.corpora.scaled_crawl import ensure_scaled_crawl

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
    p.add_argument(
        "--engines",
        nargs="+",
        choices=tuple(ENGINES),
        default=list(ENGINES),
        help="per-document pass(es) to build with, in this order (default: %(default)s)",
    )
    p.add_argument("--out", type=Path, default=Path("out/bench-corpus"))
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="to the build")
    args = p.parse_args(argv)
    started = time.time()
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
        *args.overrides,
    ]

    def new_session():
        return session("bench-corpus", SparkConfig(master=f"local[{args.cores}]"))

    spark = new_session()
    tok = tokenizer_dir(spark, args, overrides, inputs["crawl"][0])
    spark.stop()
    cfg = load_build_config(overrides + [f"tokenizer.model={tok}"])
    result: dict[str, Any] = {"cores": args.cores, "quick": args.quick, "repeats": args.repeats}
    result["engines"] = args.engines
    for kind in ("crawl", "plain"):
        if args.only in (None, kind):
            result[kind] = run_kind(new_session, args, cfg, kind, *inputs[kind])
    kind = "plain" if args.only != "crawl" else "crawl"
    survivors = str(args.out / "runs" / f"{kind}-small-{args.engines[0]}" / "documents")
    result["segmentation"] = segment_anchor(survivors, QUICK["segment_chars"] if args.quick else 1_000_000)
    result["load_average"] = {"start": [round(x, 1) for x in load_start], "end": [round(x, 1) for x in os.getloadavg()]}
    result["bench_s"] = round(time.perf_counter() - t_start)
    harness.write_result(args.out / "result.json", "bench.bench_corpus", args, result, started)
    print(json.dumps(result, indent=2))
    print("\n".join(table(result)))
    return 0


def segment_anchor(documents: str, max_chars: int) -> dict[str, Any]:
    import pyarrow.parquet as pq

    return anchor.segmentation(pq.read_table(documents, columns=["text"]).column("text").to_pylist(), max_chars)


# the plain anchor's stages that make up each stage of the build
ANCHOR_STAGES = {
    "read_clean_classify": ("read", "clean", "pii", "quality", "classify"),
    "read_clean": ("read", "clean", "pii"),
    "classify": ("quality", "classify"),
    "dedup": ("dedup_signatures",),
    "decontaminate": ("decontaminate",),
    "tokenize_shards": ("tokenize",),
}


def _per_mb(mb_s: float | None) -> float | None:
    return 1 / mb_s if mb_s else None


def _cell(x: float | None, bold: bool = False) -> str:
    if x is None:
        return "–"
    return f"**{x:.3f}**" if bold else f"{x:.3f}"


def table(result: dict[str, Any]) -> list[str]:
    """The table of docs/benchmarks.md: per kind and stage, the marginal seconds per MB per core of
    each engine (the chain: with its MB/s per core), the ratio of the first two, and the plain
    anchors' CPU seconds per MB (one process, the same per-document functions)."""
    engines = result.get("engines", list(ENGINES))
    two = len(engines) == 2
    head = " | ".join(f"{e}: s/MB·core" for e in engines) + (" | ratio" if two else "")
    head += " | " + " | ".join(f"plain {e}: s/MB" for e in engines)
    lines = [f"| input | stage | {head} |", "|---|---|" + "---|" * (2 * len(engines) + two)]
    for kind in ("crawl", "plain"):
        if kind not in result:
            continue
        r = {e: result[kind][e] for e in engines}
        first = r[engines[0]]["runs"]
        label = f"{kind} {first['small']['mb']:.0f} → {first['large']['mb']:.0f} MB"
        rows = [
            (stage, [_per_mb(r[e]["stages"][stage]["marginal_mb_s_per_core"]) for e in engines], stage)
            for stage in r[engines[0]]["stages"]
        ]
        rows.append(("**chain** (marginal)", [_per_mb(r[e]["marginal_mb_s_per_core"]) for e in engines], None))
        for name, values, stage in rows:
            cells = [_cell(v, stage is None) for v in values]
            if two:
                cells.append(f"{values[1] / values[0]:.2f}×" if values[0] and values[1] else "–")
            for e in engines:
                p = r[e]["plain"]
                parts = ANCHOR_STAGES.get(stage, ()) if stage else tuple(p["cpu_seconds"])
                cells.append(_cell(sum(p["cpu_seconds"][x] for x in parts) / p["input_mb"]) if parts else "–")
            lines.append(f"| {label} | {name} | {' | '.join(cells)} |")
        blank = " |" * (len(engines) + two)
        chain = " | ".join(f"{r[e]['marginal_mb_s_per_core']}" for e in engines)
        lines.append(f"| {label} | chain, marginal MB/s per core | {chain} |{' |' if two else ''}{blank[2:]}")
        whole = " | ".join(f"{r[e]['whole_run_mb_s_per_core']['large']}" for e in engines)
        lines.append(f"| {label} | whole run (large), MB/s per core | {whole} |{' |' if two else ''}{blank[2:]}")
        jobs = " | ".join(str(r[e]["runs"]["large"]["spark_jobs"]) for e in engines)
        lines.append(f"| {label} | Spark jobs per build | {jobs} |{' |' if two else ''}{blank[2:]}")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
