"""The whole corpus build in one Spark job: read → clean → classify → dedup → tokenize → shards.

    spark-submit jobs/build_corpus.py --input RAW [RAW ...] --output OUT [--index DIR] [--set k=v ...]
    python -m jobs.build_corpus --input data/demo_crawl/warc --output out/corpus

Writes, atomically, the DESIGN.md contract:
    OUT/documents/   the kept documents (Parquet), one per duplicate cluster
    OUT/rejected/    doc_id, stage, reason, detail, text ... for every dropped record
    OUT/duplicates/  doc_id, duplicate_of, kind (exact | near)
    OUT/shards/      Megatron .bin/.idx pairs + manifest.json (with --set tokenizer.model=DIR, or a
                     tokenizer trained on this build's documents into OUT/tokenizer/)
    OUT/report.json  the ledger: input records = documents + rejected + duplicates, per stage and file
    OUT/report.html  the same as plots, one self-contained page
The config is the cleaning job's (jobs/configs/clean.toml) plus the [dedup], [tokenizer] and
[shards] sections below; every key can be overridden with --set.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # spark-submit jobs/build_corpus.py: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from etl.classify import ClassifyConfig  # noqa: E402
from etl.records import ReaderConfig  # noqa: E402
from filters.config import RulesConfig  # noqa: E402
from filters.minhash import MinHashParams  # noqa: E402
from filters.tokenizer import TokenizerParams  # noqa: E402
from jobs.clean import DEFAULT_CONFIG, SparkSection, clean_and_write, resources_report  # noqa: E402
from jobs.config import ConfigError, load_config, to_dict  # noqa: E402
from jobs.train_tokenizer import SampleConfig, TrainTokenizerConfig  # noqa: E402

log = logging.getLogger("zhcorpus")


@dataclass(frozen=True)
class DedupSection:
    minhash: MinHashParams = field(default_factory=MinHashParams)
    verify: str = "enforce"  # off | measure | enforce: exact Jaccard of LSH candidate edges (etl/dedup.py)


@dataclass(frozen=True)
class TokenizerSection:
    # A directory from jobs.train_tokenizer (verified by sha256). "" = train one on this build's
    # documents into OUT/tokenizer/ (local or shared-disk OUT only; on HDFS train it first).
    model: str = ""
    sample: SampleConfig = field(default_factory=SampleConfig)
    params: TokenizerParams = field(default_factory=TokenizerParams)


@dataclass(frozen=True)
class ShardsSection:
    num_shards: int = 0  # 0 = about one shard per target_mb of token data
    # ~1.3 characters per token and 2 bytes per token (uint16) -> ~1.5 bytes of .bin per character
    target_mb: int = 256


@dataclass(frozen=True)
class BuildConfig:
    spark: SparkSection = field(default_factory=SparkSection)
    reader: ReaderConfig = field(default_factory=ReaderConfig)
    rules: RulesConfig = field(default_factory=RulesConfig)
    classify: ClassifyConfig = field(default_factory=ClassifyConfig)
    dedup: DedupSection = field(default_factory=DedupSection)
    tokenizer: TokenizerSection = field(default_factory=TokenizerSection)
    shards: ShardsSection = field(default_factory=ShardsSection)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="jobs.build_corpus", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", nargs="+", required=True,
                   help="raw crawl files, directories or globs (WARC, WET, JSONL, Parquet; any Hadoop path)")
    p.add_argument("--output", required=True, help="output directory (created atomically)")
    p.add_argument("--index", default=None, help="persistent dedup index: dedup against every document it holds, "
                   "then append this build's survivors (created on first use)")
    p.add_argument("--config", default=str(DEFAULT_CONFIG), help="TOML config (default: %(default)s)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="e.g. --set dedup.minhash.threshold=0.7 --set classify.spam_model=DIR (repeatable)")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    return p.parse_args(argv)


def _duplicates_by_file(duplicates, documents) -> dict[str, dict[str, int]]:
    rows = (duplicates.join(documents.select("doc_id", "source_file"), "doc_id")
            .groupBy("source_file", "kind").count().collect())
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        out.setdefault(r.source_file, {})[r.kind] = r["count"]
    return out


def run(cfg: BuildConfig, inputs: list[str], output: str, index_dir: str | None = None,
        overwrite: bool = False, spark=None, index_run: str | None = None) -> dict[str, Any]:
    """``index_run``: the name this build's batch gets in the dedup index (default: random)."""
    from etl.classify import ship_models
    from etl.dedup import VERIFY_MODES, dedup, largest_clusters, verification_summary
    from etl.dedup_index import DedupIndex
    from etl.failpoints import failpoint
    from etl.ledger import LedgerError, add_duplicates
    from etl.output import AtomicOutput
    from etl.progress import Counters, report_progress
    from etl.report_html import render as render_html
    from etl.report_stats import cluster_sizes, log_histogram
    from etl.spark import get_spark
    from filters.pipeline import Cleaner

    if cfg.dedup.verify not in VERIFY_MODES:
        raise ConfigError(f"dedup.verify must be one of {VERIFY_MODES}, not {cfg.dedup.verify!r}")
    params = cfg.dedup.minhash.resolved()
    spark = spark or get_spark("zhcorpus-build", cfg.spark.master or None)
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(cfg.spark.max_partition_bytes))
    cleaner = Cleaner(cfg.rules)
    shipped = ship_models(spark, cfg.classify) if cfg.classify.enabled else None
    index = DedupIndex(spark, index_dir, params) if index_dir else None  # refuses other settings up front
    out = AtomicOutput(spark, output, overwrite)
    counters = Counters(spark.sparkContext)
    t0, timings, marked = time.monotonic(), {}, None

    def lap(name: str) -> None:
        timings[name] = round(time.monotonic() - t0 - sum(timings.values()), 2)

    try:
        with report_progress(spark.sparkContext, counters, "build"):
            # the dedup input is materialised once, as "clean"
            marked, report = clean_and_write(spark, cfg, inputs, shipped, counters, out, "clean")
            lap("read_clean_classify")

            kept = spark.read.parquet(out.path("clean"))
            result = dedup(kept, params, index, cfg.dedup.verify)
            result.duplicates.write.parquet(out.path("duplicates"))
            duplicates = spark.read.parquet(out.path("duplicates"))
            result.survivors.write.parquet(out.path("documents"))
            documents = spark.read.parquet(out.path("documents"))
            add_duplicates(report, _duplicates_by_file(duplicates, kept), documents.count())
            report["dedup"] = {"minhash": asdict(params), "largest_clusters": largest_clusters(duplicates)}
            if result.verified is not None:
                report["dedup"]["verification"] = {"mode": cfg.dedup.verify,
                                                   **verification_summary(result.verified, params.threshold)}
            lap("dedup")

            tokenizer_dir = cfg.tokenizer.model or _train_tokenizer(cfg, spark, out)
            report["shards"], tokens = _tokens_and_shards(cfg, documents, tokenizer_dir, out)
            report["shards"]["tokenizer"] = cfg.tokenizer.model or "tokenizer/"
            if report["shards"]["documents"] != report["documents"]:
                raise LedgerError(f"shards hold {report['shards']['documents']} documents, "
                                  f"the ledger {report['documents']}")
            report["distributions"] = {"doc_chars": log_histogram(documents, "n_chars"),
                                       "doc_tokens": log_histogram(tokens, "n_tokens"),
                                       "cluster_sizes": cluster_sizes(duplicates)}
            tokens.unpersist()
            lap("tokenize_shards")

        out.delete("clean")
        if index is not None:  # the index learns the survivors before the output is published
            report["dedup"]["index"] = {"dir": index_dir, "batches_before": len(index.committed()),
                                        "appended_run": index.append(result.survivor_bands, result.survivor_exact,
                                                                     index_run)}
            failpoint("build:index_appended")
        elapsed = time.monotonic() - t0
        report["job"] = {"name": "build_corpus", "inputs": inputs, "elapsed_s": round(elapsed, 2),
                         "stage_seconds": timings,
                         "mb_per_s": round(report["input"]["bytes"] / 1e6 / elapsed, 3) if elapsed else None,
                         "spark_master": spark.sparkContext.master,
                         "default_parallelism": spark.sparkContext.defaultParallelism}
        report.update(resources_report(cleaner, shipped, cfg.classify))
        report["config"] = to_dict(cfg)
        out.write_text("report.json", json.dumps(report, ensure_ascii=False, indent=2))
        out.write_text("report.html", render_html(json.loads(json.dumps(report))))  # as a reader of report.json sees it
        final = out.commit()
    except BaseException:
        out.abort()
        raise
    finally:
        if marked is not None:
            marked.unpersist()
    log.info("wrote %s in %.1fs", final, elapsed)
    return report


