"""Outputs on an object store (S3), where nothing can be renamed atomically: an output is the files
of one attempt, made visible by a commit object written last that lists every one of them with
its size and sha256 (written by ``etl.runtime.objstore``; read here, by the jobs, the nightly
refresh and the trainer alike).

    DEST/_commit.json              the commit object: {"format", "attempt", "files": {name: {size, sha256}}}
    DEST/_attempt-<run>/<name>     the files of attempt <run>; only the committed attempt's are read
    DEST/_lock                     held while a writer works (``etl.runtime.locks`` on the store)

A reader names a file by its logical path ``DEST/<name>`` (``s3://b/corpus/shards/manifest.json``);
``find`` walks up from it to the nearest commit object and ``Commit.physical`` gives the key the
commit lists, in its attempt. A file the commit does not list does not exist for a reader, whatever
lies under ``DEST``: another attempt's files (a writer at work, or one killed before its commit),
a task attempt that lost its race. Every byte read through ``read_bytes`` or ``fetch`` is checked
against the commit's size and sha256; a mismatch is a ``CommitError`` naming the file.

``fetch`` copies committed files into a local cache (``cache_root``), verified on the way in and
placed by rename, so a cached file is always whole and always the committed one; the trainer
memory-maps shards from there (docs/storage.md: why a cache, not byte ranges).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from base.errors import Refusal

COMMIT_FILE = "_commit.json"
ATTEMPT = "_attempt-"
LOCK_FILE = "_lock"
FORMAT = "zhcorpus-commit-v1"
CACHE_ENV = "ZHCORPUS_CACHE"  # where fetched files go; default ~/.cache/zhcorpus


class CommitError(Refusal):
    """A committed output that cannot be read as committed: a file missing, or not the size or
    sha256 the commit lists. One line, naming the file."""


class NotCommitted(FileNotFoundError):
    """No commit object at or above a path: nothing was published there (or not yet)."""


@dataclass(frozen=True)
class FileEntry:
    size: int
    sha256: str


@dataclass(frozen=True)
class Commit:
    """A committed output: its logical root (``s3://bucket/prefix``), attempt and files."""

    root: str
    attempt: str
    files: dict[str, FileEntry]
    etag: str = ""  # of the commit object: a replacing writer's conditional put names it

    @staticmethod
    def record(attempt: str, files: dict[str, FileEntry], extra: dict[str, Any] | None = None) -> bytes:
        """The commit object's bytes (sorted, so the same files give the same object)."""
        body = {
            "format": FORMAT,
            "attempt": attempt,
            "files": {n: {"size": e.size, "sha256": e.sha256} for n, e in sorted(files.items())},
            **(extra or {}),
        }
        return json.dumps(body, indent=1, sort_keys=True).encode("utf-8")

    @classmethod
    def parse(cls, root: str, data: bytes, etag: str = "") -> "Commit":
        try:
            body = json.loads(data)
            if body.get("format") != FORMAT:
                raise ValueError(f"format {body.get('format')!r}")
            files = {n: FileEntry(int(e["size"]), str(e["sha256"])) for n, e in body["files"].items()}
            return cls(root.rstrip("/"), str(body["attempt"]), files, etag)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CommitError(f"{root}/{COMMIT_FILE}: not a commit object ({e})") from None

    def physical(self, name: str) -> str:
        """The URI of the committed file ``name`` (a path relative to the root)."""
        if name not in self.files:
            raise CommitError(f"{self.root}/{name}: not among the files committed in {self.root}/{COMMIT_FILE}")
        return f"{self.root}/{ATTEMPT}{self.attempt}/{name}"

    def names(self, under: str = "") -> list[str]:
        """Committed names at or below the logical directory ``under`` ("" = all), sorted."""
        under = under.strip("/")
        return sorted(n for n in self.files if not under or n == under or n.startswith(under + "/"))

    def is_dir(self, name: str) -> bool:
        return bool(name.strip("/")) and any(n.startswith(name.strip("/") + "/") for n in self.files)


def bucket_key(uri: str) -> str:
    """``s3://bucket/key`` -> ``bucket/key``, the path pyarrow's S3FileSystem takes."""
    return uri.split("://", 1)[1] if "://" in uri else uri


def load(root: str, fs) -> Commit | None:
    """The commit at ``root`` (``s3://bucket/prefix``), or None when none is there. ``fs``: a
    pyarrow file system that reaches the store (``base.s3.S3Access.filesystem``)."""
    from pyarrow import fs as pafs

    root = root.rstrip("/")
    path = f"{bucket_key(root)}/{COMMIT_FILE}"
    if fs.get_file_info(path).type != pafs.FileType.File:
        return None
    with fs.open_input_stream(path, compression=None) as f:
        return Commit.parse(root, f.read())


def find(uri: str, fs) -> tuple[Commit, str]:
    """(the commit holding ``uri``, ``uri``'s name in it): the nearest commit object at ``uri`` or
    above it. Raises ``NotCommitted`` when there is none."""
    uri = uri.rstrip("/")
    scheme, rest = uri.split("://", 1)
    parts = rest.split("/")
    for i in range(len(parts), 0, -1):
        commit = load(f"{scheme}://{'/'.join(parts[:i])}", fs)
        if commit is not None:
            return commit, "/".join(parts[i:])
    raise NotCommitted(f"{uri}: no committed output there ({COMMIT_FILE} at it or above it); was it published?")


def resolve(uri: str, fs, cache: dict[str, Commit] | None = None) -> tuple[Commit, str]:
    """``find`` with a memo of the commits already found (a manifest names many files of a few outputs)."""
    if cache is not None:
        for root, commit in cache.items():
            if uri.startswith(root + "/"):
                return commit, uri[len(root) + 1 :]
    commit, name = find(uri, fs)
    if cache is not None:
        cache[commit.root] = commit
    return commit, name


def read_bytes(commit: Commit, name: str, fs) -> bytes:
    """The committed file ``name`` whole, checked against its size and sha256 (small files:
    reports, manifests, pointers)."""
    entry = commit.files.get(name)
    uri = commit.physical(name)
    try:
        with fs.open_input_stream(bucket_key(uri), compression=None) as f:
            data = f.read()
    except FileNotFoundError:
        raise CommitError(f"{commit.root}/{name}: committed but missing from the store ({uri})") from None
    _check(commit, name, len(data), hashlib.sha256(data).hexdigest(), entry)
    return data


def _check(commit: Commit, name: str, size: int, sha256: str, entry: FileEntry | None) -> None:
    if entry is None:
        raise CommitError(f"{commit.root}/{name}: not committed")
    if size != entry.size or sha256 != entry.sha256:
        raise CommitError(
            f"{commit.root}/{name}: {size} bytes, sha256 {sha256[:16]}..., but the commit lists "
            f"{entry.size} bytes, {entry.sha256[:16]}... (damaged or replaced on the store)"
        )


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "zhcorpus")


