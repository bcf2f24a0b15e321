"""The dedup index's files, lookups and compaction (issue 24), against brute-force references:
a lookup returns exactly the rows a full join of the index would, on the driver and in Spark
tasks, before and after compaction, and a compaction killed at either side of its commit leaves
an index that reads the same and that the next writer finishes."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from etl.dedup import index_files as ixf
from etl.dedup.index import DedupIndex, IndexCompacted, IndexConfig, plan_compaction
from filters.dedup.minhash import MinHashParams

PARAMS = MinHashParams(bands=4, rows=2, num_perm=8)
# ~100 rows a file and 8 rows a row group: small batches already use several buckets, files
# and row groups, so routing, spills and statistics skipping are all exercised.
SMALL = IndexConfig(target_file_mb=0.002, row_group_rows=8, compact_after=3, driver_max_rows=1 << 40)


def _batch(rng: np.random.Generator, prefix: str, n: int, shared: np.ndarray | None = None):
    """n documents with random band keys (4 bands); ``shared``: keys the first rows reuse."""
    keys = rng.integers(-(2**63), 2**63 - 1, (n, PARAMS.bands), dtype=np.int64)
    if shared is not None:
        keys[: len(shared)] = shared
    ids = [f"{prefix}-{i:04d}" for i in range(n)]
    bands = pa.table(
        {
            "band": pa.array(np.tile(np.arange(PARAMS.bands, dtype=np.int32), n)),
            "key": pa.array(keys.ravel()),
            "doc_id": pa.array(np.repeat(ids, PARAMS.bands)),
        }
    )
    exact = pa.table(
        {"exact_key": [f"{k & (2**64 - 1):016x}{i:016x}" for i, k in enumerate(keys[:, 0].tolist())], "doc_id": ids}
    )
    return bands, exact, keys


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*[t.column(c).to_pylist() for c in t.column_names]))


def _reference(bands: list[pa.Table], queries: pa.Table) -> list[tuple]:
    """A full join: every indexed (band, key, doc_id) whose (band, key) is queried."""
    want = set(zip(queries.column("band").to_pylist(), queries.column("key").to_pylist()))
    return sorted(r for t in bands for r in _rows(t.select(["band", "key", "doc_id"])) if (r[0], r[1]) in want)


def test_plan_compaction_merges_the_smallest_until_at_most_limit_remain():
    assert plan_compaction([5, 1, 1], 3, 4.0) == []
    assert plan_compaction([1, 1, 1, 1], 3, 4.0) == [0, 1, 2, 3]  # 2 must merge; the others are as small
    assert plan_compaction([100, 1, 1, 1, 1], 4, 4.0) == [1, 2, 3, 4]  # 100 > 4 x 4: left alone
    assert plan_compaction([10, 1, 1, 1, 1], 4, 4.0) == [0, 1, 2, 3, 4]  # 10 <= 4 x 4
    assert plan_compaction([9, 30, 2, 3], 3, 2.0) == [0, 2, 3]  # 2+3 must, 9 <= 2 x 5, 30 > 2 x 14


def test_bucket_ranges_and_exact_hash_agree_with_python_integers():
    rng = np.random.default_rng(0)
    keys = rng.integers(-(2**63), 2**63 - 1, 2000, dtype=np.int64)
    for bits in (0, 1, 3, 16):
        buckets = ixf.bucket_of(keys, bits)
        assert buckets.tolist() == [(k & (2**64 - 1)) >> (64 - bits) if bits else 0 for k in keys.tolist()]
        for b in np.unique(buckets)[:5]:
            lo, hi = ixf.key_range(int(b), bits)
            assert ((keys >= lo) & (keys <= hi)).tolist() == (buckets == b).tolist()
    digests = [f"{k & (2**64 - 1):016x}{'ab' * 8}" for k in keys[:50].tolist()]
    assert ixf.exact_hash(pa.array(digests)).tolist() == keys[:50].tolist()


@pytest.fixture(scope="module")
def three_batches(spark, tmp_path_factory):
    """An index of three batches (300, 60, 40 documents), the third sharing keys with the first."""
    rng = np.random.default_rng(1)
    root = str(tmp_path_factory.mktemp("index") / "idx")
    index = DedupIndex(spark, root, PARAMS, SMALL)
    b1, e1, k1 = _batch(rng, "a", 300)
    b2, e2, _ = _batch(rng, "b", 60)
    b3, e3, _ = _batch(rng, "c", 40, shared=k1[:5])
    for name, (b, e) in {"r1": (b1, e1), "r2": (b2, e2), "r3": (b3, e3)}.items():
        index.append_arrow(b, e, name)
    queries = pa.concat_tables(
        [
            b1.slice(0, 40).select(["band", "key"]),
            b3.slice(0, 12).select(["band", "key"]),
            _batch(rng, "q", 30)[0].select(["band", "key"]),
        ]
    )
    return {"root": root, "bands": [b1, b2, b3], "exact": [e1, e2, e3], "queries": queries}


def test_lookup_on_the_driver_and_in_spark_equals_a_full_join(spark, three_batches):
    index = DedupIndex(spark, three_batches["root"], PARAMS, SMALL)
    assert index.committed() == ["r1", "r2", "r3"]
    assert index.segments()[0].bits >= 1  # 300 documents at ~100 rows a file: several buckets
    want = _reference(three_batches["bands"], three_batches["queries"])
    assert len(want) == 40 + 20  # a-0000..a-0009, and c-0000..c-0004 that share a-0000..a-0004's keys
    assert _rows(index.touched_arrow(three_batches["queries"])) == want
    stats = index.lookup_summary()
    named = len({r[2] for r in want})  # the documents the band matches name: 15, looked up in docs/
    assert stats["where"] == "driver" and stats["row_groups_skipped"] > 0 and stats["matches"] == len(want) + named
    night = spark.createDataFrame(three_batches["queries"])
    assert _rows(index.touched(night).toArrow()) == want
    assert len(want) + named <= index.lookup_summary()["matches"] <= 2 * len(want)  # tasks name their own docs
    in_tasks = DedupIndex(spark, three_batches["root"], PARAMS, replace(SMALL, driver_max_rows=0))
    assert _rows(in_tasks.touched_arrow(three_batches["queries"])) == want
    assert in_tasks.lookup_summary()["where"] == "spark" and in_tasks.lookup_summary()["matches"] >= len(want) + named
    exact = pa.concat_tables(three_batches["exact"])
    asked = pa.concat_arrays([exact.column("exact_key").combine_chunks().slice(295, 10), pa.array(["f" * 32])])
    assert _rows(index.exact_arrow(asked)) == _rows(exact.slice(295, 10))
    found = index.exact_found(spark.createDataFrame(pa.table({"exact_key": asked})))
    assert _rows(found.toArrow()) == _rows(exact.slice(295, 10))
    assert index.bands().count() == sum(len(b) for b in three_batches["bands"])


def test_compaction_keeps_every_row_and_bounds_the_files(spark, three_batches, tmp_path):
    import shutil

    root = str(tmp_path / "idx")
    shutil.copytree(three_batches["root"], root)
    index = DedupIndex(spark, root, PARAMS, SMALL)
    before = index.describe()
    assert index.compact() is None  # 3 segments, compact_after 3: nothing to do
    summary = index.compact(full=True)
    assert summary["merged"] == ["r1", "r2", "r3"] and index.committed() == [summary["segment"]]
    after = index.describe()
    assert after["documents"] == before["documents"] == 400
    assert after["files"] < before["files"] and after["max_files_per_bucket"] <= 2
    assert sorted((tmp_path / "idx" / "batches").iterdir()) == []  # the merged batches are gone
    assert _rows(index.touched_arrow(three_batches["queries"])) == _reference(
        three_batches["bands"], three_batches["queries"]
    )
    assert _rows(index.bands().toArrow()) == sorted(r for b in three_batches["bands"] for r in _rows(b))
    with pytest.raises(IndexCompacted, match="r2 was merged"):
        index.retract("r2")


def test_appends_and_compactions_in_spark_tasks_write_what_the_driver_writes(spark, three_batches, tmp_path):
    """driver_max_rows 0: the batch is written by Spark tasks (rows partitioned and sorted by
    band and bucket), the compaction's buckets merged by Spark tasks."""
    import shutil

    rng = np.random.default_rng(5)
    root = str(tmp_path / "idx")
    shutil.copytree(three_batches["root"], root)
    b4, e4, _ = _batch(rng, "d", 250)
    index = DedupIndex(spark, root, PARAMS, replace(SMALL, driver_max_rows=0))
    index.append(spark.createDataFrame(b4), spark.createDataFrame(e4), "r4")
    written = index.segments()[-1]
    assert (
        written.bits >= 1 and written.docs == 250 and {f.part for f in written.files} == {-2, -1, 0, 1, 2, 3}
    )  # docs, exact, 4 bands
    everything = three_batches["bands"] + [b4]
    queries = pa.concat_tables([three_batches["queries"], b4.slice(100, 20).select(["band", "key"])])
    assert _rows(index.touched_arrow(queries)) == _reference(everything, queries)
    summary = index.compact(full=True)
    assert summary["where"] == "spark" and index.describe()["documents"] == 650
    assert _rows(index.bands().toArrow()) == sorted(r for b in everything for r in _rows(b))
    assert _rows(index.touched_arrow(queries)) == _reference(everything, queries)


