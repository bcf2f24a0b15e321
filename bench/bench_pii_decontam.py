"""Throughput of the personal-data and decontamination stages against the chain's budget, and
the n-gram sweep behind ``decontaminate.ngram``'s default.

    python -m bench.bench_pii_decontam [--documents DIR] [--cores 2] [--repeats 3] [--sweep]

Documents: the demo build's ``out/demo/corpus/documents`` when it exists (``make demo``), else the
demo crawl (``data/demo_crawl``, generated when missing) read and cleaned in this process. The
evaluation set: ``data/eval_sets`` from ``demo.eval_set`` (generated when missing).

Throughput is MB of document text (UTF-8) per second per core, in one plain Python process
(the per-document functions alone) and as a Spark stage at local[N] (the stage over a cached
frame into the no-op sink, less an identity ``mapInArrow`` over the same frame, which is the
cost any Arrow-batched stage pays). The anchor, measured in the same run on the same text, is
the cleaning rules (``filters.pangu.pipeline.Cleaner``). The chain targets >= 2 MB/s per core, that
is 0.5 s per MB: a stage at X MB/s per core takes 2 / X of that budget ("budget_share").

``--sweep`` runs the decontamination matcher at several n over the same documents. A hit
(document, item) is true when the document shares with the item a common substring of at least
half the item's normalised length (a copy, possibly edited), false otherwise (a shared title or
set phrase); "missed" counts documents that contain an item's original text (a cloze item with
its blank filled) and were not hit.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import statistics
import time
from pathlib import Path

from base.log import setup_logging
from bench import harness
from filters.dedup import decontam as dc
from filters.dedup import minhash as mh
from filters.pangu.config import RulesConfig
from filters.pangu.pipeline import Cleaner
from filters.text import pii

BUDGET_MB_S = 2.0  # the chain's target, MB/s per core
DEMO_DOCS, DEMO_CRAWL, EVAL_DIR = Path("out/demo/corpus/documents"), Path("data/demo_crawl"), Path("data/eval_sets")
SWEEP = (8, 10, 13, 16, 20, 25, 30)


def load_documents(documents: Path | None) -> list[dict]:
    """[{doc_id, text, source_file}] of the kept documents."""
    if documents and documents.exists():
        import pyarrow.parquet as pq

        return pq.read_table(documents, columns=["doc_id", "text", "source_file"]).to_pylist()
    from etl.clean.stage import clean_row, get_cleaner
    from etl.read.records import ReaderConfig, parse_file

    if not (DEMO_CRAWL / "MANIFEST.json").exists():
        from demo.crawl import build_demo_crawl

        build_demo_crawl(DEMO_CRAWL)
    cleaner, cfg, docs = get_cleaner(RulesConfig()), ReaderConfig(), []
    for f in sorted(p for sub in ("warc", "wet", "jsonl") for p in (DEMO_CRAWL / sub).rglob("*") if p.is_file()):
        for row in parse_file(str(f), f.read_bytes(), cfg):
            out = clean_row(row, cleaner)
            if out["kind"] == "record" and out["reason"] is None:
                docs.append({"doc_id": out["doc_id"], "text": out["text"], "source_file": out["source_file"]})
    return docs


def load_eval() -> tuple[list[dc.EvalItem], dict[tuple[str, str], str]]:
    """The demo evaluation items and, per item, its original text (cloze blank filled)."""
    if not (EVAL_DIR / "MANIFEST.json").exists():
        from demo.eval_set import write

        write(EVAL_DIR)
    items, originals = [], {}
    for f in sorted(EVAL_DIR.glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            o = json.loads(line)
            items.append(dc.EvalItem(f.stem, o["id"], o["text"]))
            originals[(f.stem, o["id"])] = o["text"].replace("（　　）", o["answer"]) if "answer" in o else o["text"]
    return items, originals


def timed(fn, texts: list[str], repeats: int) -> float:
    """Median seconds of ``fn`` over every text."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for t in texts:
            fn(t)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def plain_python(texts: list[str], items: list[dc.EvalItem], ngram: int, repeats: int) -> dict[str, float]:
    scrub = pii.PiiScrubber(pii.resolve_modes("redact"))
    matcher = dc.Matcher(dc.EvalIndex(items, ngram))
    cleaner = Cleaner(RulesConfig())
    return {
        "pii": timed(scrub, texts, repeats),
        "decontaminate": timed(matcher.hits, texts, repeats),
        "clean_anchor": timed(cleaner, texts, repeats),
    }


