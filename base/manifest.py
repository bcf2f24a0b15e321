"""The shard manifest: what a build's ``shards/manifest.json`` holds (``build_manifest``), the
manifests of several builds merged into one that trainers read (``merge_manifests``: the nightly
refresh's ``corpus.json``, every shard of every version so far, paths relative to it), and the
manifest read back and verified against its files (``read_manifest``, ``open_shards``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from base.artifact import sha256_file
from base.indexed_dataset import IndexedDataset, IndexedDatasetError, dtype_code

MANIFEST_FORMAT = "megatron-mmidxidx-v1"
MANIFEST_FILE = "manifest.json"
SHARD_NAME = "shard-{:05d}"


def build_manifest(rows: list[dict[str, Any]], shipped, dtype: np.dtype, sources: list[str]) -> dict[str, Any]:
    shards, per_source = [], {}
    for r in rows:
        name = SHARD_NAME.format(r["shard"])
        shard_tokens = json.loads(r["tokens_per_source"])
        for src, n in shard_tokens.items():
            per_source[src] = per_source.get(src, 0) + n
        shards.append(
            {
                "name": name,
                "bin": f"{name}.bin",
                "idx": f"{name}.idx",
                "src": f"{name}.src",
                "bin_sha256": r["bin_sha256"],
                "idx_sha256": r["idx_sha256"],
                "src_sha256": r["src_sha256"],
                "bin_bytes": r["bin_bytes"],
                "idx_bytes": r["idx_bytes"],
                "src_bytes": r["src_bytes"],
                "documents": r["documents"],
                "tokens": r["tokens"],
                "tokens_per_source": shard_tokens,
            }
        )
    return {
        "format": MANIFEST_FORMAT,
        "dtype": np.dtype(dtype).name,
        "dtype_code": dtype_code(dtype),
        "vocab_size": shipped.vocab_size,
        "tokenizer_sha256": shipped.sha256,
        "eod_id": shipped.eod_id,
        "tokens_include_eod": True,
        "sharding": "pmod(xxhash64(doc_id), num_shards); doc_id order within a shard",
        "sources": list(sources),
        "document_sources": "shard-NNNNN.src: <u2 per document, index into sources",
        "shards": shards,
        "totals": {
            "shards": len(shards),
            "documents": sum(s["documents"] for s in shards),
            "tokens": sum(s["tokens"] for s in shards),
        },
        "tokens_per_source": dict(sorted(per_source.items())),
    }


def merge_manifests(shard_dirs: dict[str, Path], relative_to: Path) -> dict[str, Any]:
    """The shard manifests of ``shard_dirs`` (version -> its ``shards/`` directory, in order)
    merged into one, paths relative to ``relative_to``. Every version must share one tokenizer."""
    return merge_loaded(
        {
            v: (json.loads((d / MANIFEST_FILE).read_text(encoding="utf-8")), os.path.relpath(d, relative_to))
            for v, d in shard_dirs.items()
        }
    )


def merge_loaded(manifests: dict[str, tuple[dict[str, Any], str]]) -> dict[str, Any]:
    """``merge_manifests`` of manifests already read: version -> (its manifest, the relative path
    from the merged manifest to its ``shards/``), in order (a nightly refresh on a store reads
    them from the versions' commits)."""
    merged: dict[str, Any] | None = None
    for v, (m, rel) in manifests.items():
        shards = []
        for s in m["shards"]:
            entry = {**s, "version": v}
            for key in ("name", "bin", "idx", "src"):
                if key in s:
                    entry[key] = f"{rel}/{s[key]}"
            if "sources" in m:
                entry["sources"] = m["sources"]  # a shard's .src ids index its own version's list
            shards.append(entry)
        if merged is None:
            merged = {k: v2 for k, v2 in m.items() if k not in ("shards", "totals", "tokens_per_source", "sources")}
            merged.update(shards=[], tokens_per_source={})
        elif m["tokenizer_sha256"] != merged["tokenizer_sha256"]:
            raise ValueError(f"version {v} was tokenized with another tokenizer than {next(iter(manifests))}")
        merged["shards"] += shards
        for src, n in m["tokens_per_source"].items():
            merged["tokens_per_source"][src] = merged["tokens_per_source"].get(src, 0) + n
    if merged is None:
        raise ValueError("no manifests to merge")
    merged["sources"] = sorted(merged["tokens_per_source"])
    merged["tokens_per_source"] = dict(sorted(merged["tokens_per_source"].items()))
    merged["totals"] = {
        "shards": len(merged["shards"]),
        "documents": sum(s["documents"] for s in merged["shards"]),
        "tokens": sum(s["tokens"] for s in merged["shards"]),
    }
    merged["versions"] = list(manifests)
    return merged


def read_manifest(path: str | os.PathLike, verify: bool = True) -> dict[str, Any]:
    """``shards/manifest.json`` (or its directory). Every listed file must exist (always checked).
    ``verify``: every file's sha256 (``.src`` sidecars included, when the manifest lists them),
    each shard's document and token counts, and its tokens per source are checked against the
    files; a mismatch raises ``IndexedDatasetError`` naming the file."""
    path = Path(path)
    path = path / MANIFEST_FILE if path.is_dir() else path
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
                    raise IndexedDatasetError(
                        f"{shard[kind]}: sha256 {actual[:16]}... but the manifest says "
                        f"{shard[f'{kind}_sha256'][:16]}..."
                    )
            ds = _open(path.parent, shard, manifest)
            if (len(ds), ds.num_tokens) != (shard["documents"], shard["tokens"]):
                raise IndexedDatasetError(
                    f"{shard['name']}: {len(ds)} documents / {ds.num_tokens} tokens, manifest "
                    f"says {shard['documents']} / {shard['tokens']}"
                )
            if ds.source_names is not None and ds.tokens_per_source() != shard["tokens_per_source"]:
                raise IndexedDatasetError(
                    f"{shard['src']}: tokens per source {ds.tokens_per_source()}, manifest "
                    f"says {shard['tokens_per_source']}"
                )
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
