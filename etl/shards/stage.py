"""The tokenize and shard stages: documents -> token ids -> Megatron-LM ``.bin``/``.idx`` shards
plus ``manifest.json``.

Tokenizer shipping: the tokenizer directory is verified (sha256) on the driver, copied to a
directory named after its sha256 and distributed with ``SparkContext.addFile``; each Python
worker loads it once (verifying the sha256 again) inside an Arrow-batched ``mapInArrow``.

Sharding contract (``write_shards``):

* a document goes to shard ``pmod(xxhash64(doc_id), num_shards)`` (Spark's xxhash64, seed 42),
  and inside a shard documents are in ``doc_id`` order, each followed by ``<eod>``. ``doc_id``
  is unique (the corpus contract); equal ids are ordered by their tokens.
* files are ``shard-{i:05d}.bin`` / ``.idx`` for every ``i < num_shards``; a shard no document
  hashes to is written empty (0 sequences, document indices ``[0]``), so the file set depends
  only on ``num_shards``. The same documents and tokenizer give byte-identical files.
* token counts in the manifest are tokens in the ``.bin`` files, ``<eod>`` included.
* next to each pair, ``shard-{i:05d}.src``: one little-endian uint16 per document, in shard
  order, indexing the manifest's ``sources`` (sorted distinct source names, known on the driver
  before any shard is written). Megatron ignores it; ``train/data.py`` blends sources with it.

Where the files go: each task writes its shard to a local temporary directory, hashes it, then
copies it into ``out_dir`` with ``pyarrow.fs`` under a temporary name and renames it. Locally
``out_dir`` is a path on the shared disk; on a cluster it must be a filesystem every executor
reaches (``hdfs://...``, with libhdfs and the Hadoop CLASSPATH on the executors, or a shared
mount). ``out_dir`` should be a fresh (staging) directory: publish it atomically with
``etl.runtime.publish.publish_dir``.
"""

from __future__ import annotations

import itertools
import json
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
from pyspark import SparkFiles
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from base.artifact import sha256_file
from base.indexed_dataset import SOURCE_DTYPE, IndexedDatasetWriter, dtype_for_vocab
from base.manifest import MANIFEST_FILE, SHARD_NAME, build_manifest
from base.s3 import S3Access
from etl.runtime.publish import put_file
from etl.runtime.ship import ship_directory
from filters.segment import REFERENCE, audit_failure, audited, get_segmenter
from filters.tokenizer import ZhTokenizer, presegment

log = logging.getLogger("zhcorpus")

UNKNOWN_SOURCE = "unknown"  # tokens_per_source key for a null or missing source
TOKENS_SCHEMA = pa.schema(
    [("doc_id", pa.string()), ("source", pa.string()), ("tokens", pa.list_(pa.int32())), ("n_tokens", pa.int32())]
)
SHARD_ROW_SCHEMA = pa.schema(
    [
        ("shard", pa.int32()),
        ("documents", pa.int64()),
        ("tokens", pa.int64()),
        ("bin_sha256", pa.string()),
        ("idx_sha256", pa.string()),
        ("bin_bytes", pa.int64()),
        ("idx_bytes", pa.int64()),
        ("tokens_per_source", pa.string()),
        ("src_sha256", pa.string()),
        ("src_bytes", pa.int64()),
    ]
)
SHARD_ROW_DDL = (
    "shard int, documents long, tokens long, bin_sha256 string, idx_sha256 string, "
    "bin_bytes long, idx_bytes long, tokens_per_source string, src_sha256 string, src_bytes long"
)


@dataclass(frozen=True)
class ShardsConfig:
    """The ``shards`` section of a corpus build."""

    num_shards: int = 0  # 0 = about one shard per target_mb of token data
    # ~1.3 characters per token and 2 bytes per token (uint16) -> ~1.5 bytes of .bin per character
    target_mb: int = 256


@dataclass(frozen=True)
class ShippedTokenizer:
    """What executors need to load the tokenizer: the addFile name and the verified sha256."""

    name: str
    sha256: str
    vocab_size: int
    eod_id: int
    engine: str | None = None  # segmentation engine (filters.segment); None = the default
    # ~1 document in N (by doc_id hash) is also pre-segmented with jieba; any difference stops
    # the job (filters.segment.audited). 0 = no audit.
    audit_every: int = 1000


