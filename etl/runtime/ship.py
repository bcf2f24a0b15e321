"""Distribute a verified model directory to every executor.

``SparkContext.addFile(dir, recursive=True)`` only works on local masters (a cluster refuses a
local directory: UNSUPPORTED_ADD_FILE.LOCAL_DIRECTORY), so the directory is zipped and shipped
with ``addArchive("x.zip#name")``: every executor unpacks it once, and ``SparkFiles.get(name)`` is
the unpacked directory there (and on the driver). ``name`` should include the content's sha256,
so two different models never share a name within one application.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession


def content_digest(directory: str | Path) -> str:
    """sha256 over the names and bytes of the directory's files: two directories that differ in
    any file (a model's metadata.json with a new threshold, not only its model.bin) differ."""
    h = hashlib.sha256()
    for p in sorted(Path(directory).iterdir()):
        if p.is_file():
            h.update(p.name.encode() + b"\0" + str(p.stat().st_size).encode() + b"\0")
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def ship_directory(spark: SparkSession, directory: str | Path, name: str) -> str:
    """Zip ``directory`` (its files, not subdirectories) once per content and add it as an
    archive. Returns the name the executors find it under: ``name`` plus a digest of every file,
    so a cached zip of an earlier state of the directory is never shipped (issue 23: a retrained
    threshold in metadata.json beside an unchanged model.bin was)."""
    name = f"{name}-{content_digest(directory)[:12]}"
    archive = Path(tempfile.gettempdir()) / f"{name}.zip"
    if not archive.exists():
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".zip", dir=archive.parent)
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            for p in sorted(Path(directory).iterdir()):
                if p.is_file():
                    z.write(p, p.name)
        os.replace(tmp, archive)  # concurrent jobs shipping the same name write identical bytes
    spark.sparkContext.addArchive(f"{archive}#{name}")  # a repeat within one application is a no-op
    return name
