"""Distribute a verified model directory to every executor.

``SparkContext.addFile(dir, recursive=True)`` only works on local masters (a cluster refuses a
local directory: UNSUPPORTED_ADD_FILE.LOCAL_DIRECTORY), so the directory is zipped and shipped
with ``addArchive("x.zip#name")``: every executor unpacks it once, and ``SparkFiles.get(name)`` is
the unpacked directory there (and on the driver). ``name`` should include the content's sha256,
so two different models never share a name within one application.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession


def ship_directory(spark: SparkSession, directory: str | Path, name: str) -> str:
    """Zip ``directory`` (its files, not subdirectories) once per name and add it as an archive."""
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
