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

How: ``write_shards`` is one Spark job after the source names: documents are tokenized where they
are, their ids packed as big-endian binary (``packed_tokens``), shuffled to their shard, sorted,
and each shard writer puts a batch's documents into ``.bin`` in one write; the writers also count
the documents per source and token count, which the report's histogram is binned from.

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
from typing import Any, Callable, Iterable, Iterator, Sequence

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
from filters.text.segment import REFERENCE, audit_failure, audited, get_segmenter
from filters.tokenizer import ZhTokenizer, presegment

log = logging.getLogger("zhcorpus")

UNKNOWN_SOURCE = "unknown"  # tokens_per_source key for a null or missing source
TOKENS_SCHEMA = pa.schema(
    [("doc_id", pa.string()), ("source", pa.string()), ("tokens", pa.list_(pa.int32())), ("n_tokens", pa.int32())]
)
PACKED_SCHEMA = pa.schema([("doc_id", pa.string()), ("source", pa.string()), ("tokens", pa.binary())])
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
        ("doc_tokens", pa.string()),  # JSON {source: {tokens in a document, <eod> not counted: documents}}
    ]
)
SHARD_ROW_DDL = (
    "shard int, documents long, tokens long, bin_sha256 string, idx_sha256 string, "
    "bin_bytes long, idx_bytes long, tokens_per_source string, src_sha256 string, src_bytes long, doc_tokens string"
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
    engine: str | None = None  # segmentation engine (filters.text.segment); None = the default
    # ~1 document in N (by doc_id hash) is also pre-segmented with jieba; any difference stops
    # the job (filters.text.segment.audited). 0 = no audit.
    audit_every: int = 1000


def ship_tokenizer(
    spark: SparkSession, tokenizer_dir: str, engine: str | None = None, audit_every: int = 1000
) -> ShippedTokenizer:
    """Verify on the driver (``filters.classifiers.classify.ModelError`` if wrong, or if ``engine`` is not
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

    def columns(offsets: np.ndarray, ids: np.ndarray) -> list[pa.Array]:
        return [pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids)), pa.array(np.diff(offsets))]

    return _tokenized(docs, shipped, columns, TOKENS_SCHEMA)


def packed_tokens(docs: DataFrame, shipped: ShippedTokenizer) -> DataFrame:
    """``docs`` (doc_id, text, [source]) -> (doc_id, source, tokens binary): ``tokenize_stage``'s ids,
    each a big-endian unsigned integer as wide as the shards' dtype (2 bytes below 65,500 ids).
    What the shard writers read: half the bytes of array<int> through the shuffle, one buffer copy
    instead of a loop over the ids each time a batch crosses between Python and the JVM. Spark
    orders binary by unsigned bytes, then length: for non-negative ids of one width that is the
    order of the id arrays, so the shards' tie-break on equal doc_ids is unchanged."""
    width = dtype_for_vocab(shipped.vocab_size).itemsize

    def columns(offsets: np.ndarray, ids: np.ndarray) -> list[pa.Array]:
        return [pack_ids(offsets, ids, width)]

    return _tokenized(docs, shipped, columns, PACKED_SCHEMA)


def pack_ids(offsets: np.ndarray, ids: np.ndarray, width: int) -> pa.Array:
    """Arrow's list layout (``offsets`` into ``ids``) as a binary array of big-endian ``width``-byte ids."""
    if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= 1 << (8 * width)):
        raise ValueError(f"token ids [{int(ids.min())}, {int(ids.max())}] do not fit {width} bytes")
    ends = offsets.astype(np.int64) * width
    if len(ends) and ends[-1] > np.iinfo(np.int32).max:
        raise ValueError(f"a batch of {int(ends[-1])} bytes of token ids: more than one Arrow binary array holds")
    data = ids.astype(f">u{width}")
    return pa.Array.from_buffers(
        pa.binary(), len(offsets) - 1, [None, pa.py_buffer(ends.astype(np.int32)), pa.py_buffer(data)]
    )


