"""Bad input never kills a run, loses a record, invents one, or touches the user's input (issue 16).

One test per defect of the issue, each with exact arithmetic: the records a test writes are
documents + rejected, and the file-level errors are listed. Pure-Python tests go through
``etl.read.records.parse_file``; the Spark ones through ``etl.corpus.clean_corpus`` or the jobs.
"""

from __future__ import annotations

import gzip
import json
import logging
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from etl.read import warc
from etl.read.records import ReaderConfig, parse_file
from tests.crawl_fixture import P, doc, html, response

TEXT = P[0] + P[1]


def _rows(name: str, content: bytes, cfg: ReaderConfig = ReaderConfig()):
    rows = list(parse_file(name, content, cfg))
    return [r for r in rows if r["kind"] == "record"], json.loads(rows[-1]["file_stats"])


def _page(i: int) -> bytes:
    return response(f"http://x.cn/{i}", html(f"标题{i}", doc(i, i + 1)).encode())


def _with_length(record: bytes, delta: int = 0, length: int | None = None) -> bytes:
    """The record with its WARC Content-Length changed (the bytes stay as they are)."""
    head, sep, rest = record.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    n = next(i for i, ln in enumerate(lines) if ln.startswith(b"Content-Length:"))
    declared = int(lines[n].split(b":")[1]) + delta if length is None else length
    lines[n] = b"Content-Length: %d" % declared
    return b"\r\n".join(lines) + sep + rest


def _fates(recs):
    return [(r["url"], r["reason"]) for r in recs]


# --- 2. a huge declared Content-Length ---------------------------------------------------------


@pytest.mark.parametrize("declared", [50 * 10**9, 1 << 40])
def test_huge_content_length_in_warc_gz_rejects_one_record_and_reads_on(declared):
    members = [gzip.compress(r, mtime=0) for r in (_page(1), _with_length(_page(2), length=declared), _page(3))]
    recs, stats = _rows("f.warc.gz", b"".join(members))
    assert _fates(recs) == [("http://x.cn/1", None), ("http://x.cn/2", "record_too_large"), ("http://x.cn/3", None)]
    assert str(declared) in recs[1]["detail"]
    assert stats["records"] == 3 and stats["errors"] == []


def test_record_over_max_record_bytes_is_rejected_and_the_next_one_read():
    cfg = ReaderConfig(max_record_bytes=500)
    big = response("http://x.cn/big", html("大", doc(0, 1) * 10).encode())
    for name, content in (
        ("f.warc", _page(1) + big + _page(3)),
        ("f.warc.gz", b"".join(gzip.compress(r) for r in (_page(1), big, _page(3)))),
    ):
        recs, stats = _rows(name, content, ReaderConfig(max_record_bytes=3000))
        assert _fates(recs) == [
            ("http://x.cn/1", None),
            ("http://x.cn/big", "record_too_large"),
            ("http://x.cn/3", None),
        ], name
    recs, _ = _rows("g.warc", _page(1), cfg)  # every record over the limit: nothing is read into memory
    assert [r["reason"] for r in recs] == ["record_too_large"]


# --- 3. exact framing: wrong lengths never lose, merge or invent records --------------------------


def test_content_length_past_end_of_file_keeps_the_records_after_it():
    bad = _with_length(_page(2), length=10**6)  # runs past the end of the file
    recs, stats = _rows("f.warc", _page(1) + bad + _page(3) + _page(4))
    assert _fates(recs) == [
        ("http://x.cn/1", None),
        ("http://x.cn/2", "truncated_record"),
        ("http://x.cn/3", None),
        ("http://x.cn/4", None),
    ]
    assert stats["records"] == 4


@pytest.mark.parametrize("name", ["f.warc", "f.warc.gz"])
def test_content_length_too_long_never_swallows_the_next_record(name):
    parts = [_page(1), _with_length(_page(2), delta=300), _page(3)]
    content = b"".join(parts) if name == "f.warc" else b"".join(gzip.compress(p, mtime=0) for p in parts)
    recs, stats = _rows(name, content)
    assert _fates(recs) == [("http://x.cn/1", None), ("http://x.cn/2", warc.MALFORMED_HEADER), ("http://x.cn/3", None)]
    assert all("WARC/1.0" not in (r["text"] or "") and "HTTP/1.1" not in (r["text"] or "") for r in recs)
    assert stats["records"] == 3


