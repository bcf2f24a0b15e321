"""Sharded training checkpoints: ``torch.distributed.checkpoint`` files, a state file, and a
completion marker written last.

One checkpoint is a directory ``RUN_DIR/checkpoints/step-XXXXXXX/`` (the state after that many
optimizer steps)::

    .metadata, __<rank>_<n>.distcp   DCP: model, optimizer moments (full-model names, DTensor
                                     shards: loads into any other layout), and each rank's RNG
    state.json                       step, data position, LR schedule, layout (plain JSON)
    COMPLETE                         {"step", "files": {name: {"bytes", "sha256"}}}: written last,
                                     atomically, after every rank has finished and hashed its files

A directory without a valid ``COMPLETE`` is an interrupted save and is never loaded. Resume takes
the newest complete checkpoint whose files still match their checksums. ``RUN_DIR`` must be
visible to every worker at the same path (one machine's disk, or a shared file system).

Loading runs nothing from the files: DCP reads tensors with ``torch.load(weights_only=True)``
but unpickles ``.metadata`` with plain ``pickle``, so ``SafeReader`` replaces that with an
unpickler that only builds DCP's metadata classes for tensors. That also refuses non-tensor
entries (``BytesStorageMetadata``), which DCP would ``torch.load`` with ``weights_only=False``.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import shutil
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta

from etl.publish import write_atomic  # stdlib only: no Spark in train/
from train.indexed_dataset import sha256_file

CHECKPOINTS = "checkpoints"
MARKER = "COMPLETE"
STATE = "state.json"
METADATA = ".metadata"  # DCP's global metadata file (torch.distributed.checkpoint.filesystem)
_STEP_DIR = re.compile(r"^step-(\d{7,})$")

# Everything a DCP ``.metadata`` pickle of tensors refers to (torch 2.13), and nothing else:
# not BytesStorageMetadata (a non-tensor entry, loaded with torch.load(weights_only=False)).
_DCP_METADATA = "torch.distributed.checkpoint.metadata"
_SAFE_GLOBALS = {
    (_DCP_METADATA, "Metadata"), (_DCP_METADATA, "MetadataIndex"), (_DCP_METADATA, "StorageMeta"),
    (_DCP_METADATA, "TensorProperties"), (_DCP_METADATA, "TensorStorageMetadata"),
    (_DCP_METADATA, "ChunkStorageMetadata"), (_DCP_METADATA, "_MEM_FORMAT_ENCODING"),
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
    ("torch", "Size"), ("torch.serialization", "_get_layout"),
    ("pathlib", "PosixPath"), ("pathlib", "PurePosixPath"), ("pathlib", "WindowsPath"), ("pathlib", "PureWindowsPath"),
}


class CheckpointError(RuntimeError):
    """A checkpoint that is incomplete, corrupt, unsafe, or does not fit this run."""


def step_dir(run_dir: str | os.PathLike, step: int) -> Path:
    return Path(run_dir) / CHECKPOINTS / f"step-{step:07d}"


def step_of(path: str | os.PathLike) -> int | None:
    m = _STEP_DIR.match(Path(path).name)
    return int(m.group(1)) if m else None


# --- safe loading -------------------------------------------------------------------------------

class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        raise CheckpointError(f"checkpoint metadata refers to {module}.{name}, which a DCP checkpoint "
                              f"of tensors never does: refusing to load it")


def read_metadata(path: str | os.PathLike) -> Metadata:
    """The DCP metadata of checkpoint ``path``, unpickled with only DCP's own classes allowed."""
    try:
        data = (Path(path) / METADATA).read_bytes()
    except OSError as e:
        raise CheckpointError(f"{path}: cannot read {METADATA}: {e}") from e
    metadata = _MetadataUnpickler(io.BytesIO(data)).load()
    if not isinstance(metadata, Metadata):
        raise CheckpointError(f"{path}/{METADATA}: a {type(metadata).__name__}, not DCP Metadata")
    return metadata


class SafeReader(FileSystemReader):
    """``FileSystemReader`` whose metadata goes through ``read_metadata`` (tensors are already
    read with ``weights_only=True``)."""

    def read_metadata(self) -> Metadata:
        metadata = read_metadata(self.path)
        if metadata.storage_meta is None:
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


# --- save ---------------------------------------------------------------------------------------

