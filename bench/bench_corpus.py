"""End-to-end throughput of ``build_corpus`` (read → clean → classify → dedup → tokenize → shards)
at local[N], with each stage's share of the time, against two anchors measured in the same run:

* the plain-Python parse + clean of the same files in one process (``bench.bench_clean``'s
  anchor): the whole chain's MB/s per core is reported as a ratio to it;
* the tokenizer alone in one plain process on the kept documents (tokens/s on one core),
  against the Spark tokenize stage (tokens/s per core, no-op sink).

    python -m bench.bench_corpus [--input PATH ...] [--cores 2] [--repeats 3] [--vocab 8000]

The tokenizer is trained once (first run) and reused by the timed runs, as a production corpus
build would; classification runs when --models points at jobs.train_classifier outputs.
Medians over --repeats; the machines are shared, so compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

from bench.bench_clean import plain_python

STAGES = ("read_clean_classify", "dedup", "tokenize_shards")


def build(spark, inputs: list[str], out: Path, overrides: list[str]) -> dict:
    from jobs.build_corpus import BuildConfig, run
    from jobs.config import load_config

    cfg = load_config(BuildConfig, None, overrides)
    return run(cfg, inputs, str(out), overwrite=True, spark=spark)


def plain_tokenize(tokenizer_dir: Path, texts: list[str]) -> tuple[float, int]:
    from filters.tokenizer import ZhTokenizer

    tok = ZhTokenizer.load(tokenizer_dir)
    t0 = time.perf_counter()
    n = sum(len(ids) for ids in tok.encode_batch(texts))
    return time.perf_counter() - t0, n


def spark_tokenize(spark, tokenizer_dir: Path, documents: str) -> float:
    from etl.shards import ship_tokenizer, tokenize_stage

    shipped = ship_tokenizer(spark, str(tokenizer_dir))
    docs = spark.read.parquet(documents)
    t0 = time.perf_counter()
    tokenize_stage(docs, shipped).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", nargs="+", default=["data/demo_crawl/warc", "data/demo_crawl/wet", "data/demo_crawl/jsonl"])
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--vocab", type=int, default=8000, help="tokenizer vocabulary (demo size: %(default)s)")
    p.add_argument("--models", default="out/demo/models", help="DIR with spam/ and quality/ ('' = no classify)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    import pyarrow.parquet as pq

    from etl.spark import get_spark

    files = sorted(f for root in map(Path, args.input) for f in ([root] if root.is_file() else root.rglob("*"))
                   if f.is_file() and not f.name.startswith(("_", ".")))
    overrides = [f"tokenizer.params.vocab_size={args.vocab}"]
    if args.models:
        overrides += [f"classify.spam_model={args.models}/spam", f"classify.quality_model={args.models}/quality"]
    spark = get_spark("bench-corpus", f"local[{args.cores}]")
    runs, plain, tok_plain, tok_spark = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        first = Path(tmp) / "first"
        build(spark, args.input, first, overrides)  # warm-up; trains the tokenizer the timed runs reuse
        tokenizer = Path(tmp) / "tokenizer"
        (first / "tokenizer").rename(tokenizer)
        overrides.append(f"tokenizer.model={tokenizer}")
        documents = str(first / "documents")
        texts = pq.read_table(documents, columns=["text"]).column("text").to_pylist()
        for i in range(args.repeats):
            plain.append(plain_python(files))
            runs.append(build(spark, args.input, Path(tmp) / f"run{i}", overrides))
            tok_plain.append(plain_tokenize(tokenizer, texts))
            tok_spark.append(spark_tokenize(spark, tokenizer, documents))
    spark.stop()

    mb = runs[0]["input"]["bytes"] / 1e6
    t_chain = statistics.median(r["job"]["elapsed_s"] for r in runs)
    t_plain = statistics.median(t for t, _, _ in plain)
    stage = {s: statistics.median(r["job"]["stage_seconds"][s] for r in runs) for s in STAGES}
    tokens = tok_plain[0][1]
    tps_plain = tokens / statistics.median(t for t, _ in tok_plain)
    tps_spark_core = tokens / statistics.median(tok_spark) / args.cores
    result = {
        "input_mb": round(mb, 2), "documents": runs[0]["documents"], "tokens": runs[0]["shards"]["total_tokens"],
        "cores": args.cores, "repeats": args.repeats,
        "chain_s": t_chain, "chain_mb_s": round(mb / t_chain, 3), "chain_mb_s_per_core": round(mb / t_chain / args.cores, 3),
        "stage_share": {s: round(v / sum(stage.values()), 3) for s, v in stage.items()},
        "anchor_plain_read_clean_mb_s": round(mb / t_plain, 3),
        "ratio_chain_per_core_vs_plain_read_clean": round((mb / t_chain / args.cores) / (mb / t_plain), 3),
        "tokenize_plain_tokens_s": round(tps_plain), "tokenize_spark_tokens_s_per_core": round(tps_spark_core),
        "ratio_tokenize_spark_per_core_vs_plain": round(tps_spark_core / tps_plain, 3),
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
