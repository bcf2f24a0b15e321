"""The corpus phases after read → clean → classify (``etl.documents``): dedup, and tokenize +
shards. Each writes its part of the output under a staging directory (``etl.runtime.publish.Staging``)
and returns a typed summary for ``etl.report.assemble``."""

from __future__ import annotations

import logging
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from base.manifest import MANIFEST_FILE
from base.s3 import is_s3
from etl.dedup.stage import DedupConfig, dedup, largest_clusters
from etl.report.assemble import DedupSummary, ShardSummary
from etl.report.stats import cluster_sizes, histogram, log_bin, log_bins
from etl.runtime.sizing import OutputConfig, sized
from etl.shards.tokenizer_train import TokenizerConfig, train_tokenizer

if TYPE_CHECKING:
    from etl.decontaminate.stage import PreparedIndex
    from etl.dedup.index import DedupIndex
    from etl.runtime.publish import Staging
    from etl.shards.stage import ShardsConfig

log = logging.getLogger("zhcorpus")
NO_SOURCE_FILE = "unknown"  # duplicates_by_file key for documents without a source_file column


KEYS = "_dedup_keys"  # survivors' band and exact keys, staged until the index appends them
# Parquet bytes a duplicates/ row (doc_id, duplicate_of, kind) takes at most, for sizing the
# output (etl.runtime.sizing): two doc_ids of a source path and an offset, uncompressed.
DUPLICATE_ROW_BYTES = 160


@dataclass
class Deduplicated:
    """The dedup phase's frames, all read from files under the staging directory (the phase's
    checkpoints are gone when it returns): the survivors (``docs``' columns, not yet written: a
    later phase may still drop some), and their band and exact keys (what a dedup index appends;
    the caller removes ``KEYS`` before publishing)."""

    survivors: DataFrame
    bands: DataFrame
    exact: DataFrame


def dedup_phase(
    docs: DataFrame,
    cfg: DedupConfig,
    index: "DedupIndex | None",
    out: "Staging",
    checkpoint_dir: str = "",
    output: OutputConfig = OutputConfig(),
) -> tuple[DedupSummary, Deduplicated]:
    """Writes ``duplicates/`` in files sized by ``output`` (its rows counted: exact copies are
    found before the candidate edges and are never edges), and the survivors' keys under ``KEYS``; the summary's
    ``documents_written`` is filled by
    whoever writes ``documents/``. ``checkpoint_dir``: the ``spark.checkpoint_dir`` for reliable
    checkpoints on a cluster (``etl.dedup.checkpoints``)."""
    from etl.dedup.checkpoints import Checkpoints

    spark = docs.sparkSession
    with Checkpoints(spark, checkpoint_dir, "dedup") as cp:
        result = dedup(docs, cfg, index, checkpoints=cp)
        n_duplicates = result.duplicates.count()  # persisted (or driver-held): the write reads the same rows
        out.write_parquet("duplicates", sized(result.duplicates, n_duplicates * DUPLICATE_ROW_BYTES, output))
        out.write_parquet(f"{KEYS}/bands", result.survivor_bands)  # staged: the index writes its own files
        out.write_parquet(f"{KEYS}/exact", result.survivor_exact)
    duplicates = out.read_parquet(spark, "duplicates")
    source = F.col("source_file") if "source_file" in docs.columns else F.lit(NO_SOURCE_FILE)
    rows = (
        duplicates.join(docs.select("doc_id", source.alias("source_file")), "doc_id")
        .groupBy("source_file", "kind")
        .count()
        .collect()
    )
    by_file: dict[str, dict[str, int]] = {}
    for r in rows:
        by_file.setdefault(r.source_file, {})[r.kind] = r["count"]
    report = dict(result.report)
    verification = report.pop("verification", None)
    if verification is not None:
        verification = {"mode": cfg.verify, **verification}
    summary = DedupSummary(
        by_file, -1, asdict(cfg.minhash.resolved()), largest_clusters(duplicates), verification, run=report
    )
    survivors = docs.join(duplicates.select("doc_id"), "doc_id", "left_anti")
    return summary, Deduplicated(
        survivors, out.read_parquet(spark, f"{KEYS}/bands"), out.read_parquet(spark, f"{KEYS}/exact")
    )


def decontaminate_phase(survivors: DataFrame, prepared: "PreparedIndex", out: "Staging"):
    """Mark the survivors that share an n-gram with an evaluation item (``etl.decontaminate.stage``);
    writes ``documents/`` (the unmarked ones, ``survivors``' columns plus ``contamination``
    unless the stage is off). Returns the documents written, the rows it dropped (stage
    ``decontaminate``, to be written to ``rejected/``) or None, the stage's summary or None, and
    source_file -> documents it dropped."""
    from pyspark import StorageLevel

    from etl.decontaminate.stage import decontaminate_stage, decontaminate_summary

    spark = survivors.sparkSession
    if prepared.mode == "off":
        out.write_parquet("documents", survivors)
        return out.read_parquet(spark, "documents"), None, None, {}
    marked = decontaminate_stage(survivors, None, prepared).persist(StorageLevel.MEMORY_AND_DISK)
    columns = [*survivors.columns, "contamination"]
    out.write_parquet("documents", marked.where(F.col("reason").isNull()).select(*columns))
    summary, dropped = decontaminate_summary(marked, prepared)
    return out.read_parquet(spark, "documents"), marked.where(F.col("reason").isNotNull()), summary, dropped


