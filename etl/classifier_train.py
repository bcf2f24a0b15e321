"""Classifier training on Spark: labelled documents are read and preprocessed (segmented) on the
executors, Arrow-batched; fastText trains on the driver; the model directory (``model.bin`` +
``metadata.json``) is published atomically, replacing an older model only once the new one is
complete.

A hash of the text holds out ``valid_fraction`` (a document and its exact copies always land on
the same side); the decision threshold is chosen on it (max F1) and its metrics recorded.
"""

from __future__ import annotations

import json
import logging
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from etl.publish import publish_dir
from filters.classify import (META_FILE, MODEL_FILE, PREPROCESS_VERSION, TrainParams, choose_threshold,
                              fasttext_line, positive_probs, preprocess, sha256_file, train_fasttext)

log = logging.getLogger("zhcorpus")
DEFAULT_LABELS = {"spam": ("ham", "spam"), "quality": ("lq", "hq")}


@dataclass(frozen=True)
class ClassifierTrainingConfig:
    """The ``classifier`` section of jobs.train_classifier."""
    kind: Literal["spam", "quality"] = "spam"
    labels: tuple[str, ...] = ()  # (negative, positive); () = ("ham", "spam") or ("lq", "hq") by kind
    valid_fraction: float = 0.2  # held out by a hash of the text (ours)
    split_seed: int = 0
    fasttext: TrainParams = field(default_factory=TrainParams)

    @property
    def label_pair(self) -> tuple[str, str]:
        pair = self.labels or DEFAULT_LABELS[self.kind]
        if len(pair) != 2 or pair[0] == pair[1]:
            raise ValueError(f"classifier.labels must be two distinct names (negative, positive), got {pair}")
        return pair[0], pair[1]


def read_labeled(spark: SparkSession, inputs: list[str]) -> DataFrame:
    parquet = all(p.rstrip("/").endswith(".parquet") for p in inputs)
    df = spark.read.parquet(*inputs) if parquet else spark.read.json(inputs, schema="text string, label string")
    missing = {"text", "label"} - set(df.columns)
    if missing:
        raise ValueError(f"labeled input needs columns text and label; missing {sorted(missing)} in {inputs[:3]}")
    return df.select("text", "label")


def prepared_rows(df: DataFrame, cfg: ClassifierTrainingConfig) -> DataFrame:
    """(split, label, preprocessed text) rows; the split is a hash of the text."""
    bucket = F.abs(F.xxhash64("text", F.lit(cfg.split_seed))) % 10_000
    df = df.withColumn("split", F.when(bucket < int(cfg.valid_fraction * 10_000), "valid").otherwise("train"))
    schema = pa.schema([("split", pa.string()), ("label", pa.string()), ("text", pa.string())])

    def prep(batches):
        for b in batches:
            texts = [preprocess(t) if t else None for t in b.column("text").to_pylist()]
            yield pa.RecordBatch.from_arrays([b.column("split"), b.column("label"), pa.array(texts, pa.string())],
                                             schema=schema)

    return df.select("split", "label", "text").mapInArrow(prep, "split string, label string, text string")


@dataclass
class _Splits:
    train_lines: list[str] = field(default_factory=list)
    valid_texts: list[str] = field(default_factory=list)
    valid_truth: list[bool] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=lambda: {"train": {}, "valid": {}, "skipped": {}})


def _collect(rows: DataFrame, neg: str, pos: str, seed: int) -> _Splits:
    s = _Splits()
    for r in rows.toLocalIterator(prefetchPartitions=True):
        if r.label not in (neg, pos) or not r.text:
            why = "empty_text" if not r.text else f"unknown_label:{r.label}"
            s.counts["skipped"][why] = s.counts["skipped"].get(why, 0) + 1
            continue
        s.counts[r.split][r.label] = s.counts[r.split].get(r.label, 0) + 1
        if r.split == "train":
            s.train_lines.append(fasttext_line(r.label, r.text))
        else:
            s.valid_texts.append(r.text)
            s.valid_truth.append(r.label == pos)
    for split in ("train", "valid"):
        if set(s.counts[split]) != {neg, pos}:
            raise ValueError(f"{split} split needs both labels {neg!r} and {pos!r}, has {s.counts[split]}")
    # fastText's SGD reads the file in order: labelled data usually arrives grouped by label
    # (and here in partition order), which made training diverge (NaN). Sorted, then a seeded
    # shuffle: the same input gives the same model whatever the partitioning.
    s.train_lines.sort()
    random.Random(seed).shuffle(s.train_lines)
    return s


def train_classifier(df: DataFrame, cfg: ClassifierTrainingConfig, output: str,
                     extra_meta: dict[str, Any]) -> dict[str, Any]:
    """Train on ``df`` (text, label) and publish ``output``; returns the metadata."""
    neg, pos = cfg.label_pair
    t0 = time.monotonic()
    s = _collect(prepared_rows(df, cfg), neg, pos, cfg.split_seed)
    with tempfile.TemporaryDirectory() as tmp:
        train_file = Path(tmp) / "train.txt"
        train_file.write_text("".join(s.train_lines), encoding="utf-8")
        model, lr_used = train_fasttext(train_file, cfg.fasttext)
    metrics = choose_threshold(positive_probs(model, s.valid_texts, pos), np.array(s.valid_truth))
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with publish_dir(output, overwrite=True) as staging:
        model.save_model(staging.path(MODEL_FILE))
        meta = {
            "kind": cfg.kind, "labels": [neg, pos], "positive_label": pos,
            "sha256": sha256_file(staging.path(MODEL_FILE)), "preprocess_version": PREPROCESS_VERSION,
            "threshold": metrics["threshold"],
            "validation": {"precision": metrics["precision"], "recall": metrics["recall"], "f1": metrics["f1"],
                           "at_threshold": metrics["threshold"], "documents": len(s.valid_truth)},
            "counts": s.counts, "lr_used": lr_used, "train_seconds": round(time.monotonic() - t0, 1),
            **extra_meta,
        }
        staging.write_text(META_FILE, json.dumps(meta, indent=2, ensure_ascii=False))
    return meta