class Killed(BaseException):
    """What SIGKILL at a failpoint leaves on disk, raised instead: ``compact`` has no handler
    that could tidy up, so the files are those a killed process leaves."""


@pytest.mark.parametrize("point", ["index:compaction_written", "index:compaction_committed"])
def test_a_killed_compaction_leaves_the_index_readable_and_a_rerun_finishes_it(
    spark, three_batches, tmp_path, monkeypatch, point
):
    import shutil

    import etl.dedup.index_write

    root = str(tmp_path / "idx")
    shutil.copytree(three_batches["root"], root)
    want = _reference(three_batches["bands"], three_batches["queries"])

    def fail(name):
        if name == point:
            raise Killed(name)

    monkeypatch.setattr(etl.dedup.index_write, "failpoint", fail)
    with pytest.raises(Killed):
        DedupIndex(spark, root, PARAMS, SMALL).compact(full=True)
    monkeypatch.undo()
    index = DedupIndex(spark, root, PARAMS, SMALL)
    compacted = list((tmp_path / "idx" / "compacted").iterdir())
    assert len(compacted) == 1  # the new segment's files are there, committed or not
    if point == "index:compaction_written":
        assert index.committed() == ["r1", "r2", "r3"]
    else:  # committed: the merged batches are still on disk, and ignored
        assert index.committed() == [compacted[0].name] and len(list((tmp_path / "idx" / "batches").iterdir())) == 3
    assert _rows(index.touched_arrow(three_batches["queries"])) == want
    index.compact(full=True)
    assert len(index.committed()) == 1 and list((tmp_path / "idx" / "batches").iterdir()) == []
    assert len(list((tmp_path / "idx" / "compacted").iterdir())) == 1
    assert _rows(index.touched_arrow(three_batches["queries"])) == want
    assert index.describe()["documents"] == 400


