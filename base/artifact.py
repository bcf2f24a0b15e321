"""Model and index files as artifacts (issue 35, item 2): one place for what every model kind
(fastText classifiers, the fluency model and its reference profile, the SentencePiece tokenizer,
the template rule's reference keys) does before it trusts a file: hash it, compare the hash with
what its metadata and the config claim, and refuse in one line (``ModelError``, exit 2) when they
differ or the directory is not a model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from base.errors import Refusal

META_FILE = "metadata.json"


class ModelError(Refusal, RuntimeError):
    """A model directory that is missing, corrupted, or not the model it claims to be."""


def sha256_file(path: str | Path) -> str:
    """The sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def require_sha256(path: Path, recorded: str | None, expected: str | None) -> str:
    """The sha256 of ``path``; ``ModelError`` when it is not the one metadata.json records or the
    config expects (either may be empty: not checked)."""
    actual = sha256_file(path)
    for claimed, where in ((recorded, "metadata.json"), (expected, "the config")):
        if claimed and claimed != actual:
            raise ModelError(
                f"model checksum mismatch for {path}: sha256 {actual[:16]}... but {where} says "
                f"{claimed[:16]}...; the file is corrupted or not this model"
            )
    return actual


def read_metadata(model_dir: Path, model_file: str, kind: str = "model") -> dict[str, Any]:
    """A model directory's metadata.json, which must sit beside ``model_file``; ``kind`` names the
    directory in the error (``ModelError``: a file missing, the JSON not valid)."""
    meta_path, model_path = model_dir / META_FILE, model_dir / model_file
    if not model_path.is_file() or not meta_path.is_file():
        raise ModelError(f"{model_dir} is not a {kind} directory (needs {model_file} and {META_FILE})")
    try:
        return json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ModelError(f"{meta_path} is not valid JSON: {e}") from e
