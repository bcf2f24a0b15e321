"""Judge cleaning-rule variants by the dev perplexity of a proxy model (PanGu-α §3.1.3): "the
preprocessed dataset that achieves lower PPL is considered to have higher quality and its
corresponding cleaning rules and filtering models are considered to be better".

    judge_rules(cfg, builds, overrides, inputs, dev, output, trainer)

1. **Sample**: the input files (all, or ``judge.sample_files`` of them chosen by a seeded hash),
   the same for every variant.
2. **Proxy vocabulary** (``judge.vocab_size`` > 0): a small SentencePiece model trained on the dev
   set, independent of the build's tokenizer (``train_proxy_tokenizer``); every build tokenizes
   with it. With ``judge.vocab_size = 0``: ``tokenizer.model`` when given, else the one the
   baseline build trains.
3. **Builds**: ``etl.corpus.build_corpus`` once per variant (its BuildConfig is the base config
   plus the variant's keys), baseline first. A variant that keeps no document is refused.
4. **Ledger moves**: per variant, the records whose fate differs from the baseline's, counted by
   (baseline outcome -> variant outcome), e.g. ``kept -> clean/too_short`` (``etl.judge.report``).
5. **Dev set** (``etl.judge.dev``): dev documents that are exact or near duplicates of any
   variant's training documents are removed (the dedup machinery: a ``DedupIndex`` of every
   variant's documents, then ``dedup_phase``) and counted; the rest is tokenized into dev shards.
6. **Proxy runs in rounds** (``trainer``, ``train.proxy`` in the job; ``run_rounds``): checked
   before any starts (corpus not empty, one tokenizer, dev set large enough); the plan (seeds
   from ``judge.prior_sd`` and ``judge.effect``, and its minimum detectable difference) logged
   before the first run; every variant runs the same seeds; after each round the paired
   comparisons (``etl.judge.stats``) decide: more seeds, more tokens, or stop.
7. **Report**: ``judge.json`` and ``judge.html``; the ranking is by mean dev perplexity, each
   variant's verdict against the baseline by its paired difference and MDD.

The output directory is published atomically (``etl.runtime.publish``) and must be a local or shared
file-system path: the proxy runs memory-map the shards from every Ray node.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
import tomllib
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from etl.corpus import BuildConfig, build_corpus
from etl.judge.report import TIMINGS, brief, comparison_line
from etl.judge.section import BASELINE, VARIANT_SECTIONS, JudgeError, JudgeSection, Trainer
from etl.read.readers import list_input_files
from etl.runtime.publish import LocalStorage, publish_dir
from etl.runtime.spark import session
from etl.shards.tokenizer_train import TokenizerConfig, train_tokenizer

log = logging.getLogger("zhcorpus")


def read_variants(path: str | Path) -> dict[str, dict[str, Any]]:
    """``{name: {dotted key: value}}`` from a variants TOML, baseline first (added empty when
    missing). A key may be quoted (``"rules.length.min_chars" = 300``) or nested (a
    ``[v.rules.length]`` table): both become dotted keys. Keys outside ``VARIANT_SECTIONS`` are
    refused here; unknown keys inside them by the config loader (``jobs.config``)."""
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise JudgeError(f"cannot read variants {path}: {e}") from e
    variants = {BASELINE: {}}
    for name, table in raw.items():
        if not isinstance(table, dict):
            raise JudgeError(
                f"{path}: {name} = {table!r} is not a table; each variant is a [name] table of build-config keys"
            )
        keys = _flatten(table)
        for key in keys:
            if key.split(".")[0] not in VARIANT_SECTIONS:
                why = (
                    f"a variant changes only {', '.join(VARIANT_SECTIONS)} keys"
                    if not key.startswith("tokenizer.")
                    else "one tokenizer for all variants: set tokenizer.* for all with --set"
                )
                raise JudgeError(f"variant {name}: {key} is not allowed ({why})")
        variants[name] = keys
    return variants


def _flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def as_overrides(keys: dict[str, Any]) -> list[str]:
    """The ``--set key=value`` strings of a variant's keys (values written as TOML)."""
    return [f"{k}={_toml(v)}" for k, v in keys.items()]


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)  # inf and nan are TOML too
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml(x)}" for k, x in v.items()) + "}"
    raise JudgeError(f"unsupported value {v!r} in a variant")


def sample_files(spark: SparkSession, inputs: list[str], cfg: JudgeSection) -> list[str]:
    """Every input file, or the ``sample_files`` with the smallest sha256(seed, path), sorted."""
    files = list_input_files(spark, inputs)
    if cfg.sample_files <= 0 or cfg.sample_files >= len(files):
        return files
    key = lambda f: hashlib.sha256(f"{cfg.sample_seed}\0{f}".encode()).hexdigest()  # noqa: E731
    return sorted(sorted(files, key=key)[: cfg.sample_files])


def _with_tokenizer(cfg: BuildConfig, model: str) -> BuildConfig:
    return dataclasses.replace(cfg, tokenizer=dataclasses.replace(cfg.tokenizer, model=model))