def test_a_batch_written_before_buckets_is_read_and_compacted(spark, tmp_path):
    """An index of issue 24's time: Spark partitionBy("band") files of (key, doc_id), a commit
    without a file list: looked up by a Spark join until a compaction rewrites it."""
    rng = np.random.default_rng(3)
    root = tmp_path / "idx"
    index = DedupIndex(spark, str(root), PARAMS, SMALL)
    b1, e1, _ = _batch(rng, "old", 50)
    spark.createDataFrame(b1).write.partitionBy("band").parquet(str(root / "batches/old/bands"))
    spark.createDataFrame(e1).write.parquet(str(root / "batches/old/exact"))
    (root / "commits").mkdir()
    (root / "commits/00000000-old.json").write_text(json.dumps({"run": "old", "sequence": 0}))
    b2, e2, _ = _batch(rng, "new", 20)
    index.append_arrow(b2, e2, "new")
    queries = pa.concat_tables([b1.slice(0, 20), b2.slice(0, 8)]).select(["band", "key"])
    want = _reference([b1, b2], queries)
    assert index.committed() == ["old", "new"] and _rows(index.touched_arrow(queries)) == want
    assert _rows(index.exact_arrow(e1.column("exact_key").slice(0, 3))) == _rows(e1.slice(0, 3))
    assert index.compact()["merged"] == ["old"]  # rewritten whatever the rule says
    assert [s.kind for s in index.segments()] == ["batch", "compaction"] and index.describe()["documents"] == 70
    assert _rows(index.touched_arrow(queries)) == want
    index.compact(full=True)
    assert [s.kind for s in index.segments()] == ["compaction"] and _rows(index.touched_arrow(queries)) == want


