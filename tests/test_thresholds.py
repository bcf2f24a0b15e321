"""Thresholds from a reference distribution (FineWeb-2's way), floored by the literature."""

from __future__ import annotations

import json

import numpy as np
import pytest

from filters import thresholds as th


def _profile(signals: dict[str, list[float]], n: int = 1000) -> dict:
    return {
        "version": th.PROFILE_VERSION,
        "documents": n,
        "reference": {"description": "test reference"},
        "percentiles": list(th.PERCENTILES),
        "signals": signals,
    }


def _linear(lo: float, hi: float) -> list[float]:
    """A signal uniform on [lo, hi]: its p-th percentile is lo + (hi - lo) p / 100."""
    return [lo + (hi - lo) * p / 100 for p in th.PERCENTILES]


def test_high_signal_takes_the_reference_tail():
    prof = _profile({"fluency_ppl": _linear(100.0, 1100.0)})
    t = th.derive(prof, "fluency_ppl", "high", 0.002)
    assert t.value == pytest.approx(100 + 1000 * 0.998)  # 99.8th percentile
    assert t.reason == "fluency_ppl_high" and "0.2 % tail of test reference (1000 documents)" in t.source
    assert t.fails(np.array([1098.0, 1099.0])).tolist() == [False, True]


def test_low_signal_takes_the_lower_tail_between_stored_points():
    prof = _profile({"line_punct_frac": _linear(0.0, 1.0)})
    t = th.derive(prof, "line_punct_frac", "low", 0.003)  # 0.3 %: between the stored 0.2 and 0.5
    assert t.value == pytest.approx(0.003)
    assert t.fails(np.array([0.002, 0.003, 0.5])).tolist() == [True, False, False]


def test_literature_floor_is_more_lenient_than_a_very_clean_reference():
    """News never repeats a 2-gram much: its 99.8th percentile (0.05) would remove ordinary
    text of other genres; Gopher's 0.20 holds instead, and the source says so."""
    prof = _profile({"top2_word_cov": _linear(0.0, 0.05), "dup10_word_cov": _linear(0.0, 0.5)})
    t = th.derive(prof, "top2_word_cov", "high", 0.002)
    assert t.value == 0.20 and t.reference_value == pytest.approx(0.0499) and "Gopher" in t.source
    loose = th.derive(prof, "dup10_word_cov", "high", 0.002)  # the reference is more lenient: it wins
    assert loose.value == pytest.approx(0.499) and loose.floor == 0.10 and "tail" in loose.source


def test_profile_errors_are_clear(tmp_path):
    with pytest.raises(th.ProfileError, match="cannot read"):
        th.read_profile(tmp_path)
    (tmp_path / th.PROFILE_FILE).write_text(json.dumps({"version": 0}))
    with pytest.raises(th.ProfileError, match="version 0"):
        th.read_profile(tmp_path)
    with pytest.raises(th.ProfileError, match="no signal 'x'"):
        th.derive(_profile({"y": _linear(0, 1)}), "x", "high", 0.01)
    with pytest.raises(ValueError, match="budget"):
        th.derive(_profile({"y": _linear(0, 1)}), "y", "high", 0.7)