def build_variants(spark: SparkSession, builds: dict[str, BuildConfig], files: list[str], root: str) -> dict[str, dict]:
    """Build every variant into ROOT/variants/NAME, baseline first; returns their report.json."""
    reports: dict[str, dict] = {}
    tokenizer = builds[BASELINE].tokenizer.model
    for name, cfg in builds.items():
        log.info("judge: building variant %s (%d of %d)", name, len(reports) + 1, len(builds))
        out = f"{root}/variants/{name}"
        reports[name] = build_corpus(_with_tokenizer(cfg, tokenizer) if tokenizer else cfg, files, out, spark=spark)
        tokenizer = tokenizer or f"{out}/tokenizer"
        if reports[name]["documents"] == 0:
            raise JudgeError(
                f"variant {name} kept no documents of {reports[name]['input']['records']:,} records: "
                "its corpus is empty, there is nothing to train a proxy on"
            )
    return reports


def _local(path: str) -> str:
    if "://" in path and not path.startswith("file:"):
        raise JudgeError(
            f"--output {path}: the proxy runs memory-map the shards, so the output must be a local "
            "or shared file-system path"
        )
    return path[len("file:") :] if path.startswith("file:") else path


def rare_characters(counts: dict[str, int], chars: int) -> str:
    """The characters beyond the ``chars`` most frequent (ties by code point), most frequent first."""
    ranked = sorted(counts, key=lambda c: (-counts[c], c))
    return "".join(ranked[chars:])


def train_proxy_tokenizer(dev: DataFrame, base: TokenizerConfig, cfg: JudgeSection, output: str) -> dict[str, Any]:
    """The proxy's vocabulary: ``judge.vocab_size`` SentencePiece pieces trained on the dev set with
    the build's other tokenizer settings. Single characters get at most ``vocab_char_share`` of the
    pieces: the dev set's rarer characters are blanked in the training text (SentencePiece refuses a
    character coverage under 0.98, which a small vocabulary cannot hold for Chinese), so they are
    spelled in UTF-8 bytes when the variants and the dev set are tokenized. Returns its metadata."""
    chars = dev.select(F.explode(F.split("text", "")).alias("c")).where(~F.col("c").rlike(r"^\s*$"))
    counts = {r["c"]: r["count"] for r in chars.groupBy("c").count().collect()}  # one row per distinct character
    rare = rare_characters(counts, int(cfg.vocab_size * cfg.vocab_char_share))
    text = F.translate("text", rare, " " * len(rare)) if rare else F.col("text")
    tok = dataclasses.replace(base, model="", vocab_size=cfg.vocab_size, character_coverage=1.0)
    total = sum(counts.values())
    log.info(
        "judge: proxy vocabulary of %d pieces trained on the dev set: %d of its %d distinct characters "
        "(%.1f%% of its characters) get a piece, the rest are spelled in bytes",
        cfg.vocab_size,
        len(counts) - len(rare),
        len(counts),
        100 * (1 - sum(counts[c] for c in rare) / max(1, total)),
    )
    return train_tokenizer(
        dev.select("doc_id", text.alias("text")),
        tok,
        output,
        {"inputs": ["judge dev set"], "distinct_characters": len(counts), "blanked": len(rare)},
    )


def _seed_list(first: tuple[int, ...], k: int) -> tuple[int, ...]:
    """The first k seeds: ``first``, then numbered on from its largest."""
    return tuple(first[:k]) + tuple(range(max(first) + 1, max(first) + 1 + k - len(first)))