def ship_tokenizer(
    spark: SparkSession, tokenizer_dir: str, engine: str | None = None, audit_every: int = 1000
) -> ShippedTokenizer:
    """Verify on the driver (``filters.classify.ModelError`` if wrong, or if ``engine`` is not
    the one the tokenizer records and fails the parity check), then distribute under a name that
    carries the sha256 (``etl.runtime.ship``)."""
    tok = ZhTokenizer.load(tokenizer_dir, engine=engine)
    name = ship_directory(spark, tokenizer_dir, f"zhcorpus-tokenizer-{tok.sha256[:16]}")
    return ShippedTokenizer(name, tok.sha256, tok.vocab_size, tok.eod_id, engine, audit_every)


_loaded: dict[tuple[str, str | None], ZhTokenizer] = {}


def _tokenizer(shipped: ShippedTokenizer) -> ZhTokenizer:
    """Once per Python worker."""
    key = (shipped.sha256, shipped.engine)
    if key not in _loaded:
        _loaded[key] = ZhTokenizer.load(SparkFiles.get(shipped.name), shipped.sha256, shipped.engine)
    return _loaded[key]


def tokenize_stage(docs: DataFrame, tokenizer_dir: str | ShippedTokenizer) -> DataFrame:
    """``docs`` (doc_id, text, [source]) -> (doc_id, source, tokens array<int>, n_tokens int).
    ``tokens`` is ``encode(text)``, without ``<eod>``; a null text gives no tokens."""
    shipped = (
        tokenizer_dir
        if isinstance(tokenizer_dir, ShippedTokenizer)
        else ship_tokenizer(docs.sparkSession, tokenizer_dir)
    )
    source = F.col("source") if "source" in docs.columns else F.lit(None).cast("string")
    docs = docs.select("doc_id", F.coalesce(source, F.lit(UNKNOWN_SOURCE)).alias("source"), "text")

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tok = _tokenizer(shipped)
        for b in batches:
            texts = b.column("text")  # read in place by the compiled pass
            offsets, ids = tok.encode_arrays(texts)
            audit_tokens(tok, b.column("doc_id").to_pylist(), texts, offsets, ids, shipped.audit_every)
            tokens = pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids))
            yield pa.RecordBatch.from_arrays(
                [b.column("doc_id"), b.column("source"), tokens, pa.array(np.diff(offsets))], schema=TOKENS_SCHEMA
            )

    return docs.mapInArrow(apply, "doc_id string, source string, tokens array<int>, n_tokens int")


def audit_presegmentation(
    tok: ZhTokenizer,
    doc_ids: list[str | None],
    texts: Sequence[str] | pa.Array,
    every: int,
    pieces: list[str] | None = None,
) -> None:
    """The audited documents' pre-segmentation (``pieces``, what was encoded; default: the
    tokenizer's segmenter's) again with the jieba engine: equal, or the job stops."""
    if not every or (tok.segmenter.engine == REFERENCE and pieces is None):
        return
    reference = get_segmenter(REFERENCE, tok.hmm)
    for j, key in enumerate(doc_ids):
        if key is not None and audited(key, every):
            text = (texts[j].as_py() if isinstance(texts, pa.Array) else texts[j]) or ""
            got = pieces[j] if pieces is not None else tok.presegment(text)
            expected = presegment(text, tok.hmm, reference)
            if expected != got:
                raise audit_failure("tokenization", key, expected, got, tok.segmenter)


def audit_tokens(
    tok: ZhTokenizer, doc_ids: list[str | None], texts: pa.Array, offsets: np.ndarray, ids: np.ndarray, every: int
) -> None:
    """The audited documents (~1/``every``): their pre-segmentation against the jieba engine's
    (``audit_presegmentation``), and their ids against SentencePiece's on the whole pre-segmented
    text; a difference stops the job."""
    picked = [j for j, key in enumerate(doc_ids) if key is not None and audited(key, every)]
    if not picked:
        return
    sample = texts.take(pa.array(picked))
    pieces = tok.presegment_batch(sample)
    audit_presegmentation(tok, [doc_ids[j] for j in picked], sample, 1, pieces)
    for j, piece in zip(picked, pieces):
        if tok.sp.encode(piece) != ids[offsets[j] : offsets[j + 1]].tolist():
            raise RuntimeError(f"tokenization: the ids of document {doc_ids[j]!r} are not SentencePiece's")


