"""Train the spam (PanGu-α) or quality (GPT-3 App. A) fastText classifier from labeled data.

    python -m jobs.train_classifier --kind spam --input junk_and_good.jsonl --output models/spam
    spark-submit jobs/train_classifier.py --kind quality --input hdfs:///labels/quality/ --output models/quality

Input: JSONL or Parquet with ``text`` and ``label``. Spam: labels ``spam`` (the junk, e.g. 10K
hand-picked Common Crawl pages) and ``ham`` (a sample of good text). Quality: ``hq`` (a reference
corpus of good text) and ``lq`` (raw crawl). Change the names with ``--set labels='["neg","pos"]'``
(negative first). Spark reads and preprocesses (jieba) in parallel; fastText trains on the driver.
A hash of the text holds out ``valid_fraction`` for the metrics and the decision threshold.

Writes OUTPUT/model.bin and OUTPUT/metadata.json (sha256, preprocessing version, labels, counts,
threshold, precision/recall/F1 on the held-out split).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from filters.classify import (META_FILE, MODEL_FILE, PREPROCESS_VERSION, TrainParams, choose_threshold,  # noqa: E402
                              fasttext_line, positive_probs, preprocess, sha256_file, train_fasttext)
from jobs.config import ConfigError, load_config, to_dict  # noqa: E402

log = logging.getLogger("zhcorpus")
DEFAULT_LABELS = {"spam": ("ham", "spam"), "quality": ("lq", "hq")}


@dataclass(frozen=True)
class TrainClassifierConfig:
    master: str = ""  # "" = spark-submit's master, or local[*]
    kind: Literal["spam", "quality"] = "spam"
    labels: tuple[str, ...] = ()  # (negative, positive); () = ("ham", "spam") or ("lq", "hq") by kind
    valid_fraction: float = 0.2  # held out by a hash of the text (ours)
    split_seed: int = 0
    fasttext: TrainParams = field(default_factory=TrainParams)

    @property
    def label_pair(self) -> tuple[str, str]:
        pair = self.labels or DEFAULT_LABELS[self.kind]
        if len(pair) != 2 or pair[0] == pair[1]:
            raise ConfigError(f"labels must be two distinct names (negative, positive), got {pair}")
        return pair[0], pair[1]


def read_labeled(spark, inputs: list[str]):
    parquet = all(p.rstrip("/").endswith(".parquet") for p in inputs)
    df = spark.read.parquet(*inputs) if parquet else spark.read.json(inputs, schema="text string, label string")
    missing = {"text", "label"} - set(df.columns)
    if missing:
        raise ValueError(f"labeled input needs columns text and label; missing {sorted(missing)} in {inputs[:3]}")
    return df.select("text", "label")


def prepared_rows(spark, cfg: TrainClassifierConfig, inputs: list[str]):
    """(split, label, preprocessed text) rows; the split is a hash of the text, so a document
    and its exact copies always land on the same side."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    df = read_labeled(spark, inputs)
    bucket = F.abs(F.xxhash64("text", F.lit(cfg.split_seed))) % 10_000
    df = df.withColumn("split", F.when(bucket < int(cfg.valid_fraction * 10_000), "valid").otherwise("train"))

    def prep(batches):
        for b in batches:
            texts = b.column("text").to_pylist()
            yield pa.RecordBatch.from_pydict({
                "split": b.column("split"), "label": b.column("label"),
                "text": [preprocess(t) if t else None for t in texts]}, schema=pa.schema(
                    [("split", pa.string()), ("label", pa.string()), ("text", pa.string())]))

    return df.mapInArrow(prep, "split string, label string, text string")


def train(cfg: TrainClassifierConfig, inputs: list[str], output: str, spark=None) -> dict[str, Any]:
    import numpy as np

    from etl.spark import get_spark

    neg, pos = cfg.label_pair
    spark = spark or get_spark("zhcorpus-train-classifier", cfg.master or None)
    t0 = time.monotonic()
    counts: dict[str, dict[str, int]] = {"train": {}, "valid": {}, "skipped": {}}
    valid_texts, valid_truth, train_lines = [], [], []
    for r in prepared_rows(spark, cfg, inputs).toLocalIterator(prefetchPartitions=True):
        if r.label not in (neg, pos) or not r.text:
            why = "empty_text" if not r.text else f"unknown_label:{r.label}"
            counts["skipped"][why] = counts["skipped"].get(why, 0) + 1
            continue
        counts[r.split][r.label] = counts[r.split].get(r.label, 0) + 1
        if r.split == "train":
            train_lines.append(fasttext_line(r.label, r.text))
        else:
            valid_texts.append(r.text)
            valid_truth.append(r.label == pos)
    # fastText's SGD reads the file in order: labelled data usually arrives grouped by label
    # (and here in partition order), which made training diverge (NaN). Sorted, then a seeded
    # shuffle: the same input gives the same model whatever the partitioning.
    train_lines.sort()
    random.Random(cfg.split_seed).shuffle(train_lines)
    with tempfile.TemporaryDirectory() as tmp:
        train_file = Path(tmp) / "train.txt"
        train_file.write_text("".join(train_lines), encoding="utf-8")
        for split in ("train", "valid"):
            if set(counts[split]) != {neg, pos}:
                raise ValueError(f"{split} split needs both labels {neg!r} and {pos!r}, has {counts[split]}")
        model, lr_used = train_fasttext(train_file, cfg.fasttext)
        metrics = choose_threshold(positive_probs(model, valid_texts, pos), np.array(valid_truth))
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=Path(output).parent if Path(output).parent.exists() else None))
        model.save_model(str(staging / MODEL_FILE))
    meta = {
        "kind": cfg.kind, "labels": [neg, pos], "positive_label": pos,
        "sha256": sha256_file(staging / MODEL_FILE), "preprocess_version": PREPROCESS_VERSION,
        "threshold": metrics["threshold"],
        "validation": {"precision": metrics["precision"], "recall": metrics["recall"], "f1": metrics["f1"],
                       "at_threshold": metrics["threshold"], "documents": len(valid_truth)},
        "counts": counts, "inputs": inputs, "config": to_dict(cfg), "lr_used": lr_used,
        "train_seconds": round(time.monotonic() - t0, 1),
    }
    (staging / META_FILE).write_text(json.dumps(meta, indent=2, ensure_ascii=False))
    out_dir = Path(output)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(out_dir)
    return meta


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    p = argparse.ArgumentParser(prog="jobs.train_classifier", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kind", choices=["spam", "quality"], required=True)
    p.add_argument("--input", nargs="+", required=True, help="labeled JSONL or Parquet (text, label)")
    p.add_argument("--output", required=True, help="model directory (replaced if it exists)")
    p.add_argument("--config", default=None, help="TOML config")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    try:
        cfg = load_config(TrainClassifierConfig, args.config, [f"kind={args.kind}", *args.overrides])
        cfg.label_pair
        meta = train(cfg, args.input, args.output)
    except (ConfigError, ValueError, FileNotFoundError) as e:
        log.error("%s", e)
        return 2
    v = meta["validation"]
    log.info("%s model -> %s: held-out P %.3f R %.3f F1 %.3f at threshold %.3f (%d documents); counts %s",
             cfg.kind, args.output, v["precision"], v["recall"], v["f1"], v["at_threshold"], v["documents"],
             meta["counts"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
