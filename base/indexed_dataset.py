"""The Megatron-LM indexed dataset (``.bin`` + ``.idx``), written (``IndexedDatasetWriter``, the
corpus build's shard stage) and read (``IndexedDataset``, training's data loading) by this one
module, in the layout of Megatron-core's ``IndexedDatasetBuilder`` / ``_IndexWriter``
(megatron/core/datasets/indexed_dataset.py).

``PREFIX.bin``: the tokens of every sequence back to back, little-endian, in ``dtype``.
``PREFIX.idx``, all little-endian:

======  ==========================  =====================================================
bytes   field                       value
======  ==========================  =====================================================
9       magic                       ``b"MMIDIDX\\x00\\x00"``
8       version, ``<Q``             1
1       dtype code, ``<B``          ``DTYPE_CODES`` (8 = uint16, 4 = int32, ...)
8       sequence count, ``<Q``      S
8       document count, ``<Q``      D + 1: the length of the document-index array below
4·S     sequence lengths, int32     tokens per sequence
8·S     sequence pointers, int64    byte offset of each sequence in ``.bin``
8·(D+1) document indices, int64     ``[0, end_0, end_1, ...]``: document d is sequences
                                    ``[idx[d], idx[d+1])``
======  ==========================  =====================================================

Megatron writes ``len(document_indices)`` (starting with 0, so D + 1) in the document-count
field; so do we. Here one sequence is one document (its tokens plus ``<eod>``, appended by
the caller), so the document indices are ``0, 1, ..., S``. The reader accepts any document
indices (several sequences per document, as Megatron allows) and validates everything on open
(sizes, pointers, indices), so a truncated or foreign file is an error here, not a silent wrong
batch later; its token arrays are read-only views of the memory map.

``PREFIX.src`` (written by ``etl/shards/stage.py``, ignored by Megatron): one ``<u2`` per document,
an index into the manifest's ``sources``; ``IndexedDataset(prefix, source_names)`` maps and checks it.

No Spark, no torch: numpy only.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from base.errors import Refusal

INDEX_HEADER = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
HEADER_BYTES = 9 + 8 + 1 + 8 + 8  # magic, version, dtype code, sequence count, document-index length
# Megatron-core DType enum: name -> code
DTYPE_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float64": 6, "float32": 7, "uint16": 8}
CODE_DTYPES = {code: name for name, code in DTYPE_CODES.items()}
SOURCE_DTYPE = np.dtype("<u2")  # the .src sidecar: index into manifest["sources"], one per document
UINT16_VOCAB_LIMIT = 65500  # DType.optimal_dtype: uint16 below this cardinality, else int32


def dtype_for_vocab(vocab_size: int | None) -> np.dtype:
    """Megatron's ``DType.optimal_dtype``: uint16 when ``vocab_size < 65500``, else int32."""
    return np.dtype(np.uint16 if vocab_size is not None and vocab_size < UINT16_VOCAB_LIMIT else np.int32)


def dtype_code(dtype: Any) -> int:
    name = np.dtype(dtype).name
    if name not in DTYPE_CODES:
        raise ValueError(f"dtype {name} has no Megatron code; valid: {sorted(DTYPE_CODES)}")
    return DTYPE_CODES[name]