def token_arrays(ids: list[list[int]]) -> tuple[pa.ListArray, pa.Int32Array]:
    """``tokens`` (list<int32>) and ``n_tokens`` columns from SentencePiece's lists: offsets and
    values built in numpy (~4x faster than ``pa.array`` on nested lists)."""
    lengths = np.fromiter(map(len, ids), dtype=np.int32, count=len(ids))
    offsets = np.zeros(len(ids) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    values = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int32, count=int(offsets[-1]))
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values)), pa.array(lengths)


def write_shards(docs: DataFrame, tokenizer_dir: str, out_dir: str, num_shards: int) -> dict[str, Any]:
    """Tokenize ``docs`` (doc_id, text, source) and write ``num_shards`` shard pairs plus
    ``manifest.json`` into ``out_dir``; returns the manifest. See the module docstring."""
    shipped = ship_tokenizer(docs.sparkSession, tokenizer_dir)
    # the source names from ``docs``, not from the token frame: that would tokenize twice
    return write_token_shards(tokenize_stage(docs, shipped), shipped, out_dir, num_shards, distinct_sources(docs))


def distinct_sources(df: DataFrame) -> list[str]:
    """Sorted distinct ``source`` values (null and a missing column count as ``unknown``): a
    handful of rows collected to the driver."""
    source = F.col("source") if "source" in df.columns else F.lit(None).cast("string")
    rows = df.select(F.coalesce(source, F.lit(UNKNOWN_SOURCE)).alias("source")).distinct().collect()
    sources = sorted(r["source"] for r in rows)
    if len(sources) > np.iinfo(SOURCE_DTYPE).max + 1:
        raise ValueError(f"{len(sources)} distinct sources; the .src sidecar (uint16) holds at most 65536")
    return sources


def write_token_shards(
    tokens: DataFrame,
    shipped: ShippedTokenizer,
    out_dir: str,
    num_shards: int,
    sources: list[str] | None = None,
    access: S3Access | None = None,
) -> dict[str, Any]:
    """``tokens`` from ``tokenize_stage(docs, shipped)`` -> shard pairs, ``.src`` sidecars and
    ``manifest.json``. ``sources``: every source name in ``tokens``, sorted (computed from
    ``tokens`` when None; cheap when ``tokens`` is persisted). ``access``: ``out_dir`` is an
    ``s3://`` prefix written through pyarrow's S3 file system with these settings."""
    if num_shards < 1:
        raise ValueError(f"num_shards must be >= 1, got {num_shards}")
    if access is not None:
        fs, root = access.filesystem(), out_dir.split("://", 1)[1]
    else:
        out_dir = _absolute(out_dir)
        fs, root = pafs.FileSystem.from_uri(out_dir)
    if fs.get_file_info(f"{root}/{MANIFEST_FILE}").type != pafs.FileType.NotFound:
        raise FileExistsError(f"{out_dir} already holds a {MANIFEST_FILE}; write shards to a fresh directory")
    if access is None:
        fs.create_dir(root, recursive=True)
    dtype = dtype_for_vocab(shipped.vocab_size)
    shard = F.pmod(F.xxhash64("doc_id"), F.lit(num_shards)).cast("int").alias("shard")
    sources = distinct_sources(tokens) if sources is None else sorted(sources)
    source_index = {name: i for i, name in enumerate(sources)}  # small: shipped in the closure
    ordered = (
        tokens.select(shard, "doc_id", F.coalesce("source", F.lit(UNKNOWN_SOURCE)).alias("source"), "tokens")
        .repartition(num_shards, "shard")
        .sortWithinPartitions("shard", "doc_id", "tokens")
    )

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from _write_partition(batches, out_dir, dtype.name, shipped.eod_id, source_index, access)

    rows = {r["shard"]: r for r in ordered.mapInArrow(apply, SHARD_ROW_DDL).collect()}
    for i in range(num_shards):
        if i not in rows:  # no document hashed here: an empty pair, written by the driver
            rows[i] = _write_shard_files(i, iter(()), out_dir, dtype.name, shipped.eod_id, source_index, access)
    manifest = build_manifest([rows[i] for i in range(num_shards)], shipped, dtype, sources)
    with fs.open_output_stream(f"{root}/{MANIFEST_FILE}", compression=None) as f:
        f.write(json.dumps(manifest, indent=2, ensure_ascii=False).encode("utf-8"))
    log.info(
        "shards: %d pairs, %d documents, %d tokens (%s) -> %s",
        num_shards,
        manifest["totals"]["documents"],
        manifest["totals"]["tokens"],
        dtype.name,
        out_dir,
    )
    return manifest


