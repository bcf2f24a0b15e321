"""The rule judge's statistics: paired differences over seeds, the dev set's own sampling error,
the minimum detectable difference (MDD), and whether to run more seeds or tokens.

Every variant is trained with the same seeds as the baseline (the same initial weights and the
same data-order seed) and scored on the same dev documents, so variant and baseline are compared
*per seed* and *per document*. For a variant v against the baseline b, over the k seeds both
finished (docs/judge.md has the derivations):

- ``diffs``: d_s = ppl(v, s) − ppl(b, s); ``mean`` d̄; ``sd`` their sample standard deviation
  (ddof 1); ``se_seed`` = sd / √k: what changing the seeds does to d̄.
- ``se_dev``: what changing the dev documents does to d̄. A run's dev perplexity is
  exp(ΣS_d / ΣN_d) over dev documents d (S_d: summed next-token loss, N_d: tokens scored). By the
  delta method for a ratio, document d moves it by e_d = ppl · (S_d − L·N_d) / N̄ (L the mean loss,
  N̄ the mean N_d); for d̄ the document's move is e_d(v, s) − e_d(b, s), averaged over the seeds, and
  se_dev = √(Σ_d ē_d² / (n(n − 1))) over the n scored documents. The same documents for both
  runs make it far smaller than either run's own dev error (``dev_se_ppl``).
- ``se`` = √(se_seed² + se_dev²), with Welch–Satterthwaite degrees of freedom ``df``.
- ``mdd`` = (t(1 − α/2, df) + t(power, df)) · se: the smallest true difference a two-sided test at
  level α detects with probability ``power`` (α = 0.05, power = 0.8 by default).
- ``verdict``: "worse beyond MDD" (d̄ > mdd), "better beyond MDD" (d̄ < −mdd), else "within MDD".

Relative figures (``*_rel``) are over the baseline's mean dev perplexity; the user's effect
(``judge.effect``) is relative too. Pure functions of plain lists: no Spark, no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from scipy import stats

WORSE, BETTER, WITHIN = "worse beyond MDD", "better beyond MDD", "within MDD"


@dataclass(frozen=True)
class Power:
    alpha: float = 0.05  # two-sided test level
    power: float = 0.8  # probability of detecting a true difference of the MDD


@dataclass(frozen=True)
class DevScores:
    """One run's dev scores per document: summed loss (nats) and tokens scored, in the dev set's
    fixed order (the same documents and counts for every run)."""

    nll: np.ndarray  # (n,) float
    tokens: np.ndarray  # (n,) int

    @classmethod
    def of(cls, run: dict[str, Any]) -> "DevScores":
        tokens = np.asarray(run["dev_doc_tokens"], np.int64)
        scored = tokens > 0  # documents of the last partial batch are not scored
        return cls(np.asarray(run["dev_doc_nll"], np.float64)[scored], tokens[scored])

    @property
    def ppl(self) -> float:
        return math.exp(self.nll.sum() / self.tokens.sum())

    def influence(self) -> np.ndarray:
        """(n,) e_d = ppl · (S_d − L·N_d) / N̄: each document's first-order share of the ppl."""
        loss = self.nll.sum() / self.tokens.sum()
        return self.ppl * (self.nll - loss * self.tokens) / self.tokens.mean()


def se_of_mean_influence(influences: Sequence[np.ndarray]) -> float:
    """√(Σ ē_d² / (n(n − 1))), ē the mean influence over runs: the dev-sampling standard error."""
    e = np.mean(np.stack(influences), axis=0)
    n = len(e)
    return float(math.sqrt((e**2).sum() / (n * (n - 1)))) if n > 1 else math.inf


def dev_se_ppl(runs: Sequence[DevScores]) -> float:
    """The dev set's own sampling error of a variant's mean dev perplexity (its seeds' runs)."""
    return se_of_mean_influence([r.influence() for r in runs])