def test_content_length_ending_just_before_the_next_header_terminator_is_caught():
    """Too long by exactly the next record's header: the bytes after the block are a record
    terminator (\\r\\n\\r\\n), but the block holds a record start, so it is still rejected."""
    third = _page(3)
    delta = 4 + third.index(b"\r\n\r\n")  # our \r\n\r\n + the next record's header lines
    recs, stats = _rows("f.warc", _page(1) + _with_length(_page(2), delta=delta) + third)
    assert _fates(recs) == [("http://x.cn/1", None), ("http://x.cn/2", warc.MALFORMED_HEADER), ("http://x.cn/3", None)]
    assert stats["records"] == 3 and stats["regions"] == {}


@pytest.mark.parametrize("name", ["f.warc", "f.warc.gz"])
def test_content_length_too_short_leaves_no_extra_record(name):
    parts = [_page(1), _with_length(_page(2), delta=-200), _page(3)]
    content = b"".join(parts) if name == "f.warc" else b"".join(gzip.compress(p, mtime=0) for p in parts)
    recs, stats = _rows(name, content)
    assert _fates(recs) == [("http://x.cn/1", None), ("http://x.cn/2", warc.MALFORMED_HEADER), ("http://x.cn/3", None)]
    assert stats["records"] == 3 and stats["regions"] == {}


def test_bytes_between_records_are_a_counted_region_not_a_record():
    junk = b"leftover bytes from a broken writer\r\nmore of them\r\n"
    recs, stats = _rows("f.warc", _page(1) + junk + _page(2))
    assert _fates(recs) == [("http://x.cn/1", None), ("http://x.cn/2", None)]
    assert stats["records"] == 2
    assert stats["regions"] == {warc.MALFORMED_HEADER: {"count": 1, "bytes": len(junk)}}


# --- 6. garbage is one file error, never records ------------------------------------------------


def test_random_bytes_named_gz_are_not_gzip():
    garbage = random.Random(3).randbytes(50_000)
    for name in ("r.jsonl.gz", "r.warc.gz"):
        recs, stats = _rows(name, garbage)
        assert recs == [] and stats["records"] == 0
        assert [(e["reason"], e["bytes"]) for e in stats["errors"]] == [("not_gzip", len(garbage))], name


def test_random_bytes_named_jsonl_are_not_text():
    garbage = random.Random(4).randbytes(50_000)
    recs, stats = _rows("r.jsonl", garbage)
    assert recs == [] and [(e["reason"], e["bytes"]) for e in stats["errors"]] == [("not_text", len(garbage))]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_jsonl_is_one_file_error_not_many_records(encoding):
    lines = [json.dumps({"id": f"u{i}", "text": doc(i, i + 2)}, ensure_ascii=False) for i in range(3)]
    content = ("\n".join(lines) + "\n").encode(encoding)
    for name, data in (("u.jsonl", content), ("u.jsonl.gz", gzip.compress(content, mtime=0))):
        recs, stats = _rows(name, data)
        assert recs == [] and stats["records"] == 0
        assert [(e["reason"], e["bytes"]) for e in stats["errors"]] == [("utf16_unsupported", len(data))], name


def test_a_file_that_cannot_be_opened_is_one_unreadable_error(tmp_path):
    from etl.read.records import Range, parse_range

    (tmp_path / "dir.jsonl").mkdir()
    for name in ("gone.jsonl", "dir.jsonl"):
        path = str(tmp_path / name)
        rows = list(parse_range(Range(path, "jsonl", 100, 0, 100, path), ReaderConfig()))
        stats = json.loads(rows[-1]["file_stats"])
        assert len(rows) == 1 and [(e["reason"], e["bytes"]) for e in stats["errors"]] == [("unreadable", 100)]


# --- 8. types and the BOM ----------------------------------------------------------------------


def test_utf8_bom_costs_no_record():
    lines = [json.dumps({"id": f"b{i}", "text": doc(i, i + 1)}, ensure_ascii=False) for i in range(3)]
    recs, stats = _rows("b.jsonl", b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode())
    assert [(r["doc_id"], r["reason"]) for r in recs] == [("b0", None), ("b1", None), ("b2", None)]
    assert not recs[0]["text"].startswith("\ufeff")