def _write_partition(
    batches: Iterator[pa.RecordBatch],
    out_dir: str,
    dtype: str,
    eod_id: int,
    source_index: dict[str, int],
    access: S3Access | None = None,
) -> Iterator[pa.RecordBatch]:
    """Rows arrive sorted by (shard, doc_id); one output row per shard seen."""

    def docs() -> Iterator[tuple[int, str, np.ndarray]]:
        for b in batches:
            shards = b.column("shard").to_numpy()
            sources = b.column("source").to_pylist()
            col = b.column("tokens")
            offsets, values = col.offsets.to_numpy(), col.values.to_numpy()
            for j in range(b.num_rows):
                yield int(shards[j]), sources[j], values[offsets[j] : offsets[j + 1]]

    stream = _Peekable(docs())
    while stream.peek() is not None:
        shard = stream.peek()[0]
        row = _write_shard_files(shard, stream.take_while(shard), out_dir, dtype, eod_id, source_index, access)
        yield pa.RecordBatch.from_pylist([row], schema=SHARD_ROW_SCHEMA)


def _write_shard_files(
    shard: int,
    docs: Iterator[tuple[int, str, np.ndarray]],
    out_dir: str,
    dtype: str,
    eod_id: int,
    source_index: dict[str, int],
    access: S3Access | None = None,
) -> dict[str, Any]:
    """Write one shard (``.bin``, ``.idx``, ``.src``) locally, hash it, publish it to ``out_dir``;
    returns its manifest row."""
    name = SHARD_NAME.format(shard)
    per_source: dict[str, int] = {}
    doc_sources: list[int] = []
    tmp = Path(tempfile.mkdtemp(prefix="zhcorpus-shard-"))
    try:
        with IndexedDatasetWriter(tmp / name, dtype) as writer:
            eod = np.array([eod_id], dtype=np.int64)
            for _, source, tokens in docs:
                if source not in source_index:
                    raise ValueError(f"source {source!r} is not among the sources given: {sorted(source_index)}")
                doc_sources.append(source_index[source])
                n = writer.add_document(np.concatenate([tokens, eod]))
                per_source[source] = per_source.get(source, 0) + n
        np.asarray(doc_sources, dtype=SOURCE_DTYPE).tofile(tmp / f"{name}.src")
        row = {
            "shard": shard,
            "documents": writer.documents,
            "tokens": writer.tokens,
            "tokens_per_source": json.dumps(dict(sorted(per_source.items()))),
        }
        for kind in ("bin", "idx", "src"):
            local = tmp / f"{name}.{kind}"
            row[f"{kind}_sha256"], row[f"{kind}_bytes"] = sha256_file(local), local.stat().st_size
            put_file(local, f"{out_dir}/{name}.{kind}", access)
        return row
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _absolute(uri: str) -> str:
    """A plain path becomes absolute (executors may run elsewhere); Hadoop's ``file:/x`` becomes
    ``file:///x`` (pyarrow reads the former as a relative path); any other URI stays as it is."""
    if uri.startswith("file:") and not uri.startswith("file://"):
        return "file://" + uri[len("file:") :]
    return uri if "://" in uri else str(Path(uri).resolve())


class _Peekable:
    def __init__(self, it: Iterator[tuple[int, str, np.ndarray]]):
        self.it, self.head = it, next(it, None)

    def peek(self) -> tuple[int, str, np.ndarray] | None:
        return self.head

    def take_while(self, shard: int) -> Iterator[tuple[int, str, np.ndarray]]:
        while self.head is not None and self.head[0] == shard:
            item, self.head = self.head, next(self.it, None)
            yield item
