"""``judge.json``: per variant what it kept, how its ledger moved against the baseline's, and the
dev loss and perplexity of its proxy runs; the paired comparison with the baseline and its
verdict against the minimum detectable difference; the ranking; the plan and its rounds.

Definitions (the page, docs/judge.md and the README use the same; the statistics are
``etl.judge.stats``'s):
- ``dev_ppl``: exp(final dev loss) per seed, in ``seeds`` order (failed runs left out).
- ``mean_dev_ppl``: their mean; ``spread_dev_ppl``: max − min over the seeds; ``dev_se_ppl``: the
  dev set's own sampling error of the mean (delta method over dev documents).
- ``vs_baseline``: the paired comparison over the seeds both finished: ``diffs`` (variant −
  baseline per seed), ``mean``, ``sd``, ``se_seed``, ``se_dev``, ``se``, ``df``, ``mdd`` and their
  shares of the baseline's perplexity (``*_rel``), and ``verdict``: "worse beyond MDD", "better
  beyond MDD" or "within MDD".
- ``ranking``: variants with at least one finished run, by mean dev perplexity, best first.
- ``plan``: the seeds and MDD planned before training, and per round its seeds, budget, brief
  comparisons and what the judge did next (more seeds, more tokens, stop) and why.

Everything outside ``timings`` is a function of the inputs, the configs and the seeds: a re-run
gives the same ``judge.json`` apart from ``timings``.
"""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from etl.judge.section import BASELINE

KEPT, ABSENT = "kept", "absent"
TIMINGS = "timings"  # the one key of judge.json that is not reproducible


def outcomes(spark: SparkSession, build_dir: str) -> DataFrame:
    """(doc_id, outcome) of every record of a build: kept, dedup/<kind> or <stage>/<reason>."""
    docs = spark.read.parquet(f"{build_dir}/documents").select("doc_id", F.lit(KEPT).alias("outcome"))
    dups = spark.read.parquet(f"{build_dir}/duplicates").select(
        "doc_id", F.concat(F.lit("dedup/"), "kind").alias("outcome")
    )
    rejected = spark.read.parquet(f"{build_dir}/rejected").select(
        "doc_id", F.concat_ws("/", "stage", "reason").alias("outcome")
    )
    return docs.unionByName(dups).unionByName(rejected)


def ledger_moves(spark: SparkSession, baseline_dir: str, variant_dir: str) -> list[dict[str, Any]]:
    """Records whose outcome differs between the two builds, counted per (from, to), most first."""
    a = outcomes(spark, baseline_dir).withColumnRenamed("outcome", "from")
    b = outcomes(spark, variant_dir).withColumnRenamed("outcome", "to")
    moved = (
        a.join(b, "doc_id", "full_outer")
        .select(F.coalesce("from", F.lit(ABSENT)).alias("from"), F.coalesce("to", F.lit(ABSENT)).alias("to"))
        .where(F.col("from") != F.col("to"))
        .groupBy("from", "to")
        .count()
        .collect()
    )
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
    from etl.judge.stats import DevScores, dev_se_ppl

    by_seed = {r["seed"]: r for r in runs}
    ok = [by_seed[s] for s in seeds if by_seed.get(s, {}).get("status") == "ok"]
    loss = [r["dev_loss"] for r in ok]
    ppl = [math.exp(min(x, 700.0)) for x in loss]
    scored = [DevScores.of(r) for r in ok if "dev_doc_nll" in r]
    return {
        "seeds_ok": [r["seed"] for r in ok],
        "dev_loss": loss,
        "dev_ppl": ppl,
        "mean_dev_loss": sum(loss) / len(loss) if loss else None,
        "mean_dev_ppl": sum(ppl) / len(ppl) if ppl else None,
        "spread_dev_ppl": max(ppl) - min(ppl) if len(ppl) >= 2 else None,
        "dev_se_ppl": dev_se_ppl(scored) if scored else None,
        "dev_curves": {str(r["seed"]): r["dev_curve"] for r in ok},
        "train_loss": {str(r["seed"]): r["train_loss"] for r in ok},
        "runs": [
            {k: v for k, v in by_seed[s].items() if k in ("seed", "status", "error")} for s in seeds if s in by_seed
        ],
    }