def _local_path(uri: str) -> str:
    if uri.startswith("file:"):
        return uri[len("file:"):]
    if "://" in uri:
        raise ConfigError(f"cannot train the tokenizer into {uri}: train it first (jobs.train_tokenizer) "
                          "and pass --set tokenizer.model=DIR")
    return uri


def _train_tokenizer(cfg: BuildConfig, spark, out) -> str:
    from jobs.train_tokenizer import train

    target = _local_path(out.path("tokenizer"))
    train(TrainTokenizerConfig(sample=cfg.tokenizer.sample, tokenizer=cfg.tokenizer.params),
          [out.path("documents")], target, spark=spark)
    return target


def _tokens_and_shards(cfg: BuildConfig, documents, tokenizer_dir: str, out):
    """Tokenize once (persisted: the shards and the token histogram both read it), write the
    shards, and return the manifest's summary for the report plus the token frame."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from etl.shards import ship_tokenizer, tokenize_stage, write_token_shards

    n = cfg.shards.num_shards
    if n <= 0:
        chars = documents.agg(F.sum("n_chars")).first()[0] or 0
        n = max(1, -(-int(chars * 1.5) // (cfg.shards.target_mb << 20)))
    shipped = ship_tokenizer(documents.sparkSession, tokenizer_dir)
    tokens = tokenize_stage(documents, shipped).persist(StorageLevel.MEMORY_AND_DISK)
    manifest = write_token_shards(tokens, shipped, out.path("shards"), n)
    summary = {"manifest": "shards/manifest.json", "tokenizer_sha256": shipped.sha256,
               "vocab_size": shipped.vocab_size, "dtype": manifest["dtype"], "num_shards": n,
               "documents": manifest["totals"]["documents"], "total_tokens": manifest["totals"]["tokens"],
               "tokens_per_source": manifest["tokens_per_source"]}
    return summary, tokens


def main(argv: list[str] | None = None) -> int:
    from etl.dedup_index import IndexSettingsMismatch
    from filters.classify import ModelError
    from jobs.clean import summary_lines

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    args = parse_args(argv)
    try:
        cfg = load_config(BuildConfig, args.config, args.overrides)
        report = run(cfg, args.input, args.output, args.index, args.overwrite)
    except (ConfigError, FileNotFoundError, FileExistsError, ValueError, ModelError, IndexSettingsMismatch) as e:
        log.error("%s", e)
        return 2
    for line in summary_lines(report):
        log.info(line)
    sh = report["shards"]
    log.info("shards  %d pairs, %s tokens (<eod> included), per source %s", sh["num_shards"],
             f"{sh['total_tokens']:,}", sh["tokens_per_source"])
    log.info("report: %s/report.html", args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
