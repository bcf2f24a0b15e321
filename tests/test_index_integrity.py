"""Issue 34, item 3: a damaged dedup index is refused with one line naming the file, never
half-read, and left as it was.

Every file a segment commits is listed in its commit record with its size and sha256, and
verified before a lookup or a compaction reads it. The case of the issue (64 bytes flipped in
one file, then the next run: a traceback ending ``OSError: ZSTD decompression failed``) and the
worse one it hid (a flip in the uncompressed key column: no error at all, a duplicate missed)
both end in ``IndexFileError`` (exit 2 through ``jobs.cli.run_job``). Indexes committed before
checksums are read as before, and the log says their files are not verified.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from etl.dedup import index_files as ixf
from etl.dedup.index import DedupIndex
from tests.test_dedup_index import PARAMS, SMALL, _batch, _rows


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    """An index of two batches; ``queries`` hit both (band keys of 20 documents of each)."""
    rng = np.random.default_rng(34)
    root = tmp_path_factory.mktemp("integrity") / "idx"
    index = DedupIndex(spark, str(root), PARAMS, SMALL)
    b1, e1, _ = _batch(rng, "a", 200)
    b2, e2, _ = _batch(rng, "b", 80)
    index.append_arrow(b1, e1, "r1")
    index.append_arrow(b2, e2, "r2")
    queries = pa.concat_tables([b1.slice(0, 80).select(["band", "key"]), b2.slice(0, 80).select(["band", "key"])])
    return {"root": root, "queries": queries, "want": _rows(index.touched_arrow(queries)), "exact": e1}


def _copy(built, tmp_path: Path) -> Path:
    root = tmp_path / "idx"
    shutil.copytree(built["root"], root)
    return root


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def _flip(path: Path, at: int, n: int = 64) -> None:
    b = bytearray(path.read_bytes())
    for k in range(at, min(at + n, len(b))):
        b[k] ^= 0xFF
    path.write_bytes(bytes(b))


def _biggest(root: Path, part: str) -> Path:
    return max((root / "batches" / "r1" / part).rglob("*.parquet"), key=lambda p: p.stat().st_size)


def test_an_intact_index_verifies_and_answers_as_before(spark, built):
    records = [json.loads(p.read_text()) for p in sorted((built["root"] / "commits").glob("*.json"))]
    for r in records:  # every committed file with its size and sha256
        assert sorted(r["checksums"]) == sorted(f[0] for f in r["files"])
        for path, (size, sha) in r["checksums"].items():
            data = (built["root"] / path).read_bytes()
            assert (size, sha) == (len(data), hashlib.sha256(data).hexdigest())
    index = DedupIndex(spark, str(built["root"]), PARAMS, SMALL)
    assert _rows(index.touched_arrow(built["queries"])) == built["want"] and len(built["want"]) > 0


@pytest.mark.parametrize("part", ["docs", "bands"])
def test_64_flipped_bytes_are_refused_in_one_line_naming_the_file(spark, built, tmp_path, part, caplog):
    """The issue's case: the next run fails in one line (exit 2), the file named."""
    from jobs.cli import EXIT_REFUSED, run_job

    root = _copy(built, tmp_path)
    bad = _biggest(root, part)
    _flip(bad, bad.stat().st_size // 2)
    index = DedupIndex(spark, str(root), PARAMS, SMALL)
    rel = str(bad.relative_to(root))
    with pytest.raises(ixf.IndexFileError, match=rel):
        index.touched_arrow(built["queries"])
    caplog.clear()
    with caplog.at_level(logging.DEBUG, "zhcorpus"):
        assert run_job(lambda: index.touched_arrow(built["queries"]) and 0) == EXIT_REFUSED
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and rel in errors[0].getMessage() and "\n" not in errors[0].getMessage()


def test_a_flip_in_the_uncompressed_key_column_is_caught_not_silently_misread(spark, built, tmp_path):
    """Keys are stored uncompressed: flipped, they decode without an error and the duplicates
    they held are simply missed. The checksum is what catches it."""
    root = _copy(built, tmp_path)
    bad = _biggest(root, "exact")
    md = pq.ParquetFile(bad).metadata
    key_chunk = md.row_group(0).column(md.schema.to_arrow_schema().get_field_index("key"))
    _flip(bad, key_chunk.data_page_offset + key_chunk.total_compressed_size // 2, 16)
    index = DedupIndex(spark, str(root), PARAMS, SMALL)
    asked = built["exact"].column("exact_key").combine_chunks()
    with pytest.raises(ixf.IndexFileError, match=str(bad.relative_to(root))):
        index.exact_arrow(asked)


def test_a_truncated_file_is_refused_the_same_way(spark, built, tmp_path):
    root = _copy(built, tmp_path)
    bad = _biggest(root, "bands")
    bad.write_bytes(bad.read_bytes()[:-100])
    index = DedupIndex(spark, str(root), PARAMS, SMALL)
    with pytest.raises(ixf.IndexFileError, match=str(bad.relative_to(root))):
        index.touched_arrow(built["queries"])


def test_a_compaction_over_a_damaged_file_leaves_the_index_as_it_was(spark, built, tmp_path):
    root = _copy(built, tmp_path)
    bad = _biggest(root, "docs")
    _flip(bad, bad.stat().st_size // 2)
    before = _snapshot(root)
    with pytest.raises(ixf.IndexFileError, match=str(bad.relative_to(root))):
        DedupIndex(spark, str(root), PARAMS, SMALL).compact(full=True)
    assert _snapshot(root) == before  # nothing written, nothing removed, no lock left


def test_an_index_committed_without_checksums_is_read_and_the_log_says_so(spark, built, tmp_path, caplog):
    root = _copy(built, tmp_path)
    for p in (root / "commits").glob("*.json"):
        record = json.loads(p.read_text())
        record.pop("checksums")
        p.write_text(json.dumps(record))
        (p.parent / f".{p.name}.crc").unlink()  # Hadoop's checksum of the file as committed
    index = DedupIndex(spark, str(root), PARAMS, SMALL)
    with caplog.at_level(logging.INFO, "zhcorpus"):
        assert _rows(index.touched_arrow(built["queries"])) == built["want"]
    assert any("not verified" in r.getMessage() and "r1" in r.getMessage() for r in caplog.records)
    bad = _biggest(root, "docs")  # unverified, a file pyarrow cannot read still fails in one line naming it
    bad.write_bytes(bad.read_bytes()[:-100])
    with pytest.raises(ixf.IndexFileError, match=str(bad.relative_to(root))):
        index.touched_arrow(built["queries"])


@pytest.mark.slow
def test_the_dedup_job_refuses_a_damaged_index_publishes_nothing_and_leaves_it(spark, tmp_path, caplog):
    """The issue's sequence through a job: a run appends to the index, 64 bytes of one of its
    files are flipped, the next run exits 2 with one line naming the file."""
    from etl.dedup.stage import DedupConfig
    from jobs import dedup
    from tests.crawl_fixture import doc

    idx = tmp_path / "index"
    params = DedupConfig().minhash.resolved()  # the job's settings: an earlier night's index
    rng, n = np.random.default_rng(3), 40
    ids = [f"n1-{i}" for i in range(n)]
    bands = pa.table(
        {
            "band": pa.array(np.tile(np.arange(params.bands, dtype=np.int32), n)),
            "key": pa.array(rng.integers(-(2**63), 2**63 - 1, n * params.bands, dtype=np.int64)),
            "doc_id": pa.array(np.repeat(ids, params.bands)),
        }
    )
    exact = pa.table({"exact_key": [hashlib.sha256(i.encode()).hexdigest() for i in ids], "doc_id": ids})
    DedupIndex(spark, str(idx), params).append_arrow(bands, exact, "n1")
    rows = [{"doc_id": f"n2-{i}", "text": doc(i, i + 2)} for i in range(12)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "night2.parquet")
    bad = max(idx.rglob("*.parquet"), key=lambda p: p.stat().st_size)
    _flip(bad, bad.stat().st_size // 2)
    before = _snapshot(idx)
    caplog.clear()
    with caplog.at_level(logging.INFO, "zhcorpus"):
        code = dedup.main(
            ["--input", str(tmp_path / "night2.parquet"), "--output", str(tmp_path / "out"), "--index", str(idx)]
        )
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert code == 2 and len(errors) == 1 and str(bad.relative_to(idx)) in errors[0], errors
    assert not (tmp_path / "out").exists() and _snapshot(idx) == before
