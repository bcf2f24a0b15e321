"""The decontamination stage (after dedup, on the kept documents): mark every document that
shares a character n-gram with an evaluation item (``filters.dedup.decontam``).

The evaluation sets are read on the driver (they are small: a benchmark is thousands of items),
indexed once (sorted 64-bit n-gram hashes with their owning item and a one-hash Bloom filter in
front, 14 bytes per distinct n-gram)
and broadcast; each Python worker builds its ``Matcher`` once per broadcast. Every document gets
``contamination`` (the items it hits, at most MAX_HITS_PER_DOC, in index order). In ``drop``
mode a hit sets ``stage="decontaminate"``, ``reason="contaminated"`` and ``detail`` =
``benchmark:item_id`` of its first hit; ``report`` only fills the column; ``off`` adds it null.
"""

from __future__ import annotations

import gzip
import io
import json
from dataclasses import dataclass
from typing import Any, Iterator, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs
from pyspark.broadcast import Broadcast
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from filters.dedup import decontam as dc

DECONTAM_STAGE, CONTAMINATED = "decontaminate", "contaminated"
HITS_COLUMN = "contamination"
MAX_HITS_PER_DOC = 64  # items listed per document (counts of items hit are a lower bound past it)
_HIT = T.StructType([T.StructField("benchmark", T.StringType()), T.StructField("item_id", T.StringType())])
HITS_FIELD = T.StructField(HITS_COLUMN, T.ArrayType(_HIT))
_ARROW_HITS = pa.list_(pa.struct([("benchmark", pa.string()), ("item_id", pa.string())]))
_MARK_COLUMNS = ("stage", "reason", "detail")
EVAL_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".parquet")


@dataclass(frozen=True)
class DecontaminateConfig:
    # Evaluation sets: a JSONL/Parquet file with a "text" field (benchmark = the file name
    # without suffix) or a directory of such files (benchmark = the directory name). Item id:
    # the "id" field, else the row number (file stem and row number inside a directory).
    eval_sets: tuple[str, ...] = ()
    # Character n-gram size after normalisation. GPT-3 App. C used 13 words, about 23 characters
    # of this corpus (1.79 characters per rjieba word). Measured on the demo crawl (docs/pii-decontamination.md,
    # bench/bench_pii_decontam.py --sweep): 13 characters hit 27 documents only through shared
    # phrases, 16 still 2 (an official's title and name), 20 none, and 20 keeps 95 % (311 of
    # 328) of the true hits of 16.
    ngram: int = dc.DEFAULT_NGRAM
    # Items shorter than ngram are matched whole; shorter than this, not at all (counted as
    # ignored): an 8-character item already names a specific phrase, a 5-character one ("摄像头清晰")
    # occurs on unrelated pages. Ours, from the same measurement.
    min_chars: int = dc.DEFAULT_MIN_CHARS
    # Convert items to simplified characters first, as the cleaning stage does to documents
    # (PanGu-α §3.1.1), so a traditional-character benchmark still matches.
    t2s: bool = True
    # drop: reason "contaminated" (issue 18); report: counts only; off. With no eval_sets the
    # stage is off whatever this says.
    mode: Literal["drop", "report", "off"] = "drop"
    # Refuse an index larger than this (it is broadcast to every executor).
    max_index_mb: int = 1024

    @property
    def effective_mode(self) -> str:
        return self.mode if self.eval_sets else "off"


# --- reading the evaluation sets (driver) --------------------------------------------------


def _filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    if "://" in path:
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), path


def _name(path: str) -> str:
    base = path.rstrip("/").rsplit("/", 1)[-1]
    for suffix in EVAL_SUFFIXES:
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def _rows(fs: pafs.FileSystem, path: str) -> list[dict[str, Any]]:
    if path.endswith(".parquet"):
        with fs.open_input_file(path) as f:
            return pq.read_table(f).to_pylist()
    with fs.open_input_stream(path) as f:
        data = f.read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    out = []
    for n, line in enumerate(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise ValueError(f"{path} line {n + 1}: not JSON ({e})") from e
    return out


def _items(rows: list[dict[str, Any]], benchmark: str, path: str, id_prefix: str) -> list[dc.EvalItem]:
    items = []
    for i, row in enumerate(rows):
        text = row.get("text") if isinstance(row, dict) else None
        if not isinstance(text, str):
            raise ValueError(f"{path} item {i}: no string 'text' field")
        item_id = row.get("id")
        items.append(dc.EvalItem(benchmark, str(item_id) if item_id is not None else f"{id_prefix}{i}", text))
    return items


def load_eval_sets(paths: tuple[str, ...] | list[str]) -> list[dc.EvalItem]:
    """Every item of every evaluation set, in path order (any pyarrow filesystem URI)."""
    items, seen = [], {}
    for path in paths:
        fs, local = _filesystem(path)
        info = fs.get_file_info(local)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"decontaminate.eval_sets: {path} does not exist")
        benchmark = _name(local)
        if benchmark in seen:
            raise ValueError(f"decontaminate.eval_sets: {path} and {seen[benchmark]} are both benchmark {benchmark!r}")
        seen[benchmark] = path
        if info.type == pafs.FileType.Directory:
            files = sorted(
                f.path
                for f in fs.get_file_info(pafs.FileSelector(local, recursive=True))
                if f.type == pafs.FileType.File and f.path.endswith(EVAL_SUFFIXES)
            )
            if not files:
                raise ValueError(f"decontaminate.eval_sets: no {EVAL_SUFFIXES} files in {path}")
            for f in files:
                items += _items(_rows(fs, f), benchmark, f, f"{_name(f)}:")
        else:
            items += _items(_rows(fs, local), benchmark, local, "")
    return items


