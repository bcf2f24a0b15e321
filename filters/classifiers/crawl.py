"""The crawl's own spam model (issue 32): a fastText classifier trained, for each build, on what
the rules removed from this very crawl against what they kept, and used on what they kept.

No label is given: the evidence is the rules' own verdicts. A spam family that a farm publishes by
the hundred is caught in part by rules that know no family (contact ids, word repetition, a
template shared across pages, the safety lists, the seed-trained spam model); its other pages carry
the same vocabulary and frames without the one line a rule saw. Trained on the removed pages
against the kept ones (positive-unlabeled learning: the kept pages are mostly, not all, good), a
model scores those other pages near the removed ones, and real text, however unusual its genre,
near the kept. The reference corpus's documents join the kept side, so that a genre of good text
the crawl holds little of is not judged by the crawl's removals alone.

A model never scores a page it was trained on: pages are split in ``FOLDS`` folds by a hash of
their identity, each fold's model is trained on that fold's pages, and a page is scored by a
model of another fold (cross-fitting). Training is deterministic (fastText with one thread and a
seed, the lines in a fixed order), so a re-run gives the same model and the same verdicts.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow.parquet as pq

from base.artifact import require_sha256
from filters.classifiers.classify import TrainParams, positive_probs, train_fasttext

FOLDS = 2
SAMPLE_FILE = "reference_sample.parquet"  # in a reference profile: reference documents, cut
SAMPLE_META = "reference_sample.json"  # their count, cut and sha256
REMOVED, KEPT = "removed", "kept"  # the two labels


@dataclass(frozen=True)
class CrawlModelConfig:
    enabled: bool = True
    # A kept page whose P(removed) under the model of the other fold reaches this is removed
    # (stage classify, reason crawl_spam). Chosen with bench.evals.lofo on 2026-11-29: at 0.8 no
    # good genre lost more than one page of the LOFO crawl (docs/quality.md).
    threshold: float = 0.8
    # Fewer removed (or kept) pages with text than this in the crawl: no model (logged, report.json).
    min_removed: int = 200
    min_kept: int = 200
    # At most this many pages of each side are sampled to train on (a hash of the page's identity),
    # each cut to its first max_chars characters.
    max_docs: int = 20_000
    max_chars: int = 3_000
    # Reference documents joined to the kept side (the profile's reference_sample.parquet); 0 = none.
    reference_docs: int = 2_000
    # Verdicts that are no evidence of spam: what a short, foreign or title-only page, or a page
    # unlike the reference, is removed for says nothing of what a spam page reads like; nor does
    # how a page repeats across the crawl (template_share_high): on a crawl of perturbed copies the
    # template rule removed 4,750 good pages, and a model taught by them removed 430 reviews more
    # (bench_corpus's 3-copy crawl, 2026-12-07).
    not_evidence: tuple[str, ...] = (
        "too_short",
        "low_han_ratio",
        "title_only",
        "low_quality",
        "template_share_high",
    )
    epoch: int = 10
    lr: float = 0.5
    min_count: int = 2  # a word on one page alone teaches nothing about other pages
    seed: int = 0

    def params(self) -> TrainParams:
        return TrainParams(epoch=self.epoch, lr=self.lr, min_count=self.min_count, seed=self.seed, threads=1)


def training_file(
    path: Path, removed: Sequence[str], kept: Sequence[str], reference: Sequence[str], seed: int
) -> dict[str, int]:
    """Write one fold's fastText training file (preprocessed lines), shuffled by ``seed``."""
    lines = [f"__label__{REMOVED} {t}" for t in removed if t]
    lines += [f"__label__{KEPT} {t}" for t in (*kept, *reference) if t]
    random.Random(seed).shuffle(lines)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"removed": sum(1 for t in removed if t), "kept": sum(1 for t in kept if t), "reference": len(reference)}


def train_folds(
    lines: Sequence[str],
    labels: Sequence[str],
    folds: Sequence[int],
    reference: Sequence[str],
    cfg: CrawlModelConfig,
    out_dir: Path,
) -> list[dict]:
    """One model a fold, trained on that fold's ``lines`` (preprocessed, each ``REMOVED`` or ``KEPT``)
    and the ``reference`` lines (kept), saved as ``out_dir/fold{f}.bin``. Returns what each was
    trained on."""
    out_dir.mkdir(parents=True, exist_ok=True)
    trained = []
    for f in range(FOLDS):
        mine = [(t, lab) for t, lab, g in zip(lines, labels, folds) if g == f]
        train = out_dir / f"fold{f}.txt"
        sizes = training_file(
            train,
            [t for t, lab in mine if lab == REMOVED],
            [t for t, lab in mine if lab == KEPT],
            reference,
            cfg.seed + f,
        )
        model, lr = train_fasttext(train, cfg.params())
        model.save_model(str(out_dir / f"fold{f}.bin"))
        train.unlink()
        trained.append({**sizes, "lr": lr})
    return trained


def other_fold(folds: np.ndarray) -> np.ndarray:
    """The fold whose model scores a page of fold ``folds``: never its own."""
    return (np.asarray(folds) + 1) % FOLDS


def removed_probs(models: Sequence, lines: Sequence[str], folds: Sequence[int]) -> np.ndarray:
    """P(removed) of each preprocessed line under the model of ``other_fold`` of its fold; 0 for a
    line with no word (nothing to judge)."""
    out = np.zeros(len(lines))
    scorer = other_fold(np.asarray(folds, dtype=np.int64))
    worded = np.array([bool(t and t.strip()) for t in lines], dtype=bool)
    for f, model in enumerate(models):
        at = np.flatnonzero((scorer == f) & worded)
        if len(at):
            out[at] = positive_probs(model, [lines[i] for i in at], REMOVED)
    return out


def reference_sample(profile_dir: str, n: int) -> tuple[list[str], dict | None]:
    """Up to ``n`` texts of the profile's reference sample, verified against their checksum, and
    what report.json says of them; none (and None) when the profile has no sample."""
    meta_path = Path(profile_dir) / SAMPLE_META if profile_dir and n > 0 else None
    if meta_path is None or not meta_path.exists():
        return [], None
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    path = Path(profile_dir) / SAMPLE_FILE
    require_sha256(path, meta.get("sha256"), None)  # ModelError on a damaged file
    texts = pq.read_table(path).column("text").to_pylist()[:n]
    return texts, {"file": str(path), "documents": len(texts), "sha256": meta["sha256"]}
