"""Thresholds of the label-free quality rules, derived from a reference corpus the way FineWeb-2
derives its per-language thresholds: a rule may remove at most a stated share of the reference's
documents (its *removal budget*), so its threshold is the reference's percentile at that share.
Never tuned on the crawl being cleaned.

A *reference profile* (``reference_percentiles.json``, written by ``jobs.train_fluency`` beside
the fluency model) holds, for every signal, its value at the percentiles ``PERCENTILES`` over
the reference documents. Where the literature gives a threshold for the same statistic (Gopher's
repetition limits), it is a *floor* on leniency: the final threshold is the more lenient of the
reference's percentile and the literature's number, so a reference that happens to be very clean
on one statistic (news never repeats a 4-gram) cannot make the rule remove ordinary text of
another genre. Every threshold records where it came from; ``report.json`` carries them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from base.errors import Refusal

PROFILE_FILE = "reference_percentiles.json"
PROFILE_VERSION = 1
# Percentiles stored per signal: fine in both tails, where thresholds fall.
PERCENTILES: tuple[float, ...] = (0.1, 0.2, 0.5, *range(1, 100), 99.5, 99.8, 99.9)

# Gopher (Rae et al. 2021, App. A, Table A1) repetition limits, used as floors on leniency.
GOPHER = "Gopher (Rae et al. 2021) App. A"
LITERATURE_FLOORS: dict[str, tuple[float, str]] = {
    "dup_line_char_frac": (0.20, GOPHER),
    "dup_para_char_frac": (0.20, GOPHER),
    "top2_word_cov": (0.20, GOPHER),
    "top3_word_cov": (0.18, GOPHER),
    "top4_word_cov": (0.16, GOPHER),
    "dup5_word_cov": (0.15, GOPHER),
    "dup6_word_cov": (0.14, GOPHER),
    "dup7_word_cov": (0.13, GOPHER),
    "dup8_word_cov": (0.12, GOPHER),
    "dup9_word_cov": (0.11, GOPHER),
    "dup10_word_cov": (0.10, GOPHER),
    "symbol_ratio": (0.10, GOPHER + " (symbol-to-word ratio)"),
    # ours (issue 23): a news story may end in a dated line; a page of which more than a third of
    # the lines end in a date is a list of links, whatever a small reference says
    "date_line_frac": (0.34, "ours: a third of the lines"),
}


class ProfileError(Refusal):
    """A reference profile that is missing, of another version, or lacks a signal."""


@dataclass(frozen=True)
class Threshold:
    signal: str
    bad_when: Literal["high", "low"]
    value: float  # drop when the signal is beyond this (strictly above for "high", below for "low")
    budget: float  # the share of reference documents the rule may remove
    reference_value: float  # the reference's percentile at that share
    floor: float | None  # the literature's threshold, where one exists
    source: str  # where ``value`` came from

    def fails(self, x: np.ndarray) -> np.ndarray:
        return x > self.value if self.bad_when == "high" else x < self.value

    @property
    def reason(self) -> str:
        return f"{self.signal}_{self.bad_when}"


def read_profile(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / PROFILE_FILE
    try:
        profile = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ProfileError(f"cannot read the reference profile {path}: {e}") from e
    if profile.get("version") != PROFILE_VERSION:
        raise ProfileError(
            f"{path} is profile version {profile.get('version')}, this code reads "
            f"{PROFILE_VERSION}: run jobs.train_fluency again"
        )
    return profile


def reference_value(profile: dict[str, Any], signal: str, percentile: float) -> float:
    """The signal's value at ``percentile`` of the reference (linear between stored points)."""
    values = profile["signals"].get(signal)
    if values is None:
        raise ProfileError(
            f"the reference profile has no signal {signal!r}; it has {', '.join(sorted(profile['signals']))}"
        )
    return float(np.interp(percentile, profile["percentiles"], values))


def derive(
    profile: dict[str, Any],
    signal: str,
    bad_when: Literal["high", "low"],
    budget: float,
    floors: dict[str, tuple[float, str]] = LITERATURE_FLOORS,
) -> Threshold:
    """The threshold that removes ``budget`` of the reference, made no stricter than the floor."""
    if not 0 < budget < 0.5:
        raise ValueError(f"removal budget of {signal} must be in (0, 0.5), got {budget}")
    ref = reference_value(profile, signal, 100 * budget if bad_when == "low" else 100 * (1 - budget))
    described = profile.get("reference", {}).get("description", "the reference corpus")
    source = f"{100 * budget:g} % tail of {described} ({profile.get('documents', '?')} documents)"
    floor, floor_source = floors.get(signal, (None, ""))
    value = ref
    if floor is not None and (floor > ref if bad_when == "high" else floor < ref):
        value, source = floor, f"{floor_source} (more lenient than the reference's {ref:.4g})"
    return Threshold(signal, bad_when, float(value), budget, ref, floor, source)


def provenance(thresholds: list[Threshold]) -> dict[str, dict[str, Any]]:
    """What report.json records: every threshold with its budget, reference value and source."""
    return {t.signal: asdict(t) for t in thresholds}