# --- the index, broadcast ------------------------------------------------------------------


@dataclass
class PreparedIndex:
    """What the stage and the summary need: the broadcast index and its per-benchmark counts."""

    broadcast: Broadcast | None
    fingerprint: str  # of the index (filters.dedup.decontam.EvalIndex.fingerprint); "" when off
    summary: dict[str, dict[str, int]]
    mode: str
    ngram: int
    min_chars: int


def prepare(spark: SparkSession, cfg: DecontaminateConfig) -> PreparedIndex:
    """Read and index the evaluation sets, check the size, broadcast. Raises on a missing file,
    an item without text, two sets with one name, or an index over ``max_index_mb``."""
    mode = cfg.effective_mode
    if mode == "off":
        return PreparedIndex(None, "", {}, "off", cfg.ngram, cfg.min_chars)
    index = dc.EvalIndex(load_eval_sets(cfg.eval_sets), cfg.ngram, cfg.min_chars, cfg.t2s)
    size_mb = (index.hashes.nbytes + index.owners.nbytes + index.bits.nbytes) / 2**20
    if size_mb > cfg.max_index_mb:
        raise ValueError(
            f"decontamination index is {size_mb:.0f} MB, over decontaminate.max_index_mb "
            f"= {cfg.max_index_mb}: raise it or split the evaluation sets"
        )
    return PreparedIndex(
        spark.sparkContext.broadcast(index), index.fingerprint, index.summary(), mode, cfg.ngram, cfg.min_chars
    )


_matchers: dict[int, dc.Matcher] = {}


def get_matcher(bc: Broadcast, fingerprint: str) -> dc.Matcher:
    """One per index per Python worker (the automaton of short items is built here)."""
    if fingerprint not in _matchers:
        _matchers[fingerprint] = dc.Matcher(bc.value)
    return _matchers[fingerprint]


# --- the stage -----------------------------------------------------------------------------


def decontaminate_batch(batch: pa.RecordBatch, matcher: dc.Matcher, drop: bool) -> pa.RecordBatch:
    """Fill ``contamination`` for the documents (rows whose ``reason`` is null); in drop mode,
    mark the hits. Other columns pass unchanged."""
    texts, reasons = batch.column("text").to_pylist(), batch.column("reason").to_pylist()
    marks = {n: batch.column(n).to_pylist() for n in _MARK_COLUMNS}
    hits_col: list[Any] = [None] * batch.num_rows
    documents = [i for i, reason in enumerate(reasons) if reason is None]
    for i, hits in zip(documents, matcher.hits_batch([texts[i] for i in documents])):
        hits_col[i] = [{"benchmark": h.benchmark, "item_id": h.item_id} for h in hits[:MAX_HITS_PER_DOC]]
        if drop and hits:
            marks["stage"][i], marks["reason"][i], marks["detail"][i] = DECONTAM_STAGE, CONTAMINATED, str(hits[0])
    arrays = [pa.array(marks[n], pa.string()) if n in marks else batch.column(n) for n in batch.schema.names]
    return pa.RecordBatch.from_arrays(
        arrays + [pa.array(hits_col, _ARROW_HITS)], schema=batch.schema.append(pa.field(HITS_COLUMN, _ARROW_HITS))
    )


