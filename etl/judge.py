"""Judge cleaning-rule variants by the dev perplexity of a proxy model (PanGu-α §3.1.3): "the
preprocessed dataset that achieves lower PPL is considered to have higher quality and its
corresponding cleaning rules and filtering models are considered to be better".

    judge_rules(cfg, builds, overrides, inputs, dev, output, trainer)

1. **Sample**: the input files (all, or ``judge.sample_files`` of them chosen by a seeded hash),
   the same for every variant.
2. **Builds**: ``etl.corpus.build_corpus`` once per variant (its BuildConfig is the base config
   plus the variant's keys), baseline first; one tokenizer for all: ``tokenizer.model`` when
   given, else the one the baseline build trains. A variant that keeps no document is refused.
3. **Ledger moves**: per variant, the records whose fate differs from the baseline's, counted by
   (baseline outcome -> variant outcome), e.g. ``kept -> clean/too_short`` (``etl.judge_report``).
4. **Dev set** (``etl.judge_dev``): dev documents that are exact or near duplicates of any
   variant's training documents are removed (the dedup machinery: a ``DedupIndex`` of every
   variant's documents, then ``dedup_phase``) and counted; the rest is tokenized into dev shards.
5. **Proxy runs** (``trainer``, ``train.proxy`` in the job): checked before any starts (corpus
   not empty, one tokenizer, dev set large enough), then one per (variant, seed), side by side.
6. **Report**: ``judge.json`` and ``judge.html``; the ranking is by mean dev perplexity.

The output directory is published atomically (``etl.publish``) and must be a local or shared
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from pyspark.sql import SparkSession

from etl.corpus import BuildConfig, build_corpus
from etl.publish import LocalStorage, publish_dir
from etl.readers import list_input_files
from etl.judge_report import TIMINGS
from etl.spark import session

log = logging.getLogger("zhcorpus")
BASELINE = "baseline"
# Sections a variant may change: everything a build is judged by. Not spark (one session for
# all) and not tokenizer (one tokenizer for all: perplexities must be comparable).
VARIANT_SECTIONS = ("reader", "rules", "classify", "dedup", "shards")


class JudgeError(ValueError):
    """A judge run that cannot give a meaningful comparison (refused before training)."""


@dataclass(frozen=True)
class JudgeSection:
    # Proxy runs per variant, one per seed (weights and data order). At least 2: a difference
    # between variants means something only against the seed-to-seed spread.
    seeds: tuple[int, ...] = (0, 1)
    sample_files: int = 0      # 0 = every input file; else this many, the same for every variant
    sample_seed: int = 0       # the sample is the files with the smallest sha256(seed, path)
    min_dev_documents: int = 1  # fewer dev documents left after removing the overlap: refused

    def __post_init__(self):
        if len(set(self.seeds)) < 2:
            raise ValueError(f"judge.seeds needs at least 2 distinct seeds, got {list(self.seeds)}")


class Trainer(Protocol):
    """The training side (``train.proxy.ProxyTrainer``), given by the job: etl/ never imports torch."""

    def check(self, manifests: dict[str, str], dev_manifest: str) -> dict[str, Any]: ...
    def run(self, manifests: dict[str, str], dev_manifest: str, seeds: tuple[int, ...],
            on_result: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]: ...
    def describe(self) -> dict[str, Any]: ...


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
            raise JudgeError(f"{path}: {name} = {table!r} is not a table; each variant is a [name] table of "
                             "build-config keys")
        keys = _flatten(table)
        for key in keys:
            if key.split(".")[0] not in VARIANT_SECTIONS:
                why = (f"a variant changes only {', '.join(VARIANT_SECTIONS)} keys" if not key.startswith("tokenizer.")
                       else "one tokenizer for all variants: set tokenizer.* for all with --set")
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
    return sorted(sorted(files, key=key)[:cfg.sample_files])


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
            raise JudgeError(f"variant {name} kept no documents of {reports[name]['input']['records']:,} records: "
                             "its corpus is empty, there is nothing to train a proxy on")
    return reports


def _local(path: str) -> str:
    if "://" in path and not path.startswith("file:"):
        raise JudgeError(f"--output {path}: the proxy runs memory-map the shards, so the output must be a local "
                         "or shared file-system path")
    return path[len("file:"):] if path.startswith("file:") else path


def judge_rules(cfg: JudgeSection, builds: dict[str, BuildConfig], overrides: dict[str, dict[str, Any]],
                inputs: list[str], dev: list[str], output: str, trainer: Trainer, overwrite: bool = False,
                spark: SparkSession | None = None) -> dict[str, Any]:
    """Build, decontaminate the dev set, train, report; returns judge.json's content. ``builds``:
    the resolved BuildConfig per variant (baseline first), ``overrides``: each one's keys."""
    from etl.judge_dev import prepare_dev, read_dev
    from etl.judge_html import render
    from etl.judge_report import assemble, ledger_moves

    if next(iter(builds)) != BASELINE:
        raise JudgeError(f"the first variant must be {BASELINE}")
    t0 = time.monotonic()
    spark = spark or session("zhcorpus-judge", builds[BASELINE].spark)
    dev_docs, dev_counts = read_dev(spark, dev)  # a bad dev set is refused before any build
    files = sample_files(spark, inputs, cfg)
    with publish_dir(_local(output), overwrite, LocalStorage()) as out:
        root = out.root
        reports = build_variants(spark, builds, files, root)
        dirs = {name: f"{root}/variants/{name}" for name in builds}
        moves = {name: ledger_moves(spark, dirs[BASELINE], d) for name, d in dirs.items() if name != BASELINE}
        tokenizer = builds[BASELINE].tokenizer.model or f"{dirs[BASELINE]}/tokenizer"
        t_built = time.monotonic()
        dev_summary = prepare_dev(spark, dev_docs, dev_counts, {n: f"{d}/documents" for n, d in dirs.items()},
                                  builds[BASELINE].dedup, tokenizer, f"{root}/dev", cfg.min_dev_documents)
        manifests = {n: f"{d}/shards/manifest.json" for n, d in dirs.items()}
        checked = trainer.check(manifests, f"{root}/dev/shards/manifest.json")  # refuses before any run starts
        t_dev = time.monotonic()
        results = trainer.run(manifests, f"{root}/dev/shards/manifest.json", cfg.seeds, on_result=_progress)
        t_trained = time.monotonic()
        _write_runs(out, results)
        timings = {"build_s": round(t_built - t0, 1), "dev_s": round(t_dev - t_built, 1),
                   "train_s": round(t_trained - t_dev, 1),
                   "runs_s": {f"{r['variant']}/{r['seed']}": round(r.get("seconds", 0.0), 1) for r in results}}
        report = assemble(seeds=list(cfg.seeds), overrides=overrides, builds=reports, moves=moves, checked=checked,
                          results=results, dev=dev_summary, proxy=trainer.describe(), sample=files,
                          config={"judge": dataclasses.asdict(cfg), "baseline": dataclasses.asdict(builds[BASELINE])},
                          timings=timings)
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
