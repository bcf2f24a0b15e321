"""Publishing an output on S3 (and S3-compatible stores), which has no rename: the commit
protocol of ``base.committed``, written from the driver.

    with publish_output("s3://bucket/corpus", overwrite, spark, cfg.reader.s3) as out:
        out.write_parquet("documents", frame)            # executors write Parquet through pyarrow
        out.write_text("report.json", text)
    # the commit object is written last; an exception removes the attempt, the old commit stays

One output, step by step (each step a failpoint that ``tests/test_s3_write.py`` kills):

1. take ``DEST/_lock``: created by a conditional PUT (``If-None-Match: *``), so of two writers
   exactly one gets it and the other is refused (``OutputLocked``, exit 3) before any work; a
   lock left by a dead process on this host is taken over (``etl.runtime.locks``);
2. remove what a killed writer left: every ``DEST/_attempt-*`` the commit does not name, and
   their unfinished multipart uploads;
3. write every file under ``DEST/_attempt-<run>/`` (``publish:upload`` after the first);
   each file is recorded with its size and sha256 as it is written (``publish:staged`` after the last);
4. check the listing against the record and write ``DEST/_commit.json``, conditionally on the
   commit it replaces (``If-Match`` its ETag; ``If-None-Match: *`` when there was none): the
   commit point (``publish:committed`` after it);
5. remove the replaced attempt, release the lock.

A reader (``base.committed``) sees the old commit or the new one, never a mix: nothing outside
the committed attempt is ever read. Killed before step 4, a re-run removes the attempt and
publishes the same content; killed after it, the output is complete and a re-run only finds
the leftovers (the old attempt, the lock) to remove.

``publish_output`` picks the store from the output's scheme: ``s3://`` here, ``s3a://`` refused in
one line (no Hadoop S3 connector ships with pyspark; the same bucket is written as ``s3://``),
anything else ``etl.runtime.publish.publish_dir`` (local disk, HDFS) as before.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from contextlib import contextmanager
from typing import Iterator

from base import committed as cm
from base.errors import Refusal
from base.s3 import S3Access, S3Config, S3Refused, is_s3, split
from etl.runtime.failpoints import failpoint
from etl.runtime.locks import Lock, Locked
from etl.runtime.paths import refuse_s3a
from etl.runtime.publish import HadoopStorage, OutputExists, publish_dir

log = logging.getLogger("zhcorpus")


class OutputLocked(Locked):
    """Another writer holds the output (or committed it while this one worked)."""


class OutputBucketMissing(FileNotFoundError):
    """The output names a bucket that does not exist on the endpoint."""


_DENIED = ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "403")


class Store:
    """The driver's requests to one bucket (boto3: conditional PUTs, listings, batch deletes),
    with the endpoint, region and credentials of ``access`` (the readers' ``reader.s3``)."""

    def __init__(self, access: S3Access, bucket: str, what: str):
        import boto3
        from botocore import UNSIGNED
        from botocore.config import Config

        cfg = access.cfg
        style = "virtual" if cfg.virtual_addressing else ("path" if access.endpoint else "auto")
        config = Config(
            s3={"addressing_style": style},
            connect_timeout=cfg.connect_timeout_s,
            read_timeout=cfg.request_timeout_s,
            retries={"max_attempts": max(1, cfg.retries), "mode": "standard"},
            **({"signature_version": UNSIGNED} if cfg.anonymous else {}),
        )
        self.client = boto3.client(
            "s3",
            region_name=access.region,
            endpoint_url=f"{access.scheme}://{access.endpoint}" if access.endpoint else None,
            aws_access_key_id=access.access_key,
            aws_secret_access_key=access.secret_key,
            aws_session_token=access.session_token,
            config=config,
        )
        self.bucket, self.what, self.where = bucket, what, access.endpoint or "AWS"

    def _refusal(self, e: Exception, key: str) -> Exception:
        """A ClientError as the job's one-line refusal when it is one (missing bucket, 403)."""
        code = str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))
        if code == "NoSuchBucket":
            return OutputBucketMissing(f"{self.what} bucket does not exist on {self.where}: s3://{self.bucket}/{key}")
        if code in _DENIED:
            return S3Refused(
                f"access denied writing s3://{self.bucket}/{key} on {self.where}: check the credentials "
                f"and the bucket policy ({code})"
            )
        return e

    def get(self, key: str) -> tuple[bytes, str] | None:
        """(bytes, ETag) of ``key``, or None."""
        try:
            r = self.client.get_object(Bucket=self.bucket, Key=key)
        except self.client.exceptions.NoSuchKey:
            return None
        except Exception as e:  # botocore.exceptions.ClientError
            raise self._refusal(e, key) from e
        return r["Body"].read(), r["ETag"]

    def put(self, key: str, data: bytes, if_none_match: bool = False, if_match: str | None = None) -> bool:
        """Write ``key``; False when a condition did not hold (``If-None-Match: *``: the key
        exists; ``If-Match``: it is not that ETag any more)."""
        return self.put_etag(key, data, if_none_match, if_match) is not None

    def put_etag(self, key: str, data: bytes, if_none_match: bool = False, if_match: str | None = None) -> str | None:
        """``put``, returning the new object's ETag (what the next conditional put names), or
        None when a condition did not hold."""
        kw = {"IfNoneMatch": "*"} if if_none_match else {"IfMatch": if_match} if if_match else {}
        try:
            r = self.client.put_object(Bucket=self.bucket, Key=key, Body=data, **kw)
        except Exception as e:
            code = str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))
            if code in ("PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey") and kw:
                return None
            raise self._refusal(e, key) from e
        return r.get("ETag") or ""

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=key)

    def list(self, prefix: str) -> dict[str, int]:
        """key -> size of every object under ``prefix``."""
        out: dict[str, int] = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            out.update((o["Key"], o["Size"]) for o in page.get("Contents", []))
        return out

    def subdirs(self, prefix: str) -> list[str]:
        """The ``a/`` of every ``prefix + a/...`` key (one listing level)."""
        found: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix, Delimiter="/"
        ):
            found += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
        return found

    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under ``prefix`` and abort its unfinished multipart uploads."""
        keys = sorted(self.list(prefix))
        for i in range(0, len(keys), 1000):
            self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in keys[i : i + 1000]], "Quiet": True}
            )
        for page in self.client.get_paginator("list_multipart_uploads").paginate(Bucket=self.bucket, Prefix=prefix):
            for u in page.get("Uploads", []):
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=u["Key"], UploadId=u["UploadId"])
        return len(keys)


class StoreLockFiles:
    """``etl.runtime.locks.LockFiles`` on a store: creation is a conditional PUT, atomic on S3
    (and on moto's server, which checks ``If-None-Match``)."""

    def __init__(self, store: Store):
        self.store = store

    def create(self, path: str, text: str) -> bool:
        return self.store.put(split(path)[2], text.encode("utf-8"), if_none_match=True)

    def read(self, path: str) -> str:
        got = self.store.get(split(path)[2])
        if got is None:
            raise FileNotFoundError(path)
        return got[0].decode("utf-8", errors="replace")

    def remove(self, path: str) -> None:
        self.store.delete(split(path)[2])


def store_lock(uri: str, access: S3Access, holder: str, error: type[Locked] = OutputLocked) -> Lock:
    """A writer lock at ``uri`` (an object key) on the store."""
    _, bucket, _ = split(uri)
    return Lock(uri, holder, StoreLockFiles(Store(access, bucket, "output")), error)


class S3Staging:
    """Where an attempt is written: the ``etl.runtime.publish.Staging`` interface, on a store.
    Every file is recorded (size, sha256) as it is written; the commit lists exactly those."""

    def __init__(self, store: Store, access: S3Access, dest: str, run: str):
        self.store, self.access, self.dest, self.run = store, access, dest, run
        self.root = f"{dest}/{cm.ATTEMPT}{run}"
        self.files: dict[str, cm.FileEntry] = {}

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def _key(self, name: str) -> str:
        return split(self.path(name))[2]

    def record(self, name: str, size: int, sha256: str) -> None:
        """A file written by someone else (an executor) under ``path(name)``."""
        self.files[name] = cm.FileEntry(size, sha256)
        if len(self.files) == 1:
            failpoint("publish:upload")

    def write_bytes(self, name: str, data: bytes) -> None:
        self.store.put(self._key(name), data)
        self.record(name, len(data), hashlib.sha256(data).hexdigest())

    def write_text(self, name: str, text: str) -> None:
        self.write_bytes(name, text.encode("utf-8"))

    def put_tree(self, name: str, local) -> None:
        """A local file, or every file under a local directory, to ``name``."""
        from pathlib import Path

        from etl.runtime.s3frames import upload

        local = Path(local)
        for f in sorted([local] if local.is_file() else (p for p in local.rglob("*") if p.is_file())):
            rel = name if f == local else f"{name}/{f.relative_to(local).as_posix()}".lstrip("/")
            self.record(rel, *upload(f, self.path(rel), self.access))

    def adopt(self, name: str) -> None:
        """Record a small file an executor or a library wrote under ``path(name)`` (read back once)."""
        got = self.store.get(self._key(name))
        if got is None:
            raise FileNotFoundError(self.path(name))
        self.record(name, len(got[0]), hashlib.sha256(got[0]).hexdigest())

    def read_bytes(self, name: str) -> bytes:
        """A file of this attempt, checked against its record."""
        got = self.store.get(self._key(name))
        data = got[0] if got else b""
        if name not in self.files or cm.FileEntry(len(data), hashlib.sha256(data).hexdigest()) != self.files[name]:
            raise cm.CommitError(f"{self.path(name)}: not the file recorded for this attempt")
        return data

    def write_parquet(self, name: str, df) -> None:
        from etl.runtime.s3frames import write_frame

        for rel, size, sha in write_frame(df, self.path(name), self.access):
            self.record(f"{name}/{rel}", size, sha)

    def read_parquet(self, spark, name: str):
        from etl.runtime.s3frames import read_frame

        return read_frame(spark, [self.path(n) for n in sorted(self.files) if n.startswith(name + "/")], self.access)

    def delete(self, name: str) -> None:
        """Remove an intermediate component: from the record, and from the store."""
        for n in [n for n in self.files if n == name or n.startswith(name + "/")]:
            del self.files[n]
        self.store.delete_prefix(self._key(name) + "/")
        self.store.delete(self._key(name))

    def check(self) -> None:
        """Every recorded file is on the store at its size; objects nobody recorded (a task
        attempt that lost its race) are removed, so the attempt holds exactly the commit's files."""
        prefix = self._key("")
        listed = self.store.list(prefix)
        for name, entry in self.files.items():
            size = listed.pop(prefix + name, None)
            if size != entry.size:
                raise cm.CommitError(
                    f"{self.path(name)}: {size} bytes on the store, {entry.size} written; not committing"
                )
        for key in listed:
            log.info("removing s3://%s/%s: written by a task attempt that lost", self.store.bucket, key)
            self.store.delete(key)


@contextmanager
def publish_s3(dest: str, overwrite: bool, access: S3Access) -> Iterator[S3Staging]:
    """The commit protocol of the module docstring; ``dest`` is ``s3://bucket/prefix``."""
    dest = dest.rstrip("/")
    _, bucket, prefix = split(dest)
    if not prefix:
        raise Refusal(f"refusing output {dest}: name a prefix inside the bucket (s3://{bucket}/corpus)")
    store = Store(access, bucket, "output")
    with Lock(f"{dest}/{cm.LOCK_FILE}", f"another writer of {dest}", StoreLockFiles(store), OutputLocked):
        got = store.get(f"{prefix}/{cm.COMMIT_FILE}")
        old = cm.Commit.parse(dest, *got) if got else None
        _remove_leftovers(store, prefix, old)
        if old is not None and not overwrite:
            raise OutputExists(f"{dest} already exists (committed); pass --overwrite to replace it")
        staging = S3Staging(store, access, dest, uuid.uuid4().hex[:12])
        try:
            yield staging
            failpoint("publish:staged")
            staging.check()
            record = cm.Commit.record(staging.run, staging.files)
            key = f"{prefix}/{cm.COMMIT_FILE}"
            if not store.put(key, record, if_none_match=old is None, if_match=old.etag if old else None):
                raise OutputLocked(f"another writer committed {dest} while this one worked; nothing published")
        except BaseException:
            store.delete_prefix(split(staging.root)[2] + "/")
            raise
        failpoint("publish:committed")
        if old is not None:
            store.delete_prefix(f"{prefix}/{cm.ATTEMPT}{old.attempt}/")
        log.info("published %s (%d files, attempt %s)", dest, len(staging.files), staging.run)


def _remove_leftovers(store: Store, prefix: str, current: cm.Commit | None) -> None:
    keep = f"{prefix}/{cm.ATTEMPT}{current.attempt}/" if current else None
    for sub in store.subdirs(f"{prefix}/{cm.ATTEMPT}"):
        if sub != keep:
            log.warning("removing s3://%s/%s left by an interrupted writer", store.bucket, sub)
            store.delete_prefix(sub)


def refuse_store_index(index_dir: str | None) -> None:
    """A dedup index at ``s3a://``: the one-line refusal naming ``s3://`` (no Hadoop S3 connector
    ships with pyspark; ``etl.dedup.index_store`` keeps an index on ``s3://``)."""
    if index_dir:
        refuse_s3a(index_dir, "dedup index")


def publish_output(output: str, overwrite: bool, spark, s3: S3Config | None = None):
    """The publishing context for ``output``: the commit protocol above for ``s3://``, a
    one-line refusal for ``s3a://``, ``publish_dir`` through Hadoop's file system otherwise."""
    refuse_s3a(output)
    if is_s3(output):
        return publish_s3(output, overwrite, S3Access.resolve(s3 or S3Config()))
    return publish_dir(output, overwrite, HadoopStorage(spark))


def read_parquet(spark, paths: list[str], s3: S3Config | None = None):
    """Parquet directories as one DataFrame: Spark's reader, or for ``s3://`` paths the files a
    committed output lists under them (``base.committed``: a path inside an output published by
    these jobs, e.g. ``s3://b/clean/documents``), read by the executors through pyarrow."""
    if not any(is_s3(p) for p in paths):
        return spark.read.parquet(*paths)
    from etl.runtime.s3frames import read_frame

    access = S3Access.resolve(s3 or S3Config())
    return read_frame(spark, committed_files(paths, access), access)


def committed_files(paths: list[str], access: S3Access) -> list[str]:
    """The physical URIs of the committed Parquet files at or under each ``s3://`` path."""
    fs, found, commits = access.filesystem(), [], {}
    for p in paths:
        commit, name = cm.resolve("s3://" + p.split("://", 1)[1].rstrip("/"), fs, commits)  # s3a: the same store
        names = [n for n in commit.names(name) if n.endswith(".parquet")]
        if not names:
            raise FileNotFoundError(f"{p}: no Parquet files in the output committed at {commit.root}")
        found += [commit.physical(n) for n in names]
    return found