def test_non_string_text_is_missing_text_with_its_type_in_jsonl():
    lines = ['{"id": "l", "text": ["甲", "乙"]}', '{"id": "i", "text": 3}', '{"id": "d", "text": {"a": 1}}']
    recs, _ = _rows("t.jsonl", "\n".join(lines).encode())
    assert [(r["doc_id"], r["reason"], r["detail"]) for r in recs] == [
        ("l", "missing_text", "text is list"),
        ("i", "missing_text", "text is int"),
        ("d", "missing_text", "text is dict"),
    ]


# --- Spark: files as the unit of failure --------------------------------------------------------


def _jsonl(path: Path, ids: list, text=lambda i: doc(i, i + 3)) -> None:
    path.write_text(
        "".join(json.dumps({"id": x, "text": text(i)}, ensure_ascii=False) + "\n" for i, x in enumerate(ids)),
        encoding="utf-8",
    )


def _clean(spark, inputs: list[Path], out: Path):
    from etl.corpus import CleanConfig, clean_corpus

    report = clean_corpus(CleanConfig(), [str(p) for p in inputs], str(out), spark=spark)
    docs = spark.read.parquet(str(out / "documents")).toPandas()
    rejected = spark.read.parquet(str(out / "rejected")).toPandas()
    assert report["input"]["records"] == report["documents"] + report["rejected"] == len(docs) + len(rejected)
    return report, docs, rejected


def _file_errors(report) -> dict[str, tuple[str, int]]:
    return {Path(e["file"]).name: (e["reason"], e["bytes"]) for e in report["input"]["file_errors"]}