def mdd_factor(df: float, p: Power = Power()) -> float:
    """t(1 − α/2, df) + t(power, df)."""
    return float(stats.t.ppf(1 - p.alpha / 2, df) + stats.t.ppf(p.power, df))


def satterthwaite(se_seed: float, k: int, se_dev: float, n_docs: int) -> float:
    """Degrees of freedom of se² = se_seed² + se_dev² (k − 1 and n − 1 for the parts)."""
    num = (se_seed**2 + se_dev**2) ** 2
    den = (se_seed**4 / (k - 1) if k > 1 else math.inf) + (se_dev**4 / (n_docs - 1) if n_docs > 1 else 0.0)
    return num / den if den > 0 else math.inf


def mdd(sd: float, k: int, se_dev: float = 0.0, n_docs: int = 10**9, p: Power = Power()) -> float:
    """The MDD of a mean of k paired differences with seed-to-seed sd and dev error se_dev."""
    if k < 2:
        return math.inf
    se_seed = sd / math.sqrt(k)
    df = satterthwaite(se_seed, k, se_dev, n_docs)
    return mdd_factor(min(df, 1e6), p) * math.hypot(se_seed, se_dev)


def verdict(mean: float, mdd_value: float) -> str:
    if mean > mdd_value:
        return WORSE
    if mean < -mdd_value:
        return BETTER
    return WITHIN


def paired(variant: dict[int, dict[str, Any]], baseline: dict[int, dict[str, Any]], p: Power = Power()) -> dict | None:
    """The paired comparison of two variants' finished runs (seed -> run with ``dev_doc_nll`` and
    ``dev_doc_tokens``), over the seeds both finished; None with fewer than 2 such seeds."""
    seeds = sorted(set(variant) & set(baseline))
    if len(seeds) < 2:
        return None
    v = [DevScores.of(variant[s]) for s in seeds]
    b = [DevScores.of(baseline[s]) for s in seeds]
    if any(not np.array_equal(x.tokens, y.tokens) for x, y in zip(v, b)):
        raise ValueError("the runs were not scored on the same dev documents and tokens")
    diffs = [x.ppl - y.ppl for x, y in zip(v, b)]
    k, n = len(seeds), len(v[0].tokens)
    sd = float(np.std(diffs, ddof=1))
    se_seed = sd / math.sqrt(k)
    se_dev = se_of_mean_influence([x.influence() - y.influence() for x, y in zip(v, b)])
    df = satterthwaite(se_seed, k, se_dev, n)
    se = math.hypot(se_seed, se_dev)
    base = float(np.mean([y.ppl for y in b]))
    mean = float(np.mean(diffs))
    m = mdd_factor(min(df, 1e6), p) * se
    return {
        "seeds": seeds,
        "diffs": diffs,
        "mean": mean,
        "sd": sd,
        "se_seed": se_seed,
        "se_dev": se_dev,
        "se": se,
        "df": df,
        "mdd": m,
        "baseline_ppl": base,
        "mean_rel": mean / base,
        "sd_rel": sd / base,
        "se_dev_rel": se_dev / base,
        "mdd_rel": m / base,
        "dev_documents": n,
        "verdict": verdict(mean, m),
    }


def finished_runs(results: Sequence[dict[str, Any]]) -> dict[str, dict[int, dict[str, Any]]]:
    """variant -> seed -> run, of the runs that finished, variants in ``results`` order."""
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for r in results:
        out.setdefault(r["variant"], {})
        if r["status"] == "ok":
            out[r["variant"]][r["seed"]] = r
    return out


def compare(results: Sequence[dict[str, Any]], baseline: str, p: Power = Power()) -> dict[str, dict | None]:
    """Every other variant's ``paired`` comparison with ``baseline``, in ``results`` order."""
    ok = finished_runs(results)
    return {n: paired(runs, ok.get(baseline, {}), p) for n, runs in ok.items() if n != baseline}


# --- planning: how many seeds, how many tokens -----------------------------------------------------


