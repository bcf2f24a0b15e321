"""Tokenizer training on Spark: a bounded, deterministic sample of the documents is pre-segmented
on the executors (``filters.tokenizer.training_lines``, Arrow-batched) and streamed in sample
order to the driver, where SentencePiece trains; the model directory is published atomically.

The sample is the documents with the smallest ``xxhash64(seed, doc_id)``, bounded by
``sample.max_docs`` and ``sample.max_chars`` before anything reaches the driver.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from base.errors import Refusal
from base.s3 import S3Config, is_s3
from etl.runtime.objstore import publish_output
from etl.runtime.publish import publish_dir
from filters.tokenizer import TokenizerParams, train_sentencepiece, training_lines

log = logging.getLogger("zhcorpus")


@dataclass(frozen=True)
class SampleConfig:
    # Bounds on the training sample (ours): SentencePiece holds it in memory on the driver
    # (BPE on 50M characters takes a few GB); PanGu-α's vocabulary came from a corpus sample too.
    max_docs: int = 200_000
    max_chars: int = 50_000_000
    seed: int = 0  # the sample is the smallest xxhash64(seed, doc_id)


@dataclass(frozen=True)
class TokenizerConfig(TokenizerParams):
    """The ``tokenizer`` section of every job that trains or uses a tokenizer: the SentencePiece
    parameters (``filters.tokenizer.TokenizerParams``), where a trained model is, and the sample."""

    # A directory from jobs.train_tokenizer (verified by sha256). In build_corpus, "" = train one
    # on the build's documents into OUT/tokenizer/ (local or shared-disk OUT only).
    model: str = ""
    sample: SampleConfig = field(default_factory=SampleConfig)

    @property
    def params(self) -> TokenizerParams:
        return TokenizerParams(**{f.name: getattr(self, f.name) for f in dataclasses.fields(TokenizerParams)})


def _sample_key(seed: int):
    return F.xxhash64(F.lit(seed), F.col("doc_id"))


def sample_cutoff(docs: DataFrame, cfg: SampleConfig) -> tuple[int, str, int, int] | None:
    """(key, doc_id) of the last sampled document in (key, doc_id) order, with the sample's
    document and character counts; None for an empty input. Only (key, doc_id, length) of at
    most ``max_docs`` documents reach the driver."""
    head = (
        docs.select(_sample_key(cfg.seed).alias("key"), "doc_id", F.length("text").alias("chars"))
        .orderBy("key", "doc_id")
        .limit(cfg.max_docs)
        .collect()
    )
    cutoff, n_docs, n_chars = None, 0, 0
    for row in head:
        if n_docs and n_chars + row.chars > cfg.max_chars:
            break
        cutoff, n_docs, n_chars = (row.key, row.doc_id), n_docs + 1, n_chars + row.chars
    return None if cutoff is None else (*cutoff, n_docs, n_chars)


def segmented_lines(docs: DataFrame, cfg: TokenizerConfig, key: int, doc_id: str) -> DataFrame:
    """Training lines of the sampled documents, pre-segmented on the executors, in sample order.
    The documents are sorted before segmentation runs: sorting its output instead would segment
    twice (once more for the sort's range sampling)."""
    k = _sample_key(cfg.sample.seed)
    sampled = (
        docs.where((k < key) | ((k == key) & (F.col("doc_id") <= doc_id)))
        .select(k.alias("key"), "doc_id", "text")
        .orderBy("key", "doc_id")
    )
    hmm = cfg.jieba_hmm
    schema = pa.schema([("line", pa.string())])

    def segment(batches):  # mapInArrow keeps row order within a partition
        for b in batches:
            lines = [line for text in b.column("text").to_pylist() for line in training_lines(text, hmm)]
            yield pa.RecordBatch.from_pydict({"line": lines}, schema=schema)

    return sampled.mapInArrow(segment, "line string")


def documents_with_text(docs: DataFrame, where: str) -> DataFrame:
    missing = {"doc_id", "text"} - set(docs.columns)
    if missing:
        raise ValueError(f"documents need columns doc_id and text; missing {sorted(missing)} in {where}")
    return docs.select("doc_id", "text").where(F.col("text").isNotNull() & (F.length("text") > 0))


def train_tokenizer(
    docs: DataFrame,
    cfg: TokenizerConfig,
    output: str,
    extra_meta: dict[str, Any],
    overwrite: bool = True,
    s3: S3Config | None = None,
) -> dict[str, Any]:
    """Sample ``docs`` (doc_id, text), pre-segment, train, publish ``output`` (a local or shared-disk
    directory, or an ``s3://`` prefix on the store ``s3``: trained into a local directory, then
    published by the commit protocol of ``etl.runtime.objstore``) atomically; returns the
    tokenizer's metadata (plus ``train_seconds``)."""
    if is_s3(output):
        with publish_output(output, overwrite, None, s3) as out, tempfile.TemporaryDirectory() as tmp:
            meta = train_tokenizer(docs, cfg, f"{tmp}/tokenizer", extra_meta)
            out.put_tree("", f"{tmp}/tokenizer")
        return meta
    t0 = time.monotonic()
    docs = documents_with_text(docs, str(extra_meta.get("inputs", ""))[:200])
    cut = sample_cutoff(docs, cfg.sample)
    if cut is None:
        raise Refusal(f"no documents with text in {extra_meta.get('inputs')}")
    key, last_id, n_docs, n_chars = cut
    log.info("tokenizer sample: %d documents, %d characters", n_docs, n_chars)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with publish_dir(output, overwrite=overwrite) as staging:
        lines_file = Path(staging.path("lines.txt"))
        with open(lines_file, "w", encoding="utf-8", newline="\n") as f:
            for row in segmented_lines(docs, cfg, key, last_id).toLocalIterator(prefetchPartitions=True):
                f.write(row.line + "\n")
        sample = {
            "documents": n_docs,
            "chars": n_chars,
            "seed": cfg.sample.seed,
            "max_docs": cfg.sample.max_docs,
            "max_chars": cfg.sample.max_chars,
        }
        meta = train_sentencepiece(lines_file, staging.root, cfg.params, sample, extra_meta)
        lines_file.unlink()
    meta["train_seconds"] = round(time.monotonic() - t0, 1)  # not in metadata.json: varies per run
    return meta
