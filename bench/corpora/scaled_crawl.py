"""A demo-shaped crawl N times the demo crawl's size, for benchmarks of what grows with the crawl.

    python -m bench.corpora.scaled_crawl --copies 8 [--output out/bench-corpus/crawl-x8] [--max-docs N]

The demo-crawl generator (``demo.crawl``) uses every source page once, so a larger crawl is made
of ``copies`` crawls from it: copy 0 is the demo crawl itself (seed 0), copy k is the generator at
seed k with the text of its clean pages remixed, each paragraph replaced by a run of consecutive
sentences from a random place in the same source (``bench.corpora.plain_text.paragraph``) of about the
same length. Everything else is the generator's: page kinds in the same proportions (ads,
sensitive words, traditional script, navigation bars, spam, English, duplicates, broken records,
the ~10 MB JSONL line), formats, charsets, compression. Without the remix every copy would repeat
the others' text and dedup would remove seven eighths of an 8x crawl.

Writes OUTPUT/seed-<k>/ (a demo crawl each, with its MANIFEST.json) and OUTPUT/SCALED.json (the
parameters); a directory whose SCALED.json has the same parameters is reused (``ensure_scaled_crawl``).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
from dataclasses import replace
from pathlib import Path

from base.log import setup_logging
from bench.corpora.plain_text import paragraph, sentence_streams
from demo.crawl import (
    AD_KEYWORDS_FILE,
    CHARSETS,
    MIB,
    SENSITIVE_DIR,
    build_manifest,
    choose_compression,
    layout_files,
    plan_documents,
    read_word_lists,
    render_files,
)
from demo.crawl.files import write_crawl
from demo.crawl.manifest import labels_tsv

VERSION = 1
FORMAT_DIRS = ("warc", "wet", "jsonl")
log = logging.getLogger("zhcorpus")


def remix(docs: list, seed: int) -> list:
    """Clean pages (not the origin of a duplicate, not a copy) get new paragraphs of the same
    sources and about the same lengths; other pages stay as planned, and so does a page whose
    new text its planned charset (GBK, ...) cannot encode."""
    rng, streams = random.Random(seed), sentence_streams()
    out = []
    for d in docs:
        if d.kind == "clean" and d.origin is None and not d.has_copies and d.source in streams:
            paras = [paragraph(streams[d.source], rng, max(len(p) - 20, 10), len(p) + 20) for p in d.paras]
            new = replace(d, paras=paras)
            codec = CHARSETS[d.charset].codec if d.charset else None
            if codec is None or _encodes(new.text(), codec):
                d = new
        out.append(d)
    return out


def _encodes(text: str, codec: str) -> bool:
    try:
        text.encode(codec)
    except UnicodeEncodeError:
        return False
    return True


def build_copy(
    out_dir: Path, seed: int, min_mb: float = 20.0, max_docs: int | None = None, big_line_mb: float = 10.0
) -> dict:
    """``demo.crawl.build_demo_crawl`` with ``remix`` between planning and layout."""
    lists = read_word_lists(Path(AD_KEYWORDS_FILE), Path(SENSITIVE_DIR))
    docs = plan_documents(seed, lists, max_docs)
    docs = remix(docs, seed) if seed else docs
    chunks = layout_files(docs, seed, big_line_mb)
    files = render_files(chunks, seed)
    choose_compression(files, int(min_mb * MIB))
    all_docs = [d for c in chunks for d in c.docs]
    params = {"seed": seed, "min_mb": min_mb, "max_docs": max_docs, "big_line_mb": big_line_mb, "remixed": bool(seed)}
    manifest = build_manifest(files, all_docs, lists, params)
    names = {f.chunk.stem: f.name for f in files}
    write_crawl(out_dir, files, manifest, labels_tsv(all_docs, names))
    return manifest


def ensure_scaled_crawl(out: Path, copies: int, max_docs: int | None = None, big_line_mb: float = 10.0) -> list[str]:
    """The input directories (``seed-k/{warc,wet,jsonl}``) of a crawl ``copies`` times the demo's."""
    params = {"version": VERSION, "copies": copies, "max_docs": max_docs, "big_line_mb": big_line_mb}
    stamp = out / "SCALED.json"
    if not (stamp.exists() and json.loads(stamp.read_text()) == params):
        out.mkdir(parents=True, exist_ok=True)
        stamp.unlink(missing_ok=True)
        for k in range(copies):
            manifest = build_copy(out / f"seed-{k}", k, max_docs=max_docs, big_line_mb=big_line_mb)
            log.info("scaled crawl: copy %d/%d, %.1f MiB", k + 1, copies, manifest["total_bytes"] / MIB)
        stamp.write_text(json.dumps(params))
    return [str(out / f"seed-{k}" / d) for k in range(copies) for d in FORMAT_DIRS]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.corpora.scaled_crawl",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--output", type=Path, default=None, help="default: out/bench-corpus/crawl-x<copies>")
    ap.add_argument("--max-docs", type=int, default=None, help="cap on source pages per copy (small test crawls)")
    ap.add_argument("--big-line-mb", type=float, default=10.0)
    args = ap.parse_args(argv)
    setup_logging()
    out = args.output or Path(f"out/bench-corpus/crawl-x{args.copies}")
    inputs = ensure_scaled_crawl(out, args.copies, args.max_docs, args.big_line_mb)
    print("\n".join(inputs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