def spark_stages(docs: list[dict], cores: int, ngram: int, repeats: int) -> dict[str, float]:
    """Median seconds of each stage over a cached frame, less the identity mapInArrow's."""
    from pyspark.sql import functions as F

    from etl.clean.pii import PiiConfig, pii_stage
    from etl.decontaminate.stage import DecontaminateConfig, decontaminate_stage, prepare
    from etl.runtime.spark import get_spark

    spark = get_spark("bench-pii-decontam", f"local[{cores}]")
    frame = spark.createDataFrame(docs, "doc_id string, text string, source_file string").repartition(cores * 4)
    marked = frame.select(
        F.lit("record").alias("kind"),
        "doc_id",
        "text",
        F.lit(None).cast("string").alias("title"),
        F.lit(None).cast("string").alias("reason"),
        F.lit(None).cast("string").alias("stage"),
        F.lit(None).cast("string").alias("detail"),
        "source_file",
    ).cache()
    marked.count()
    dcfg = DecontaminateConfig(
        eval_sets=tuple(str(p) for p in sorted(EVAL_DIR.glob("*.jsonl"))), ngram=ngram, mode="report"
    )
    prepared = prepare(spark, dcfg)
    runs = {
        "identity": lambda: marked.mapInArrow(lambda it: it, marked.schema),
        "pii": lambda: pii_stage(marked, PiiConfig()),
        "decontaminate": lambda: decontaminate_stage(marked, dcfg, prepared),
    }
    out: dict[str, list[float]] = {k: [] for k in runs}
    for name, make in runs.items():  # untimed warm-up: Python workers started, matcher built
        make().write.format("noop").mode("overwrite").save()
    for _ in range(repeats):
        for name, make in runs.items():
            t0 = time.perf_counter()
            make().write.format("noop").mode("overwrite").save()
            out[name].append(time.perf_counter() - t0)
    spark.stop()
    return {k: statistics.median(v) for k, v in out.items()}


def sweep(texts: list[str], items: list[dc.EvalItem], originals: dict, sizes=SWEEP, min_chars=dc.DEFAULT_MIN_CHARS):
    """Per n: documents hit, true and false (document, item) hits, documents hit only falsely,
    documents containing an item's original text that were missed."""
    import opencc

    t2s = opencc.OpenCC("t2s").convert  # as EvalIndex indexes the items
    norms = [mh.normalise(t) for t in texts]
    orig = {k: mh.normalise(t2s(v)) for k, v in originals.items()}
    item_norm = {(it.benchmark, it.item_id): mh.normalise(t2s(it.text)) for it in items}
    contains = {(i, k) for i, d in enumerate(norms) for k, o in orig.items() if o and o in d}
    rows, verdicts = [], {}
    for n in sizes:
        m = dc.Matcher(dc.EvalIndex(items, n, min_chars))
        pairs = {(i, (h.benchmark, h.item_id)) for i, t in enumerate(texts) for h in m.hits(t)}
        for i, k in pairs - verdicts.keys():
            item = item_norm[k]
            sm = difflib.SequenceMatcher(None, item, norms[i], autojunk=False)
            verdicts[(i, k)] = sm.find_longest_match(0, len(item), 0, len(norms[i])).size * 2 >= len(item)
        true = {p for p in pairs if verdicts[p]}
        false_docs = {i for i, _ in pairs - true} - {i for i, _ in true}
        missed = {i for i, _ in contains} - {i for i, _ in pairs}
        rows.append(
            {
                "ngram": n,
                "documents_hit": len({i for i, _ in pairs}),
                "true_hits": len(true),
                "false_hits": len(pairs - true),
                "documents_hit_only_falsely": len(false_docs),
                "documents_with_an_item_missed": len(missed),
            }
        )
    return {
        "documents": len(texts),
        "documents_containing_an_item": len({i for i, _ in contains}),
        "min_chars": min_chars,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--documents",
        type=Path,
        default=DEMO_DOCS,
        help="Parquet documents (default: %(default)s, else the demo crawl cleaned in this process)",
    )
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--ngram", type=int, default=dc.DEFAULT_NGRAM)
    p.add_argument("--sweep", action="store_true", help="also the n-gram sweep (false and missed hits)")
    p.add_argument("--no-spark", action="store_true")
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()
    setup_logging(logging.WARNING)
    docs = load_documents(args.documents)
    items, originals = load_eval()
    texts = [d["text"] for d in docs]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    result: dict = {
        "documents": len(texts),
        "text_mb": round(mb, 2),
        "eval_items": len(items),
        "ngram": args.ngram,
        "repeats": args.repeats,
        "budget_mb_s_per_core": BUDGET_MB_S,
    }

    def rate(seconds: float, cores: int = 1) -> dict:
        per_core = mb / seconds / cores
        return {
            "s": round(seconds, 3),
            "mb_s_per_core": round(per_core, 2),
            "budget_share": round(BUDGET_MB_S / per_core, 4),
        }

    plain = plain_python(texts, items, args.ngram, args.repeats)
    result["plain_python"] = {k: rate(v) for k, v in plain.items()}
    for k in ("pii", "decontaminate"):
        result["plain_python"][k]["speed_vs_clean_anchor"] = round(plain["clean_anchor"] / plain[k], 2)
    if not args.no_spark:
        sp = spark_stages(docs, args.cores, args.ngram, args.repeats)
        result["spark"] = {"cores": args.cores, "identity_mapinarrow_s": round(sp["identity"], 3)}
        for k in ("pii", "decontaminate"):
            result["spark"][k] = {
                **rate(sp[k], args.cores),
                "net_of_identity": rate(max(sp[k] - sp["identity"], 1e-3), args.cores),
            }
    if args.sweep:
        result["sweep"] = sweep(texts, items, originals)
    print(json.dumps(result, indent=2))
    harness.write_result(args.result, "bench.bench_pii_decontam", args, result, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
