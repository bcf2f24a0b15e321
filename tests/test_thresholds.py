"""Thresholds from a reference distribution (FineWeb-2's way), floored by the literature."""

from __future__ import annotations

import json

import numpy as np
import pytest

from filters.quality import thresholds as th


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


# ---------------------------------------------------------------- quality.profile = "auto" (issue 32, item 4)


@pytest.fixture(scope="module")
def saved_profile(tmp_path_factory):
    """A valid profile directory: a tiny fluency model and a reference profile beside it."""
    from demo.sources import news_pages
    from filters.quality.fluency.model import train_local

    root = tmp_path_factory.mktemp("profile") / "out" / "demo" / "models" / "fluency"
    root.mkdir(parents=True)
    train_local(["\n".join([t, *p]) for t, p, _ in news_pages()[:20]], order=3).save(root)
    (root / th.PROFILE_FILE).write_text(json.dumps(_profile({"fluency_ppl": _linear(100.0, 1100.0)})))
    return root


def test_auto_takes_make_demos_profile_under_the_working_directory(saved_profile, monkeypatch):
    from filters.quality.screen import AUTO, resolve_profile

    monkeypatch.chdir(saved_profile.parents[3])  # out/demo/models/fluency is relative to it
    got = resolve_profile(AUTO, environ={})
    assert got.dir == str(saved_profile.resolve()) and not got.why_off
    assert got.profile["signals"]["fluency_ppl"] == _linear(100.0, 1100.0)
    assert resolve_profile(AUTO, environ={"ZHCORPUS_AUTO_PROFILE": str(saved_profile)}).dir == got.dir


def test_auto_without_a_valid_profile_says_why_the_rules_are_off(saved_profile, tmp_path):
    from filters.classifiers.classify import ModelError
    from filters.quality.fluency.model import MODEL_FILE
    from filters.quality.screen import AUTO, resolve_profile

    missing = resolve_profile(AUTO, environ={"ZHCORPUS_AUTO_PROFILE": str(tmp_path / "none")})
    assert (missing.dir, missing.profile) == ("", None)
    assert f"no reference profile at {tmp_path / 'none'}" in missing.why_off and "make demo" in missing.why_off
    assert "ZHCORPUS_AUTO_PROFILE is empty" in resolve_profile(AUTO, environ={"ZHCORPUS_AUTO_PROFILE": ""}).why_off
    assert resolve_profile("").why_off == "quality.profile is empty"
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in saved_profile.iterdir():
        broken.joinpath(f.name).write_bytes(f.read_bytes())
    data = bytearray((broken / MODEL_FILE).read_bytes())
    data[-10] ^= 1
    (broken / MODEL_FILE).write_bytes(bytes(data))
    bad = resolve_profile(AUTO, environ={"ZHCORPUS_AUTO_PROFILE": str(broken)})
    assert bad.dir == "" and "is not a valid profile" in bad.why_off and "checksum mismatch" in bad.why_off
    with pytest.raises(ModelError, match="checksum mismatch"):  # a profile the user named is an error
        resolve_profile(str(broken))
    (broken / th.PROFILE_FILE).write_text(json.dumps({"version": -1}))
    assert "profile version -1" in resolve_profile(AUTO, environ={"ZHCORPUS_AUTO_PROFILE": str(broken)}).why_off
