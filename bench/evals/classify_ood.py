"""The two classifiers on an out-of-domain test set from a different generator than their training
data (issue 23 item 3): what share of each family they score as spam / low quality at the
thresholds the models record, and the precision and recall of "spam or chrome" detection.

    python -m bench.evals.classify_ood --ood data/ood/ood.jsonl \\
        --models out/demo/models-old out/demo/models [--output out/bench/classify_ood.json]

``--ood``: JSONL with ``text``, ``label`` (good / spam / chrome) and ``family``
(``python -m bench.evals.sets.ood --output data/ood`` writes one). Each ``--models`` directory holds ``spam/``
and ``quality/`` model directories (``make demo-models`` writes out/demo/models); several
directories are scored side by side, the first being the anchor the others are compared with.
The models alone score the raw ``text`` (no cleaning rule runs first: ``bench.evals.ood`` runs
the whole chain). A document is *flagged* when spam_prob >= the spam model's threshold or
quality_score < the quality model's threshold, as the chain's default hard rules would drop it.
Prints one JSON object (and writes it to --output): per model set, per family the shares
``spam``, ``low_quality`` and ``flagged``, and precision / recall / F1 of flagged vs
label in {spam, chrome}, for each model alone and for both.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

from base.log import setup_logging
from bench import harness

log = logging.getLogger("zhcorpus")
BAD = ("spam", "chrome")  # the labels a detector should flag


def detection_metrics(flagged: np.ndarray, bad: np.ndarray) -> dict[str, float]:
    """Precision, recall and F1 of ``flagged`` against ``bad`` (boolean arrays), and the share of
    good documents flagged. Example: flagged [T T F F], bad [T F T F] -> P .5, R .5, good .5."""
    tp, fp = int(np.sum(flagged & bad)), int(np.sum(flagged & ~bad))
    fn = int(np.sum(~flagged & bad))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    good = ~bad
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0,
        "good_flagged": round(float(flagged[good].mean()), 4) if good.any() else 0.0,
    }


def family_rates(labels: list[str], families: list[str], spam: np.ndarray, low: np.ndarray) -> dict:
    """label/family -> documents and the shares scored spam, low quality, and either."""
    out: dict[str, dict] = {}
    keys = np.array([f"{lab}/{fam}" for lab, fam in zip(labels, families)])
    for key in sorted(set(keys.tolist())):
        m = keys == key
        out[key] = {
            "documents": int(m.sum()),
            "spam": round(float(spam[m].mean()), 4),
            "low_quality": round(float(low[m].mean()), 4),
            "flagged": round(float((spam | low)[m].mean()), 4),
        }
    return out


def score_set(models: Path, texts: list[str], labels: list[str], families: list[str]) -> dict:
    """One model set (models/spam, models/quality) on the texts: thresholds, family shares,
    detection metrics."""
    from filters.classifiers.classify import TextClassifier, preprocess_batch

    spam_model, quality_model = TextClassifier(models / "spam"), TextClassifier(models / "quality")
    lines = preprocess_batch(texts, segmenter=spam_model.segmenter)  # once for both models
    spam_p = spam_model.positive_prob(lines, preprocessed=True)
    quality_p = quality_model.positive_prob(lines, preprocessed=True)
    spam, low = spam_p >= spam_model.threshold, quality_p < quality_model.threshold
    bad = np.isin(np.array(labels), BAD)
    return {
        "models": str(models),
        "thresholds": {
            "spam": spam_model.threshold,
            "quality": quality_model.threshold,
            "quality_rule": quality_model.meta.get("threshold_rule", "f1"),
        },
        "held_out": {m.meta["kind"]: m.meta["validation"] for m in (spam_model, quality_model)},
        "detection": {
            "spam_model": detection_metrics(spam, bad),
            "quality_model": detection_metrics(low, bad),
            "both": detection_metrics(spam | low, bad),
        },
        "families": family_rates(labels, families, spam, low),
    }


def _log_table(results: list[dict]) -> None:
    names = [Path(r["models"]).name for r in results]
    log.info("%-24s %s", "family (flagged share)", "  ".join(f"{n:>22s}" for n in names))
    for key in results[0]["families"]:
        cells = [
            f"{r['families'][key]['spam']:.3f}/{r['families'][key]['low_quality']:.3f}/"
            f"{r['families'][key]['flagged']:.3f}"
            for r in results
        ]
        log.info("%-24s %s", key, "  ".join(f"{c:>22s}" for c in cells))
    for which in ("spam_model", "quality_model", "both"):
        cells = [f"P {r['detection'][which]['precision']:.3f} R {r['detection'][which]['recall']:.3f}" for r in results]
        log.info("%-24s %s", which, "  ".join(f"{c:>22s}" for c in cells))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ood", type=Path, default=Path("data/ood/ood.jsonl"))
    p.add_argument(
        "--models",
        type=Path,
        nargs="+",
        default=[Path("out/demo/models")],
        help="model-set directories (each with spam/ and quality/); the first is the anchor",
    )
    p.add_argument("--output", type=Path, default=None, help="also write the JSON here")
    args = p.parse_args(argv)
    started = time.time()
    setup_logging()
    rows = [json.loads(line) for line in args.ood.read_text(encoding="utf-8").splitlines() if line.strip()]
    texts, labels = [r["text"] for r in rows], [r["label"] for r in rows]
    families = [r.get("family") or "-" for r in rows]
    results = [score_set(m, texts, labels, families) for m in args.models]
    _log_table(results)
    report = {
        "ood": str(args.ood),
        "documents": len(rows),
        "flag": "spam_prob >= t_spam or quality < t_quality",
        "results": results,
    }
    text = json.dumps(report, indent=2, ensure_ascii=False)
    harness.write_result(args.output, "bench.evals.classify_ood", args, report, started)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