class IndexedDatasetWriter:
    """Streams documents to ``prefix.bin``; ``finalize()`` writes ``prefix.idx``.

    Use as a context manager: an exception inside the block removes both files, so a failed
    write never leaves a ``.bin`` without its ``.idx``. Tokens must fit ``dtype`` (checked)."""

    def __init__(self, prefix: str | os.PathLike, dtype: Any):
        self.bin_path = Path(f"{prefix}.bin")
        self.idx_path = Path(f"{prefix}.idx")
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.code = dtype_code(self.dtype)
        self._lengths: list[int] = []
        self._bin = open(self.bin_path, "wb")
        self._finalized = False

    def add_document(self, tokens: Sequence[int] | np.ndarray) -> int:
        """Append one document (one sequence); returns its token count."""
        arr = np.asarray(tokens)
        if arr.ndim != 1:
            raise ValueError(f"a document is a 1-D token sequence, got shape {arr.shape}")
        if arr.size and np.issubdtype(self.dtype, np.integer):
            info = np.iinfo(self.dtype)
            lo, hi = int(arr.min()), int(arr.max())
            if lo < info.min or hi > info.max:
                raise ValueError(f"token ids [{lo}, {hi}] do not fit {self.dtype.name}")
        self._bin.write(arr.astype(self.dtype, copy=False).tobytes(order="C"))
        self._lengths.append(int(arr.size))
        return int(arr.size)

    def add_documents(self, lengths: np.ndarray, tokens: np.ndarray) -> None:
        """Append documents given back to back: ``tokens`` holds them in order, ``lengths`` their
        sizes (one sequence each). The same bytes as ``add_document`` once per document, in one
        write."""
        lengths = np.asarray(lengths)
        if int(lengths.sum()) != len(tokens):
            raise ValueError(f"lengths sum to {int(lengths.sum())}, but {len(tokens)} tokens were given")
        if len(tokens) and np.issubdtype(self.dtype, np.integer):
            info = np.iinfo(self.dtype)
            lo, hi = int(tokens.min()), int(tokens.max())
            if lo < info.min or hi > info.max:
                raise ValueError(f"token ids [{lo}, {hi}] do not fit {self.dtype.name}")
        self._bin.write(np.asarray(tokens).astype(self.dtype, copy=False).tobytes(order="C"))
        self._lengths.extend(lengths.tolist())

    @property
    def documents(self) -> int:
        return len(self._lengths)

    @property
    def tokens(self) -> int:
        return sum(self._lengths)

    def finalize(self) -> None:
        """Close ``.bin`` and write ``.idx``; the pair is complete after this returns."""
        self._bin.close()
        lengths = np.asarray(self._lengths, dtype="<i4")
        pointers = np.zeros(len(lengths), dtype="<i8")
        if len(lengths) > 1:
            np.cumsum(lengths[:-1].astype("<i8") * self.dtype.itemsize, out=pointers[1:])
        doc_indices = np.arange(len(lengths) + 1, dtype="<i8")  # one sequence per document
        with open(self.idx_path, "wb") as f:
            f.write(INDEX_HEADER)
            f.write(struct.pack("<Q", INDEX_VERSION))
            f.write(struct.pack("<B", self.code))
            f.write(struct.pack("<Q", len(lengths)))
            f.write(struct.pack("<Q", len(doc_indices)))
            f.write(lengths.tobytes(order="C"))
            f.write(pointers.tobytes(order="C"))
            f.write(doc_indices.tobytes(order="C"))
        self._finalized = True

    def __enter__(self) -> "IndexedDatasetWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            if not self._finalized:
                self.finalize()
            return
        self.abort()

    def abort(self) -> None:
        """Close and remove both files (a failed write)."""
        self._bin.close()
        for path in (self.bin_path, self.idx_path):
            path.unlink(missing_ok=True)


class IndexedDatasetError(Refusal):
    """A shard pair that is not a valid indexed dataset, or does not match its manifest."""


