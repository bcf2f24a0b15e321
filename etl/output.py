"""Atomic publication of a job's output directory through Hadoop's FileSystem API.

Everything is written under a sibling staging directory ``OUT.staging-<run>``; ``commit()``
renames it to ``OUT`` (a single directory rename: atomic on local disks and HDFS). A killed run
leaves only a staging directory, which the next run removes. Replacing an existing ``OUT``
needs ``overwrite=True``: the old tree is renamed aside, the new one moved in, the old deleted.
On object stores (s3a) rename is a copy; write to HDFS or local disk and publish from there, or
let the nightly refresh's ``CURRENT`` pointer (written last) be the atomic step.
"""

from __future__ import annotations

import logging
import uuid

from pyspark.sql import SparkSession

log = logging.getLogger("zhcorpus")
STAGING, RETIRED = ".staging-", ".retired-"


class OutputExists(FileExistsError):
    pass


class AtomicOutput:
    def __init__(self, spark: SparkSession, out: str, overwrite: bool = False):
        jvm = spark._jvm
        self._Path = jvm.org.apache.hadoop.fs.Path
        self.out = self._Path(out)
        self.fs = self.out.getFileSystem(spark._jsc.hadoopConfiguration())
        self.out = self.fs.makeQualified(self.out)
        if self.fs.exists(self.out) and not overwrite:
            raise OutputExists(f"{out} already exists; pass --overwrite to replace it")
        self.run_id = uuid.uuid4().hex[:12]
        self._remove_leftovers()
        self.staging = self._Path(self.out.toString() + STAGING + self.run_id)
        self.fs.mkdirs(self.staging)

    def path(self, name: str) -> str:
        """Where a component (``documents``, ``report.json`` ...) goes before commit."""
        return self._Path(self.staging, name).toString()

    def write_text(self, name: str, text: str) -> None:
        stream = self.fs.create(self._Path(self.staging, name), True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def delete(self, name: str) -> None:
        """Remove an intermediate component before commit."""
        self.fs.delete(self._Path(self.staging, name), True)

    def commit(self) -> str:
        retired = None
        if self.fs.exists(self.out):
            retired = self._Path(self.out.toString() + RETIRED + self.run_id)
            self._rename(self.out, retired)
        self._rename(self.staging, self.out)
        if retired is not None:
            self.fs.delete(retired, True)
        return self.out.toString()

    def abort(self) -> None:
        self.fs.delete(self.staging, True)

    def _rename(self, src, dst) -> None:
        if not self.fs.rename(src, dst):
            raise OSError(f"rename {src} -> {dst} failed")

    def _remove_leftovers(self) -> None:
        """Staging trees of killed runs, and a retired tree whose replacement did land."""
        parent, name = self.out.getParent(), self.out.getName()
        if not self.fs.exists(parent):
            return
        for st in self.fs.listStatus(parent):
            other = st.getPath().getName()
            if other.startswith(name + STAGING) or (other.startswith(name + RETIRED) and self.fs.exists(self.out)):
                log.info("removing leftover %s", st.getPath())
                self.fs.delete(st.getPath(), True)