def decontaminate_stage(docs: DataFrame, cfg: DecontaminateConfig, prepared: PreparedIndex | None = None) -> DataFrame:
    """``docs``: the kept documents (any frame with ``text``; ``stage``, ``reason`` and ``detail``
    are added null where missing, and rows with a reason pass through). Returns the same rows
    with ``contamination`` appended. ``prepared``: from ``prepare`` (built here when None; pass
    it to share one broadcast with ``decontaminate_summary``)."""
    for name in _MARK_COLUMNS:
        if name not in docs.columns:
            docs = docs.withColumn(name, F.lit(None).cast(T.StringType()))
    prepared = prepared or prepare(docs.sparkSession, cfg)
    if prepared.mode == "off":
        return docs.withColumn(HITS_COLUMN, F.lit(None).cast(HITS_FIELD.dataType))
    bc, fingerprint, drop = prepared.broadcast, prepared.fingerprint, prepared.mode == "drop"

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        matcher = get_matcher(bc, fingerprint)
        for batch in batches:
            yield decontaminate_batch(batch, matcher, drop)

    return docs.mapInArrow(apply, T.StructType(list(docs.schema.fields) + [HITS_FIELD]))


def decontaminate_summary(marked: DataFrame, prepared: PreparedIndex) -> tuple[dict[str, Any], dict[str, int]]:
    """What report.json needs: ``{"mode", "ngram", "min_chars", "index_fingerprint", "documents_hit",
    "documents_dropped", "benchmarks": {name: {"items", "ngram_items", "whole_items",
    "ignored_items", "ngrams", "documents_hit", "items_hit"}}}``, and source_file -> documents this
    stage dropped, for the ledger (``add_to_ledger``). ``documents_hit`` counts the documents with at
    least one hit in that benchmark (in drop mode, the dropped ones); ``items_hit`` the distinct
    items hit (a lower bound when a document hits more than MAX_HITS_PER_DOC). Two queries: the
    benchmarks' distinct counts, and the totals per input file."""
    out = {
        "mode": prepared.mode,
        "ngram": prepared.ngram,
        "min_chars": prepared.min_chars,
        "index_fingerprint": prepared.fingerprint,
        "documents_hit": 0,
        "documents_dropped": 0,
        "benchmarks": {b: {**s, "documents_hit": 0, "items_hit": 0} for b, s in prepared.summary.items()},
    }
    if prepared.mode == "off":
        return out, {}
    hit = marked.where(F.size(HITS_COLUMN) > 0)
    per = (
        hit.select("doc_id", F.explode(HITS_COLUMN).alias("h"))
        .groupBy(F.col("h.benchmark").alias("benchmark"))
        .agg(F.countDistinct("doc_id").alias("documents"), F.countDistinct("h.item_id").alias("items"))
        .collect()
    )
    for r in per:
        out["benchmarks"][r.benchmark].update(documents_hit=r.documents, items_hit=r["items"])
    # this stage marks a drop with its stage and CONTAMINATED together (decontaminate_batch)
    found, dropped = F.size(HITS_COLUMN) > 0, F.col("stage") == DECONTAM_STAGE
    files = (
        marked.where(found | dropped)
        .groupBy("source_file")
        .agg(F.sum(found.cast("int")).alias("hit"), F.sum(dropped.cast("int")).alias("dropped"))
        .collect()
    )
    out["documents_hit"] = sum(r.hit for r in files)
    out["documents_dropped"] = sum(r.dropped or 0 for r in files)
    return out, {r.source_file: r.dropped for r in files if r.dropped}


def add_to_ledger(report: dict[str, Any], by_file: dict[str, int]) -> None:
    """Move this stage's drops from documents to rejected in an ``etl.report.ledger`` report, per file
    and in total, under rejected_by_stage["decontaminate"]["contaminated"]; input still equals
    documents + rejected + duplicates (ValueError otherwise)."""
    key = f"{DECONTAM_STAGE}/{CONTAMINATED}"
    for path, n in sorted(by_file.items()):
        if path not in report["files"]:
            raise ValueError(f"contaminated documents from a file the ledger never saw: {path}")
        entry = report["files"][path]
        entry["documents"] -= n
        entry["rejected"] += n
        entry["reasons"] = dict(sorted({**entry["reasons"], key: entry["reasons"].get(key, 0) + n}.items()))
    total = sum(by_file.values())
    report["documents"] -= total
    report["rejected"] += total
    if total:
        stage = report["rejected_by_stage"].setdefault(DECONTAM_STAGE, {"total": 0, "reasons": {}})
        stage["total"] += total
        stage["reasons"][CONTAMINATED] = stage["reasons"].get(CONTAMINATED, 0) + total
    balanced = report["input"]["records"] == report["documents"] + report["rejected"] + report.get("duplicates", 0)
    report["balanced"] = balanced
    if not balanced or any(f["documents"] < 0 for f in report["files"].values()):
        raise ValueError(f"ledger does not balance after decontamination ({total} dropped)")