def unpack_ids(col: pa.Array, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``pack_ids``'s inverse, read in place: (offsets into the ids, the ids as big-endian integers)."""
    _, offsets, data = col.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int32)[col.offset : col.offset + len(col) + 1] // width
    values = np.frombuffer(data, dtype=f">u{width}", count=data.size // width) if data is not None else np.zeros(0)
    return offsets, values


_DDL = {pa.string(): "string", pa.int32(): "int", pa.binary(): "binary", pa.list_(pa.int32()): "array<int>"}


def _tokenized(
    docs: DataFrame,
    shipped: ShippedTokenizer,
    columns: Callable[[np.ndarray, np.ndarray], list[pa.Array]],
    schema: pa.Schema,
) -> DataFrame:
    """(doc_id, source, then ``columns(offsets, ids)`` of each batch's token ids), as ``schema`` says."""
    ddl = ", ".join(f"{f.name} {_DDL[f.type]}" for f in schema)
    source = F.col("source") if "source" in docs.columns else F.lit(None).cast("string")
    docs = docs.select("doc_id", F.coalesce(source, F.lit(UNKNOWN_SOURCE)).alias("source"), "text")

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tok = _tokenizer(shipped)
        for b in batches:
            texts = b.column("text")  # read in place by the compiled pass
            offsets, ids = tok.encode_arrays(texts)
            audit_tokens(tok, b.column("doc_id").to_pylist(), texts, offsets, ids, shipped.audit_every)
            yield pa.RecordBatch.from_arrays(
                [b.column("doc_id"), b.column("source"), *columns(offsets, ids)], schema=schema
            )

    return docs.mapInArrow(apply, ddl)


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
    return write_token_shards(packed_tokens(docs, shipped), shipped, out_dir, num_shards, distinct_sources(docs))[0]


def distinct_sources(df: DataFrame) -> list[str]:
    """Sorted distinct ``source`` values (null and a missing column count as ``unknown``): a
    handful of rows collected to the driver."""
    source = F.col("source") if "source" in df.columns else F.lit(None).cast("string")
    rows = df.select(F.coalesce(source, F.lit(UNKNOWN_SOURCE)).alias("source")).distinct().collect()
    return source_names(r["source"] for r in rows)


def source_names(names: Iterable[str]) -> list[str]:
    """Distinct source names, sorted: the manifest's ``sources``, which the ``.src`` sidecar indexes."""
    sources = sorted(set(names))
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
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``tokens`` from ``packed_tokens(docs, shipped)`` -> shard pairs, ``.src`` sidecars and
    ``manifest.json``, in one Spark job when ``sources`` is given (``tokens`` is computed once, as
    the shards are written: nothing to persist). ``sources``: every source name in ``tokens``,
    sorted (computed from ``tokens`` when None: a job of its own, which tokenizes too; take them
    from the documents instead, ``distinct_sources``). ``access``: ``out_dir`` is an ``s3://``
    prefix written through pyarrow's S3 file system with these settings. Returns the manifest and
    the documents per source and token count, ``<eod>`` not counted ({source: {tokens: documents}},
    counted by the writers: what the report's histogram of tokens per document is binned from)."""
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

    rows = {r["shard"]: r.asDict() for r in ordered.mapInArrow(apply, SHARD_ROW_DDL).collect()}
    for i in range(num_shards):
        if i not in rows:  # no document hashed here: an empty pair, written by the driver
            rows[i] = _write_shard_files(i, out_dir, dtype.name, shipped.eod_id, source_index, access)
    doc_tokens: dict[str, dict[int, int]] = {}
    for r in rows.values():
        for source, counts in json.loads(r["doc_tokens"]).items():
            mine = doc_tokens.setdefault(source, {})
            for n_tokens, n in counts.items():
                mine[int(n_tokens)] = mine.get(int(n_tokens), 0) + n
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
    return manifest, doc_tokens


def _write_partition(
    batches: Iterator[pa.RecordBatch],
    out_dir: str,
    dtype: str,
    eod_id: int,
    source_index: dict[str, int],
    access: S3Access | None = None,
) -> Iterator[pa.RecordBatch]:
    """Rows arrive sorted by (shard, doc_id, tokens); one output row per shard seen. Each batch's
    run of a shard is written as a whole (its ids straight from the Arrow buffers, ``<eod>``
    put in by numpy), no Python object per document but its source name."""
    shard: _ShardFiles | None = None
    width = np.dtype(dtype).itemsize
    try:
        for b in batches:
            if not b.num_rows:
                continue
            shards = b.column("shard").to_numpy()
            sources = b.column("source").to_pylist()
            offsets, values = unpack_ids(b.column("tokens"), width)
            cuts = [0, *(np.flatnonzero(np.diff(shards)) + 1).tolist(), b.num_rows]
            for a, z in zip(cuts, cuts[1:]):
                if shard is not None and shard.shard != int(shards[a]):
                    yield shard.publish(out_dir, access)
                    shard = None
                if shard is None:
                    shard = _ShardFiles(int(shards[a]), dtype, eod_id, source_index)
                shard.add(sources[a:z], offsets[a : z + 1], values)
        if shard is not None:
            yield shard.publish(out_dir, access)
            shard = None
    finally:
        if shard is not None:
            shard.discard()


def _write_shard_files(
    shard: int,
    out_dir: str,
    dtype: str,
    eod_id: int,
    source_index: dict[str, int],
    access: S3Access | None = None,
) -> dict[str, Any]:
    """An empty shard (no document hashed to it), written by the driver; returns its manifest row."""
    return _ShardFiles(shard, dtype, eod_id, source_index).publish(out_dir, access).to_pylist()[0]


class _ShardFiles:
    """One shard's ``.bin``, ``.idx`` and ``.src`` being written in a local temporary directory;
    ``publish`` hashes them, copies them to ``out_dir`` and returns the shard's manifest row."""

    def __init__(self, shard: int, dtype: str, eod_id: int, source_index: dict[str, int]):
        self.shard, self.eod_id, self.source_index = shard, eod_id, source_index
        self.name = SHARD_NAME.format(shard)
        self.tmp = Path(tempfile.mkdtemp(prefix="zhcorpus-shard-"))
        self.writer = IndexedDatasetWriter(self.tmp / self.name, dtype)
        self.doc_sources: list[np.ndarray] = []  # per run: each document's index in source_index
        self.doc_tokens: list[np.ndarray] = []  # per run: each document's tokens, <eod> not counted

    def add(self, sources: list[str], offsets: np.ndarray, values: np.ndarray) -> None:
        """Documents given as Arrow's list layout: ``offsets`` (n + 1) into ``values``."""
        try:
            index = np.fromiter((self.source_index[s] for s in sources), dtype=np.int64, count=len(sources))
        except KeyError as e:
            raise ValueError(
                f"source {e.args[0]!r} is not among the sources given: {sorted(self.source_index)}"
            ) from None
        lengths = np.diff(offsets).astype(np.int64)
        ends = np.cumsum(lengths + 1)  # each document is followed by <eod>
        tokens = np.empty(int(ends[-1]) if len(ends) else 0, dtype=np.int64)
        is_eod = np.zeros(len(tokens), dtype=bool)
        is_eod[ends - 1] = True
        tokens[is_eod] = self.eod_id
        tokens[~is_eod] = values[offsets[0] : offsets[-1]]
        self.writer.add_documents(lengths + 1, tokens)
        self.doc_sources.append(index)
        self.doc_tokens.append(lengths)

    def publish(self, out_dir: str, access: S3Access | None) -> pa.RecordBatch:
        try:
            self.writer.finalize()
            names = sorted(self.source_index, key=self.source_index.get)
            sources = np.concatenate(self.doc_sources) if self.doc_sources else np.zeros(0, dtype=np.int64)
            lengths = np.concatenate(self.doc_tokens) if self.doc_tokens else np.zeros(0, dtype=np.int64)
            per_source = np.bincount(sources, minlength=len(names))  # documents
            tokens = np.zeros(len(names), dtype=np.int64)
            np.add.at(tokens, sources, lengths + 1)
            sources.astype(SOURCE_DTYPE).tofile(self.tmp / f"{self.name}.src")
            row = {
                "shard": self.shard,
                "documents": self.writer.documents,
                "tokens": self.writer.tokens,
                "tokens_per_source": json.dumps(
                    {names[i]: int(tokens[i]) for i in sorted(np.flatnonzero(per_source), key=names.__getitem__)}
                ),
                "doc_tokens": json.dumps(_doc_tokens(names, sources, lengths)),
            }
            for kind in ("bin", "idx", "src"):
                local = self.tmp / f"{self.name}.{kind}"
                row[f"{kind}_sha256"], row[f"{kind}_bytes"] = sha256_file(local), local.stat().st_size
                put_file(local, f"{out_dir}/{self.name}.{kind}", access)
            return pa.RecordBatch.from_pylist([row], schema=SHARD_ROW_SCHEMA)
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the local files (published, or abandoned after an error)."""
        self.writer.abort()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _doc_tokens(names: list[str], sources: np.ndarray, lengths: np.ndarray) -> dict[str, dict[int, int]]:
    """{source: {tokens in a document: documents}}."""
    out: dict[str, dict[int, int]] = {}
    if len(lengths):
        keys, counts = np.unique(np.stack([sources, lengths]), axis=1, return_counts=True)
        for (source, n_tokens), n in zip(keys.T.tolist(), counts.tolist()):
            out.setdefault(names[source], {})[n_tokens] = n
    return out


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
