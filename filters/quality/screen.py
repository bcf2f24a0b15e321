"""The label-free quality screen of one batch of documents: every statistic of
``filters.quality.signals``, the fluency model's perplexity (``filters.quality.fluency``), the safety categories
(``filters.quality.safety``), and the rules over them, whose thresholds come from a reference profile
(``filters.quality.thresholds``). Build a ``Screen`` once per worker; call ``screen(texts)`` per batch.

Every document gets every signal (its columns), the list of rules it fails (``flags``, in both
modes) and, in ``filter`` mode, the first failed rule as its drop reason: safety first (the
category with the highest score over its threshold), then the statistics in ``SIGNALS`` order,
then fluency. ``annotate`` mode drops nothing (users who choose thresholds later, as CCI4.0 and
FineWeb-Edu users do, read the columns).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import numpy as np
import pyarrow as pa

from filters import docpass
from filters.quality import thresholds as th
from filters.quality.crawl_repeat import CrawlRepeatConfig
from filters.quality.safety import SafetyConfig, SafetyScorer
from filters.quality.signals import SIGNALS, signals_batch
from filters.text.markdown import prose

log = logging.getLogger("zhcorpus")

FLUENCY = "fluency_ppl"
BUCKETS = ("head", "middle", "tail")  # CCNet: perplexity below the reference's 30th / 60th percentile
BUCKET_PERCENTILES = (30.0, 60.0)  # CCNet (Wenzek et al. 2020) §3.3
# Statistics that are columns but not rules: han_ratio is PanGu-α's rule already (etl.clean) and
# latin_ratio its complement (a rule on it removed pinyin-glossed glossaries), punct_ratio and
# function_word_distinct describe; the others decide.
NOT_RULES = ("han_ratio", "latin_ratio", "punct_ratio", "function_word_distinct")
AUTO = "auto"  # quality.profile's default: the profile make demo trains, when there is a valid one
AUTO_PROFILE_DIR = "out/demo/models/fluency"  # where make demo trains it, relative to the working directory
AUTO_PROFILE_ENV = "ZHCORPUS_AUTO_PROFILE"  # where "auto" looks instead ("" = nowhere: the test suite sets it)


@dataclass(frozen=True)
class QualityConfig:
    enabled: bool = True
    # "filter": documents failing a rule go to rejected/ (stage "quality", reason "<signal>_high"
    # / "<signal>_low" / "unsafe_<category>"); "annotate": every document is kept with its signals.
    mode: Literal["filter", "annotate"] = "filter"
    # Reference profile directory from jobs.train_fluency: the fluency model and the percentiles of
    # every signal over the reference corpus. "" = signals and safety only, no statistical rule
    # (there is nothing to derive thresholds from). "auto": make demo's profile (AUTO_PROFILE_DIR
    # under the working directory) if it is there and verifies, else none, with a warning and
    # the reason in report.json (``resolve_profile``).
    profile: str = AUTO
    # FineWeb-2-style removal budget: each rule may remove at most this share of the reference's
    # documents (ours: 0.2 %; twenty rules then remove at most 4 % of the reference together, in
    # practice far less since they overlap).
    budget: float = 0.002
    budgets: dict[str, float] = field(default_factory=dict)  # per-signal overrides of ``budget``
    # Signals that are not rules (columns only); e.g. --set quality.off='["digit_ratio"]'. The
    # fluency rule is off by default: with the demo's first 8 MiB reference it removed 70 % of the
    # OOD sets' good documents; with the 12 MiB reference of eight genres it spares prose and verse
    # but removes 18-53 % of glossaries, dictionaries and sayings and 5 of 1,600 spam pages (spam
    # is fluent to a character 5-gram; docs/quality.md). Turn it on with
    # --set quality.off='["short_line_frac"]'. The
    # short-line rule is off too: on two out-of-domain sets every document it alone removed was
    # good (dictionary and glossary pages whose headword lines are short, verse); a reference of
    # prose says nothing about their structure.
    off: tuple[str, ...] = (FLUENCY, "short_line_frac")
    safety: SafetyConfig = field(default_factory=SafetyConfig)
    # Crawl-level template repetition (filters.quality.crawl_repeat): a document most of whose sampled
    # 8-character spans are held by >= 5 other texts of the same crawl is a template page.
    template: CrawlRepeatConfig = field(default_factory=CrawlRepeatConfig)

    def rules(self) -> list[tuple[str, str]]:
        """(signal, bad_when) of every rule, in the order they are tried."""
        names = [(s.name, s.bad_when) for s in SIGNALS if s.name not in NOT_RULES] + [(FLUENCY, "high")]
        unknown = sorted(set(self.off) - {n for n, _ in names} - set(NOT_RULES))
        if unknown:
            raise ValueError(f"quality.off: unknown signal(s) {', '.join(unknown)}")
        return [(n, b) for n, b in names if n not in self.off]


def signal_names() -> list[str]:
    """The signal columns, in order: the statistics, then the fluency model's perplexity."""
    return [s.name for s in SIGNALS] + [FLUENCY]


@dataclass(frozen=True)
class ResolvedProfile:
    """What ``quality.profile`` names, read and verified."""

    dir: str  # the profile directory the rules use; "" = none: no statistical rule
    profile: dict[str, Any] | None  # its reference_percentiles.json (None without one)
    why_off: str = ""  # why there is none ("" when there is one)