def run_rounds(
    cfg: JudgeSection, trainer: Trainer, manifests: dict[str, str], dev_manifest: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Proxy runs in rounds: the plan (seeds from ``prior_sd`` and ``effect``, its MDD logged
    before any run starts), then after each round the paired comparisons and ``next_step``: more
    seeds, a larger budget (the earlier runs are then left out: another budget), or stop. Returns
    the final runs and the plan with every round's summary."""
    from etl.judge.stats import compare, first_round, next_step

    p = cfg.power_spec
    k, planned = first_round(cfg.prior_sd, cfg.effect, len(cfg.seeds), max(cfg.max_seeds, len(cfg.seeds)), p)
    log.info(
        "judge: plan before training: %d seeds per variant, paired; with a seed-to-seed sd of %.1f%% "
        "(judge.prior_sd) the minimum detectable difference is %.1f%% of the baseline's dev perplexity "
        "(alpha %.2f, power %.2f; the dev set's error is measured by the first round) against an effect of "
        "%.1f%% (judge.effect)",
        k,
        100 * cfg.prior_sd,
        100 * planned,
        p.alpha,
        p.power,
        100 * cfg.effect,
    )
    plan = {"seeds": k, "planned_mdd_rel": planned, "prior_sd": cfg.prior_sd, "effect": cfg.effect, "rounds": []}
    factor, results = 1, []
    while True:
        seeds = _seed_list(cfg.seeds, k)
        done = {r["seed"] for r in results}
        results += trainer.run(manifests, dev_manifest, tuple(s for s in seeds if s not in done), on_result=_progress)
        comparisons = compare(results, BASELINE, p)
        step = next_step(comparisons, k, factor, cfg.effect, cfg.max_seeds, cfg.max_token_factor, p)
        plan["rounds"].append(
            {
                "seeds": list(seeds),
                "budget_tokens": trainer.budget,
                "next": dataclasses.asdict(step),
                "vs_baseline": {n: brief(c) for n, c in comparisons.items()},
            }
        )
        for name, c in comparisons.items():
            log.info("judge: %s", comparison_line(name, c))
        log.info(
            "judge: after %d seeds at %s tokens per run: %s (%s)", k, f"{trainer.budget:,}", step.action, step.reason
        )
        if step.action == "stop":
            return results, plan
        if step.action == "tokens":
            factor, results = step.token_factor, []
            trainer.set_budget_factor(factor)
        k = step.seeds


def judge_rules(
    cfg: JudgeSection,
    builds: dict[str, BuildConfig],
    overrides: dict[str, dict[str, Any]],
    inputs: list[str],
    dev: list[str],
    output: str,
    trainer: Trainer,
    overwrite: bool = False,
    spark: SparkSession | None = None,
) -> dict[str, Any]:
    """Build, decontaminate the dev set, train, report; returns judge.json's content. ``builds``:
    the resolved BuildConfig per variant (baseline first), ``overrides``: each one's keys."""
    from etl.judge.dev import prepare_dev, read_dev
    from etl.judge.html import render
    from etl.judge.report import assemble, ledger_moves

    if next(iter(builds)) != BASELINE:
        raise JudgeError(f"the first variant must be {BASELINE}")
    t0 = time.monotonic()
    spark = spark or session("zhcorpus-judge", builds[BASELINE].spark)
    given = builds[BASELINE]  # the config as given: judge.json records it, not the staging paths
    dev_docs, dev_counts = read_dev(spark, dev)  # a bad dev set is refused before any build
    files = sample_files(spark, inputs, cfg)
    with publish_dir(_local(output), overwrite, LocalStorage()) as out:
        root = out.root
        if cfg.vocab_size > 0:
            train_proxy_tokenizer(dev_docs, builds[BASELINE].tokenizer, cfg, f"{root}/tokenizer")
            builds = {n: _with_tokenizer(b, f"{root}/tokenizer") for n, b in builds.items()}
        reports = build_variants(spark, builds, files, root)
        dirs = {name: f"{root}/variants/{name}" for name in builds}
        moves = {name: ledger_moves(spark, dirs[BASELINE], d) for name, d in dirs.items() if name != BASELINE}
        tokenizer = builds[BASELINE].tokenizer.model or f"{dirs[BASELINE]}/tokenizer"
        t_built = time.monotonic()
        dev_summary = prepare_dev(
            spark,
            dev_docs,
            dev_counts,
            {n: f"{d}/documents" for n, d in dirs.items()},
            builds[BASELINE].dedup,
            tokenizer,
            f"{root}/dev",
            cfg.min_dev_documents,
        )
        manifests = {n: f"{d}/shards/manifest.json" for n, d in dirs.items()}
        checked = trainer.check(manifests, f"{root}/dev/shards/manifest.json")  # refuses before any run starts
        t_dev = time.monotonic()
        results, plan = run_rounds(cfg, trainer, manifests, f"{root}/dev/shards/manifest.json")
        t_trained = time.monotonic()
        _write_runs(out, results)
        timings = {
            "build_s": round(t_built - t0, 1),
            "dev_s": round(t_dev - t_built, 1),
            "train_s": round(t_trained - t_dev, 1),
            "runs_s": {f"{r['variant']}/{r['seed']}": round(r.get("seconds", 0.0), 1) for r in results},
        }
        report = assemble(
            seeds=sorted({r["seed"] for r in results}),
            overrides=overrides,
            builds=reports,
            moves=moves,
            checked=checked,
            results=results,
            plan=plan,
            power=cfg.power_spec,
            dev=dev_summary,
            proxy=trainer.describe(),
            sample=files,
            config={"judge": dataclasses.asdict(cfg), "baseline": dataclasses.asdict(given)},
            timings=timings,
        )
        report[TIMINGS]["total_s"] = round(time.monotonic() - t0, 1)
        out.write_text("judge.json", json.dumps(report, ensure_ascii=False, indent=1))
        out.write_text("judge.html", render(report))
    return report


def _progress(result: dict[str, Any]) -> None:
    if result["status"] == "ok":
        log.info("judge: proxy %s seed %d: dev loss %.4f", result["variant"], result["seed"], result["dev_loss"])


def _write_runs(out, results: list[dict[str, Any]]) -> None:
    """runs/VARIANT/seed-S.json: each run's curves (judge.json has them too) or its error."""
    for r in results:
        os.makedirs(out.path(f"runs/{r['variant']}"), exist_ok=True)
        out.write_text(f"runs/{r['variant']}/seed-{r['seed']}.json", json.dumps(r, indent=1))
