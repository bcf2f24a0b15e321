"""The rule judge on text that is not the demo's: a crawl and a held-out dev set cut from the
out-of-domain evaluation set (``python -m bench.evals.sets.ood``: statutes, web fiction, an idiom glossary,
six keyword-free spam families, site chrome; docs/quality.md).

    python -m bench.evals.sets.judge_ood --ood data/ood/ood.jsonl --output data/judge_ood [--dev-share 0.4] [--seed 0]

The dev set is a share of the *simplified-script* good documents of each genre (the chain turns
traditional script into simplified; a dev document in traditional script would be scored in
characters no variant trains on), chosen by the smallest sha256(seed, id); everything else,
spam, chrome and the traditional-script documents included, is the crawl. Writes
OUTPUT/crawl.jsonl (``id``, ``text``, ``title``, ``source`` = "ood"), OUTPUT/dev.jsonl (``id``,
``text``) and OUTPUT/MANIFEST.json (counts per label and genre, the OOD set's sha256). The same
input, share and seed give the same bytes. Used by docs/judge.md with bench/evals/judge_ood_variants.toml.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from pathlib import Path

SOURCE = "ood"  # one source for the crawl: the proxies' data stream blends nothing


def _key(seed: int, doc_id: str) -> str:
    return hashlib.sha256(f"{seed}\0{doc_id}".encode()).hexdigest()


def split(records: list[dict], dev_share: float, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(crawl, dev): per good genre, round(dev_share x its simplified documents) go to dev, those
    with the smallest sha256(seed, id); the crawl keeps file order."""
    by_genre: dict[str, list[dict]] = {}
    for r in records:
        if r["label"] == "good" and r["script"] == "simplified":
            by_genre.setdefault(r["family"], []).append(r)
    dev_ids = set()
    for genre in sorted(by_genre):
        docs = sorted(by_genre[genre], key=lambda r: _key(seed, r["id"]))
        dev_ids.update(r["id"] for r in docs[: round(dev_share * len(docs))])
    return [r for r in records if r["id"] not in dev_ids], sorted(
        (r for r in records if r["id"] in dev_ids), key=lambda r: r["id"]
    )


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def write(ood: Path, output: Path, dev_share: float, seed: int) -> dict:
    """Write crawl.jsonl, dev.jsonl and MANIFEST.json; returns the manifest."""
    data = ood.read_bytes()
    records = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    crawl, dev = split(records, dev_share, seed)
    output.mkdir(parents=True, exist_ok=True)
    (output / "crawl.jsonl").write_bytes(
        _jsonl([{"id": r["id"], "text": r["text"], "title": r["title"], "source": SOURCE} for r in crawl])
    )
    (output / "dev.jsonl").write_bytes(_jsonl([{"id": r["id"], "text": r["text"]} for r in dev]))
    count = lambda rows: dict(sorted(Counter(f"{r['label']}/{r['family']}" for r in rows).items()))  # noqa: E731
    manifest = {
        "ood": str(ood),
        "ood_sha256": hashlib.sha256(data).hexdigest(),
        "dev_share": dev_share,
        "seed": seed,
        "crawl": {"records": len(crawl), "by_family": count(crawl)},
        "dev": {"records": len(dev), "characters": sum(len(r["text"]) for r in dev), "by_family": count(dev)},
    }
    (output / "MANIFEST.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=2), encoding="utf-8")
    return manifest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.evals.sets.judge_ood", description=__doc__.split("\n\n")[0])
    p.add_argument("--ood", default="data/ood/ood.jsonl", help="the OOD set (python -m bench.evals.sets.ood)")
    p.add_argument("--output", default="data/judge_ood")
    p.add_argument("--dev-share", type=float, default=0.4, help="share of each genre's simplified good documents")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    m = write(Path(args.ood), Path(args.output), args.dev_share, args.seed)
    print(
        f"{args.output}: crawl {m['crawl']['records']} records, dev {m['dev']['records']} documents "
        f"({m['dev']['characters']:,} characters)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
