"""Where a nightly refresh keeps its corpus (``etl.nightly``): CORPUS_ROOT on a POSIX file system
(``LocalRoot``, as it always was) or on S3 (``StoreRoot``). Both give the refresh the same few
operations on paths relative to the root (``CURRENT``, ``versions/v000007/refresh.json``).

On S3 a version is an output of ``build_corpus`` published by the commit protocol of
``etl.runtime.objstore`` (``versions/vN/_commit.json``), its ``corpus.json`` and ``refresh.json``
committed with it; ``CURRENT`` is one object, replaced by one PUT, still the refresh's commit point:
a reader takes ``CURRENT``, then the committed ``versions/<it>/corpus.json``. A version newer than
``CURRENT`` (committed or not) is a killed run's, removed by the next.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

from base import committed as cm
from base.manifest import MANIFEST_FILE
from base.s3 import S3Access, S3Config, split
from etl.runtime.locks import Lock, Locked
from etl.runtime.objstore import Store, store_lock
from etl.runtime.publish import write_atomic

log = logging.getLogger("zhcorpus")


class LocalRoot:
    """CORPUS_ROOT on a local disk or a shared mount."""

    on_store = False

    def __init__(self, root: str):
        self.path = Path(root).resolve()
        self.root = str(self.path)
        (self.path / "versions").mkdir(parents=True, exist_ok=True)

    def uri(self, rel: str) -> str:
        return str(self.path / rel)

    def read_text(self, rel: str) -> str | None:
        p = self.path / rel
        return p.read_text(encoding="utf-8") if p.exists() else None

    def write_text(self, rel: str, text: str) -> None:
        write_atomic(self.path / rel, text)

    def lock(self) -> Lock:
        return Lock(self.path / ".lock", "another refresh")  # a dead holder on this host is taken over

    def versions(self) -> list[str]:
        return sorted(p.name for p in (self.path / "versions").glob("v*"))

    def remove(self, rel: str) -> bool:
        p = self.path / rel
        if not p.exists():
            return False
        shutil.rmtree(p, ignore_errors=True)
        return True

    def is_dir(self, rel: str) -> bool:
        return (self.path / rel).is_dir()

    def shard_manifest(self, version: str) -> dict[str, Any]:
        return json.loads((self.path / "versions" / version / "shards" / MANIFEST_FILE).read_text(encoding="utf-8"))


class StoreRoot:
    """CORPUS_ROOT on S3 (``s3://bucket/prefix``), with the store's settings ``s3``."""

    on_store = True

    def __init__(self, root: str, s3: S3Config | None = None):
        self.root = root.rstrip("/")
        self.access = S3Access.resolve(s3 or S3Config())
        _, bucket, self.prefix = split(self.root)
        self.store = Store(self.access, bucket, "corpus root")
        self._fs = self.access.filesystem()

    def uri(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def read_text(self, rel: str) -> str | None:
        """A plain object (``CURRENT``), or a file of a committed version (``versions/v…/…``)."""
        if rel.startswith("versions/"):
            try:
                commit, name = cm.find(self.uri(rel), self._fs)
            except cm.NotCommitted:
                return None
            return cm.read_bytes(commit, name, self._fs).decode("utf-8") if name in commit.files else None
        got = self.store.get(f"{self.prefix}/{rel}")
        return got[0].decode("utf-8") if got else None

    def write_text(self, rel: str, text: str) -> None:
        self.store.put(f"{self.prefix}/{rel}", text.encode("utf-8"))  # one PUT: replaced whole

    def lock(self) -> Lock:
        return store_lock(self.uri(".lock"), self.access, "another refresh", Locked)

    def versions(self) -> list[str]:
        return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in self.store.subdirs(f"{self.prefix}/versions/"))

    def remove(self, rel: str) -> bool:
        return self.store.delete_prefix(f"{self.prefix}/{rel}/") > 0

    def is_dir(self, rel: str) -> bool:
        try:
            commit, name = cm.find(self.uri(rel), self._fs)
        except cm.NotCommitted:
            return False
        return commit.is_dir(name)

    def shard_manifest(self, version: str) -> dict[str, Any]:
        return json.loads(self.read_text(f"versions/{version}/shards/{MANIFEST_FILE}") or "null")


def corpus_root(root: str, s3: S3Config | None = None) -> LocalRoot | StoreRoot:
    from base.s3 import is_s3

    return StoreRoot("s3://" + root.split("://", 1)[1], s3) if is_s3(root) else LocalRoot(root)