class IndexedDataset:
    """``ds[i]`` is document i's tokens (its ``<eod>`` included, as written); ``len(ds)`` documents.
    With ``source_names``, ``document_sources[i]`` indexes ``source_names`` (from ``PREFIX.src``)."""

    def __init__(self, prefix: str | os.PathLike, source_names: list[str] | None = None):
        self.prefix = str(prefix)
        idx_path, bin_path = Path(self.prefix + ".idx"), Path(self.prefix + ".bin")
        idx = np.memmap(idx_path, dtype=np.uint8, mode="r")
        if len(idx) < HEADER_BYTES or bytes(idx[:9]) != INDEX_HEADER:
            raise IndexedDatasetError(f"{idx_path}: not a Megatron indexed dataset (bad magic)")
        version, code, n_seq, n_doc_idx = struct.unpack_from("<QBQQ", bytes(idx[9:HEADER_BYTES]))
        if version != INDEX_VERSION:
            raise IndexedDatasetError(f"{idx_path}: version {version}, this reader knows {INDEX_VERSION}")
        if code not in CODE_DTYPES:
            raise IndexedDatasetError(f"{idx_path}: unknown dtype code {code}")
        self.dtype = np.dtype(CODE_DTYPES[code]).newbyteorder("<")
        expected = HEADER_BYTES + 12 * n_seq + 8 * n_doc_idx
        if len(idx) != expected:
            raise IndexedDatasetError(f"{idx_path}: {len(idx)} bytes, header implies {expected}")
        off = HEADER_BYTES
        self.sequence_lengths = np.frombuffer(idx, dtype="<i4", count=n_seq, offset=off)
        self.sequence_pointers = np.frombuffer(idx, dtype="<i8", count=n_seq, offset=off + 4 * n_seq)
        self.document_indices = np.frombuffer(idx, dtype="<i8", count=n_doc_idx, offset=off + 12 * n_seq)
        self._idx = idx
        self._check_index(idx_path)
        self.num_tokens = int(self.sequence_lengths.sum(dtype=np.int64))
        size = bin_path.stat().st_size
        if size != self.num_tokens * self.dtype.itemsize:
            raise IndexedDatasetError(
                f"{bin_path}: {size} bytes, index implies {self.num_tokens} x {self.dtype.itemsize}"
            )
        # np.memmap cannot map an empty file (an empty shard)
        self._bin = np.memmap(bin_path, dtype=self.dtype, mode="r") if size else np.empty(0, self.dtype)
        self.source_names = None if source_names is None else list(source_names)
        self.document_sources = None if source_names is None else self._read_sources(Path(self.prefix + ".src"))

    def _read_sources(self, src_path: Path) -> np.ndarray:
        size = src_path.stat().st_size
        if size != len(self) * SOURCE_DTYPE.itemsize:
            raise IndexedDatasetError(
                f"{src_path}: {size} bytes, expected {SOURCE_DTYPE.itemsize} x {len(self)} documents"
            )
        sources = np.memmap(src_path, dtype=SOURCE_DTYPE, mode="r") if size else np.empty(0, SOURCE_DTYPE)
        if len(sources) and int(sources.max()) >= len(self.source_names):
            raise IndexedDatasetError(
                f"{src_path}: source index {int(sources.max())}, the manifest lists {len(self.source_names)} sources"
            )
        return sources

    def tokens_per_source(self) -> dict[str, int]:
        """Tokens per source name (sources with documents here only), from the ``.src`` sidecar."""
        n = len(self.source_names)
        docs = np.bincount(self.document_sources, minlength=n)
        tokens = np.bincount(self.document_sources, weights=self.document_lengths, minlength=n)
        return {name: int(t) for name, d, t in zip(self.source_names, docs, tokens) if d}

    def _check_index(self, idx_path: Path) -> None:
        lengths, pointers, docs = self.sequence_lengths, self.sequence_pointers, self.document_indices
        if len(docs) == 0 or docs[0] != 0 or docs[-1] != len(lengths) or np.any(np.diff(docs) < 0):
            raise IndexedDatasetError(f"{idx_path}: document indices must run from 0 to the sequence count")
        if np.any(lengths < 0):
            raise IndexedDatasetError(f"{idx_path}: negative sequence length")
        starts = np.concatenate([[0], np.cumsum(lengths[:-1], dtype=np.int64)]) * self.dtype.itemsize
        if len(lengths) and not np.array_equal(pointers, starts):
            raise IndexedDatasetError(f"{idx_path}: sequence pointers are not the cumulative byte offsets")

    def __len__(self) -> int:
        return len(self.document_indices) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.get(i)

    def get(self, i: int, offset: int = 0, length: int | None = None) -> np.ndarray:
        """Tokens ``[offset, offset + length)`` of document ``i`` (a read-only view)."""
        n_docs = len(self)
        if not -n_docs <= i < n_docs:
            raise IndexError(f"document {i} out of range for {n_docs} documents")
        i %= n_docs
        first, last = int(self.document_indices[i]), int(self.document_indices[i + 1])
        doc_len = int(self.sequence_lengths[first:last].sum())
        start = int(self.sequence_pointers[first]) // self.dtype.itemsize if last > first else 0
        length = doc_len - offset if length is None else min(length, doc_len - offset)
        return self._bin[start + offset : start + offset + max(length, 0)]

    @property
    def document_lengths(self) -> np.ndarray:
        """Tokens per document (int64)."""
        ends = np.concatenate([[0], np.cumsum(self.sequence_lengths, dtype=np.int64)])
        return ends[self.document_indices[1:]] - ends[self.document_indices[:-1]]