def _write_bucketed_v1(root, segment: str, bands: pa.Table, exact: pa.Table, bits: int) -> list[list]:
    """A segment as d1c9a89 / ef083ea (2026-11-25) wrote it: band files of (key, doc_id) and
    exact files of (key, exact_key, doc_id), bucketed and sorted by key; no docs part. Returns
    its commit record's file list."""
    import pyarrow.parquet as pq

    exact = exact.append_column("key", pa.array(ixf.exact_hash(exact.column("exact_key")), pa.int64()))
    band = bands.column("band").to_numpy()
    parts = [(-1, exact.select(["key", "exact_key", "doc_id"]))] + [
        (int(b), bands.filter(pa.array(band == b)).select(["key", "doc_id"])) for b in np.unique(band)
    ]
    files = []
    for part, table in parts:
        buckets = ixf.bucket_of(table.column("key").to_numpy(), bits)
        for k in np.unique(buckets):
            rel = f"{segment}/" + (f"exact/bucket={k}" if part == -1 else f"bands/band={part}/bucket={k}")
            (root / rel).mkdir(parents=True)
            chunk = table.filter(pa.array(buckets == k)).sort_by("key")
            pq.write_table(
                chunk,
                root / rel / "part-00000.parquet",
                row_group_size=8,
                use_dictionary=False,
                write_statistics=["key"],
            )
            files.append([f"{rel}/part-00000.parquet", part, int(k), len(chunk)])
    return files


def test_segments_of_the_first_bucketed_layout_are_read_and_compacted(spark, tmp_path):
    """An index as d1c9a89 / ef083ea left it: settings of format 1, a compacted segment and a
    batch whose band files hold (key, doc_id), commit records without a layout. A night of the
    current layout is appended; lookups find the old documents, and the first compaction
    rewrites the old segments whatever the rule says."""
    rng = np.random.default_rng(7)
    root = tmp_path / "idx"
    root.mkdir()
    (root / "settings.json").write_text(json.dumps({"format_version": 1, **PARAMS.resolved().__dict__}, sort_keys=True))
    (root / "commits").mkdir()
    b0, e0, k0 = _batch(rng, "v1c", 120)
    b1, e1, _ = _batch(rng, "v1b", 30, shared=k0[:3])
    for seq, (name, kind, dir_, b, e, bits, replaces) in enumerate(
        [
            ("compacted-00000002", "compaction", "compacted", b0, e0, 1, [{"name": "x", "sequence": 0}]),
            ("v1b", "batch", "batches", b1, e1, 0, []),
        ],
        start=2,
    ):
        record = {
            "name": name,
            "run": name,
            "sequence": seq,
            "kind": kind,
            "bits": bits,
            "docs": len(e),
            "files": _write_bucketed_v1(root, f"{dir_}/{name}", b, e, bits),
            "replaces": replaces,
        }
        (root / f"commits/{seq:08d}-{name}.json").write_text(json.dumps(record))
    index = DedupIndex(spark, str(root), PARAMS, SMALL)
    b2, e2, _ = _batch(rng, "new", 20, shared=k0[3:5])
    index.append_arrow(b2, e2, "new")
    assert index.committed() == ["compacted-00000002", "v1b", "new"]
    everything = [b0, b1, b2]
    queries = pa.concat_tables([b0.slice(0, 24), b1.slice(8, 8), b2.slice(0, 8)]).select(["band", "key"])
    want = _reference(everything, queries)
    assert len({r[2] for r in want}) > 8  # old documents of both segments and new ones found
    assert _rows(index.touched_arrow(queries)) == want
    assert _rows(index.touched(spark.createDataFrame(queries)).toArrow()) == want
    asked = pa.concat_arrays(
        [
            e0.column("exact_key").combine_chunks().slice(0, 3),
            e1.column("exact_key").combine_chunks().slice(3, 2),
            pa.array(["f" * 32]),
        ]
    )
    exact_want = sorted(r for e in (e0, e1, e2) for r in _rows(e) if r[0] in asked.to_pylist())
    assert len(exact_want) == 8  # e1's first rows share e0's keys, and so their exact keys
    assert _rows(index.exact_arrow(asked)) == exact_want
    found = index.exact_found(spark.createDataFrame(pa.table({"exact_key": asked})))
    assert _rows(found.toArrow()) == exact_want
    assert _rows(index.bands().toArrow()) == sorted(r for b in everything for r in _rows(b))
    assert index.describe()["documents"] == 170
    assert index.compact()["merged"] == ["compacted-00000002", "v1b"]  # rewritten whatever the rule says
    assert [s.kind for s in index.segments()] == ["batch", "compaction"] and index.describe()["documents"] == 170
    assert not (root / "batches/v1b").exists() and not (root / "compacted/compacted-00000002").exists()
    assert _rows(index.touched_arrow(queries)) == want
    index.compact(full=True)
    assert index.describe()["segments"] == 1 and _rows(index.touched_arrow(queries)) == want
    assert _rows(index.exact_arrow(asked)) == exact_want
    assert json.loads((root / "settings.json").read_text())["format_version"] == 2  # the old code now refuses it