@dataclass(frozen=True)
class Step:
    """What the judge does after a round of proxy runs."""

    action: str  # "stop", "seeds" (run more seeds at the same budget) or "tokens" (a larger budget)
    seeds: int  # seeds the next round has in all
    token_factor: int  # the next round's budget as a multiple of the configured one
    reason: str


def seeds_needed(
    sd_rel: float, se_dev_rel: float, n_docs: int, effect: float, k_from: int, k_max: int, p: Power = Power()
) -> int | None:
    """The fewest seeds in [k_from, k_max] whose MDD (relative) is at most ``effect``; None if
    none is."""
    for k in range(max(2, k_from), k_max + 1):
        if mdd(sd_rel, k, se_dev_rel, n_docs, p) <= effect:
            return k
    return None


def first_round(prior_sd: float, effect: float, k_min: int, k_max: int, p: Power = Power()) -> tuple[int, float]:
    """(seeds, planned relative MDD) before any training: the fewest seeds (at least k_min, at
    most k_max) that the prior seed-to-seed sd of the paired difference says reach ``effect``; the
    dev error is not known yet (it is measured by the first round and taken in from then on)."""
    k = seeds_needed(prior_sd, 0.0, 10**9, effect, k_min, k_max, p) or max(k_min, k_max)
    return k, mdd(prior_sd, k, p=p)


def next_step(
    comparisons: dict[str, dict | None],
    seeds: int,
    token_factor: int,
    effect: float,
    max_seeds: int,
    max_token_factor: int,
    p: Power = Power(),
) -> Step:
    """After a round: stop when every variant is beyond its MDD or has an MDD within ``effect``;
    else the fewest more seeds (up to ``max_seeds``) that the measured spread and dev error say
    bring every undecided variant's MDD within ``effect``; else a doubled token budget (up to
    ``max_token_factor``); else stop at the cap. A dev error that alone gives an MDD wider than
    ``effect`` stops too: no number of seeds or tokens helps, only a larger dev set."""
    open_ = {n: c for n, c in comparisons.items() if c is not None and c["verdict"] == WITHIN and c["mdd_rel"] > effect}
    if not open_:
        return Step(
            "stop",
            seeds,
            token_factor,
            f"every variant is beyond its MDD or its MDD is within the effect ({effect:.1%})",
        )
    floor = {n: mdd(0.0, 10**6, c["se_dev_rel"], c["dev_documents"], p) for n, c in open_.items()}
    dev_bound = sorted(n for n, f in floor.items() if f > effect)
    if dev_bound:
        return Step(
            "stop",
            seeds,
            token_factor,
            f"the dev set's sampling error alone gives {', '.join(dev_bound)} an MDD of "
            f"{max(floor[n] for n in dev_bound):.1%} > the effect {effect:.1%}: give a larger dev set",
        )
    need = [
        seeds_needed(c["sd_rel"], c["se_dev_rel"], c["dev_documents"], effect, seeds + 1, max_seeds, p)
        for c in open_.values()
    ]
    names = ", ".join(sorted(open_))
    widest = max(c["mdd_rel"] for c in open_.values())
    if all(k is not None for k in need):
        return Step(
            "seeds",
            max(need),
            token_factor,
            f"MDD {widest:.1%} > effect {effect:.1%} for {names}: {max(need)} seeds reach it",
        )
    if token_factor * 2 <= max_token_factor:
        return Step(
            "tokens",
            seeds,
            token_factor * 2,
            f"MDD {widest:.1%} > effect {effect:.1%} for {names}, and {max_seeds} seeds (judge.max_seeds) "
            f"would not reach it: doubling the tokens per run",
        )
    return Step(
        "stop",
        seeds,
        token_factor,
        f"MDD {widest:.1%} > effect {effect:.1%} for {names} at the caps (judge.max_seeds = {max_seeds}, "
        f"judge.max_token_factor = {max_token_factor}): 'within MDD' means undecided here",
    )
