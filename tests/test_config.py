import dataclasses
import typing

import pytest

from etl.corpus import BuildConfig, CleanConfig
from etl.nightly import NightlyConfig
from jobs.clean import DEFAULT_CONFIG, parse_args
from jobs.config import ConfigError, load_config
from jobs.dedup import DedupJobConfig
from jobs.train_classifier import TrainClassifierConfig
from jobs.train_tokenizer import TrainTokenizerConfig

SPARK_JOBS = [CleanConfig, BuildConfig, NightlyConfig, DedupJobConfig, TrainTokenizerConfig, TrainClassifierConfig]
# One value per shared key; every job that mounts the key's section must take it, to the same field.
SHARED = {
    "spark.master": "local[1]",
    "spark.checkpoint_dir": "/tmp/ckpt",
    "reader.max_record_bytes": 1024,
    "rules.length.min_chars": 200,
    "classify.spam_model": "models/spam",
    "classify.quality_rule": "pareto",
    "dedup.minhash.threshold": 0.7,
    "dedup.verify": "measure",
    "tokenizer.vocab_size": 8000,
    "tokenizer.model": "models/tokenizer",
    "tokenizer.sample.max_docs": 5,
    "shards.num_shards": 3,
}


def test_defaults_toml_and_overrides(tmp_path):
    cfg = load_config(CleanConfig, DEFAULT_CONFIG)
    assert cfg.rules.length.min_chars == 150 and cfg.rules.length.min_han_ratio == 0.6
    assert cfg.rules.sensitive.max_distinct_hits == 3
    # with or without the file, every job that runs the quality stage looks for make demo's profile
    assert cfg.quality.profile == "auto" and all(load_config(j).quality.profile == "auto" for j in SPARK_JOBS[:3])
    path = tmp_path / "c.toml"
    path.write_text("[rules.length]\nmin_chars = 200\n")
    cfg = load_config(
        CleanConfig,
        path,
        [
            "rules.length.min_han_ratio=0.7",
            "reader.default_source=crawl",
            "rules.ads.extra_keywords=['新品上市']",
            "rules.ads.enabled=false",
        ],
    )
    assert cfg.rules.length.min_chars == 200 and cfg.rules.length.min_han_ratio == 0.7
    assert cfg.reader.default_source == "crawl" and cfg.rules.ads.extra_keywords == ("新品上市",)
    assert cfg.rules.ads.enabled is False


def _get(cfg, dotted: str):
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


@pytest.mark.parametrize("job", SPARK_JOBS, ids=lambda c: c.__name__)
def test_a_shared_key_means_the_same_in_every_job(job):
    sections = {f.name: f.type for f in dataclasses.fields(job)}
    mounted = [k for k in SHARED if k.split(".")[0] in sections]
    assert "spark.master" in mounted  # every Spark job has the spark section
    cfg = load_config(
        job, None, [f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}" for k, v in SHARED.items() if k in mounted]
    )
    for key in mounted:
        assert _get(cfg, key) == SHARED[key], key
    canonical = typing.get_type_hints(BuildConfig)
    for name in {k.split(".")[0] for k in mounted}:  # the section is one class, wherever it is mounted
        assert typing.get_type_hints(job)[name] is canonical[name], name


@pytest.mark.parametrize(
    "job, old, new",
    [
        (DedupJobConfig, "master=local[1]", "spark.master"),
        (DedupJobConfig, "minhash.threshold=0.7", "dedup.minhash.threshold"),
        (DedupJobConfig, "verify=measure", "dedup.verify"),
        (TrainTokenizerConfig, "sample.max_docs=5", "tokenizer.sample.max_docs"),
        (TrainTokenizerConfig, "tokenizer.params.vocab_size=8000", "tokenizer.vocab_size"),
        (BuildConfig, "tokenizer.params.vocab_size=8000", "tokenizer.vocab_size"),
        (TrainClassifierConfig, "kind=quality", "classifier.kind"),
        (NightlyConfig, "build.classify.spam_model=x", "classify.spam_model"),
        (NightlyConfig, "build.tokenizer.params.vocab_size=8000", "tokenizer.vocab_size"),
        (NightlyConfig, "settle_seconds=0", "refresh.settle_seconds"),
    ],
)
def test_old_keys_get_an_error_naming_the_new_key(job, old, new):
    with pytest.raises(ConfigError, match=f"was renamed: use {new.replace('.', '[.]')}$"):
        load_config(job, None, [old])


@pytest.mark.parametrize(
    "override, message",
    [
        ("rules.length.min_charz=3", "unknown key"),
        ("rules.length.min_chars=abc", "must be int"),
        ("rules.ads.enabled=1", "must be bool"),
        ("classify.quality_rule=sometimes", "must be one of"),
        ("novalue", "key=value"),
    ],
)
def test_bad_overrides_are_clear_errors(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(CleanConfig, None, [override])


def test_dedup_verify_is_a_literal():
    with pytest.raises(ConfigError, match="dedup.verify must be one of"):
        load_config(BuildConfig, None, ["dedup.verify=sometimes"])


def test_cli_help_and_args(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    assert "--input" in capsys.readouterr().out
    args = parse_args(["--input", "a", "b", "--output", "o", "--set", "x=1"])
    assert args.input == ["a", "b"] and args.overrides == ["x=1"]