def save(path: Path, state_dict: dict[str, Any], state: dict[str, Any]) -> None:
    """Write checkpoint ``path``: a collective (every rank, the same ``path`` and ``state``).

    Rank 0 clears a leftover directory of an interrupted save and writes ``state.json``; DCP
    writes the tensors; every rank hashes its share of the files; rank 0 writes ``COMPLETE``."""
    rank = dist.get_rank()
    if rank == 0:
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        write_atomic(path / STATE, json.dumps(state, indent=1, sort_keys=True))
    dist.barrier()
    dcp.save(state_dict, checkpoint_id=str(path))
    dist.barrier()  # every rank's files and the coordinator's .metadata are on disk
    hashes = _hash_share(path, sorted(p.name for p in path.iterdir() if p.name != MARKER))
    shares: list[dict[str, dict[str, Any]]] = [{} for _ in range(dist.get_world_size())]
    dist.all_gather_object(shares, hashes)
    if rank == 0:
        files = {name: info for share in shares for name, info in share.items()}
        write_atomic(path / MARKER, json.dumps({"step": state["step"], "files": dict(sorted(files.items()))}, indent=1))
    dist.barrier()


def _hash_share(path: Path, names: list[str]) -> dict[str, dict[str, Any]]:
    """sha256 and size of every ``world``-th file from this rank's offset: the ranks split the work."""
    rank, world = dist.get_rank(), dist.get_world_size()
    return {name: {"bytes": (path / name).stat().st_size, "sha256": sha256_file(path / name)}
            for name in names[rank::world]}


# --- find, verify, load, prune ------------------------------------------------------------------

def read_marker(path: Path) -> dict[str, Any] | None:
    """The ``COMPLETE`` marker if it is there, parses, names this step, and every file it lists
    exists with its recorded size (the cheap check; ``verify`` compares the checksums)."""
    try:
        marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = marker.get("files") if isinstance(marker, dict) else None
    if marker.get("step") != step_of(path) or not isinstance(files, dict) or METADATA not in files:
        return None
    for name, info in files.items():
        f = path / name
        if Path(name).name != name or not f.is_file() or f.stat().st_size != info.get("bytes"):
            return None
    return marker


def complete_steps(run_dir: str | os.PathLike) -> list[int]:
    """Steps of the checkpoints under ``run_dir`` with a valid marker, newest first."""
    root = Path(run_dir) / CHECKPOINTS
    steps = [step_of(p) for p in root.iterdir() if step_of(p) is not None] if root.is_dir() else []
    return sorted((s for s in steps if read_marker(step_dir(run_dir, s)) is not None), reverse=True)


def verify(path: Path) -> bool:
    """Whether every file of checkpoint ``path`` matches its checksum in the marker: a collective,
    each rank hashing a share; the same answer on every rank."""
    marker = read_marker(path)
    bad = torch.tensor([0 if marker is not None else 1])
    if marker is not None:
        names = sorted(marker["files"])
        mine = _hash_share(path, names)
        bad += sum(mine[n]["sha256"] != marker["files"][n]["sha256"] for n in mine)
    dist.all_reduce(bad)
    return int(bad) == 0


def read_state(path: Path) -> dict[str, Any]:
    return json.loads((path / STATE).read_text(encoding="utf-8"))


def load(path: Path, state_dict: dict[str, Any]) -> None:
    """Fill ``state_dict`` (this rank's tensors, any layout) in place from checkpoint ``path``."""
    read_metadata(path)  # a clear error here; DCP would only log it and report "metadata is None"
    dcp.load(state_dict, storage_reader=SafeReader(str(path)))


def prune(run_dir: str | os.PathLike, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` complete checkpoints (0: keep all), and every
    directory older than the newest complete one that has no valid marker (an interrupted
    save). Never touches the newest complete checkpoint or anything newer. Returns the deleted."""
    complete = complete_steps(run_dir)
    if not complete:
        return []
    doomed = complete[keep:] if keep > 0 else []
    root = Path(run_dir) / CHECKPOINTS
    doomed += [s for p in root.iterdir() if (s := step_of(p)) is not None and s < complete[0] and s not in complete]
    paths = [step_dir(run_dir, s) for s in sorted(set(doomed))]
    for p in paths:
        shutil.rmtree(p, ignore_errors=True)
    return paths
