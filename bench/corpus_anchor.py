"""Anchors and probes for ``bench.bench_corpus``: the chain's per-document functions in one plain
Python process, jieba against the native segmentation engine, and peak memory of the driver
(Python and JVM) and of the Python workers read from /proc (VmHWM, reset through clear_refs)."""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

PLAIN_STAGES = ("read", "clean", "pii", "quality", "classify", "dedup_signatures", "decontaminate", "tokenize")
BATCH_ROWS = 1024


def crawl_files(inputs: list[str]) -> list[Path]:
    roots = [Path(p) for p in inputs]
    return sorted(
        f
        for root in roots
        for f in ([root] if root.is_file() else root.rglob("*"))
        if f.is_file() and not f.name.startswith(("_", "."))
    )


def _chunks(items: list, n: int) -> Iterator[list]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def plain_chain(inputs: list[str], cfg, survivors_dir: str, tokenizer_dir: str) -> dict[str, Any]:
    """Seconds per stage of the chain's per-document functions, one process, wall clock (and the
    process's CPU seconds): parse (``etl.read.records.parse_file`` + Arrow batches), ``clean_batch``,
    ``pii_batch``, ``classify_batch``, the MinHash signatures and band keys dedup computes per
    document (not its joins and components), the decontamination matcher and SentencePiece
    encoding of the documents the build kept (pii and decontaminate only where ``cfg`` turns
    them on, as the build does)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from etl.classify.stage import classify_batch
    from etl.clean.pii import get_scrubber, pii_batch
    from etl.clean.stage import clean_batch, get_cleaner
    from etl.decontaminate.stage import load_eval_sets
    from etl.dedup.stage import signature_columns
    from etl.quality.stage import quality_batch
    from etl.read.readers import ARROW_RAW
    from filters.classifiers.classify import TextClassifier
    from filters.dedup import decontam as dc
    from filters.quality.screen import Screen, resolve_profile
    from filters.tokenizer import ZhTokenizer

    cleaner = get_cleaner(cfg.rules)
    spam = TextClassifier(cfg.classify.spam_model) if cfg.classify.spam_model else None
    quality = TextClassifier(cfg.classify.quality_model) if cfg.classify.quality_model else None
    params = cfg.dedup.minhash.resolved()
    tok = ZhTokenizer.load(tokenizer_dir)
    scrubber = get_scrubber(cfg.pii.resolved(), cfg.pii.public_ips_only) if cfg.pii.enabled else None
    profile = resolve_profile(cfg.quality.profile).dir if cfg.quality.enabled else ""  # "auto" as the job resolves it
    screen = Screen(cfg.quality, profile or None) if cfg.quality.enabled else None
    dcfg = cfg.decontaminate
    matcher = (
        dc.Matcher(dc.EvalIndex(load_eval_sets(dcfg.eval_sets), dcfg.ngram, dcfg.min_chars, dcfg.t2s))
        if dcfg.effective_mode != "off"
        else None
    )
    # what each worker does once (tables, dictionaries, models) stays outside the timing
    warm = "预热：首页 | 新闻\n这是一段用来预热的中文文本，包含全角字符ＡＢＣ。"
    cleaner(warm)
    # a document every rule keeps, so the quality screen and the classifiers build their tables
    # here too (the short one above is rejected as too short: their first batch paid ~2.5 s)
    cleaned = clean_batch(
        pa.RecordBatch.from_pylist([_warm_row(warm), _warm_row(_WARM_DOCUMENT, "warm-2")], schema=ARROW_RAW), cleaner
    )
    cleaned = pii_batch(cleaned, scrubber) if scrubber else cleaned
    classify_batch(quality_batch(cleaned, screen) if screen else cleaned, spam, quality, cfg.classify)
    if matcher is not None:
        matcher.hits(warm)
    tok.encode_arrays([warm])
    signature_columns([warm], params)
    lap = _Laps()
    kept, size = _read_clean_classify(inputs, cfg, cleaner, scrubber, screen, spam, quality, lap)
    t = time.perf_counter(), time.process_time()
    for part in _chunks(kept, BATCH_ROWS):
        signature_columns(part, params)
    t = lap("dedup_signatures", t)
    survivors = pq.read_table(survivors_dir, columns=["text"]).column("text").to_pylist()
    t = time.perf_counter(), time.process_time()
    if matcher is not None:
        for text in survivors:
            matcher.hits(text or "")
    t = lap("decontaminate", t)
    for part in _chunks(survivors, BATCH_ROWS):
        tok.encode_arrays([x or "" for x in part])  # as the tokenize stage encodes
    lap("tokenize", t)
    wall, cpu = lap.wall, lap.cpu
    mb, total, total_cpu = size / 1e6, sum(wall.values()), sum(cpu.values())
    return {
        "input_mb": round(mb, 2),
        "seconds": {k: round(wall[k], 2) for k in PLAIN_STAGES},
        "cpu_seconds": {k: round(cpu[k], 2) for k in PLAIN_STAGES},
        "total_s": round(total, 2),
        "cpu_s": round(total_cpu, 2),
        "mb_s": round(mb / total, 3),
        "mb_per_cpu_s": round(mb / total_cpu, 3),
        "kept_documents": len(kept),
        "survivors": len(survivors),
    }


class _Laps:
    """Wall and CPU seconds per stage: ``t = lap(stage, t)`` adds the time since ``t``."""

    def __init__(self):
        self.wall: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)

    def __call__(self, stage: str, since: tuple[float, float]) -> tuple[float, float]:
        now = time.perf_counter(), time.process_time()
        self.wall[stage] += now[0] - since[0]
        self.cpu[stage] += now[1] - since[1]
        return now


def _read_clean_classify(
    inputs: list[str], cfg, cleaner, scrubber, screen, spam, quality, lap: _Laps
) -> tuple[list[str], int]:
    """(texts the rules and classifiers kept, input bytes), timed as read / clean / pii / quality /
    classify."""
    import pyarrow as pa

    from etl.classify.stage import classify_batch
    from etl.clean.pii import pii_batch
    from etl.clean.stage import clean_batch
    from etl.quality.stage import quality_batch
    from etl.read import records as rec
    from etl.read.readers import ARROW_RAW

    kept: list[str] = []
    size = 0
    for f in crawl_files(inputs):
        t = time.perf_counter(), time.process_time()
        content = f.read_bytes()
        size += len(content)
        rows = list(rec.parse_file(str(f), content, cfg.reader))
        t = lap("read", t)
        for part in _chunks(rows, BATCH_ROWS):
            batch = pa.RecordBatch.from_pylist(part, schema=ARROW_RAW)
            t = lap("read", t)
            cleaned = clean_batch(batch, cleaner)
            t = lap("clean", t)
            if scrubber is not None:
                cleaned = pii_batch(cleaned, scrubber)
            t = lap("pii", t)
            if screen is not None:
                cleaned = quality_batch(cleaned, screen)
            t = lap("quality", t)
            scored = classify_batch(cleaned, spam, quality, cfg.classify)
            t = lap("classify", t)
            kept += [
                r["text"]
                for r in scored.select(["kind", "reason", "text"]).to_pylist()
                if r["kind"] == rec.RECORD and r["reason"] is None
            ]
    return kept, size


_WARM_DOCUMENT = (
    "新华社北京１月５日电　国务院总理今天在人民大会堂会见了来访的客人。双方就两国关系和共同关心的国际问题"
    "交换了意见。总理说，中国政府高度重视发展同各国的友好合作关系，愿意在和平共处五项原则的基础上，进一步"
    "加强在经济、贸易、科技和文化等领域的交流与合作。\n客人表示，这次访问的目的是增进了解，扩大合作。他对"
    "中国经济建设取得的巨大成就表示钦佩，并说两国的合作前景广阔……当天北京气温２５℃，增长１３.５%。"
)


def _warm_row(text: str, doc_id: str = "warm") -> dict[str, Any]:
    from etl.read import records as rec

    return {f: None for f in rec.RAW_FIELDS} | {"kind": rec.RECORD, "doc_id": doc_id, "offset": 0, "text": text}


def segmentation(texts: list[str], max_chars: int) -> dict[str, Any]:
    """jieba (the reference) against the default native engine on the same documents, both HMM
    modes (the tokenizer segments without HMM, the classifiers with): MB/s and identical lists."""
    from filters.text.segment import DEFAULT_ENGINE, REFERENCE, Segmenter

    sample, n = [], 0
    for t in texts:
        if n >= max_chars:
            break
        sample.append(t)
        n += len(t)
    mb = sum(len(t.encode("utf-8")) for t in sample) / 1e6
    out: dict[str, Any] = {"documents": len(sample), "mb": round(mb, 2), "native": DEFAULT_ENGINE}
    for hmm in (False, True):
        cuts, rates = {}, {}
        for engine in (REFERENCE, DEFAULT_ENGINE):
            seg = Segmenter(engine, hmm)
            seg.cut(sample[0])  # dictionary load outside the timing
            t0 = time.perf_counter()
            cuts[engine] = seg.cut_batch(sample)
            rates[engine] = mb / (time.perf_counter() - t0)
        same = sum(a == b for a, b in zip(cuts[REFERENCE], cuts[DEFAULT_ENGINE]))
        out[f"hmm_{'on' if hmm else 'off'}"] = {
            "jieba_mb_s": round(rates[REFERENCE], 3),
            "native_mb_s": round(rates[DEFAULT_ENGINE], 3),
            "speedup": round(rates[DEFAULT_ENGINE] / rates[REFERENCE], 1),
            "identical_documents": same,
        }
    return out


# --- peak memory, from /proc (Linux) ---
