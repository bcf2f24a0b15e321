"""One big file, many ranges (issue 14): reading a file as byte ranges gives exactly what reading
it whole gives: the same records, offsets, doc_ids and reasons, and a ledger whose ranges tile
the file. The split is configured small (a few KB) so that files many times its size, with
records straddling every boundary, run in seconds."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from etl.read import records as rec
from etl.read.readers import InputFile, plan
from tests.crawl_fixture import doc, html, response

SPLIT = 3000


def _cfg(split: int = SPLIT, **kw) -> rec.ReaderConfig:
    return rec.ReaderConfig(split_bytes=split, min_split_bytes=1, **kw)


def _jsonl_straddling(path: Path, n: int, seed: int) -> list[int]:
    """``n`` JSONL lines of 0.05-2 splits each, none ending on a multiple of SPLIT (so a line
    straddles every boundary); every 17th one is not JSON. Returns the line starts."""
    rng, out, starts, at = random.Random(seed), [], [], 0
    for i in range(n):
        if i % 17 == 5:
            line = ('{"id": "bad' + str(i) + '", text: oops}').encode()
        else:
            text = doc(i, i + 1 + i % 5)[: rng.randint(60, 2000)]
            line = json.dumps({"id": f"r{i}" if i % 3 else None, "text": text}, ensure_ascii=False).encode()
        while (at + len(line) + 1) % SPLIT == 0:
            line += b" "
        starts.append(at)
        out.append(line + b"\n")
        at += len(line) + 1
    path.write_bytes(b"".join(out))
    return starts


def _all_ranges(path: Path, cfg: rec.ReaderConfig) -> list[rec.Range]:
    p = plan([InputFile(str(path), path.stat().st_size, str(path))], cfg, parallelism=2)
    return [r for task in p.tasks for r in task]


def _read_ranges(ranges: list[rec.Range], cfg: rec.ReaderConfig):
    rows, stats = [], []
    for r in ranges:
        for row in rec.parse_range(r, cfg):
            (stats.append(json.loads(row["file_stats"])) if row["kind"] == rec.FILE else rows.append(row))
    merged, problem = rec.merge_stats(stats)
    return rows, merged, problem


def _whole(path: Path, cfg: rec.ReaderConfig):
    rows = list(rec.parse_file(str(path), path.read_bytes(), cfg))
    return rows[:-1], json.loads(rows[-1]["file_stats"])


@pytest.mark.parametrize("seed", range(4))
def test_jsonl_ranges_give_exactly_the_whole_file_records(tmp_path, seed):
    f = tmp_path / "big.jsonl"
    starts = _jsonl_straddling(f, 400, seed)
    size = f.stat().st_size
    ranges = _all_ranges(f, _cfg())
    assert len(ranges) == -(-size // SPLIT) > 80
    cuts = [r.start for r in ranges[1:]]
    ends = set(starts[1:]) | {size}
    assert not any(c in ends for c in cuts) and all(c % SPLIT == 0 for c in cuts)  # every boundary is inside a line
    rows, merged, problem = _read_ranges(ranges, _cfg())
    whole, whole_stats = _whole(f, _cfg(split=0))
    assert problem is None and rows == whole and [r["offset"] for r in rows] == starts
    assert merged["records"] == whole_stats["records"] == 400 and merged["ranges"] == len(ranges)
    assert merged["bytes"] == size and Counter_reasons(rows) == {None: 400 - 24, "invalid_json": 24}


def Counter_reasons(rows):  # noqa: N802 - reads like the Counter it returns
    from collections import Counter

    return dict(Counter(r["reason"] for r in rows))


def test_jsonl_range_edges(tmp_path):
    """A line ending exactly at a cut, a blank line at a cut, a line longer than several ranges and
    than max_record_bytes, a BOM, and a last line without a newline."""
    line = lambda i, n: json.dumps({"id": f"e{i}", "text": doc(i, i + 2)[:n]}, ensure_ascii=False).encode()  # noqa: E731
    pad = lambda b, n: b + b" " * (n - 1 - len(b)) + b"\n"  # noqa: E731 - a line of exactly n bytes
    first = pad(b"\xef\xbb\xbf" + line(0, 200), SPLIT)  # ends exactly at the first cut
    second = pad(line(1, 300), SPLIT)  # starts exactly at a cut, ends exactly at the next
    blank = b"\n"  # the third range starts with an empty line
    giant = json.dumps({"id": "giant", "text": "长" * SPLIT}, ensure_ascii=False).encode() + b"\n"  # 3+ ranges
    tail = [line(i, 300) + b"\n" for i in range(3, 12)] + [line(12, 100)]
    f = tmp_path / "edges.jsonl"
    f.write_bytes(first + second + blank + giant + b"".join(tail))
    cfg = _cfg(max_record_bytes=5 * SPLIT)
    ranges = _all_ranges(f, cfg)
    rows, merged, problem = _read_ranges(ranges, cfg)
    whole, stats = _whole(f, cfg)
    assert problem is None and rows == whole and len(rows) == 2 + 1 + 10
    assert [r["doc_id"] for r in rows[:3]] == ["e0", "e1", "giant"] and rows[2]["offset"] == 2 * SPLIT + 1
    small = _cfg(max_record_bytes=2 * SPLIT)
    rows, _, problem = _read_ranges(_all_ranges(f, small), small)
    assert (
        problem is None
        and [r["reason"] for r in rows][:3]
        == [None, None, "record_too_large"]
        == [r["reason"] for r in _whole(f, small)[0]][:3]
    )


JUNK = b"junk between records\r\n"


def _warc_with_damage(path: Path, n: int) -> bytes:
    from tests.test_bad_input import _with_length

    pages = [
        response(f"http://w.cn/{i}", html(f"页{i}", doc(i, i + 3)[: 100 + 37 * (i % 9)]).encode()) for i in range(n)
    ]
    pages[7] = _with_length(pages[7], delta=120)  # would swallow part of the next record: rejected, resync
    pages[19] = pages[19] + JUNK  # an unframed region after a good record
    pages[23] = _with_length(pages[23], length=10**9)  # over max_record_bytes, and past the end of the file
    pages[31] = _with_length(pages[31], delta=-50)
    data = b"".join(pages)
    path.write_bytes(data)
    return data


def test_warc_ranges_start_at_records_and_read_exactly_as_whole(tmp_path):
    f = tmp_path / "big.warc"
    data = _warc_with_damage(f, 60)
    cfg = _cfg(max_record_bytes=1 << 20)
    ranges = _all_ranges(f, cfg)
    assert len(ranges) > 15 and all(r.aligned for r in ranges)
    junk_at = data.index(JUNK)  # the region's first byte (after the record's \r\n\r\n)
    assert all(data[r.start :].startswith(b"WARC/1.0") or r.start == junk_at for r in ranges)
    rows, merged, problem = _read_ranges(ranges, cfg)
    whole, stats = _whole(f, cfg)
    assert problem is None and rows == whole and len(rows) == 60
    assert merged["regions"] == stats["regions"] == {"malformed_warc_header": {"count": 1, "bytes": len(JUNK)}}
    assert Counter_reasons(rows) == {None: 57, "malformed_warc_header": 2, "record_too_large": 1}
    assert [r["url"] for r in rows if r["reason"]] == ["http://w.cn/7", "http://w.cn/23", "http://w.cn/31"]


def test_parquet_row_groups_are_read_once(tmp_path):
    f = tmp_path / "big.parquet"
    n = 300
    table = pa.table({"id": [f"p{i}" for i in range(n)], "text": [doc(i, i + 1)[: 50 + i % 90] for i in range(n)]})
    pq.write_table(table, f, row_group_size=17)
    cfg = _cfg(split=2000)
    ranges = _all_ranges(f, cfg)
    assert len(ranges) > 5
    rows, merged, problem = _read_ranges(ranges, cfg)
    whole, _ = _whole(f, cfg)
    assert problem is None and rows == whole and [r["offset"] for r in rows] == list(range(n))


@pytest.mark.parametrize("arrow_type", ["string", "large_string", "dictionary", "string_view"])
def test_parquet_text_of_every_string_type_is_text(tmp_path, arrow_type):
    """Issue 24: a dictionary-encoded text column (pandas categoricals) was rejected as missing_text."""
    f = tmp_path / f"{arrow_type}.parquet"
    texts = [doc(i, i + 1) for i in range(4)] + [doc(0, 1)]  # a repeat: a real dictionary
    column = {
        "string": lambda: pa.array(texts, pa.string()),
        "large_string": lambda: pa.array(texts, pa.large_string()),
        "dictionary": lambda: pa.array(texts).dictionary_encode(),
        "string_view": lambda: pa.array(texts, pa.string_view()),
    }[arrow_type]()
    pq.write_table(pa.table({"id": [f"t{i}" for i in range(5)], "text": column}), f)
    assert pq.read_schema(f).field("text").type == column.type
    rows, _ = _whole(f, _cfg())
    assert [r["reason"] for r in rows] == [None] * 5 and [r["text"] for r in rows] == texts


def test_ranges_that_do_not_tile_the_file_are_a_problem():
    def part(a, b):
        return {
            "format": "jsonl",
            "size": 30,
            "range": [a, b],
            "bytes": b - a,
            "records": 1,
            "skipped": {},
            "errors": [],
            "regions": {},
        }

    assert rec.merge_stats([part(10, 30), part(0, 10)]) == (
        {"format": "jsonl", "bytes": 30, "records": 2, "skipped": {}, "errors": [], "regions": {}, "ranges": 2},
        None,
    )
    assert "tile" in rec.merge_stats([part(0, 10), part(12, 30)])[1]  # a gap
    assert "tile" in rec.merge_stats([part(0, 12), part(10, 30)])[1]  # an overlap
    assert "tile" in rec.merge_stats([part(0, 10), part(0, 10), part(10, 30)])[1]  # read twice
    assert "30 bytes" in rec.merge_stats([part(0, 10), part(10, 20)])[1]  # the end missing


def test_gzip_is_one_range(tmp_path):
    f = tmp_path / "big.jsonl.gz"
    f.write_bytes(
        gzip.compress(
            b"".join(json.dumps({"text": doc(i, i + 1)}, ensure_ascii=False).encode() + b"\n" for i in range(200))
        )
    )
    assert [(r.start, r.end) for r in _all_ranges(f, _cfg(split=100))] == [(0, f.stat().st_size)]


@pytest.mark.slow
def test_spark_split_read_matches_unsplit_and_the_ledger_is_exact(spark, tmp_path):
    """Through Spark: many ranges per file, every core busy, identical output, exact ledger."""
    from etl.clean.stage import clean_stage
    from etl.read.readers import read_raw
    from etl.report.ledger import build_ledger
    from etl.runtime.progress import Counters
    from filters.pangu.config import RulesConfig

    d = tmp_path / "in"
    d.mkdir()
    _jsonl_straddling(d / "big.jsonl", 300, seed=7)
    _warc_with_damage(d / "big.warc", 40)
    pq.write_table(
        pa.table({"id": [f"q{i}" for i in range(90)], "text": [doc(i, i + 2) for i in range(90)]}),
        d / "big.parquet",
        row_group_size=10,
    )
    (d / "small.jsonl.gz").write_bytes(gzip.compress(b'{"id": "z", "text": "\xe7\x94\xb2"}\n'))

    def read(cfg, inputs):
        counters = Counters(spark.sparkContext)
        raw, files = read_raw(spark, inputs, cfg, counters)
        marked = clean_stage(raw, RulesConfig()).persist()
        cols = [c for c in raw.columns if c != "file_stats"]
        records = sorted(tuple(r) for r in marked.where("kind = 'record'").select(*cols).collect())
        assert counters.ranges.value == counters.ranges_total  # one read so far: each range counted once
        ledger = build_ledger(marked, files)
        marked.unpersist()
        return records, ledger, counters.ranges_total, raw.rdd.getNumPartitions()

    split, ledger, n_ranges, _ = read(_cfg(split=8000, max_record_bytes=1 << 20), [str(d)])
    whole, ledger_whole, _, _ = read(_cfg(split=0, max_record_bytes=1 << 20), [str(d)])
    assert split == whole and len(split) == ledger["input"]["records"] == 300 + 40 + 90 + 1
    assert ledger["input"]["records"] == ledger["documents"] + ledger["rejected"]
    for key in ("records", "bytes", "file_errors", "unframed_regions"):
        assert ledger["input"][key] == ledger_whole["input"][key], key
    assert (ledger["documents"], ledger["rejected"]) == (ledger_whole["documents"], ledger_whole["rejected"])
    ranges = {Path(p).name: f["ranges"] for p, f in ledger["files"].items()}
    assert ranges["big.jsonl"] > 20 and ranges["big.warc"] > 3 and ranges["big.parquet"] > 3
    assert ranges["small.jsonl.gz"] == 1 and n_ranges == sum(ranges.values())
    _, _, _, partitions = read(_cfg(), [str(d / "small.jsonl.gz")])  # one task: records spread over every core
    assert partitions == 2 * spark.sparkContext.defaultParallelism
