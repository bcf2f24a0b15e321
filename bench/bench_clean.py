"""Cleaning throughput: the Spark job at local[N] against the same filter functions in one
plain Python process (the anchor), on the same input, in one run.

    python -m bench.bench_clean [--input PATH ...] [--cores 2] [--repeats 3]
    python -m bench.bench_clean --cleaner-only [--input PATH ...]   # the Cleaner alone, CPU ms/MB

Reports input MB/s for each, MB/s per core, and the ratio (Spark per-core / plain). Spark's
time covers reading, cleaning, writing documents/ + rejected/ and the ledger, but not session
start-up. Medians over --repeats runs; the machines are shared, so compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from base.log import setup_logging
from bench import harness
from etl.clean.stage import clean_batch, get_cleaner
from etl.read.readers import ARROW_RAW
from etl.read.records import ReaderConfig, parse_file
from filters.pangu.config import RulesConfig

BATCH_ROWS = 1024


def plain_python(files: list[Path]) -> tuple[float, int, int]:
    """(seconds, bytes, kept documents) for parse + clean of every file in this process, in
    Arrow batches through the stage's own ``clean_batch``."""
    cleaner, cfg = get_cleaner(RulesConfig()), ReaderConfig()
    t0 = time.perf_counter()
    size = kept = 0
    for f in files:
        content = f.read_bytes()
        size += len(content)
        rows = list(parse_file(str(f), content, cfg))
        for i in range(0, len(rows), BATCH_ROWS):
            out = clean_batch(pa.RecordBatch.from_pylist(rows[i : i + BATCH_ROWS], schema=ARROW_RAW), cleaner)
            kept += sum(
                1 for r in out.select(["kind", "reason"]).to_pylist() if r["kind"] == "record" and r["reason"] is None
            )
    return time.perf_counter() - t0, size, kept


def cleaner_only(files: list[Path], repeats: int) -> dict:
    """CPU ms per MB of the Cleaner alone (``filters.pangu.pipeline.Cleaner``), one process, on the
    records the readers hand it: per MB of document text and per MB of input file. CPU time, not
    wall time: the machine is shared and this is one process."""
    cleaner, cfg = get_cleaner(RulesConfig()), ReaderConfig()
    docs, size = [], 0
    for f in files:
        content = f.read_bytes()
        size += len(content)
        docs += [
            (r["text"], r["title"])
            for r in parse_file(str(f), content, cfg)
            if r["kind"] == "record" and r["reason"] is None
        ]
    text_mb = sum(len(t.encode("utf-8", "surrogatepass")) for t, _ in docs) / 1e6
    cleaner(*docs[0])  # tables built outside the timing
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        for text, title in docs:
            cleaner(text, title)
        times.append(time.process_time() - t0)
    t = statistics.median(times)
    return {
        "documents": len(docs),
        "text_mb": round(text_mb, 2),
        "input_mb": round(size / 1e6, 2),
        "cleaner_cpu_s": round(t, 2),
        "cleaner_ms_per_text_mb": round(1000 * t / text_mb, 1),
        "cleaner_ms_per_input_mb": round(1000 * t / (size / 1e6), 1),
    }


def spark_job(spark, inputs: list[str], out: Path) -> tuple[float, int, int]:
    from etl.corpus import CleanConfig, clean_corpus

    t0 = time.perf_counter()
    report = clean_corpus(CleanConfig(), inputs, str(out), overwrite=True, spark=spark)
    return time.perf_counter() - t0, report["input"]["bytes"], report["documents"]


def spark_read_clean(spark, inputs: list[str]) -> float:
    """Read + clean into Spark's no-op sink: the job without persist, writes and ledger."""
    from etl.clean.stage import clean_stage
    from etl.corpus import CleanConfig
    from etl.read.readers import read_raw
    from etl.runtime.progress import Counters

    cfg = CleanConfig()
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(cfg.spark.max_partition_bytes))
    t0 = time.perf_counter()
    raw, _ = read_raw(spark, inputs, cfg.reader, Counters(spark.sparkContext))
    clean_stage(raw, cfg.rules).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--input",
        nargs="+",
        default=["data/demo_crawl/warc", "data/demo_crawl/wet", "data/demo_crawl/jsonl"],
        help="crawl files or directories (default: the demo crawl)",
    )
    p.add_argument("--cores", type=int, default=2, help="Spark local[N] (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--cleaner-only", action="store_true", help="only the Cleaner's CPU ms/MB in one process (no Spark)")
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()
    setup_logging(logging.WARNING)
    from etl.runtime.spark import get_spark

    files = sorted(
        f
        for root in map(Path, args.input)
        for f in ([root] if root.is_file() else root.rglob("*"))
        if f.is_file() and not f.name.startswith(("_", "."))
    )
    if args.cleaner_only:
        result = cleaner_only(files, args.repeats)
        print(json.dumps(result, indent=2))
        harness.write_result(args.result, "bench.bench_clean", args, result, started)
        return 0
    spark = get_spark("bench-clean", f"local[{args.cores}]")
    plain, dist, inner = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        spark_job(spark, args.input, Path(tmp) / "warmup")  # JIT of the JVM, Python workers started
        for i in range(args.repeats):
            plain.append(plain_python(files))
            dist.append(spark_job(spark, args.input, Path(tmp) / f"run{i}"))
            inner.append(spark_read_clean(spark, args.input))
    spark.stop()
    mb = plain[0][1] / 1e6
    assert plain[0][2] == dist[0][2], f"kept documents differ: plain {plain[0][2]} vs spark {dist[0][2]}"
    t_plain = statistics.median(t for t, _, _ in plain)
    t_spark = statistics.median(t for t, _, _ in dist)
    result = {
        "input_mb": round(mb, 2),
        "kept_documents": dist[0][2],
        "repeats": args.repeats,
        "cores": args.cores,
        "plain_python_s": round(t_plain, 2),
        "plain_python_mb_s": round(mb / t_plain, 3),
        "spark_s": round(t_spark, 2),
        "spark_mb_s": round(mb / t_spark, 3),
        "spark_mb_s_per_core": round(mb / t_spark / args.cores, 3),
        "ratio_spark_per_core_vs_plain": round((mb / t_spark / args.cores) / (mb / t_plain), 3),
        "speedup_spark_vs_plain": round(t_plain / t_spark, 3),
        # where Spark's time goes: read + clean alone, the rest is persist, writes and the ledger
        "spark_read_clean_only_s": round(statistics.median(inner), 2),
        "speedup_read_clean_only_vs_plain": round(t_plain / statistics.median(inner), 3),
    }
    print(json.dumps(result, indent=2))
    harness.write_result(args.result, "bench.bench_clean", args, result, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
