"""Writer of the Megatron-LM indexed dataset (``.bin`` + ``.idx``), the layout of Megatron-core's
``IndexedDatasetBuilder`` / ``_IndexWriter`` (megatron/core/datasets/indexed_dataset.py).

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
the caller), so the document indices are ``0, 1, ..., S``. No Spark, no torch: numpy only.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any, Sequence

import numpy as np

INDEX_HEADER = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
# Megatron-core DType enum: name -> code
DTYPE_CODES = {"uint8": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "float64": 6, "float32": 7, "uint16": 8}
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
        self._bin.close()
        for path in (self.bin_path, self.idx_path):
            path.unlink(missing_ok=True)
