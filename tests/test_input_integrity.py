"""Issue 34, item 3: the published corpus is exactly the input, once.

- A damaged region of an input (a corrupt gzip member in the middle of a ``.warc.gz``, garbage
  between members, bytes between records) is skipped, counted (bytes, and the records known to
  lie in it) and reported as a file error, and every good record after it is read.
- A file named twice (a directory and a file in it; a symlink beside its target; a hard link)
  is read once, and ``report.json`` names the other names (``input.duplicate_inputs``).

The pure-Python tests go through ``etl.read.records.parse_file``; the Spark ones share the
session of ``tests/conftest.py`` and run one ``clean_corpus`` between them.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

import pytest

from etl.read import warc
from etl.read.records import ReaderConfig, parse_file
from tests.crawl_fixture import doc, html, response

N = 20
BAD = 10  # the member that is damaged


def _page(i: int) -> bytes:
    return response(f"http://x.cn/{i}", html(f"标题{i}", doc(i, i + 1)).encode())


def _members(n: int = N) -> list[bytes]:
    """A .warc.gz written the common way: one gzip member per record."""
    return [gzip.compress(_page(i), mtime=0) for i in range(n)]


def _flip(member: bytes, at: int, n: int = 64) -> bytes:
    b = bytearray(member)
    for k in range(at, min(at + n, len(b))):
        b[k] ^= 0xFF
    return bytes(b)


DAMAGE = {
    # 64 bytes flipped in the middle of the member's deflate data (the case)
    "flipped_middle": lambda m: _flip(m, len(m) // 2),
    # the member's header and first deflate bytes flipped: nothing of it can be read
    "flipped_header": lambda m: _flip(m, 0, 32),
    # the member replaced by random bytes of its length
    "random_bytes": lambda m: random.Random(5).randbytes(len(m)),
    # the member cut short and the next one written right after it (an interrupted append)
    "cut_short": lambda m: m[: len(m) // 2],
}


def _read(name: str, content: bytes):
    rows = list(parse_file(name, content, ReaderConfig()))
    return [r for r in rows if r["kind"] == "record"], json.loads(rows[-1]["file_stats"])


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_corrupt_member_in_the_middle_is_skipped_counted_and_every_later_record_read(damage):
    members = _members()
    bad = DAMAGE[damage](members[BAD])
    content = b"".join(members[:BAD]) + bad + b"".join(members[BAD + 1 :])
    recs, stats = _read("f.warc.gz", content)
    good = [r["url"] for r in recs if r["reason"] is None]
    assert good == [f"http://x.cn/{i}" for i in range(N) if i != BAD]
    lost = [r for r in recs if r["reason"] is not None]
    assert all(r["reason"] == warc.CORRUPT_GZIP for r in lost)
    # a record whose header the member inflated before its damage is known, and rejected
    assert len(lost) == (damage in ("flipped_middle", "cut_short")), lost
    assert stats["records"] == len(recs)
    offsets = [r["offset"] for r in recs]  # offsets (and ids derived from them) never collide
    intact, _ = _read("f.warc.gz", b"".join(members))
    assert offsets == sorted(set(offsets)) and offsets[:BAD] == [r["offset"] for r in intact[:BAD]]
    # the damage is one file error: where it starts in the file, the compressed bytes skipped,
    # and the record known to lie in it (its header inflated before the damage), if any
    start = sum(map(len, members[:BAD]))
    (err,) = stats["errors"]
    assert err["reason"] == warc.CORRUPT_GZIP and err["offset"] == start, err
    assert err["bytes"] == len(bad), err
    assert err["records"] == len(lost)


def test_two_damaged_stretches_are_two_errors_and_the_records_between_them_are_read():
    members = _members()
    content = members[:3] + [_flip(members[3], 40)] + members[4:12] + [b"\x00junk" * 9] + members[12:]
    recs, stats = _read("f.warc.gz", b"".join(content))
    assert [r["url"] for r in recs if r["reason"] is None] == [f"http://x.cn/{i}" for i in range(N) if i != 3]
    assert [(e["reason"], e["offset"], e["bytes"]) for e in stats["errors"]] == [
        (warc.CORRUPT_GZIP, sum(map(len, content[:3])), len(content[3])),
        (warc.CORRUPT_GZIP, sum(map(len, content[:12])), len(content[12])),
    ]


def test_a_corrupt_member_of_a_jsonl_gz_costs_only_its_lines():
    lines = [json.dumps({"id": f"j{i}", "text": doc(i, i + 2)}, ensure_ascii=False).encode() + b"\n" for i in range(N)]
    members = [gzip.compress(b"".join(lines[i : i + 2]), mtime=0) for i in range(0, N, 2)]
    bad = _flip(members[4], len(members[4]) // 2)
    recs, stats = _read("f.jsonl.gz", b"".join(members[:4]) + bad + b"".join(members[5:]))
    assert [r["doc_id"] for r in recs if r["reason"] is None] == [f"j{i}" for i in range(N) if i not in (8, 9)]
    (err,) = stats["errors"]
    assert (err["reason"], err["offset"], err["bytes"]) == (warc.CORRUPT_GZIP, sum(map(len, members[:4])), len(bad))


def test_a_file_cut_at_the_end_rejects_the_record_in_flight_and_skips_nothing():
    """Truncation is no damaged region: every byte there is belongs to the record it rejects."""
    members = _members(3)
    recs, stats = _read("f.warc.gz", b"".join(members)[:-40])
    assert [r["reason"] for r in recs] == [None, None, warc.TRUNCATED] and stats["errors"] == []


def test_bytes_between_records_are_a_file_error_as_well_as_a_region():
    junk = b"leftover bytes from a broken writer\r\n"
    recs, stats = _read("f.warc", _page(1) + junk + _page(2))
    assert [r["reason"] for r in recs] == [None, None]
    assert stats["regions"] == {warc.MALFORMED_HEADER: {"count": 1, "bytes": len(junk)}}
    assert [(e["reason"], e["offset"], e["bytes"], e["regions"]) for e in stats["errors"]] == [
        (warc.MALFORMED_HEADER, len(_page(1)), len(junk), 1)
    ]


# --- inputs named twice -------------------------------------------------------------------------


def _jsonl(path: Path, prefix: str, n: int) -> None:
    rows = [json.dumps({"id": f"{prefix}{i}", "text": doc(i, i + 3)}, ensure_ascii=False) for i in range(n)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_a_file_named_twice_is_listed_once_with_its_other_names(spark, tmp_path):
    from etl.read.readers import list_inputs

    d = tmp_path / "in"
    d.mkdir()
    _jsonl(d / "a.jsonl", "a", 3)
    _jsonl(d / "b.jsonl", "b", 2)
    (d / "link.jsonl").symlink_to(d / "a.jsonl")
    os.link(d / "b.jsonl", d / "hard.jsonl")
    (tmp_path / "outside.jsonl").symlink_to(d / "b.jsonl")
    files = list_inputs(spark, [str(d), str(d / "a.jsonl"), str(tmp_path / "outside.jsonl")])
    assert [(Path(f.local).name, sorted(Path(a).name for a in f.aliases)) for f in files] == [
        ("a.jsonl", ["a.jsonl", "link.jsonl"]),  # named by the directory and by itself
        ("b.jsonl", ["hard.jsonl", "outside.jsonl"]),
    ]


@pytest.mark.slow
def test_a_clean_run_reads_each_file_once_and_reports_damage_with_exit_1(spark, tmp_path):
    """The issue's two reads through the job's library call: ``--input D D/a.jsonl`` with a
    symlink to a.jsonl in D, and a .warc.gz with a corrupt member in the middle."""
    from etl.corpus import CleanConfig, clean_corpus
    from etl.report.ledger import EXIT_FILE_ERRORS, run_outcome

    d = tmp_path / "in"
    d.mkdir()
    _jsonl(d / "a.jsonl", "a", N)
    (d / "link.jsonl").symlink_to(d / "a.jsonl")
    members = _members()
    (d / "crawl.warc.gz").write_bytes(b"".join(members[:BAD]) + _flip(members[BAD], 20) + b"".join(members[BAD + 1 :]))
    report = clean_corpus(CleanConfig(), [str(d), str(d / "a.jsonl")], str(tmp_path / "out"), spark=spark)
    inp = report["input"]
    assert inp["files"] == 2 and report["documents"] == N + N - 1  # a.jsonl once, the warc less one page
    ids = spark.read.parquet(str(tmp_path / "out" / "documents")).select("doc_id").toPandas().doc_id
    assert sorted(i for i in ids if i.startswith("a")) == sorted(f"a{i}" for i in range(N))  # once each
    assert {Path(k).name: sorted(Path(x).name for x in v) for k, v in inp["duplicate_inputs"].items()} == {
        "a.jsonl": ["a.jsonl", "link.jsonl"]
    }
    (err,) = inp["file_errors"]
    assert Path(err["file"]).name == "crawl.warc.gz" and err["reason"] == warc.CORRUPT_GZIP
    assert err["bytes"] == len(members[BAD])
    assert run_outcome(report)[0] == EXIT_FILE_ERRORS
