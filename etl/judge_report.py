"""``judge.json``: per variant what it kept, how its ledger moved against the baseline's, and the
dev loss and perplexity of its proxy runs; the ranking; the verdict against the seed spread.

Definitions (the page and the README use the same):
- ``dev_ppl``: exp(final dev loss) per seed, in ``seeds`` order (failed runs left out).
- ``mean_dev_ppl``: their mean; ``spread_dev_ppl``: max − min over the seeds.
- ``vs_baseline.diff``: mean_dev_ppl − the baseline's (negative = better than the baseline);
  ``exceeds_spread``: |diff| > max(this spread, the baseline's spread): the difference is larger
  than what changing the seed alone does to either of them.
- ``ranking``: variants with at least one finished run, by mean dev perplexity, best first.

Everything outside ``timings`` is a function of the inputs, the configs and the seeds: a re-run
gives the same ``judge.json`` apart from ``timings``.
"""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

KEPT, ABSENT = "kept", "absent"
TIMINGS = "timings"  # the one key of judge.json that is not reproducible


def outcomes(spark: SparkSession, build_dir: str) -> DataFrame:
    """(doc_id, outcome) of every record of a build: kept, dedup/<kind> or <stage>/<reason>."""
    docs = spark.read.parquet(f"{build_dir}/documents").select("doc_id", F.lit(KEPT).alias("outcome"))
    dups = spark.read.parquet(f"{build_dir}/duplicates").select(
        "doc_id", F.concat(F.lit("dedup/"), "kind").alias("outcome"))
    rejected = spark.read.parquet(f"{build_dir}/rejected").select(
        "doc_id", F.concat_ws("/", "stage", "reason").alias("outcome"))
    return docs.unionByName(dups).unionByName(rejected)


def ledger_moves(spark: SparkSession, baseline_dir: str, variant_dir: str) -> list[dict[str, Any]]:
    """Records whose outcome differs between the two builds, counted per (from, to), most first."""
    a = outcomes(spark, baseline_dir).withColumnRenamed("outcome", "from")
    b = outcomes(spark, variant_dir).withColumnRenamed("outcome", "to")
    moved = (a.join(b, "doc_id", "full_outer")
             .select(F.coalesce("from", F.lit(ABSENT)).alias("from"), F.coalesce("to", F.lit(ABSENT)).alias("to"))
             .where(F.col("from") != F.col("to")).groupBy("from", "to").count().collect())
    rows = [{"from": r["from"], "to": r["to"], "records": r["count"]} for r in moved]
    return sorted(rows, key=lambda r: (-r["records"], r["from"], r["to"]))


def reason_counts(report: dict[str, Any]) -> dict[str, int]:
    """A build's records per outcome (the ledger), in the ``outcomes`` vocabulary."""
    counts = {KEPT: report["documents"]}
    for stage, s in report.get("rejected_by_stage", {}).items():
        counts.update({f"{stage}/{reason}": n for reason, n in s["reasons"].items()})
    counts.update({f"dedup/{kind}": n for kind, n in report.get("duplicates_by_kind", {}).items()})
    return dict(sorted(counts.items()))


def _seed_stats(runs: list[dict[str, Any]], seeds: list[int]) -> dict[str, Any]:
    by_seed = {r["seed"]: r for r in runs}
    ok = [by_seed[s] for s in seeds if by_seed.get(s, {}).get("status") == "ok"]
    loss = [r["dev_loss"] for r in ok]
    ppl = [math.exp(min(x, 700.0)) for x in loss]
    return {
        "seeds_ok": [r["seed"] for r in ok], "dev_loss": loss, "dev_ppl": ppl,
        "mean_dev_loss": sum(loss) / len(loss) if loss else None,
        "mean_dev_ppl": sum(ppl) / len(ppl) if ppl else None,
        "spread_dev_ppl": max(ppl) - min(ppl) if len(ppl) >= 2 else None,
        "dev_curves": {str(r["seed"]): r["dev_curve"] for r in ok},
        "train_loss": {str(r["seed"]): r["train_loss"] for r in ok},
        "runs": [{k: v for k, v in by_seed[s].items() if k in ("seed", "status", "error")} for s in seeds],
    }