def cached_path(commit: Commit, name: str, cache: Path) -> Path:
    """Where ``fetch`` puts ``name``: the physical key under ``cache`` (an attempt's files never change)."""
    return cache / bucket_key(commit.physical(name))


def fetch(commit: Commit, names: list[str], fs, cache: Path | None = None) -> Path:
    """The committed files ``names`` in the local ``cache`` (default ``cache_root()``), each
    downloaded to a temporary name with its sha256 computed on the way, checked against the
    commit and renamed into place; a file already cached at the committed size is kept (its
    bytes are checked again when the caller verifies, as the trainer does). Returns the local
    directory that stands for the commit's root."""
    cache = cache or cache_root()
    for name in names:
        target = cached_path(commit, name, cache)
        entry = commit.files.get(name)
        if entry is None:
            commit.physical(name)  # raises: not committed
        if target.is_file() and target.stat().st_size == entry.size:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.part")
        h, size = hashlib.sha256(), 0
        try:
            with fs.open_input_stream(bucket_key(commit.physical(name)), compression=None) as src, open(tmp, "wb") as f:
                while block := src.read(8 << 20):
                    h.update(block)
                    size += len(block)
                    f.write(block)
            _check(commit, name, size, h.hexdigest(), entry)
            os.replace(tmp, target)
        except FileNotFoundError:
            raise CommitError(f"{commit.root}/{name}: committed but missing from the store") from None
        finally:
            tmp.unlink(missing_ok=True)
    return cache / bucket_key(f"{commit.root}/{ATTEMPT}{commit.attempt}")


def fetch_tree(uri: str, fs, cache: Path | None = None) -> Path:
    """The committed directory (or file) ``uri`` copied into the cache (``fetch``); returns its
    local path (a tokenizer or model directory, a report)."""
    commit, name = find(uri, fs)
    names = commit.names(name)
    if not names:
        raise CommitError(f"{uri}: nothing of that name in the output committed at {commit.root}")
    local = fetch(commit, names, fs, cache)
    return local / name if name else local


def relative_uri(base_dir: str, rel: str) -> str:
    """``rel`` (a manifest's relative path, ``..`` allowed) against the URI directory ``base_dir``."""
    scheme, rest = base_dir.rstrip("/").split("://", 1)
    return f"{scheme}://{posixpath.normpath(posixpath.join(rest, rel))}"


def local_manifest(uri: str, fs, cache: Path | None = None) -> Path:
    """A shard manifest on a store as a local manifest whose files are in the cache: ``uri`` is a
    build output, its ``shards/``, a ``manifest.json`` or a nightly refresh's ``corpus.json``.
    Every file the manifest lists is resolved through the commit that holds it (a nightly's
    ``corpus.json`` lists the shards of several versions) and fetched, verified (``fetch``);
    the local manifest names them by absolute path. Returns its path."""
    from base.manifest import MANIFEST_FILE

    cache = cache or cache_root()
    commits: dict[str, Commit] = {}
    commit, name = resolve(uri.rstrip("/"), fs, commits)
    name = name or "shards"  # a build output's root
    if commit.is_dir(name):
        name = f"{name}/{MANIFEST_FILE}"
    manifest = json.loads(read_bytes(commit, name, fs))
    here = posixpath.dirname(f"{commit.root}/{name}")
    for shard in manifest["shards"]:
        for kind in ("bin", "idx", "src"):
            if kind in shard:
                owner, rel = resolve(relative_uri(here, shard[kind]), fs, commits)
                shard[kind] = str(fetch(owner, [rel], fs, cache) / rel)
        shard["name"] = shard["bin"].removesuffix(".bin")
    text = json.dumps(manifest, indent=1, sort_keys=True)
    path = cache / "manifests" / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return path