@dataclass(frozen=True)
class WrittenDocuments:
    """What one aggregation over ``documents/`` (as written) says, for the ledger, the shard count,
    the shards' source names and the report's histogram of document lengths."""

    documents: int
    chars: int  # sum of n_chars
    sources: list[str]  # sorted; null counts as UNKNOWN_SOURCE, as in the shards
    doc_chars: dict  # etl.report.stats.log_histogram(documents, "n_chars")


def written_documents(documents: DataFrame) -> WrittenDocuments:
    """One grouped aggregation (source x length bin) instead of a count, a sum, a distinct and a
    histogram, each a job of its own."""
    from etl.shards.stage import UNKNOWN_SOURCE, source_names

    rows = (
        documents.select(
            F.coalesce(F.col("source"), F.lit(UNKNOWN_SOURCE)).alias("group"),
            log_bin("n_chars").alias("bin"),
            "n_chars",
        )
        .groupBy("group", "bin")
        .agg(F.count(F.lit(1)).alias("n"), F.sum("n_chars").alias("chars"))
        .collect()
    )
    counts: dict[str, dict[int, int]] = {}
    for r in rows:
        counts.setdefault(r.group, {})[r.bin] = r.n
    return WrittenDocuments(
        documents=sum(r.n for r in rows),
        chars=sum(r.chars or 0 for r in rows),
        sources=source_names(counts),
        doc_chars=histogram(counts),
    )


def shards_phase(
    documents: DataFrame, tok: TokenizerConfig, shards: ShardsConfig, out: "Staging", written: WrittenDocuments
) -> tuple[ShardSummary, dict]:
    """Tokenize and write ``shards/`` in one pass over ``documents`` (``written``: their summary,
    ``written_documents``); with no ``tokenizer.model``, first train one on the documents into
    ``tokenizer/``. A ``tokenizer.model`` on S3 (a committed output) is fetched into the local
    cache, verified (``base.committed.fetch_tree``). Returns the summary and the histogram of
    tokens per document (``log_histogram``'s shape), counted by the shard writers."""
    from etl.shards.stage import packed_tokens, ship_tokenizer, write_token_shards

    tokenizer_dir = _tokenizer_dir(tok.model, out) if tok.model else _train_into(documents, tok, out)
    n = shards.num_shards
    if n <= 0:
        n = max(1, -(-int(written.chars * 1.5) // (shards.target_mb << 20)))
    shipped = ship_tokenizer(documents.sparkSession, tokenizer_dir)
    tokens = packed_tokens(documents, shipped)  # computed once, by the shard writers' job: not persisted
    manifest, doc_tokens = write_token_shards(tokens, shipped, out.path("shards"), n, written.sources, out.access)
    for s in manifest["shards"]:  # what a store's commit lists (a no-op on a file system)
        for kind in ("bin", "idx", "src"):
            out.record(f"shards/{s[kind]}", s[f"{kind}_bytes"], s[f"{kind}_sha256"])
    out.adopt(f"shards/{MANIFEST_FILE}")
    summary = ShardSummary(
        manifest="shards/manifest.json",
        tokenizer=tok.model or "tokenizer/",
        tokenizer_sha256=shipped.sha256,
        vocab_size=shipped.vocab_size,
        dtype=manifest["dtype"],
        num_shards=n,
        documents=manifest["totals"]["documents"],
        total_tokens=manifest["totals"]["tokens"],
        tokens_per_source=manifest["tokens_per_source"],
    )
    return summary, histogram(binned(doc_tokens))


def binned(values: dict[str, dict[int, int]]) -> dict[str, dict[int, int]]:
    """{group: {value: count}} -> {group: {log bin: count}} (``etl.report.stats.log_bins``)."""
    out: dict[str, dict[int, int]] = {}
    for group, counts in values.items():
        bins, n = log_bins(np.fromiter(counts, dtype=np.int64, count=len(counts))), list(counts.values())
        mine = out.setdefault(group, {})
        for b, c in zip(bins.tolist(), n):
            mine[b] = mine.get(b, 0) + c
    return out


def _tokenizer_dir(model: str, out: "Staging") -> str:
    """``tokenizer.model`` as a local directory: itself, or fetched from a committed output on S3."""
    if not is_s3(model):
        return model
    from base.committed import fetch_tree
    from base.s3 import S3Access, S3Config

    access = out.access or S3Access.resolve(S3Config())
    return str(fetch_tree(model, access.filesystem()))


def _train_into(documents: DataFrame, tok: TokenizerConfig, out: "Staging") -> str:
    """Train on ``documents`` into ``OUT/tokenizer/``: in place on a file system; on a store,
    into a local directory whose files are then uploaded with the attempt."""
    uri = out.path("tokenizer")
    if out.access is not None:
        target = str(Path(tempfile.mkdtemp(prefix="zhcorpus-tokenizer-")) / "tokenizer")
        train_tokenizer(documents, tok, target, {"inputs": ["documents/"]})
        out.put_tree("tokenizer", target)
        return target
    if uri.startswith("file:"):
        target = uri[len("file:") :]
    elif "://" in uri:
        raise ValueError(
            f"cannot train the tokenizer into {uri}: train it first (jobs.train_tokenizer) "
            "and pass --set tokenizer.model=DIR"
        )
    else:
        target = uri
    train_tokenizer(documents, tok, target, {"inputs": ["documents/"]})
    return target


def distributions(doc_chars: dict, doc_tokens: dict, duplicates: DataFrame) -> dict:
    """What report.html plots: document length and tokens per document per source (both counted
    already: ``written_documents``, ``shards_phase``), cluster sizes."""
    return {"doc_chars": doc_chars, "doc_tokens": doc_tokens, "cluster_sizes": cluster_sizes(duplicates)}
