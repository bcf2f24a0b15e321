"""Exact + MinHash-LSH fuzzy deduplication of a cleaned corpus on Spark.

    spark-submit jobs/dedup.py --input OUT_CLEAN/documents --output OUT_DEDUP [--index DIR] [--set minhash.threshold=0.7]
    python -m jobs.dedup --input out/clean/documents --output out/dedup

Writes OUT/documents/ (one document per duplicate cluster: highest quality_score, then smallest
doc_id), OUT/duplicates/ (doc_id, duplicate_of, kind = exact | near) and OUT/report.json
(input = documents + duplicates, the MinHash settings). OUT appears atomically.
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

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from filters.minhash import MinHashParams  # noqa: E402
from jobs.config import ConfigError, load_config, to_dict  # noqa: E402

log = logging.getLogger("zhcorpus")


@dataclass(frozen=True)
class DedupConfig:
    master: str = ""  # "" = spark-submit's master, or local[*]
    minhash: MinHashParams = field(default_factory=MinHashParams)
    verify: str = "enforce"  # off | measure (exact Jaccard of candidate edges, reported) | enforce (also drop < threshold)


def run(cfg: DedupConfig, inputs: list[str], output: str, overwrite: bool = False, spark=None,
        index_dir: str | None = None) -> dict[str, Any]:
    from etl.dedup import VERIFY_MODES, dedup, largest_clusters, verification_summary
    from etl.dedup_index import DedupIndex
    from etl.output import AtomicOutput
    from etl.spark import get_spark

    if cfg.verify not in VERIFY_MODES:
        raise ConfigError(f"verify must be one of {VERIFY_MODES}, not {cfg.verify!r}")
    spark = spark or get_spark("zhcorpus-dedup", cfg.master or None)
    params = cfg.minhash.resolved()
    out = AtomicOutput(spark, output, overwrite)
    t0 = time.monotonic()
    try:
        docs = spark.read.parquet(*inputs)  # read again where needed: cheaper than caching the text
        n_in = docs.count()
        index = DedupIndex(spark, index_dir, params) if index_dir else None
        result = dedup(docs, params, index, cfg.verify)
        survivors, duplicates = result.survivors, result.duplicates
        survivors.write.parquet(out.path("documents"))
        duplicates.write.parquet(out.path("duplicates"))
        kinds = {r.kind: r["count"] for r in duplicates.groupBy("kind").count().collect()}
        n_docs = spark.read.parquet(out.path("documents")).count()
        n_dups = sum(kinds.values())
        report = {
            "input": {"documents": n_in}, "documents": n_docs, "duplicates": n_dups,
            "duplicates_by_kind": dict(sorted(kinds.items())), "balanced": n_in == n_docs + n_dups,
            "largest_clusters": largest_clusters(duplicates),
            "minhash": asdict(params), "config": to_dict(cfg),
            "job": {"name": "dedup", "inputs": inputs, "elapsed_s": round(time.monotonic() - t0, 2)},
        }
        if result.verified is not None:
            report["verification"] = {"mode": cfg.verify, **verification_summary(result.verified, params.threshold)}
        if not report["balanced"]:
            raise RuntimeError(f"dedup ledger does not balance: {n_in} in, {n_docs} kept + {n_dups} duplicates")
        if index is not None:  # the index learns the survivors before the output is published
            report["index"] = {"dir": index_dir, "batches_before": len(index.committed()),
                               "appended_run": index.append(result.survivor_bands, result.survivor_exact)}
        out.write_text("report.json", json.dumps(report, ensure_ascii=False, indent=2))
        out.commit()
    except BaseException:
        out.abort()
        raise
    return report


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    p = argparse.ArgumentParser(prog="jobs.dedup", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", nargs="+", required=True, help="Parquet documents (doc_id, text[, quality_score])")
    p.add_argument("--output", required=True)
    p.add_argument("--config", default=None, help="TOML config")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="e.g. --set minhash.threshold=0.7 --set minhash.shingle=5 --set verify=measure")
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--index", default=None, help="persistent dedup index directory: dedup against everything it "
                   "holds, then append this run's survivors (created on first use)")
    args = p.parse_args(argv)
    try:
        cfg = load_config(DedupConfig, args.config, args.overrides)
        report = run(cfg, args.input, args.output, args.overwrite, index_dir=args.index)
    except (ConfigError, FileExistsError, ValueError) as e:
        log.error("%s", e)
        return 2
    log.info("dedup: %d in, %d kept, duplicates %s (%.1f s)", report["input"]["documents"], report["documents"],
             report["duplicates_by_kind"], report["job"]["elapsed_s"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
