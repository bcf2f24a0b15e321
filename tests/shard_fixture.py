"""Token shards written by hand in the layout etl/shards/stage.py produces (.bin/.idx + .src sidecar +
manifest.json), for tests of the training side that need no Spark."""

from __future__ import annotations

import hashlib
import json
import struct
from collections import Counter
from pathlib import Path

import numpy as np

from base.indexed_dataset import IndexedDatasetWriter


def write_corpus(
    root: Path,
    docs: list[tuple[int, str, list[int]]],
    num_shards: int,
    sources: list[str],
    eod_id: int = 0,
    vocab_size: int | None = None,
) -> Path:
    """Shards + ``.src`` sidecars + manifest.json by hand (the layout etl/shards/stage.py writes).
    ``docs``: (shard, source, tokens with <eod>)."""
    root.mkdir(parents=True, exist_ok=True)
    entries, per_source = [], Counter()
    for i in range(num_shards):
        name, mine = f"shard-{i:05d}", [(s, t) for sh, s, t in docs if sh == i]
        with IndexedDatasetWriter(root / name, np.uint16) as w:
            for _, tokens in mine:
                w.add_document(tokens)
        (root / f"{name}.src").write_bytes(struct.pack(f"<{len(mine)}H", *(sources.index(s) for s, _ in mine)))
        tps = Counter()
        for s, t in mine:
            tps[s] += len(t)
        per_source.update(tps)
        entry = {
            "name": name,
            "documents": len(mine),
            "tokens": sum(len(t) for _, t in mine),
            "tokens_per_source": dict(sorted(tps.items())),
        }
        for kind in ("bin", "idx", "src"):
            data = (root / f"{name}.{kind}").read_bytes()
            entry.update(
                {kind: f"{name}.{kind}", f"{kind}_sha256": hashlib.sha256(data).hexdigest(), f"{kind}_bytes": len(data)}
            )
        entries.append(entry)
    manifest = {
        "format": "megatron-mmidxidx-v1",
        "dtype": "uint16",
        "eod_id": eod_id,
        "sources": sources,
        "shards": entries,
        "tokens_per_source": dict(sorted(per_source.items())),
    }
    if vocab_size is not None:
        manifest["vocab_size"] = vocab_size
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root / "manifest.json"