@pytest.mark.slow
def test_empty_file_is_a_file_error_and_the_other_files_go_through(spark, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    _jsonl(d / "good.jsonl", [f"g{i}" for i in range(5)])
    for name in ("empty.jsonl", "empty.warc.gz", "empty.parquet"):
        (d / name).write_bytes(b"")
    report, docs, rejected = _clean(spark, [d], tmp_path / "out")
    assert report["input"]["records"] == 5 and sorted(docs.doc_id) == [f"g{i}" for i in range(5)]
    assert _file_errors(report) == {
        "empty.jsonl": ("empty_file", 0),
        "empty.warc.gz": ("empty_file", 0),
        "empty.parquet": ("empty_file", 0),
    }


def _truncated_parquet(path: Path) -> int:
    table = pa.table({"id": [f"c{i}" for i in range(50)], "text": [doc(i, i + 1) for i in range(50)]})
    pq.write_table(table, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return len(data) // 2


@pytest.mark.slow
def test_corrupt_parquet_is_a_file_error_not_a_java_trace(spark, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.table({"id": ["p0", "p1"], "text": [doc(0, 1), doc(2, 3)]}), d / "good.parquet")
    _jsonl(d / "good.jsonl", ["j0", "j1", "j2"])
    size = _truncated_parquet(d / "cut.parquet")
    report, docs, rejected = _clean(spark, [d], tmp_path / "out")
    assert sorted(docs.doc_id) == ["j0", "j1", "j2", "p0", "p1"] and len(rejected) == 0
    assert _file_errors(report) == {"cut.parquet": ("corrupt_parquet", size)}


@pytest.mark.slow
def test_parquet_text_of_the_wrong_type_is_missing_text(spark, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.table({"id": ["l0", "l1"], "text": [["甲", "乙"], None]}), d / "lists.parquet")
    pq.write_table(pa.table({"id": [7, 8], "text": [1, 2]}), d / "ints.parquet")
    pq.write_table(pa.table({"id": ["s0"], "text": [doc(0, 1)]}), d / "strings.parquet")
    report, docs, rejected = _clean(spark, [d], tmp_path / "out")
    assert list(docs.doc_id) == ["s0"]
    got = sorted(zip(rejected.doc_id, rejected.reason, rejected.detail))
    assert got == [
        ("7", "missing_text", "text is int64"),
        ("8", "missing_text", "text is int64"),
        ("l0", "missing_text", "text is list<element: string>"),
        ("l1", "missing_text", "text is list<element: string>"),
    ]


@pytest.mark.slow
def test_mixed_input_gives_exactly_the_good_files_records(spark, tmp_path):
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    good: set[str] = set()
    for f in range(6):
        ids = [f"m{f}-{i}" for i in range(4)]
        _jsonl(d / f"good-{f}.jsonl", ids, text=lambda i, f=f: doc(f + i, f + 2 * i + 1))
        good.update(ids)
    (d / "sub" / "good.warc.gz").write_bytes(b"".join(gzip.compress(_page(i), mtime=0) for i in range(5)))
    (d / "sub" / "good.warc").write_bytes(b"".join(_page(i) for i in range(5, 8)))
    good.update(f"urn:uuid:http://x.cn/{i}" for i in range(8))
    pq.write_table(pa.table({"id": ["q0", "q1"], "text": [doc(1, 4), doc(2, 5)]}), d / "good.parquet")
    good.update(["q0", "q1"])
    bad = {
        "empty.jsonl": b"",
        "garbage.jsonl.gz": random.Random(1).randbytes(9000),
        "binary.jsonl": random.Random(2).randbytes(9000),
        "utf16.jsonl": ('{"id": "u", "text": "' + TEXT + '"}\n').encode("utf-16"),
        "corrupt.warc.gz": b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"not deflate" * 20,
        "notes.txt": b"not an input format\n",
    }
    for name, data in bad.items():
        (d / name).write_bytes(data)
    _truncated_parquet(d / "cut.parquet")
    (d / ".hidden.jsonl").write_text("{not even json\n")  # hidden: never read
    report, docs, rejected = _clean(spark, [d], tmp_path / "out")
    assert set(docs.doc_id) == good and len(docs) == len(good) and len(rejected) == 0
    assert report["input"]["records"] == len(good)
    assert {k: v[0] for k, v in _file_errors(report).items()} == {
        "empty.jsonl": "empty_file",
        "garbage.jsonl.gz": "not_gzip",
        "binary.jsonl": "not_text",
        "utf16.jsonl": "utf16_unsupported",
        "corrupt.warc.gz": "corrupt_gzip",
        "notes.txt": "unsupported_format",
        "cut.parquet": "corrupt_parquet",
    }
    assert report["input"]["files"] == 6 + 2 + 1 + len(bad) + 1


# --- 8. duplicate ids ----------------------------------------------------------------------------


@pytest.mark.slow
def test_duplicate_ids_are_counted_and_made_unique(spark, tmp_path):
    from etl.clean.stage import clean_stage
    from etl.read.ids import unique_ids
    from etl.read.readers import read_raw
    from etl.report.ledger import build_ledger
    from etl.runtime.progress import Counters
    from filters.pangu.config import RulesConfig

    d = tmp_path / "in"
    d.mkdir()
    _jsonl(d / "a.jsonl", ["x", 1, "y"])
    _jsonl(d / "b.jsonl", ["x", "1", "z"], text=lambda i: doc(i + 4, i + 6))
    raw, files = read_raw(spark, [str(d)], ReaderConfig(), Counters(spark.sparkContext))
    cleaned = clean_stage(raw, RulesConfig()).persist()
    assert build_ledger(cleaned, files)["input"]["duplicate_ids"] == {
        "ids": 2,
        "records_renamed": 0,
        "records_sharing": 4,
    }
    marked = unique_ids(cleaned)  # where etl.documents applies it: to the persisted marked rows
    ledger = build_ledger(marked, files)
    ids = sorted(r.doc_id for r in marked.where("kind = 'record'").select("doc_id", "source_file", "offset").collect())
    assert len(ids) == len(set(ids)) == 6
    first = {
        r.doc_id: Path(r.source_file).name
        for r in marked.where("kind = 'record'").collect()
        if not r.doc_id.startswith(("x~", "1~"))
    }
    assert first == {"x": "a.jsonl", "1": "a.jsonl", "y": "a.jsonl", "z": "b.jsonl"}
    assert ledger["input"]["duplicate_ids"] == {"ids": 2, "records_renamed": 2}
    assert ledger["input"]["records"] == 6 == ledger["documents"] + ledger["rejected"]
    cleaned.unpersist()


# --- 4 and 7. the user's paths ---------------------------------------------------------------------


def test_output_equal_to_or_inside_or_around_an_input_is_refused(tmp_path):
    from etl.runtime import paths

    src = tmp_path / "crawl"
    (src / "part").mkdir(parents=True)
    (src / "part" / "a.jsonl").write_text("{}\n")
    link = tmp_path / "link"
    link.symlink_to(src)
    for out in (
        src,
        src / "out",
        src / "part" / "a.jsonl",
        tmp_path,
        link,
        link / "x",
        f"file:{src}",
        f"file://{src}/out",
        str(src) + "/",
        f"{src}/part/../out",
    ):
        with pytest.raises(paths.OutputOverlapsInput, match="input"):
            paths.check_output(out, [str(src)])
    with pytest.raises(paths.OutputOverlapsInput, match="lies inside"):
        paths.check_output(src / "part" / "out", [f"file:{src}/part/*.jsonl"])
    with pytest.raises(paths.OutputOverlapsInput, match="lies inside"):
        paths.check_output("hdfs://nn:8020/crawl/out", ["hdfs://nn:8020/crawl/"])
    paths.check_output(tmp_path / "crawl-out", [str(src)])  # a sibling whose name shares a prefix is fine
    paths.check_output("hdfs://nn:8020/crawl-out", ["hdfs://nn:8020/crawl", str(src)])
    assert (src / "part" / "a.jsonl").read_text() == "{}\n"


def test_unwritable_output_parent_is_refused_with_a_message_that_says_so(tmp_path):
    from etl.runtime import paths

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(paths.OutputNotWritable, match="not writable"):
        paths.check_output(blocker / "out", [str(tmp_path / "in")])
    with pytest.raises(paths.OutputNotWritable, match="not writable"):
        paths.check_output("/proc/zhcorpus-out", [str(tmp_path / "in")])
    assert "\n" not in str(pytest.raises(paths.OutputNotWritable, paths.check_output, blocker / "o", []).value)


def test_output_as_input_with_overwrite_leaves_the_input_alone(tmp_path, monkeypatch, caplog):
    from jobs import clean

    src = tmp_path / "crawl"
    src.mkdir()
    _jsonl(src / "a.jsonl", ["a"])
    before = (src / "a.jsonl").read_bytes()
    monkeypatch.setattr(clean, "clean_corpus", lambda *a, **k: pytest.fail("the job started work"))
    with caplog.at_level(logging.ERROR, logger="zhcorpus"):
        code = clean.main(["--input", str(src), "--output", str(src), "--overwrite"])
        code_inside = clean.main(["--input", str(src), "--output", str(src / "out")])
    assert code == code_inside == 2
    assert (src / "a.jsonl").read_bytes() == before and sorted(p.name for p in src.iterdir()) == ["a.jsonl"]
    assert len(caplog.records) == 2 and all("\n" not in r.getMessage() for r in caplog.records)


def test_unwritable_output_refused_before_any_work(tmp_path, monkeypatch, caplog):
    from jobs import clean

    (tmp_path / "in").mkdir()
    _jsonl(tmp_path / "in" / "a.jsonl", ["a"])
    (tmp_path / "blocker").write_text("x")
    monkeypatch.setattr(clean, "clean_corpus", lambda *a, **k: pytest.fail("the job started work"))
    with caplog.at_level(logging.ERROR, logger="zhcorpus"):
        code = clean.main(["--input", str(tmp_path / "in"), "--output", str(tmp_path / "blocker" / "out")])
    assert code == 2 and "not writable" in caplog.records[-1].getMessage()


@pytest.mark.parametrize("hidden", [[], [".part.jsonl", "_SUCCESS"]])
def test_empty_input_directory_is_a_clear_error(spark, tmp_path, hidden):
    from etl.read.readers import read_raw
    from etl.runtime.progress import Counters

    d = tmp_path / "in"
    d.mkdir()
    for name in hidden:
        (d / name).write_text("{}\n")
    with pytest.raises(FileNotFoundError, match="no input files") as e:
        read_raw(spark, [str(d)], ReaderConfig(), Counters(spark.sparkContext))
    assert str(d) in str(e.value) and "\n" not in str(e.value)


# --- exit codes ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_run_whose_files_are_all_unreadable_exits_non_zero(spark, tmp_path, caplog):
    from jobs import clean

    d = tmp_path / "in"
    d.mkdir()
    (d / "empty.jsonl").write_bytes(b"")
    (d / "garbage.jsonl.gz").write_bytes(random.Random(5).randbytes(300))
    with caplog.at_level(logging.INFO, logger="zhcorpus"):
        code = clean.main(["--input", str(d), "--output", str(tmp_path / "out")])
    assert code == 4
    assert any("no input file could be read" in r.getMessage() and "2 files" in r.getMessage() for r in caplog.records)
    _jsonl(d / "good.jsonl", ["g"])
    assert clean.main(["--input", str(d), "--output", str(tmp_path / "out2")]) == 1
