"""Judge cleaning-rule variants by the dev perplexity of a small proxy GPT trained on each
(PanGu-α §3.1.3): build every variant from the same input, train proxies for the same token
budget with one tokenizer, rank by perplexity on a held-out dev set.

    python -m jobs.judge_rules --input CRAWL [CRAWL ...] --variants VARIANTS.toml --dev DEV --output OUT \\
        [--config jobs/configs/proxy.toml] [--set proxy.train.steps=400 --set judge.seeds=[0,1,2] ...]

VARIANTS.toml has one table per variant, whose keys are build-config keys exactly as
``jobs.build_corpus --set`` takes them (``[baseline]`` is always run, added empty when missing):

    [no_ads_rule]
    "rules.ads.enabled" = false
    [min_chars_300]
    "rules.length.min_chars" = 300

The config (default jobs/configs/proxy.toml) is the build config at the top level (what every
variant starts from, e.g. classify.spam_model=DIR) plus ``[judge]`` (the first seeds, the effect
worth finding and the caps on seeds and tokens, the proxy's own vocabulary, the input sample;
docs/judge.md) and ``[proxy]`` (the proxy's model, training and Ray settings;
jobs/configs/proxy-350M.toml is PanGu-α's 350M proxy for a GPU cluster). DEV is JSONL or Parquet
with a ``text`` column. The minimum detectable difference planned is logged before training,
and re-measured after every round. Writes OUT/judge.json, OUT/judge.html, OUT/tokenizer/ (the
proxy vocabulary), OUT/variants/NAME/ (each build), OUT/dev/ and OUT/runs/. Exit codes (jobs/cli.py): 0 done; 1 done,
but some proxy runs failed (named
in judge.json and the log); 2 refused before training (bad variant key, empty variant corpus, dev
set that overlaps everything, tokenizer mismatch, ...).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, fields
from pathlib import Path

from base.log import setup_logging
from etl.corpus import BuildConfig
from etl.judge.report import ranking_lines
from etl.judge.run import as_overrides, judge_rules, read_variants
from etl.judge.section import JudgeSection
from jobs import cli
from jobs.config import ConfigError, load_config
from train.proxy import ProxyConfig, ProxyTrainer

DEFAULT_CONFIG = Path(__file__).resolve().parent / "configs" / "proxy.toml"


@dataclass(frozen=True)
class JudgeConfig(BuildConfig):
    judge: JudgeSection = field(default_factory=JudgeSection)
    proxy: ProxyConfig = field(default_factory=ProxyConfig)


def variant_builds(path: str, config: str | None, sets: list[str]) -> tuple[JudgeConfig, dict, dict]:
    """(the config, each variant's BuildConfig, each variant's keys); a key the build config does
    not have is refused here, naming the variant, before anything runs."""
    cfg = load_config(JudgeConfig, config, sets)
    variants = read_variants(path)
    builds = {}
    for name, keys in variants.items():
        try:
            v = load_config(JudgeConfig, config, sets + as_overrides(keys))
        except ConfigError as e:
            raise ConfigError(f"variant {name} in {path}: {e}") from e
        builds[name] = BuildConfig(**{f.name: getattr(v, f.name) for f in fields(BuildConfig)})
    return cfg, builds, variants


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    p = cli.parser("jobs.judge_rules", __doc__, DEFAULT_CONFIG, "proxy.train.steps=400")
    p.add_argument("--input", nargs="+", required=True, help="raw crawl files, directories or globs")
    p.add_argument("--variants", required=True, help="TOML: one [name] table of build-config keys per variant")
    p.add_argument("--dev", nargs="+", required=True, help="held-out dev set: JSONL or Parquet with a text column")
    p.add_argument("--output", required=True, help="output directory (local or shared file system; atomic)")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    args = p.parse_args(argv)

    def body() -> int:
        cfg, builds, variants = variant_builds(args.variants, args.config, args.overrides)
        report = judge_rules(
            cfg.judge, builds, variants, args.input, args.dev, args.output, ProxyTrainer(cfg.proxy), args.overwrite
        )
        for line in ranking_lines(report):
            cli.log.info(line)
        cli.log.info("report: %s/judge.html", args.output)
        return cli.EXIT_FILE_ERRORS if report["failed_runs"] else cli.EXIT_OK

    return cli.run_job(body)


if __name__ == "__main__":
    sys.exit(main())
