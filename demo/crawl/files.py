"""Output files: records joined and gzipped (one member per WARC/WET record), the choice of which
files stay uncompressed, and the atomic write of the crawl directory."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from .layout import Chunk
from .model import MIB
from .render import jsonl_line, warc_records, wet_records

log = logging.getLogger("zhcorpus")


@dataclass
class OutFile:
    chunk: Chunk
    records: list[bytes]
    gz: bytes = b""
    compressed: bool = True

    @property
    def name(self) -> str:
        return self.chunk.stem + (".gz" if self.compressed else "")

    @property
    def plain_size(self) -> int:
        return sum(map(len, self.records))

    def data(self) -> bytes:
        return self.gz if self.compressed else b"".join(self.records)


def _gzip(chunk: Chunk, records: list[bytes]) -> bytes:
    """WARC and WET: one gzip member per record, as Common Crawl writes them. mtime=0 keeps the
    bytes identical from run to run."""
    if chunk.fmt == "jsonl":
        return gzip.compress(b"".join(records), compresslevel=6, mtime=0)
    members = [gzip.compress(r, compresslevel=6, mtime=0) for r in records]
    if chunk.truncate_last:
        members[-1] = members[-1][: len(members[-1]) // 2]
    return b"".join(members)


def render_files(chunks: list[Chunk], seed: int) -> list[OutFile]:
    files = []
    for chunk in chunks:
        if chunk.fmt == "warc":
            records = warc_records(chunk, seed)
        elif chunk.fmt == "wet":
            records = wet_records(chunk, seed)
        else:
            records = [jsonl_line(d) for d in chunk.docs]
        compressed = chunk.compress != "never"
        gz = _gzip(chunk, records) if compressed else b""
        files.append(OutFile(chunk, records, gz, compressed))
    return files


def choose_compression(files: list[OutFile], min_bytes: int) -> None:
    """Everything that may be compressed is, unless the crawl would fall short of min_bytes: then
    the files that gain most are left plain, one by one (never by repeating text)."""
    total = sum(len(f.data()) for f in files)
    candidates = sorted(
        (f for f in files if f.chunk.compress == "prefer"), key=lambda f: (len(f.gz) - f.plain_size, f.chunk.stem)
    )
    for f in candidates:
        if total >= min_bytes:
            break
        total += f.plain_size - len(f.gz)
        f.compressed = False
    if total < min_bytes:
        log.warning("source text exhausted: %.1f MiB < --min-mb %.1f", total / MIB, min_bytes / MIB)


def write_crawl(out_dir: Path, files: list[OutFile], manifest: dict, labels: bytes) -> None:
    """Write beside out_dir, then swap it in: a killed run leaves no half-written crawl. An
    existing directory is replaced only if it is empty or a demo crawl (has MANIFEST.json)."""
    if out_dir.exists() and any(out_dir.iterdir()) and not (out_dir / "MANIFEST.json").exists():
        raise FileExistsError(f"{out_dir} exists and is not a demo crawl; refusing to replace it")
    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    for f in files:
        (tmp / f.name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / f.name).write_bytes(f.data())
    (tmp / "labels.tsv").write_bytes(labels)
    (tmp / "MANIFEST.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