def assemble(
    *,
    seeds: list[int],
    overrides: dict[str, dict[str, Any]],
    builds: dict[str, dict[str, Any]],
    moves: dict[str, list[dict[str, Any]]],
    checked: dict[str, Any],
    results: list[dict[str, Any]],
    plan: dict[str, Any],
    power,
    dev: dict[str, Any],
    proxy: dict[str, Any],
    sample: list[str],
    config: dict[str, Any],
    timings: dict[str, Any],
) -> dict[str, Any]:
    """The whole judge.json (see the module docstring)."""
    from etl.judge.stats import compare

    comparisons = compare(results, BASELINE, power)
    variants: dict[str, Any] = {}
    for name, keys in overrides.items():
        b, c = builds[name], checked["variants"][name]
        variants[name] = {
            "overrides": keys,
            "report": f"variants/{name}/report.json",
            "input_records": b["input"]["records"],
            "documents": b["documents"],
            "rejected": b["rejected"],
            "duplicates": b.get("duplicates", 0),
            "tokens": c["tokens"],
            "epochs": proxy["budget_tokens"] / c["tokens"],
            "reason_counts": reason_counts(b),
            "ledger_moves": moves.get(name, []),
            **_seed_stats([r for r in results if r["variant"] == name], seeds),
            "vs_baseline": comparisons.get(name),
        }
    ranked = sorted(
        (n for n, v in variants.items() if v["mean_dev_ppl"] is not None),
        key=lambda n: (variants[n]["mean_dev_ppl"], n),
    )
    failed = [
        {"variant": r["variant"], "seed": r["seed"], "error": r.get("error")} for r in results if r["status"] != "ok"
    ]
    return {
        "ranking": ranked,
        "unranked": [n for n in variants if n not in ranked],
        "failed_runs": failed,
        "seeds": list(seeds),
        "budget": {"tokens": proxy["budget_tokens"], "steps": proxy["steps"]},
        "plan": plan,
        "power": {"alpha": power.alpha, "power": power.power},
        "variants": variants,
        "dev": {**dev, **checked["dev"]},
        "tokenizer": {"sha256": checked["tokenizer_sha256"], "vocab_size": checked["vocab_size"]},
        "sample": {"files": len(sample), "paths": sample},
        "proxy": proxy,
        "config": config,
        TIMINGS: timings,
    }


def ranking_lines(report: dict[str, Any]) -> list[str]:
    """The ranking and each variant's paired comparison as a few human lines (driver log)."""

    lines = [
        f"ranking by dev perplexity ({len(report['seeds'])} paired seeds, "
        f"{report['budget']['tokens']:,} tokens per run):"
    ]
    for i, name in enumerate(report["ranking"], 1):
        v = report["variants"][name]
        seeds = ", ".join(f"{p:.2f}" for p in v["dev_ppl"])
        dev_se = "n/a" if v["dev_se_ppl"] is None else f"{v['dev_se_ppl']:.2f}"
        lines.append(
            f"{i}. {name:<20} ppl {v['mean_dev_ppl']:.2f} (seeds {seeds}; dev SE {dev_se}), "
            f"{v['tokens']:,} tokens ({v['epochs']:.2f} epochs)"
        )
    lines += ["   " + comparison_line(n, v["vs_baseline"]) for n, v in report["variants"].items() if n != BASELINE]
    for name in report["unranked"]:
        lines.append(f"-. {name:<20} no finished proxy run")
    for f in report["failed_runs"]:
        lines.append(f"failed: {f['variant']} seed {f['seed']}: {f['error']}")
    return lines


def brief(c: dict[str, Any] | None) -> dict[str, Any] | None:
    """The keys of a comparison that the round log (runs.jsonl) keeps."""
    keys = ("mean", "se", "mdd", "mean_rel", "mdd_rel", "verdict")
    return None if c is None else {k: c[k] for k in keys}


def comparison_line(name: str, c: dict[str, Any] | None) -> str:
    """One human line of a paired comparison (driver log, ranking lines)."""
    if c is None:
        return f"{name} vs {BASELINE}: fewer than 2 seeds finished by both"
    return (
        f"{name} vs {BASELINE}: {c['mean']:+.2f} ppl ({c['mean_rel']:+.1%}) over {len(c['seeds'])} paired "
        f"seeds, SE {c['se']:.2f} (seed sd {c['sd']:.2f}, dev SE {c['se_dev']:.2f}), MDD {c['mdd']:.2f} "
        f"({c['mdd_rel']:.1%}): {c['verdict']}"
    )
