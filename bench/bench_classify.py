"""Classification stage throughput: Spark local[N] against the same two fastText models scoring
the same documents in one plain Python process (the anchor), in one run.

    python -m bench.bench_classify --documents out/demo/corpus/documents \\
        --spam-model out/demo/models/spam --quality-model out/demo/models/quality

Documents per second per core for each, their ratio, the segmentation engine, and the models'
held-out precision/recall (from their metadata.json). Medians over --repeats; compare ratios, not
seconds. Any documents directory with doc_id and text works; for a before/after comparison run
the same command in a checkout of the older commit (PYTHONPATH pointing at it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import pyarrow.parquet as pq

from bench import harness
from etl.classify.stage import ClassifyConfig, classify_stage, ship_models
from filters.classifiers.classify import TextClassifier, preprocess


def plain_python(texts: list[str], spam: TextClassifier, quality: TextClassifier) -> float:
    t0 = time.perf_counter()
    for i in range(0, len(texts), 1000):
        lines = [preprocess(t) for t in texts[i : i + 1000]]  # as the stage does: once for both models
        spam.positive_prob(lines, preprocessed=True)
        quality.positive_prob(lines, preprocessed=True)
    return time.perf_counter() - t0


def spark_stage(spark, docs_path: str, cfg: ClassifyConfig, cores: int) -> float:
    from pyspark.sql import functions as F

    shipped = ship_models(spark, cfg)
    df = (
        spark.read.parquet(docs_path)
        .select("doc_id", "text")
        .repartition(cores * 4)
        .select(
            F.lit("record").alias("kind"),
            "doc_id",
            "text",
            F.lit(None).cast("string").alias("reason"),
            F.lit(None).cast("string").alias("stage"),
            F.lit(None).cast("double").alias("spam_prob"),
            F.lit(None).cast("double").alias("quality_score"),
        )
    ).cache()
    df.count()  # read and shuffle outside the timing
    t0 = time.perf_counter()
    classify_stage(df, shipped).write.format("noop").mode("overwrite").save()
    elapsed = time.perf_counter() - t0
    df.unpersist()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--documents", default="out/demo/corpus/documents")
    p.add_argument("--spam-model", default="out/demo/models/spam")
    p.add_argument("--quality-model", default="out/demo/models/quality")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()

    from etl.runtime.spark import get_spark

    texts = pq.read_table(args.documents, columns=["text"]).column("text").to_pylist()
    spam, quality = TextClassifier(args.spam_model), TextClassifier(args.quality_model)
    cfg = ClassifyConfig(spam_model=args.spam_model, quality_model=args.quality_model)
    spark = get_spark("bench-classify", f"local[{args.cores}]")
    spark_stage(spark, args.documents, cfg, args.cores)  # warm-up: workers load the models
    plain, dist = [], []
    for _ in range(args.repeats):
        plain.append(plain_python(texts, spam, quality))
        dist.append(spark_stage(spark, args.documents, cfg, args.cores))
    spark.stop()
    n = len(texts)
    t_plain, t_spark = statistics.median(plain), statistics.median(dist)
    result = {
        "documents": n,
        "cores": args.cores,
        "repeats": args.repeats,
        "models_per_document": 2,
        "plain_python_docs_s": round(n / t_plain, 1),
        "spark_docs_s": round(n / t_spark, 1),
        "spark_docs_s_per_core": round(n / t_spark / args.cores, 1),
        "ratio_spark_per_core_vs_plain": round(t_plain / t_spark / args.cores, 3),
        "segmenter": spam.segmenter.info(),
        "held_out": {m.meta["kind"]: m.meta["validation"] for m in (spam, quality)},
    }
    print(json.dumps(result, indent=2))
    harness.write_result(args.result, "bench.bench_classify", args, result, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