def _vs_baseline(v: dict[str, Any], base: dict[str, Any]) -> dict[str, Any] | None:
    if v["mean_dev_ppl"] is None or base["mean_dev_ppl"] is None:
        return None
    diff = v["mean_dev_ppl"] - base["mean_dev_ppl"]
    spreads = [s for s in (v["spread_dev_ppl"], base["spread_dev_ppl"]) if s is not None]
    spread = max(spreads) if len(spreads) == 2 else None
    return {"diff": diff, "relative": diff / base["mean_dev_ppl"], "spread": spread,
            "exceeds_spread": None if spread is None else abs(diff) > spread,
            "verdict": _verdict(diff, spread)}


def _verdict(diff: float, spread: float | None) -> str:
    if spread is None:
        return "unknown (fewer than 2 finished seeds)"
    if abs(diff) <= spread:
        return "within the seed spread"
    return "better than the baseline" if diff < 0 else "worse than the baseline"


def assemble(*, seeds: list[int], overrides: dict[str, dict[str, Any]], builds: dict[str, dict[str, Any]],
             moves: dict[str, list[dict[str, Any]]], checked: dict[str, Any], results: list[dict[str, Any]],
             dev: dict[str, Any], proxy: dict[str, Any], sample: list[str], config: dict[str, Any],
             timings: dict[str, Any]) -> dict[str, Any]:
    """The whole judge.json (see the module docstring)."""
    from etl.judge import BASELINE

    variants: dict[str, Any] = {}
    for name, keys in overrides.items():
        b, c = builds[name], checked["variants"][name]
        variants[name] = {
            "overrides": keys, "report": f"variants/{name}/report.json",
            "input_records": b["input"]["records"], "documents": b["documents"], "rejected": b["rejected"],
            "duplicates": b.get("duplicates", 0), "tokens": c["tokens"], "epochs": c["epochs"],
            "reason_counts": reason_counts(b),
            "ledger_moves": moves.get(name, []),
            **_seed_stats([r for r in results if r["variant"] == name], seeds)}
    for v in variants.values():
        v["vs_baseline"] = _vs_baseline(v, variants[BASELINE]) if v is not variants[BASELINE] else None
    ranked = sorted((n for n, v in variants.items() if v["mean_dev_ppl"] is not None),
                    key=lambda n: (variants[n]["mean_dev_ppl"], n))
    failed = [{"variant": r["variant"], "seed": r["seed"], "error": r.get("error")}
              for r in results if r["status"] != "ok"]
    return {"ranking": ranked, "unranked": [n for n in variants if n not in ranked], "failed_runs": failed,
            "seeds": list(seeds), "budget": {"tokens": proxy["budget_tokens"], "steps": proxy["steps"]},
            "variants": variants, "dev": {**dev, **checked["dev"]},
            "tokenizer": {"sha256": checked["tokenizer_sha256"], "vocab_size": checked["vocab_size"]},
            "sample": {"files": len(sample), "paths": sample}, "proxy": proxy, "config": config,
            TIMINGS: timings}


def ranking_lines(report: dict[str, Any]) -> list[str]:
    """The ranking as a few human lines (driver log, ``make judge-demo``)."""
    lines = [f"ranking by dev perplexity ({len(report['seeds'])} seeds, "
             f"{report['budget']['tokens']:,} tokens per run):"]
    for i, name in enumerate(report["ranking"], 1):
        v = report["variants"][name]
        seeds = ", ".join(f"{p:.2f}" for p in v["dev_ppl"])
        vs = v["vs_baseline"]
        tail = "baseline" if vs is None else f"{vs['diff']:+.2f} vs baseline: {vs['verdict']}"
        spread = "n/a" if v["spread_dev_ppl"] is None else f"{v['spread_dev_ppl']:.2f}"
        lines.append(f"{i}. {name:<20} ppl {v['mean_dev_ppl']:.2f} (seeds {seeds}; spread {spread}), "
                     f"{v['tokens']:,} tokens ({v['epochs']:.2f} epochs): {tail}")
    for name in report["unranked"]:
        lines.append(f"-. {name:<20} no finished proxy run")
    for f in report["failed_runs"]:
        lines.append(f"failed: {f['variant']} seed {f['seed']}: {f['error']}")
    return lines
