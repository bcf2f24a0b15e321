import pytest

from jobs.clean import CleanConfig, DEFAULT_CONFIG, parse_args
from jobs.config import ConfigError, load_config


def test_defaults_toml_and_overrides(tmp_path):
    cfg = load_config(CleanConfig, DEFAULT_CONFIG)
    assert cfg.rules.length.min_chars == 150 and cfg.rules.length.min_han_ratio == 0.6
    assert cfg.rules.sensitive.max_distinct_hits == 3
    path = tmp_path / "c.toml"
    path.write_text("[rules.length]\nmin_chars = 200\n")
    cfg = load_config(CleanConfig, path, ["rules.length.min_han_ratio=0.7", "reader.default_source=crawl",
                                          "rules.ads.extra_keywords=['新品上市']", "rules.ads.enabled=false"])
    assert cfg.rules.length.min_chars == 200 and cfg.rules.length.min_han_ratio == 0.7
    assert cfg.reader.default_source == "crawl" and cfg.rules.ads.extra_keywords == ("新品上市",)
    assert cfg.rules.ads.enabled is False


@pytest.mark.parametrize("override, message", [
    ("rules.length.min_charz=3", "unknown key"),
    ("rules.length.min_chars=abc", "must be int"),
    ("rules.ads.enabled=1", "must be bool"),
    ("novalue", "key=value"),
])
def test_bad_overrides_are_clear_errors(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(CleanConfig, None, [override])


def test_cli_help_and_args(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    assert "--input" in capsys.readouterr().out
    args = parse_args(["--input", "a", "b", "--output", "o", "--set", "x=1"])
    assert args.input == ["a", "b"] and args.overrides == ["x=1"]
