"""Sharded training checkpoints: ``torch.distributed.checkpoint`` files, a state file, and a
completion marker written last.

One checkpoint is a directory ``RUN_DIR/checkpoints/step-XXXXXXX/`` (the state after that many
optimizer steps)::

    .metadata, __<rank>_<n>.distcp   DCP: model, optimizer moments (full-model names, DTensor
                                     shards: loads into any other layout), and each rank's RNG
    state.json                       step, data position, LR schedule, layout (plain JSON)
    COMPLETE                         {"step", "files": {name: {"bytes", "sha256"}}}: written last,
                                     atomically, after every rank has finished and hashed its files

A directory without a valid ``COMPLETE`` is an interrupted save and is never loaded. ``save``
blocks until the checkpoint is complete; ``AsyncSaver`` writes it with DCP's ``async_save`` while
training goes on and writes ``COMPLETE`` only once every rank's write has finished (a process
killed before then leaves a directory without it: the run resumes from the previous one). Resume takes
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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta

from base.artifact import sha256_file
from base.atomic import write_atomic

CHECKPOINTS = "checkpoints"
MARKER = "COMPLETE"
STATE = "state.json"
METADATA = ".metadata"  # DCP's global metadata file (torch.distributed.checkpoint.filesystem)
_STEP_DIR = re.compile(r"^step-(\d{7,})$")

# Everything a DCP ``.metadata`` pickle of tensors refers to (torch 2.13), and nothing else:
# not BytesStorageMetadata (a non-tensor entry, loaded with torch.load(weights_only=False)).
_DCP_METADATA = "torch.distributed.checkpoint.metadata"
_SAFE_GLOBALS = {
    (_DCP_METADATA, "Metadata"),
    (_DCP_METADATA, "MetadataIndex"),
    (_DCP_METADATA, "StorageMeta"),
    (_DCP_METADATA, "TensorProperties"),
    (_DCP_METADATA, "TensorStorageMetadata"),
    (_DCP_METADATA, "ChunkStorageMetadata"),
    (_DCP_METADATA, "_MEM_FORMAT_ENCODING"),
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
    ("torch", "Size"),
    ("torch.serialization", "_get_layout"),
    ("pathlib", "PosixPath"),
    ("pathlib", "PurePosixPath"),
    ("pathlib", "WindowsPath"),
    ("pathlib", "PureWindowsPath"),
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
        raise CheckpointError(
            f"checkpoint metadata refers to {module}.{name}, which a DCP checkpoint "
            f"of tensors never does: refusing to load it"
        )


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
    _prepare(path, state)
    dcp.save(state_dict, checkpoint_id=str(path))
    dist.barrier()  # every rank's files and the coordinator's .metadata are on disk
    _write_marker(path, state["step"], _hash_share(path, sorted(p.name for p in path.iterdir() if p.name != MARKER)))
    dist.barrier()


def _prepare(path: Path, state: dict[str, Any]) -> None:
    """Rank 0 replaces any leftover directory with an empty one holding ``state.json``; a barrier."""
    if dist.get_rank() == 0:
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        write_atomic(path / STATE, json.dumps(state, indent=1, sort_keys=True))
    dist.barrier()


def _write_marker(path: Path, step: int, hashes: dict[str, dict[str, Any]], group=None) -> None:
    """Gather every rank's file hashes (a collective over ``group``, default: all ranks); rank 0
    writes ``COMPLETE`` with them all."""
    shares: list[dict[str, dict[str, Any]]] = [{} for _ in range(dist.get_world_size())]
    dist.all_gather_object(shares, hashes, group=group)
    if dist.get_rank() == 0:
        files = {name: info for share in shares for name, info in share.items()}
        write_atomic(path / MARKER, json.dumps({"step": step, "files": dict(sorted(files.items()))}, indent=1))


def _hash_share(path: Path, names: list[str]) -> dict[str, dict[str, Any]]:
    """sha256 and size of every ``world``-th file from this rank's offset: the ranks split the work."""
    rank, world = dist.get_rank(), dist.get_world_size()
    return _hashes(path, names[rank::world])


def _hashes(path: Path, names: list[str]) -> dict[str, dict[str, Any]]:
    return {name: {"bytes": (path / name).stat().st_size, "sha256": sha256_file(path / name)} for name in names}


