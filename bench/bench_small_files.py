"""Many small files against the same records in one file (issue 24, item 4).

    python -m bench.bench_small_files [--files 3000] [--runs 3] [--cores 2] [--out out/bench_small_files]

Generates ``OUT/small/`` (``--files`` JSONL files of one record each: People's Daily text from
``demo.sources``, cut to 60-260 characters so that some are rejected as too short, about 2 MB
for 3,000) and ``OUT/one/all.jsonl`` (the same lines in the same order), then runs the cleaning
job (``etl.corpus.clean_corpus``: read → clean → personal data → quality → ``documents/``,
``rejected/``) on each, alternating, ``--runs`` times in one Spark session (its start and a
warm-up run of each input are not timed: after a warm-up on the one file only, the first
small-file run was 1.5-3x slower than the next ones). Reports per input: the median seconds, the Spark tasks of a run
(all stages, and the largest stage), and the Parquet files written to ``documents/`` and
``rejected/``; then the ratio small / one (target ≤ 2), the file bound
max(2 × cores, bytes / output.target_file_bytes) and whether both outputs hold the same rows
(compared without ``source_file`` and ``offset``, which name the file). Exit 1 when a target is
missed. The machine is shared: the anchor (one file) is measured in the same run, between the
small-file runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import statistics
import sys
import time
from pathlib import Path

from base.log import setup_logging
from bench import harness

ROOT = Path(__file__).resolve().parent.parent
FILE_COLUMNS = ("source_file", "offset")  # where a row came from: differs between the two inputs


def make_inputs(out: Path, n: int, seed: int = 0) -> tuple[Path, Path]:
    """``out/small/`` with ``n`` one-line JSONL files and ``out/one/all.jsonl`` with the same lines
    in the same order (cached: made again only when ``n`` changes)."""
    from demo.sources import news_pages

    small, one = out / "small", out / "one" / "all.jsonl"
    if one.exists() and len(list(small.glob("*.jsonl"))) == n:
        return small, one
    rng = random.Random(seed)
    pages = ["\n".join(paras) for _, paras, _ in news_pages()]
    lines = [
        json.dumps(
            {"id": f"s{i}", "text": pages[i % len(pages)][: rng.randint(60, 260)], "source": "news"}, ensure_ascii=False
        )
        + "\n"
        for i in range(n)
    ]
    for d in (small, one.parent):
        d.mkdir(parents=True, exist_ok=True)
        for f in d.glob("*.jsonl"):
            f.unlink()
    for i, line in enumerate(lines):
        (small / f"part-{i:05d}.jsonl").write_text(line, encoding="utf-8")
    one.write_text("".join(lines), encoding="utf-8")
    return small, one


def spark_tasks(sc, group: str) -> dict[str, int]:
    """Tasks the jobs of ``group`` ran: in all, and in their largest stage."""
    tracker = sc.statusTracker()
    stages = [
        tracker.getStageInfo(s)
        for j in tracker.getJobIdsForGroup(group)
        for s in (tracker.getJobInfo(j).stageIds if tracker.getJobInfo(j) else [])
    ]
    done = [s.numCompletedTasks for s in stages if s is not None]
    return {"tasks": sum(done), "largest_stage": max(done, default=0)}


def parquet_files(d: Path) -> int:
    return len(list(d.glob("*.parquet")))


def run_clean(spark, inputs: list[str], output: Path, cfg, group: str) -> dict:
    """One cleaning run, timed from the file listing to the published output."""
    from etl.corpus import clean_corpus

    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    t0 = time.perf_counter()
    report = clean_corpus(cfg, inputs, str(output), overwrite=True, spark=spark)
    dt = time.perf_counter() - t0
    return {
        "seconds": dt,
        **spark_tasks(sc, group),
        "documents": report["documents"],
        "rejected": report["rejected"],
        "documents_files": parquet_files(output / "documents"),
        "rejected_files": parquet_files(output / "rejected"),
    }


def rows(d: Path) -> list[tuple]:
    """The rows of a Parquet directory without the columns that name the input file, sorted."""
    import pyarrow.parquet as pq

    table = pq.read_table(str(d))
    table = table.select([c for c in table.column_names if c not in FILE_COLUMNS])
    return sorted(tuple(r.values()) for r in table.to_pylist())


def output_bytes(d: Path) -> int:
    return sum(f.stat().st_size for sub in ("documents", "rejected") for f in (d / sub).glob("*.parquet"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=3000, help="small files (one record each)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each input (the median is reported)")
    ap.add_argument("--cores", type=int, default=2, help="local[N]")
    ap.add_argument("--out", default=str(ROOT / "out" / "bench_small_files"))
    args = ap.parse_args(argv)
    started = time.time()
    setup_logging(logging.WARNING)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from etl.corpus import CleanConfig
    from etl.runtime.spark import get_spark

    out = Path(args.out)
    small, one = make_inputs(out, args.files)
    in_mb = sum(f.stat().st_size for f in small.glob("*.jsonl")) / 1e6
    print(f"inputs: {args.files} files, {in_mb:.2f} MB; load before: {os.getloadavg()}", flush=True)
    spark = get_spark("bench-small-files", f"local[{args.cores}]", {"spark.ui.enabled": "false"})
    cfg = CleanConfig()
    for name, inputs in (("small", [str(small)]), ("one", [str(one)])):  # each read's workers and code warm
        run_clean(spark, inputs, out / f"warm-{name}", cfg, f"warm-up-{name}")
    runs: dict[str, list[dict]] = {"one": [], "small": []}
    for k in range(args.runs):
        for name, inputs in (("small", [str(small)]), ("one", [str(one)])):
            r = run_clean(spark, inputs, out / f"out-{name}", cfg, f"{name}-{k}")
            runs[name].append(r)
            print(f"  run {k} {name}: {json.dumps({**r, 'seconds': round(r['seconds'], 1)})}", flush=True)
    spark.stop()
    summary = summarize(runs, out, args.cores, cfg)
    print(json.dumps(summary, indent=1))
    harness.write_result(Path(out) / "result.json", "bench.bench_small_files", args, summary, started)
    ok = summary["ratio_small_one"] <= 2.0 and summary["files_within_bound"] and summary["same_rows"]
    return 0 if ok else 1


def summarize(runs: dict[str, list[dict]], out: Path, cores: int, cfg) -> dict:
    """Medians, the ratio and the checks, from the runs of ``main``."""
    target = getattr(getattr(cfg, "output", None), "target_file_bytes", 256 << 20)
    med = {
        name: {
            "seconds": round(statistics.median(r["seconds"] for r in rs), 2),
            **{k: v for k, v in rs[-1].items() if k != "seconds"},
        }
        for name, rs in runs.items()
    }
    nbytes = output_bytes(out / "out-small")
    bound = max(2 * cores, -(-nbytes // target))
    small = med["small"]
    same = all(rows(out / "out-small" / d) == rows(out / "out-one" / d) for d in ("documents", "rejected"))
    return {
        "cores": cores,
        "runs": len(runs["small"]),
        "small": small,
        "one": med["one"],
        "ratio_small_one": round(small["seconds"] / med["one"]["seconds"], 2),
        "output_bytes": nbytes,
        "file_bound_per_directory": bound,
        "files_within_bound": max(small["documents_files"], small["rejected_files"]) <= bound,
        "same_rows": same,
        "load_after": os.getloadavg(),
    }


if __name__ == "__main__":
    sys.exit(main())
