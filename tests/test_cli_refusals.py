"""Which errors a job turns into a one-line refusal (exit 2) and which keep their traceback (issue
35, item 8): only declared refusals (``base.errors.Refusal`` and the file errors of a path the
user gave) are the user's; a plain ``ValueError`` is a bug and must show where it happened."""

from __future__ import annotations

import logging

import pytest

from base.errors import Refusal
from filters.quality.crawl_repeat import CrawlRepeatConfig
from jobs import cli
from jobs.config import ConfigError, build


def _raise(e: BaseException):
    def body() -> int:
        raise e

    return body


@pytest.mark.parametrize("error", [ConfigError("bad key"), Refusal("no"), FileNotFoundError("x"), PermissionError("y")])
def test_declared_refusals_are_one_line_and_exit_2(error, caplog):
    with caplog.at_level(logging.ERROR, logger="zhcorpus"):
        assert cli.run_job(_raise(error)) == cli.EXIT_REFUSED
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [str(error)]


@pytest.mark.parametrize("error", [ValueError("a bug"), KeyError("k"), TypeError("t")])
def test_a_plain_error_is_a_bug_with_its_traceback(error):
    with pytest.raises(type(error)):
        cli.run_job(_raise(error))


def test_every_declared_error_class_is_a_refusal():
    from base.committed import CommitError
    from base.indexed_dataset import IndexedDatasetError
    from etl.dedup.checkpoints import CheckpointConfigError
    from etl.dedup.index import IndexSettingsMismatch
    from etl.dedup.index_checks import IndexFileError
    from etl.judge.section import JudgeError
    from etl.runtime.paths import PathRefused
    from filters.classifiers.classify import ModelError
    from filters.quality.safety import PatternError
    from filters.quality.thresholds import ProfileError

    for cls in (CommitError, IndexedDatasetError, CheckpointConfigError, IndexSettingsMismatch, IndexFileError):
        assert issubclass(cls, Refusal), cls
    for cls in (JudgeError, PathRefused, ModelError, PatternError, ProfileError, ConfigError):
        assert issubclass(cls, Refusal), cls
    assert issubclass(ModelError, RuntimeError)  # callers that catch it as a RuntimeError still do


def test_a_bad_config_value_is_a_config_refusal():
    """A config class's own check (``__post_init__``) of a value from --set is the user's error."""
    with pytest.raises(ConfigError, match=r"template: crawl_repeat.max_share"):
        build(CrawlRepeatConfig, {"max_share": 2.0}, "quality.template.")


def test_one_launch_error():
    """Issue 35, item 8: one LaunchError for the trainer's refusals before any worker starts."""
    from train import job, launch_checks

    assert job.LaunchError is launch_checks.LaunchError and issubclass(job.LaunchError, Refusal)
