"""A build in a fresh JVM, as spark-submit and the nightly run it, with each JIT of ``spark.jit``
(issue 33, a build's fixed costs).

    python -m bench.bench_jit [--mb 8 32 64] [--repeats 3] [--out out/bench/jit] [--models out/demo/models]
                              [--tokenizer out/bench/corpus/tokenizer-v8000] [--result FILE]

Per size, ``jobs.build_corpus`` on the plain-text input of ``bench.corpora.plain_text`` (held-out
news, reviews and forum text; the same files as ``bench.bench_corpus``) with ``make demo``'s spam and
quality models, its reference profile and a fixed tokenizer, each build a process of its own (its
JVM starts, compiles and ends: nothing is warm), once with ``--set spark.jit=tiered`` (HotSpot's
default: the anchor) and once with ``--set spark.jit=c1`` (C1 alone), alternating, ``--repeats``
rounds. Reports per size and JIT the median wall seconds of the process and its CPU seconds
(``bench.harness.CpuMeter``: the job's process tree, its JVM and Python workers), and the ratio
tiered / c1 (above 1: C1 alone is faster). ``spark.jit=auto`` picks C1 alone below
``spark.jit_c1_below_mb``; the crossover these figures show is where that threshold comes from.
Both builds must write the same ledger and shards (``bench.compare_builds``): exit 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import harness
from bench.compare_builds import differences
from bench.corpora.plain_text import PlainTextParams, ensure_plain_text

ROOT = Path(__file__).resolve().parent.parent
MODES = ("tiered", "c1")


def one_build(inp: Path, out: Path, mode: str, args) -> tuple[float, float]:
    """(wall, CPU seconds) of ``jobs.build_corpus`` in a process of its own."""
    cmd = [sys.executable, "-m", "jobs.build_corpus", "--input", str(inp), "--output", str(out), "--overwrite"]
    for s in (
        f"spark.jit={mode}",
        f"classify.spam_model={args.models}/spam",
        f"classify.quality_model={args.models}/quality",
        f"quality.profile={args.models}/fluency",
        f"tokenizer.model={args.tokenizer}",
    ):
        cmd += ["--set", s]
    t0 = time.perf_counter()
    with harness.CpuMeter() as cpu:  # the job, its JVM and its Python workers (grandchildren: no rusage)
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"build failed ({mode}, {inp}):\n{done.stderr[-3000:]}")
    return wall, cpu.seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="bench.bench_jit", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--mb", type=float, nargs="+", default=[8, 32, 64], help="input sizes, MiB of plain text")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path, default=Path("out/bench/jit"))
    p.add_argument(
        "--corpora", type=Path, default=Path("out/bench/corpus"), help="where the plain-text inputs are kept"
    )
    p.add_argument("--models", default="out/demo/models", help="DIR with spam/, quality/, fluency/ (make demo)")
    p.add_argument("--tokenizer", default="out/bench/corpus/tokenizer-v8000", help="a trained tokenizer directory")
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()
    results, same = {}, True
    for mb in args.mb:
        inp = ensure_plain_text(args.corpora, PlainTextParams(mb=mb))
        samples: dict[str, list[tuple[float, float]]] = {m: [] for m in MODES}
        for _ in range(args.repeats):
            for mode in MODES:
                samples[mode].append(one_build(inp, args.out / f"{mb:g}mb-{mode}", mode, args))
        row = {
            m: {
                "wall_s": round(statistics.median(w for w, _ in s), 2),
                "cpu_s": round(statistics.median(c for _, c in s), 1),
                "samples": [round(w, 2) for w, _ in s],
            }
            for m, s in samples.items()
        }
        row["tiered_over_c1"] = round(row["tiered"]["wall_s"] / row["c1"]["wall_s"], 3)
        diff = differences(args.out / f"{mb:g}mb-tiered", args.out / f"{mb:g}mb-c1")
        row["identical"] = not diff
        same &= not diff
        results[f"{mb:g}"] = row
        print(
            f"{mb:6g} MiB  tiered {row['tiered']['wall_s']:7.2f} s ({row['tiered']['cpu_s']:6.1f} CPU-s)  "
            f"c1 {row['c1']['wall_s']:7.2f} s ({row['c1']['cpu_s']:6.1f} CPU-s)  tiered/c1 {row['tiered_over_c1']:.3f}"
            f"  {'identical' if not diff else 'DIFFERENT: ' + '; '.join(diff[:3])}",
            flush=True,
        )
    harness.write_result(args.result, "bench.bench_jit", args, results, started)
    print(json.dumps(harness.machine()))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
