"""Where a dedup index's small files live, and how its commits advance: on a Hadoop file system
(local disk, HDFS: ``HadoopIndexStore``, what the index always did) or on S3 (``S3IndexStore``).
The index's data files are written and read with pyarrow either way (``etl.dedup.index_files``,
given the store's ``access`` on S3); this module holds everything else ``etl.dedup.index`` does
to the index root: settings.json, the commit records, the writer lock, listing and removing
segment directories.

On a Hadoop file system each commit record is its own file, ``INDEX/commits/<seq>-<name>.json``,
written by rename (the commit point) and removed by a delete.

S3 has no rename, and a listing is not a commit point, so there the records live in one object,
``INDEX/commits.json``:

    {"format": "zhcorpus-index-commits-v1", "records": {"<seq>-<name>.json": {record}, ...}}

Every change (a commit, the removal of replaced or retracted records) is a new version of that
object written by a conditional PUT: ``If-Match`` the ETag of the version the writer read
(``If-None-Match: *`` for the first), so of two writers that both read one version only one can
advance it; the other gets ``IndexLocked`` and commits nothing. That is the second line: writers
already hold ``INDEX/.lock``, created by ``If-None-Match: *`` (``etl.runtime.objstore.store_lock``).
A reader trusts only the files the records list (with their size and sha256, verified before a
read); segment files no record lists (a killed append or compaction) are removed by the next
writer with their unfinished multipart uploads.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Iterator

from base.errors import Refusal
from base.s3 import S3Access, split
from etl.dedup.index_checks import IndexFileError
from etl.runtime.locks import HadoopFiles, LocalFiles, Lock, Locked
from etl.runtime.publish import HadoopStorage, write_atomic

HEAD = "commits.json"  # the S3 index's commit records, one object (not _commit.json: no output's commit)
HEAD_FORMAT = "zhcorpus-index-commits-v1"
WRITER = "another writer of the dedup index"
_UNPINNED = object()  # S3IndexStore._base outside a write


class HadoopIndexStore:
    """An index root on any Hadoop file system (``file:``, HDFS), through the JVM of ``spark``."""

    access = None  # pyarrow reaches the files from the root alone (etl.dedup.index_files.filesystem)

    def __init__(self, spark, root: str):
        self.spark = spark
        self._Path = spark._jvm.org.apache.hadoop.fs.Path
        self.fs = self._Path(root).getFileSystem(spark._jsc.hadoopConfiguration())
        self._root = self.fs.makeQualified(self._Path(root))
        self.root = self._root.toString()
        self.storage = HadoopStorage(spark)

    def _p(self, rel: str):
        return self._Path(self._root, rel)

    def uri(self, rel: str) -> str:
        return self._p(rel).toString()

    def read_text(self, rel: str) -> str | None:
        path = self._p(rel)
        if not self.fs.exists(path):
            return None
        stream = self.fs.open(path)
        try:
            jio = self.spark._jvm.java.io
            reader = jio.BufferedReader(jio.InputStreamReader(stream, "UTF-8"))
            return "\n".join(iter(reader.readLine, None))
        finally:
            stream.close()

    def create_settings(self, text: str) -> None:
        self.fs.mkdirs(self._root)
        self.write_text("settings.json", text)

    def write_text(self, rel: str, text: str) -> None:
        write_atomic(self.uri(rel), text, self.storage)

    def commit_files(self) -> list[tuple[str, tuple]]:
        """(file name, stamp) of every commit record; a record is read again when its stamp changes."""
        commits = self._p("commits")
        if not self.fs.exists(commits):
            return []
        out = []
        for st in self.fs.listStatus(commits):
            name = st.getPath().getName()
            if name.endswith(".json"):
                out.append((name, (name, st.getLen(), st.getModificationTime())))
        return out

    def read_commit(self, name: str) -> str:
        return self.read_text(f"commits/{name}")

    def add_commit(self, name: str, text: str) -> None:
        self.write_text(f"commits/{name}", text)

    def remove_commit(self, name: str) -> None:
        self.fs.delete(self._p(f"commits/{name}"), False)

    def segment_dirs(self, top: str) -> list[str]:
        d = self._p(top)
        return [st.getPath().getName() for st in self.fs.listStatus(d)] if self.fs.exists(d) else []

    def delete_dir(self, rel: str) -> None:
        self.fs.delete(self._p(rel), True)

    def parquet_files(self, rel: str) -> list[str]:
        """Paths (relative to the root) of the Parquet files under ``rel``: layout 0's batches."""
        base = self._p(rel)
        if not self.fs.exists(base):
            return []
        out, it = [], self.fs.listFiles(base, True)
        while it.hasNext():
            path = it.next().getPath().toString()
            if path.endswith(".parquet"):
                out.append(path[len(self.root) + 1 :])
        return out

    def lock(self, error: type[Locked]) -> Lock:
        uri = self._root.toUri()
        if uri.getScheme() == "file":  # O_EXCL: atomic, where Hadoop's local create checks then writes
            return Lock(f"{uri.getPath()}/.lock", WRITER, LocalFiles(), error)
        return Lock(self.uri(".lock"), WRITER, HadoopFiles(self.spark), error)