# --- asynchronous save --------------------------------------------------------------------------


def own_files(path: Path, rank: int) -> list[str]:
    """The files of checkpoint ``path`` that ``rank`` wrote: its DCP data files
    (``__<rank>_<n>.distcp``), and for rank 0 (DCP's coordinator) ``.metadata`` and ``state.json``."""
    mine = re.compile(rf"^__{rank}_\d+\.distcp$")
    names = sorted(p.name for p in path.iterdir() if mine.match(p.name))
    return names + ([METADATA, STATE] if rank == 0 else [])


def _finish_upload(upload: Future, path: Path, rank: int) -> dict[str, dict[str, Any]]:
    """In the background: wait for this rank's DCP write (rank 0's includes ``.metadata``, written
    after every rank reported its files), then hash what this rank wrote."""
    upload.result()
    return _hashes(path, own_files(path, rank))


@dataclass
class _Pending:
    path: Path
    step: int
    hashes: Future  # this rank's {file: {bytes, sha256}} once its part of the save is on disk


class AsyncSaver:
    """Checkpoints written while training goes on, one in flight at a time (torchtitan's async mode).

    ``start`` is a collective: rank 0 prepares the directory and ``state.json``; DCP's
    ``async_save`` copies this rank's tensors into CPU memory before it returns (training may
    change the weights right after) and writes them from a background thread, over a gloo process
    group of its own so that its collectives never interleave with the training's; the same thread
    then hashes this rank's files. ``poll`` (every step; one all-reduce while a save is pending)
    sees the step at which every rank has finished, and only then does rank 0 write ``COMPLETE``.
    Every rank must make the same sequence of calls. The main thread's agreement runs over a second
    gloo group: CPU tensors work there whatever the training's backend (NCCL takes only CUDA ones),
    and it never shares a group with the background thread's collectives.
    """

    def __init__(self):
        self.group = dist.new_group(backend="gloo")  # DCP's, used from the background thread
        self.sync = dist.new_group(backend="gloo")  # the main thread's: poll, failures, the marker
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checkpoint-finish")
        self.pending: _Pending | None = None

    def start(self, path: Path, state_dict: dict[str, Any], state: dict[str, Any]) -> Path | None:
        """Begin saving ``state_dict`` to ``path``; returns the previous save's path if this call
        had to finish it first (see ``wait``)."""
        previous = self.wait()
        _prepare(path, state)
        upload = dcp.async_save(state_dict, checkpoint_id=str(path), process_group=self.group)
        self.pending = _Pending(path, state["step"], self.pool.submit(_finish_upload, upload, path, dist.get_rank()))
        return previous

    def poll(self) -> Path | None:
        """The path of the pending checkpoint if every rank has written and hashed its part (it is
        now complete), else None."""
        if self.pending is None:
            return None
        done = torch.tensor([int(self.pending.hashes.done())])
        dist.all_reduce(done, op=dist.ReduceOp.MIN, group=self.sync)
        return self._finish() if int(done) else None

    def wait(self) -> Path | None:
        """Block until the pending checkpoint is complete; its path (None if there was none)."""
        if self.pending is None:
            return None
        self.pending.hashes.exception()  # waits; a failure is raised on every rank in _finish
        return self._finish()

    def _finish(self) -> Path:
        pending, self.pending = self.pending, None
        error = pending.hashes.exception()
        failures: list[str | None] = [None] * dist.get_world_size()
        dist.all_gather_object(
            failures, None if error is None else f"rank {dist.get_rank()}: {error!r}", group=self.sync
        )
        if any(failures):
            raise CheckpointError(f"asynchronous save of {pending.path} failed: " + "; ".join(f for f in failures if f))
        _write_marker(pending.path, pending.step, pending.hashes.result(), group=self.sync)
        return pending.path

    def close(self) -> None:
        """Finish the pending save, then stop the background thread."""
        self.wait()
        self.pool.shutdown()


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
    bad = 0 if marker is not None else 1
    if marker is not None:
        mine = _hash_share(path, sorted(marker["files"]))
        bad += sum(mine[n]["sha256"] != marker["files"][n]["sha256"] for n in mine)
    counts: list[int | None] = [None] * dist.get_world_size()
    dist.all_gather_object(counts, bad)  # an object collective: works over NCCL as over gloo
    return sum(counts) == 0


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