def test_a_file_without_the_columns_of_its_layout_is_named(spark, tmp_path):
    """A batch of layout 1 whose commit record says layout 2: the lookup fails on the file that
    lacks ``doc`` (pyarrow alone drops a missing column and fails later on a length mismatch)."""
    rng = np.random.default_rng(8)
    root = tmp_path / "idx"
    index = DedupIndex(spark, str(root), PARAMS, SMALL)
    b, e, _ = _batch(rng, "v1", 20)
    (root / "commits").mkdir()
    (root / "commits/00000000-v1.json").write_text(
        json.dumps(
            {
                "name": "v1",
                "sequence": 0,
                "kind": "batch",
                "layout": 2,
                "bits": 0,
                "docs": 20,
                "files": _write_bucketed_v1(root, "batches/v1", b, e, 0),
            }
        )
    )
    missing = r"batches/v1/bands/band=\d/bucket=0/part-00000.parquet has no column doc"
    with pytest.raises(ixf.IndexFileError, match=missing):
        index.touched_arrow(b.slice(0, 4).select(["band", "key"]))


def test_a_band_row_without_its_docs_row_fails_the_lookup_naming_the_files(spark, three_batches, tmp_path):
    """A docs file that lost a row (a corrupt index): the documents its band rows name cannot be
    named, and a lookup says so instead of answering with a null doc_id."""
    import shutil

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    root = tmp_path / "idx"
    shutil.copytree(three_batches["root"], root)
    docs_file = sorted((root / "batches/r2/docs").rglob("*.parquet"))[0]
    table = pq.read_table(docs_file)
    lost = table.column("doc_id")[0].as_py()
    pq.write_table(table.slice(1), docs_file)
    _recommit(root, docs_file)  # a writer's bug, not a damaged file: the checksum would refuse that first
    bands = three_batches["bands"][1]
    queries = bands.filter(pc.equal(bands.column("doc_id"), lost)).select(["band", "key"])
    for driver_max_rows in (1 << 40, 0):  # on the driver, in Spark tasks
        index = DedupIndex(spark, str(root), PARAMS, replace(SMALL, driver_max_rows=driver_max_rows))
        with pytest.raises(Exception, match=f"no docs row.*{docs_file.relative_to(root)}"):
            index.touched_arrow(queries)


def _recommit(root, path) -> None:
    """Give ``path`` its current size and sha256 in the commit record that lists it."""
    import hashlib

    rel, data = str(path.relative_to(root)), path.read_bytes()
    for commit in (root / "commits").glob("*.json"):
        record = json.loads(commit.read_text())
        if rel in record.get("checksums", {}):
            record["checksums"][rel] = [len(data), hashlib.sha256(data).hexdigest()]
            commit.write_text(json.dumps(record))
            (commit.parent / f".{commit.name}.crc").unlink(missing_ok=True)  # Hadoop's, of the old text


@pytest.mark.parametrize("first", ["append", "compaction"])
def test_a_second_writer_is_refused_while_one_writes(spark, three_batches, tmp_path, monkeypatch, caplog, first):
    """Both orders of two writers: while an append has written its batch and not yet committed
    it, a compaction (the library call, and jobs.compact_index: exit 3, one line) is refused;
    while a compaction has written its segment, an append and a retraction are refused. Without
    the lock, the second writer removed the first's uncommitted directory as a leftover, and
    the first then committed a record of missing files."""
    import shutil

    import etl.dedup.index_write
    from etl.dedup.index import IndexLocked
    from jobs import compact_index

    root = str(tmp_path / "idx")
    shutil.copytree(three_batches["root"], root)
    b4, e4, _ = _batch(np.random.default_rng(9), "d", 30)
    refused = []
    point = "index:batch_written" if first == "append" else "index:compaction_written"

    def second_writer(name):
        if name != point or refused:  # once, in the first writer
            return
        other = DedupIndex(spark, root, PARAMS, SMALL)
        if first == "append":
            attempts = [lambda: other.compact(full=True), lambda: compact_index.main(["--index", root])]
        else:
            attempts = [lambda: other.append_arrow(b4, e4, "r4"), lambda: other.retract("r1")]
        for attempt in attempts:
            try:
                refused.append(attempt())
            except IndexLocked as e:
                refused.append(str(e))

    monkeypatch.setattr(etl.dedup.index_write, "failpoint", second_writer)
    index = DedupIndex(spark, root, PARAMS, SMALL)
    with caplog.at_level("ERROR", logger="zhcorpus"):
        if first == "append":
            index.append_arrow(b4, e4, "r4")
        else:
            index.compact(full=True)
    assert len(refused) == 2 and "another writer of the dedup index holds" in refused[0], refused
    if first == "append":
        assert refused[1] == 3 and [r.message for r in caplog.records if "holds" in r.message] != []
        assert all("\n" not in r.message for r in caplog.records if "holds" in r.message)
    else:
        assert "another writer of the dedup index holds" in refused[1]
    assert not (tmp_path / "idx" / ".lock").exists()
    for s in index.segments():  # every committed file is there
        assert all((tmp_path / "idx" / f.path).exists() for f in s.files), s.name
    everything = three_batches["bands"] + ([b4] if first == "append" else [])
    assert _rows(index.touched_arrow(three_batches["queries"])) == _reference(everything, three_batches["queries"])
    assert index.describe()["documents"] == 400 + 30 * (first == "append")