def resolve_profile(requested: str, environ: Mapping[str, str] | None = None) -> ResolvedProfile:
    """The profile directory ``requested`` names, its percentiles read and its fluency model's
    checksum verified. A named directory that fails raises ``ProfileError``/``ModelError`` (the
    user asked for it); "auto" takes ``AUTO_PROFILE_DIR`` (or ``$ZHCORPUS_AUTO_PROFILE``),
    absolute, when it holds a valid profile, and otherwise no profile with the reason."""
    from base.artifact import ModelError
    from filters.quality.fluency.model import FluencyModel

    if requested != AUTO:
        if not requested:
            return ResolvedProfile("", None, "quality.profile is empty")
        profile = th.read_profile(requested)
        FluencyModel.load(requested)  # verifies the model's checksum and version
        return ResolvedProfile(requested, profile)
    environ = os.environ if environ is None else environ
    where = environ.get(AUTO_PROFILE_ENV, AUTO_PROFILE_DIR)
    if not where:
        return ResolvedProfile("", None, f"quality.profile=auto and {AUTO_PROFILE_ENV} is empty")
    path = Path(where).resolve()
    hint = "make demo trains one; or --set quality.profile=DIR"
    if not path.is_dir():
        return ResolvedProfile("", None, f"quality.profile=auto: no reference profile at {path} ({hint})")
    try:
        profile = th.read_profile(path)
        FluencyModel.load(path)
    except (th.ProfileError, ModelError) as e:
        return ResolvedProfile("", None, f"quality.profile=auto: {path} is not a valid profile ({e}; {hint})")
    return ResolvedProfile(str(path), profile)


def derive_thresholds(cfg: QualityConfig, profile: dict[str, Any] | None) -> list[th.Threshold]:
    if profile is None:
        return []
    return [
        th.derive(profile, name, bad_when, cfg.budgets.get(name, cfg.budget))  # type: ignore[arg-type]
        for name, bad_when in cfg.rules()
    ]


@dataclass
class Screened:
    signals: dict[str, np.ndarray]  # signal -> float array, one value per text
    buckets: list[str | None]  # CCNet bucket per text (None without a fluency model)
    safety: list[dict[str, int]]  # category -> score, only categories that scored
    flags: list[list[str]]  # every rule each text fails
    reasons: list[str | None]  # the drop reason ("filter" mode), else None


class Screen:
    def __init__(self, cfg: QualityConfig, profile_dir: str | Path | None = None):
        from filters.quality.fluency.model import FluencyModel

        self.cfg = cfg
        profile = th.read_profile(profile_dir) if profile_dir else None
        self.thresholds = derive_thresholds(cfg, profile)
        self.fluency = FluencyModel.load(profile_dir) if profile_dir else None
        self.cuts = (
            tuple(th.reference_value(profile, FLUENCY, p) for p in BUCKET_PERCENTILES) if profile is not None else None
        )
        self.safety = SafetyScorer(cfg.safety) if cfg.safety.enabled else None
        # the statistics and the fluency score from the compiled pass (the same values; None: the
        # Python reference below)
        self.native = docpass.QualityPass(self.fluency) if docpass.enabled() else None
        if self.native is not None and self.native.drift:  # a rule changed in the reference: it rules
            self.native = None

    def __call__(self, texts: Sequence[str] | pa.Array) -> Screened:
        """``texts``: Python strings or an Arrow string array (read by the compiled pass in place)."""
        n = len(texts)
        native = _arrow(texts) if self.native is not None and n else None
        if native is not None:
            values, ppl = self.native(native)
            texts = native.to_pylist()
            if self.native.audit(texts[:: docpass.AUDIT_EVERY]):
                self.native = None  # the reference from here on, this batch included
                return self(texts)
            signals = {k: np.asarray(v, dtype=np.float64) for k, v in values.items()}
        else:
            texts = texts.to_pylist() if isinstance(texts, (pa.Array, pa.ChunkedArray)) else texts
            signals = (
                {k: np.asarray(v, dtype=np.float64) for k, v in signals_batch(texts).items()}
                if n
                else {s.name: np.zeros(0) for s in SIGNALS}
            )
            # the language model scores the prose, as the statistics do (code is no Chinese sentence)
            ppl = (
                self.fluency.perplexity_batch([prose(t) for t in texts])
                if self.fluency is not None and n
                else np.full(n, np.nan)
            )
        signals[FLUENCY] = np.asarray(ppl, dtype=np.float64)
        buckets: list[str | None] = [None] * n
        if self.cuts is not None:
            buckets = [BUCKETS[i] for i in np.searchsorted(self.cuts, signals[FLUENCY], side="right")]
        safety = self.safety.scores_batch(texts) if self.safety else [{} for _ in texts]
        flags: list[list[str]] = [[] for _ in range(n)]
        for i, scores in enumerate(safety):
            unsafe = self.safety.verdict(scores) if self.safety else None
            if unsafe:
                flags[i].append(unsafe)
        for t in self.thresholds:
            for i in np.flatnonzero(t.fails(signals[t.signal])):
                flags[i].append(t.reason)
        reasons = [f[0] if f and self.cfg.mode == "filter" else None for f in flags]
        return Screened(signals, buckets, [{k: v for k, v in s.items() if v} for s in safety], flags, reasons)


def _arrow(texts: Sequence[str] | pa.Array) -> pa.Array | None:
    """``texts`` as an Arrow string array for the compiled pass; None for a text that is no UTF-8
    (a lone surrogate): the reference reads it."""
    try:
        return docpass.strings(texts)
    except (pa.ArrowException, UnicodeEncodeError):
        return None
