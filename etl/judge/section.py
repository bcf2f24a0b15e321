"""The rule judge's shared types: its config section, its refusal, the baseline's name and the
training side's protocol. Every module of the judge imports them from here (none imports ``run``),
which keeps the judge's import graph a tree: ``run`` -> ``dev``, ``report`` -> ``stats``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from base.errors import Refusal

BASELINE = "baseline"
# Sections a variant may change: everything a build is judged by. Not spark (one session for
# all) and not tokenizer (one tokenizer for all: perplexities must be comparable).
VARIANT_SECTIONS = ("reader", "rules", "quality", "classify", "dedup", "shards")


class JudgeError(Refusal):
    """A judge run that cannot give a meaningful comparison (refused before training)."""


@dataclass(frozen=True)
class JudgeSection:
    # The first seeds of every variant: each run's initial weights and data order. Every variant
    # runs the same seeds, so a variant is compared with the baseline seed by seed (paired). At
    # least 2; more are added (numbered on from the largest) when the plan or a round asks.
    seeds: tuple[int, ...] = (0, 1)
    # The smallest difference worth finding, as a share of the baseline's dev perplexity: the
    # judge adds seeds (then tokens) until every variant is beyond its MDD or has an MDD within it.
    effect: float = 0.05
    # Seed-to-seed standard deviation of a paired difference, as a share of the baseline's
    # perplexity, assumed before the first round (the plan printed before training); measured
    # from then on. 0.02: the paired sd on the OOD judge (docs/judge.md) was 0.3-1.2 %.
    prior_sd: float = 0.02
    max_seeds: int = 6  # cap on seeds per variant
    max_token_factor: int = 2  # cap on the budget, as a multiple of the configured tokens (1 = never more)
    alpha: float = 0.05  # two-sided test level of the MDD
    power: float = 0.8  # probability that a true difference of the MDD is detected
    # The proxy's own SentencePiece vocabulary, trained on the dev set (the text every variant is
    # scored on, so it favours none) and independent of the build's tokenizer: the output layer
    # of a 40,000-piece vocabulary is most of a small proxy's time on CPU. 0 = the build's
    # tokenizer (tokenizer.model, else the one the baseline build trains): a GPU proxy.
    vocab_size: int = 2000
    # At most this share of vocab_size goes to single characters, the dev set's most frequent; the
    # rarer ones are spelled in UTF-8 bytes (3 tokens each). 0.75 of 2,000: 1,500 characters, 95 %
    # of the OOD set's characters, 96 % of the reference corpus's.
    vocab_char_share: float = 0.75
    sample_files: int = 0  # 0 = every input file; else this many, the same for every variant
    sample_seed: int = 0  # the sample is the files with the smallest sha256(seed, path)
    min_dev_documents: int = 2  # fewer dev documents left after removing the overlap: refused

    def __post_init__(self):
        if len(set(self.seeds)) < 2:
            raise ValueError(f"judge.seeds needs at least 2 distinct seeds, got {list(self.seeds)}")
        if not 0 < self.effect < 1 or self.prior_sd < 0:
            raise ValueError(
                f"judge.effect must be in (0, 1) and judge.prior_sd >= 0 (shares of the baseline's "
                f"perplexity), got {self.effect} and {self.prior_sd}"
            )
        if self.max_token_factor < 1 or not 0 < self.vocab_char_share < 1:
            raise ValueError("judge.max_token_factor must be >= 1 and judge.vocab_char_share in (0, 1)")

    @property
    def power_spec(self):
        from etl.judge.stats import Power

        return Power(self.alpha, self.power)


class Trainer(Protocol):
    """The training side (``train.proxy.ProxyTrainer``), given by the job: etl/ never imports torch."""

    budget: int  # tokens per run now

    def check(self, manifests: dict[str, str], dev_manifest: str) -> dict[str, Any]: ...
    def run(
        self,
        manifests: dict[str, str],
        dev_manifest: str,
        seeds: tuple[int, ...],
        on_result: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[dict[str, Any]]: ...
    def describe(self) -> dict[str, Any]: ...
    def set_budget_factor(self, factor: int) -> None: ...
