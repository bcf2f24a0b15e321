"""A night's dedup against a growing index (issue 24): the same night against indexes of 1x, 10x
and 100x its documents, and the index's file count after a year of small nights.

    python -m bench.bench_nightly [--night-docs 5000] [--sizes 1 10 100] [--repeats 3] [--nights 365]
                                  [--out out/bench/nightly.json]

The night: ``--night-docs`` Chinese documents (four People's Daily paragraphs each, drawn at
random), 1 % of them near copies (one character changed) and 0.5 % exact copies of indexed
documents. The 1x index holds the real band and exact keys of the documents those copies come
from (``--night-docs`` of them); the 10x and 100x indexes add synthetic rows in the index's own
schema (random 64-bit band keys, random digests), written directly as Parquet by
``DedupIndex.append_arrow``: one segment, as after a compaction. Every size must find the same
duplicates (checked).

A night = ``etl.dedup.stage.dedup`` of the night's documents against the index (signatures, the
index lookup, candidate edges, verification, components) and the append of its survivors' keys
as a new batch (retracted after each run): the part of a nightly refresh whose cost can grow
with the index. Reading, cleaning and tokenizing do not depend on it. One untimed warm-up, then
``--repeats`` rounds over the sizes in turn (a change of the shared machine's load hits every
size alike); medians reported.

Measures per size: seconds (wall) and CPU seconds of the whole process tree; the lookup's
seconds, where it ran (driver, or Spark tasks above ``dedup.index.driver_max_rows``), index rows
per second per core (index rows / lookup seconds / cores the lookup used: the rate at which a
night gets through an index, row groups skipped by their statistics included) and rows decoded
per CPU second of the lookup; shuffle bytes of the night's Spark stages (the Spark UI's REST
API, on 127.0.0.1) next to the index's bytes; the index's files and the most files a bucket's
lookup opens. Then ``--nights`` small nights (``--small-docs`` documents each, synthetic keys)
appended to a fresh index with the nightly's compaction rule after each: the files at the end,
the compactions run, and how often a row was rewritten on average.

Targets (issue 24): the index is never shuffled (shuffle bytes do not grow with it); >= 10 M
index rows per second per core; 100x <= 2 x the 1x night; after a year, a few files per band and
bucket.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import socket
import statistics
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa

from base.log import setup_logging
from bench import harness
from bench.harness import CpuMeter
from etl.dedup import local as dl
from etl.dedup.index import DedupIndex, IndexConfig
from etl.dedup.stage import DedupConfig, dedup, signatures

log = logging.getLogger("zhcorpus")


def paragraphs() -> list[str]:
    from demo.sources import news_pages

    return [p for _, paras, _ in news_pages() for p in paras if len(p) >= 60]


def documents(paras: list[str], n: int, seed: int, prefix: str) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [(f"{prefix}-{i:06d}", "\n".join(rng.sample(paras, 4))) for i in range(n)]


def night_and_published(n: int, seed: int = 1) -> tuple[pa.Table, pa.Table, dict[str, str]]:
    """(published documents, the night's documents, night doc_id -> the published doc_id it copies)."""
    paras = paragraphs()
    published = documents(paras, n, seed, "pub")
    night = documents(paras, n, seed + 1, "night")
    rng = random.Random(seed + 2)
    copies = {}
    for i, j in enumerate(rng.sample(range(n), max(1, n // 100) + max(1, n // 200))):
        text = published[j][1]
        exact = i < max(1, n // 200)
        night[i] = (f"night-copy{i:05d}", text if exact else text[:50] + "的" + text[51:])
        copies[night[i][0]] = published[j][0]
    as_table = lambda docs: pa.table({"doc_id": [d for d, _ in docs], "text": [t for _, t in docs]})  # noqa: E731
    return as_table(published), as_table(night), copies


def real_keys(spark, docs: pa.Table, cfg: DedupConfig) -> tuple[pa.Table, pa.Table]:
    """(band, key, doc_id) and (exact_key, doc_id) of ``docs``, as a build would index them."""
    p = cfg.minhash.resolved()
    keys = signatures(spark.createDataFrame(docs), p).toArrow()
    return dl.band_table(keys, p.bands), keys.select(["exact_key", "doc_id"])


def synthetic_keys(n: int, bands: int, seed: int) -> tuple[pa.Table, pa.Table]:
    """``n`` documents' rows in the index's schema: random band keys, random 128-bit digests."""
    rng = np.random.default_rng(seed)
    ids = pa.array([f"syn{seed}-{i:09d}" for i in range(n)])
    keys = rng.integers(-(2**63), 2**63 - 1, (n, bands), dtype=np.int64)
    band_rows = pa.table(
        {
            "band": pa.array(np.tile(np.arange(bands, dtype=np.int32), n)),
            "key": keys.ravel(),
            "doc_id": ids.take(pa.array(np.repeat(np.arange(n), bands))),
        }
    )
    digests = rng.integers(0, 2**63, (n, 2), dtype=np.int64)
    exact = pa.table({"exact_key": [f"{a:016x}{b:016x}" for a, b in digests.tolist()], "doc_id": ids})
    return band_rows, exact


def build_index(spark, root: Path, cfg: DedupConfig, base: tuple[pa.Table, pa.Table], extra_docs: int) -> DedupIndex:
    index = DedupIndex(spark, str(root), cfg.minhash.resolved(), cfg.index)
    bands, exact = base
    if extra_docs:
        syn_bands, syn_exact = synthetic_keys(extra_docs, cfg.minhash.resolved().bands, seed=extra_docs)
        bands, exact = pa.concat_tables([bands, syn_bands]), pa.concat_tables([exact, syn_exact])
    index.append_arrow(bands, exact, "base")
    return index


def stage_metrics(spark, group: str) -> dict:
    """Shuffle and input bytes, and stages, of the jobs of ``group`` (the Spark UI's REST API)."""
    sc = spark.sparkContext
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
    time.sleep(1.0)  # the UI's listener runs behind the jobs
    jobs = json.load(urllib.request.urlopen(f"{base}/jobs"))
    ids = {s for j in jobs if j.get("jobGroup") == group for s in j["stageIds"]}
    stages = [s for s in json.load(urllib.request.urlopen(f"{base}/stages")) if s["stageId"] in ids]
    lookup = {
        s
        for j in jobs
        if j.get("jobGroup") == group and "index lookup" in (j.get("description") or "")
        for s in j["stageIds"]
    }
    total = lambda key, only=None: sum(s.get(key, 0) for s in stages if only is None or s["stageId"] in only)  # noqa: E731
    return {
        "stages": len(stages),
        "shuffle_write_bytes": total("shuffleWriteBytes"),
        "shuffle_read_bytes": total("shuffleReadBytes"),
        "input_bytes": total("inputBytes"),
        "lookup_shuffle_bytes": total("shuffleWriteBytes", lookup),
    }


def run_night(spark, index: DedupIndex, night: pa.Table, cfg: DedupConfig, group: str) -> dict:
    """One night: dedup against ``index``, append the survivors' keys, retract them again."""
    spark.sparkContext.setJobGroup(group, group)
    docs = spark.createDataFrame(night).repartition(2)
    with CpuMeter() as cpu:
        t0 = time.perf_counter()
        result = dedup(docs, cfg, index)
        dups = result.duplicates.toArrow()
        index.append(result.survivor_bands, result.survivor_exact, "night")
        seconds = time.perf_counter() - t0
    spark.sparkContext.setJobGroup("bench", "bench")
    index.retract("night")
    parts = result.report.get("index_lookup", {}).values()
    lookup = {
        k: sum(p.get(k, 0) for p in parts)
        for k in ("rows_read", "rows_skipped", "row_groups_read", "row_groups_skipped", "files", "cpu_s", "matches")
    }
    lookup["where"] = "+".join(sorted({p.get("where", "?") for p in parts}))
    return {
        "seconds": seconds,
        "cpu_s": cpu.seconds,
        "lookup_s": result.report["seconds"].get("index lookup", 0.0),
        "lookup": lookup,
        "duplicates": sorted(zip(dups.column("doc_id").to_pylist(), dups.column("duplicate_of").to_pylist())),
        **stage_metrics(spark, group),
    }


def index_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.parquet"))


def year_of_nights(spark, root: Path, cfg: DedupConfig, nights: int, docs: int) -> dict:
    """``nights`` batches of ``docs`` synthetic documents, compacted by the nightly's rule."""
    index = DedupIndex(spark, str(root), cfg.minhash.resolved(), cfg.index)
    bands = cfg.minhash.resolved().bands
    t0, compactions, rewritten = time.perf_counter(), 0, 0
    for night in range(nights):
        b, e = synthetic_keys(docs, bands, seed=10_000 + night)
        index.append_arrow(b, e, f"v{night + 1:06d}")
        summary = index.compact()
        if summary:
            compactions += 1
            rewritten += summary["documents"]
    d = index.describe()
    return {
        "nights": nights,
        "docs_per_night": docs,
        "seconds": round(time.perf_counter() - t0, 1),
        "compactions": compactions,
        "rewrites_per_row": round(rewritten / (nights * docs), 2),
        "files_without_compaction": nights * (bands + 2),
        **d,
    }  # a file a band, the exact keys, the doc_ids


def summarise(runs: list[dict], index: DedupIndex, root: Path, docs: int, cores: int) -> dict:
    """Medians over the repeats of one size, and the index's shape."""
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    lookups = [r["lookup"] for r in runs]
    where = lookups[0].get("where", "none")
    index_rows = docs * (index.params.bands + 1)  # band and exact rows (the docs part is read by point lookups)
    lookup_s = med("lookup_s")
    decoded = statistics.median(lk.get("rows_read", 0) / max(lk.get("cpu_s", 0), 1e-9) for lk in lookups)
    return {
        "index_documents": docs,
        "index_rows": index_rows,
        "index_bytes": index_bytes(root),
        "seconds": round(med("seconds"), 2),
        "cpu_s": round(med("cpu_s"), 1),
        "lookup_s": round(lookup_s, 3),
        "lookup_where": where,
        "rows_per_s_per_core": round(index_rows / max(lookup_s, 1e-9) / (cores if "spark" in where else 1)),
        "decoded_rows_per_cpu_s": round(decoded),
        "row_groups_skipped": lookups[0].get("row_groups_skipped", 0),
        "row_groups_read": lookups[0].get("row_groups_read", 0),
        "shuffle_bytes": int(med("shuffle_write_bytes")),
        "lookup_shuffle_bytes": int(med("lookup_shuffle_bytes")),
        "stages": int(med("stages")),
        **index.describe(),
        "all_seconds": [round(r["seconds"], 2) for r in runs],
    }


def table(sizes: dict[str, dict], year: dict | None) -> str:
    head = (
        "| index | documents | rows | MB | files | night s | CPU s | lookup s (where) | index rows/s/core "
        "| decoded rows/CPU s | shuffle MB (lookup) | ratio to 1x |\n|" + "---|" * 12
    )
    anchor = next(iter(sizes.values()))["seconds"]
    lines = [head] + [
        f"| {k} | {s['index_documents']:,} | {s['index_rows']:,} | {s['index_bytes'] / 2**20:.0f} | {s['files']} "
        f"| {s['seconds']:.1f} | {s['cpu_s']:.0f} | {s['lookup_s']:.2f} ({s['lookup_where']}) "
        f"| {s['rows_per_s_per_core'] / 1e6:.0f} M | {s['decoded_rows_per_cpu_s'] / 1e6:.0f} M "
        f"| {s['shuffle_bytes'] / 2**20:.2f} ({s['lookup_shuffle_bytes'] / 2**20:.2f}) | {s['seconds'] / anchor:.2f} |"
        for k, s in sizes.items()
    ]
    if year:
        lines.append(
            f"\n{year['nights']} nights of {year['docs_per_night']} documents, compaction after "
            f"{year['compact_after']} segments: {year['segments']} segments, {year['files']} files "
            f"(without compaction: {year['files_without_compaction']}), at most "
            f"{year['max_files_per_bucket']} files per band and bucket; {year['compactions']} compactions, "
            f"each row rewritten {year['rewrites_per_row']} times on average; {year['seconds']} s in all."
        )
    return "\n".join(lines)


def variants(
    spark, work: Path, cfg: DedupConfig, base, sizes: list[int], night_docs: int, tasks: bool
) -> dict[str, tuple[DedupIndex, Path, int]]:
    """label -> (index, its directory, its documents): each size, and with ``tasks`` the largest
    again with every lookup in Spark tasks (``driver_max_rows`` 0: the path of a larger index)."""
    for old in [work / f"index-{k}x" for k in sizes] + [work / "year"]:
        shutil.rmtree(old, ignore_errors=True)  # each run builds its indexes anew
    out = {
        f"{k}x": (
            build_index(spark, work / f"index-{k}x", cfg, base, (k - 1) * night_docs),
            work / f"index-{k}x",
            k * night_docs,
        )
        for k in sizes
    }
    if tasks:
        k = max(sizes)
        index = DedupIndex(
            spark, str(work / f"index-{k}x"), cfg.minhash.resolved(), replace(cfg.index, driver_max_rows=0)
        )
        out[f"{k}x, Spark tasks"] = (index, work / f"index-{k}x", k * night_docs)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--night-docs", type=int, default=5000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100])
    ap.add_argument("--no-tasks", action="store_true", help="skip the largest size with lookups in Spark tasks")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nights", type=int, default=365, help="the year of small nights (0: skip)")
    ap.add_argument("--small-docs", type=int, default=500, help="documents a small night indexes")
    ap.add_argument("--work", default="out/bench/nightly-work")
    ap.add_argument("--out", default="out/bench/nightly.json")
    args = ap.parse_args(argv)
    started = time.time()
    setup_logging(logging.WARNING)
    from etl.runtime.spark import get_spark

    with socket.socket() as s:  # the UI's REST API gives the stages' shuffle bytes; loopback only
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spark = get_spark("bench-nightly", "local[2]", {"spark.ui.enabled": "true", "spark.ui.port": str(port)})
    cores, cfg, work = spark.sparkContext.defaultParallelism, DedupConfig(verify="enforce"), Path(args.work)
    published, night, copies = night_and_published(args.night_docs)
    indexes = variants(
        spark, work, cfg, real_keys(spark, published, cfg), sorted(args.sizes), args.night_docs, not args.no_tasks
    )
    run_night(spark, next(iter(indexes.values()))[0], night, cfg, "warm-up")
    runs: dict[str, list[dict]] = {k: [] for k in indexes}
    for rep in range(args.repeats):
        for k, (index, _, _) in indexes.items():
            runs[k].append(run_night(spark, index, night, cfg, f"night-{k}-{rep}"))
            log.warning("%s repeat %d: %.1f s", k, rep, runs[k][-1]["seconds"])
    first = next(iter(runs.values()))[0]["duplicates"]
    missed = set(copies.items()) - set(first)
    assert not missed and all(r[0]["duplicates"] == first for r in runs.values()), (
        f"every index size must find the same duplicates, the planted copies among them (missed: {sorted(missed)[:5]})"
    )
    sizes = {k: summarise(runs[k], index, root, docs, cores) for k, (index, root, docs) in indexes.items()}
    year = None
    if args.nights:
        ycfg = replace(cfg, index=IndexConfig())
        year = {
            **year_of_nights(spark, work / "year", ycfg, args.nights, args.small_docs),
            "compact_after": ycfg.index.compact_after,
        }
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "cores": cores,
        "night_docs": args.night_docs,
        "planted_copies": len(copies),
        "duplicates_found": len(first),
        "sizes": sizes,
        "year": year,
        "load_average": list(map(float, Path("/proc/loadavg").read_text().split()[:3])),
    }
    harness.write_result(args.out, "bench.bench_nightly", args, report, started)
    print(table(sizes, year))
    small, big = sizes[f"{min(args.sizes)}x"], sizes[f"{max(args.sizes)}x"]
    print(
        f"\n{len(copies)} planted copies, {len(first)} duplicates found at every size. "
        f"{max(args.sizes)}x/{min(args.sizes)}x night: {big['seconds'] / small['seconds']:.2f} (target <= 2); "
        f"shuffle bytes {small['shuffle_bytes']:,} -> {big['shuffle_bytes']:,} for an index "
        f"{big['index_bytes'] / small['index_bytes']:.0f}x larger; load average {report['load_average']} at the end"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