class S3IndexStore:
    """An index root ``s3://bucket/prefix``: the driver's requests through boto3 (conditional
    PUTs), with the endpoint and credentials of ``access`` (``reader.s3``), as every S3 output."""

    def __init__(self, root: str, access: S3Access, error: type[Locked]):
        from etl.runtime.objstore import Store

        self.root = "s3://" + root.split("://", 1)[1].rstrip("/")
        _, bucket, self.prefix = split(self.root)
        if not self.prefix:
            raise Refusal(f"refusing dedup index {root}: name a prefix inside the bucket (s3://{bucket}/index)")
        self.access, self.error = access, error
        self.store = Store(access, bucket, "dedup index")
        self._head: dict[str, dict] = {}  # the records of the version of HEAD last read
        self._etag: str | None = None  # ... and its ETag (None: there was none)
        self._base: object = _UNPINNED  # the ETag a write's next change is conditional on

    def _key(self, rel: str) -> str:
        return f"{self.prefix}/{rel}"

    def uri(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def read_text(self, rel: str) -> str | None:
        got = self.store.get(self._key(rel))
        return None if got is None else got[0].decode("utf-8")

    def create_settings(self, text: str) -> None:
        self.store.put(self._key("settings.json"), text.encode("utf-8"), if_none_match=True)

    def write_text(self, rel: str, text: str) -> None:  # one PUT: an object appears whole
        self.store.put(self._key(rel), text.encode("utf-8"))

    def commit_files(self) -> list[tuple[str, tuple]]:
        got = self.store.get(self._key(HEAD))
        if got is None:
            self._head, self._etag = {}, None
            return []
        try:
            body = json.loads(got[0])
            if body.get("format") != HEAD_FORMAT:
                raise ValueError(f"format {body.get('format')!r}")
            self._head, self._etag = dict(body["records"]), got[1]
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise IndexFileError(f"dedup index {self.uri(HEAD)}: not the index's commit records ({e})") from None
        return [(name, (name, got[1])) for name in self._head]

    def read_commit(self, name: str) -> str:
        return json.dumps(self._head[name])

    def add_commit(self, name: str, text: str) -> None:
        self._advance({**self._head, name: json.loads(text)})

    def remove_commit(self, name: str) -> None:
        self._advance({k: v for k, v in self._head.items() if k != name})

    def _advance(self, records: dict[str, dict]) -> None:
        """The next version of HEAD, conditional on the version this write started from (the
        one last read outside a write: module docstring)."""
        base = self._etag if self._base is _UNPINNED else self._base
        data = json.dumps({"format": HEAD_FORMAT, "records": records}, sort_keys=True).encode("utf-8")
        etag = self.store.put_etag(self._key(HEAD), data, if_none_match=base is None, if_match=base)
        if not etag:
            raise self.error(
                f"another writer committed the dedup index {self.root} while this one worked; nothing committed"
            )
        self._head, self._etag = records, etag
        if self._base is not _UNPINNED:
            self._base = etag

    def segment_dirs(self, top: str) -> list[str]:
        return [p.rstrip("/").rsplit("/", 1)[-1] for p in self.store.subdirs(self._key(f"{top}/"))]

    def delete_dir(self, rel: str) -> None:
        self.store.delete_prefix(self._key(f"{rel}/"))

    def parquet_files(self, rel: str) -> list[str]:
        return []  # layout 0 (Spark's own files) was never written to a store

    @contextmanager
    def lock(self, error: type[Locked]) -> Iterator[Lock]:
        """``INDEX/.lock`` (If-None-Match: *), and the version of the commit records this write
        starts from: every change it makes is conditional on that version (then on its own
        last), so a writer whose lock was broken cannot commit over another's commit."""
        from etl.runtime.objstore import StoreLockFiles

        with Lock(self.uri(".lock"), WRITER, StoreLockFiles(self.store), error) as held:
            self.commit_files()
            self._base = self._etag
            try:
                yield held
            finally:
                self._base = _UNPINNED