def test_a_lock_left_by_a_dead_process_is_taken_over_and_one_of_another_host_refused(spark, three_batches, tmp_path):
    import os
    import shutil
    import socket
    import subprocess
    import sys

    from etl.dedup.index import IndexLocked
    from etl.runtime.locks import HadoopFiles, Lock

    root = tmp_path / "idx"
    shutil.copytree(three_batches["root"], root)
    index = DedupIndex(spark, str(root), PARAMS, SMALL)
    (root / ".lock").write_text(json.dumps({"pid": os.getpid(), "host": "elsewhere", "started": 0}))
    with pytest.raises(IndexLocked, match="elsewhere"):
        index.compact(full=True)
    assert index.committed() == ["r1", "r2", "r3"]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (root / ".lock").write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname(), "started": 0}))
    assert index.compact(full=True)["merged"] == ["r1", "r2", "r3"] and not (root / ".lock").exists()
    # the same lock through a Hadoop file system (HDFS, s3a): here Hadoop's local one
    hadoop = HadoopFiles(spark)
    path = f"file:{tmp_path}/hadoop.lock"
    with Lock(path, "another writer", hadoop, IndexLocked):
        with pytest.raises(IndexLocked, match="another writer holds"):
            Lock(path, "another writer", hadoop, IndexLocked).__enter__()
    assert not (tmp_path / "hadoop.lock").exists()
    (tmp_path / "hadoop.lock").write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    with Lock(path, "another writer", hadoop, IndexLocked):
        assert json.loads((tmp_path / "hadoop.lock").read_text())["pid"] == os.getpid()


def test_the_index_modules_keep_their_layers_and_callers_use_the_facade():
    """issue 35, item 4: the commit log below the reader, the reader below the writer, the
    older formats reached through ``index_legacy`` alone (docs/dedup.md's removal plan deletes
    it and the modules that import it), and every caller outside ``etl.dedup.index*`` through
    ``DedupIndex`` (``etl.dedup.index``)."""
    from tests.test_import_graph import graph

    edges = graph()
    ix = {m: {d for d in deps if d.startswith("etl.dedup.index")} for m, deps in edges.items()}
    below = {
        "etl.dedup.index_log": {"etl.dedup.index_read", "etl.dedup.index_write", "etl.dedup.index"},
        "etl.dedup.index_read": {"etl.dedup.index_write", "etl.dedup.index"},
        "etl.dedup.index_write": {"etl.dedup.index"},
        "etl.dedup.index_legacy": {"etl.dedup.index_log", "etl.dedup.index_read", "etl.dedup.index_write"},
    }
    wrong = sorted(f"{m} -> {d}" for m, never in below.items() for d in ix[m] & never)
    assert not wrong, wrong
    legacy_users = {m for m, deps in ix.items() if "etl.dedup.index_legacy" in deps}
    assert legacy_users == {"etl.dedup.index", "etl.dedup.index_log", "etl.dedup.index_read", "etl.dedup.index_write"}
    parts = {"etl.dedup.index_log", "etl.dedup.index_read", "etl.dedup.index_write", "etl.dedup.index_legacy"}
    outside = sorted(
        f"{m} -> {d}" for m, deps in ix.items() if not m.startswith("etl.dedup.index") for d in deps & parts
    )
    assert not outside, outside
