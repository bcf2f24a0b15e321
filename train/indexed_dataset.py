"""Memory-mapped reader of Megatron-LM indexed datasets (``PREFIX.bin`` + ``PREFIX.idx``) and of
the ``shards/manifest.json`` the corpus build writes next to them.

The ``.idx`` layout (Megatron-core ``_IndexWriter``): magic ``MMIDIDX\\x00\\x00``, ``<Q`` version 1,
``<B`` dtype code, ``<Q`` sequence count S, ``<Q`` length of the document-index array (documents
+ 1), then int32 sequence lengths [S], int64 byte pointers into ``.bin`` [S], int64 document
indices [documents + 1] starting at 0. Everything is validated on open (sizes, pointers,
indices), so a truncated or foreign file is an error here, not a silent wrong batch later.
Token arrays are read-only views of the memory map: no copy until the caller makes one.

``PREFIX.src`` (written by ``etl/shards/stage.py``, ignored by Megatron): one ``<u2`` per document, an
index into the manifest's ``sources``; ``IndexedDataset(prefix, source_names)`` maps and checks it.

Independent of ``etl/`` (no Spark on training workers): the format constants are restated here.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

INDEX_HEADER = b"MMIDIDX\x00\x00"
HEADER_BYTES = 9 + 8 + 1 + 8 + 8
CODE_DTYPES = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 6: "float64", 7: "float32", 8: "uint16"}
MANIFEST_FORMAT = "megatron-mmidxidx-v1"
SOURCE_DTYPE = np.dtype("<u2")


class IndexedDatasetError(ValueError):
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
        if version != 1:
            raise IndexedDatasetError(f"{idx_path}: version {version}, this reader knows 1")
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
            raise IndexedDatasetError(f"{bin_path}: {size} bytes, index implies "
                                      f"{self.num_tokens} x {self.dtype.itemsize}")
        # np.memmap cannot map an empty file (an empty shard)
        self._bin = np.memmap(bin_path, dtype=self.dtype, mode="r") if size else np.empty(0, self.dtype)
        self.source_names = None if source_names is None else list(source_names)
        self.document_sources = None if source_names is None else self._read_sources(Path(self.prefix + ".src"))

    def _read_sources(self, src_path: Path) -> np.ndarray:
        size = src_path.stat().st_size
        if size != len(self) * SOURCE_DTYPE.itemsize:
            raise IndexedDatasetError(f"{src_path}: {size} bytes, expected {SOURCE_DTYPE.itemsize} x {len(self)} documents")
        sources = np.memmap(src_path, dtype=SOURCE_DTYPE, mode="r") if size else np.empty(0, SOURCE_DTYPE)
        if len(sources) and int(sources.max()) >= len(self.source_names):
            raise IndexedDatasetError(f"{src_path}: source index {int(sources.max())}, the manifest lists "
                                      f"{len(self.source_names)} sources")
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
        return self._bin[start + offset:start + offset + max(length, 0)]

    @property
    def document_lengths(self) -> np.ndarray:
        """Tokens per document (int64)."""
        ends = np.concatenate([[0], np.cumsum(self.sequence_lengths, dtype=np.int64)])
        return ends[self.document_indices[1:]] - ends[self.document_indices[:-1]]


def read_manifest(path: str | os.PathLike, verify: bool = True) -> dict[str, Any]:
    """``shards/manifest.json`` (or its directory). Every listed file must exist (always checked).
    ``verify``: every file's sha256 (``.src`` sidecars included, when the manifest lists them),
    each shard's document and token counts, and its tokens per source are checked against the
    files; a mismatch raises ``IndexedDatasetError`` naming the file."""
    path = Path(path)
    path = path / "manifest.json" if path.is_dir() else path
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("format") != MANIFEST_FORMAT:
        raise IndexedDatasetError(f"{path}: format {manifest.get('format')!r}, expected {MANIFEST_FORMAT!r}")
    for shard in manifest["shards"]:
        for kind in _kinds(shard):
            if not (path.parent / shard[kind]).is_file():
                raise IndexedDatasetError(f"{path.parent / shard[kind]}: missing (listed in {path.name})")
    if verify:
        for shard in manifest["shards"]:
            for kind in _kinds(shard):
                actual = sha256_file(path.parent / shard[kind])
                if actual != shard[f"{kind}_sha256"]:
                    raise IndexedDatasetError(f"{shard[kind]}: sha256 {actual[:16]}... but the manifest says "
                                              f"{shard[f'{kind}_sha256'][:16]}...")
            ds = _open(path.parent, shard, manifest)
            if (len(ds), ds.num_tokens) != (shard["documents"], shard["tokens"]):
                raise IndexedDatasetError(f"{shard['name']}: {len(ds)} documents / {ds.num_tokens} tokens, manifest "
                                          f"says {shard['documents']} / {shard['tokens']}")
            if ds.source_names is not None and ds.tokens_per_source() != shard["tokens_per_source"]:
                raise IndexedDatasetError(f"{shard['src']}: tokens per source {ds.tokens_per_source()}, manifest "
                                          f"says {shard['tokens_per_source']}")
    return manifest


def open_shards(path: str | os.PathLike, verify: bool = True) -> list[IndexedDataset]:
    """Every shard of a manifest, in manifest order; with their ``document_sources`` when the
    manifest lists ``.src`` sidecars."""
    path = Path(path)
    manifest = read_manifest(path, verify)
    root = path if path.is_dir() else path.parent
    return [_open(root, s, manifest) for s in manifest["shards"]]


def _kinds(shard: dict[str, Any]) -> tuple[str, ...]:
    return ("bin", "idx", "src") if "src" in shard else ("bin", "idx")


def _open(root: Path, shard: dict[str, Any], manifest: dict[str, Any]) -> IndexedDataset:
    # A merged manifest (the nightly refresh's corpus.json) carries each shard's own source list.
    names = shard.get("sources", manifest.get("sources"))
    return IndexedDataset(root / shard["name"], names if "src" in shard else None)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
