"""Small files packed, outputs sized (issue 24, item 4): many small inputs are a few read tasks,
not one task per file (or per three files), and every Parquet output is a few files of about
``output.target_file_bytes``, with the same rows as the same records read from one file."""

from __future__ import annotations

from pathlib import Path

import pytest

from etl.read import records as rec
from etl.read.readers import InputFile, plan
from etl.runtime import sizing

CORES = 2  # the spark fixture is local[2]


def _files(n: int, size: int) -> list[InputFile]:
    """``n`` small JSONL files that are never opened (``plan`` opens only WARC files it splits)."""
    return [InputFile(f"file:/in/part-{i:05d}.jsonl", size, f"/in/part-{i:05d}.jsonl") for i in range(n)]


def test_pack_cuts_small_ranges_into_equal_contiguous_tasks_and_leaves_big_ones_alone():
    # 10 ranges of 10, capacity 30: ceil(100 / 30) = 4 packs of 25; a range goes to the pack
    # holding its middle byte (5, 15, ..., 95): floor(middle / 25) = 0 0 1 1 1 2 2 3 3 3
    assert sizing.pack([10] * 10, 30) == [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]
    # 15 and 20 reach half the capacity: a task each, before the packs; the rest keep their order
    assert sizing.pack([5, 15, 5, 20, 5], 30) == [[1], [3], [0, 2, 4]]
    assert sizing.pack([], 30) == []


def test_read_capacity_follows_spark_max_split_bytes():
    # cost 1,000 over 2 cores: 250 a task, between the split (100) and the limit (400)
    assert sizing.read_capacity([100] * 10, split=100, limit=400, parallelism=2) == 250
    assert sizing.read_capacity([100] * 100, split=100, limit=400, parallelism=2) == 400  # never above split_bytes
    assert sizing.read_capacity([1] * 10, split=100, limit=400, parallelism=2) == 100  # never below the split


@pytest.mark.parametrize("n", [300, 3000])
def test_small_files_are_two_tasks_a_core_in_file_order(n):
    """3,000 files of 700 bytes were 1,000 tasks (1 MB counted per open, packed up to the 4 MB
    split); now the cost of the whole input is spread over 2 tasks per core."""
    files = _files(n, 700)
    p = plan(files, rec.ReaderConfig(), parallelism=CORES)
    assert len(p.tasks) == 2 * CORES
    assert [r.path for t in p.tasks for r in t] == [f.path for f in files]  # contiguous packs, input order
    sizes = [len(t) for t in p.tasks]
    assert max(sizes) - min(sizes) <= 1


def test_big_inputs_keep_their_split():
    """100 files of 40 MB: 2 tasks a core would be 1 GB a task, capped at split_bytes (64 MB);
    each file is one range (under the split) and one task (over half the capacity), as before."""
    p = plan(_files(100, 40 << 20), rec.ReaderConfig(), parallelism=CORES)
    assert p.capacity == 64 << 20 and len(p.tasks) == 100


def test_small_remote_files_are_coalesced_like_local_ones():
    files = [InputFile(f"hdfs://nn/in/part-{i}.jsonl", 700, None) for i in range(3000)]
    assert plan(files, rec.ReaderConfig(), parallelism=CORES).remote_tasks == 2 * CORES
    big = files + [InputFile("hdfs://nn/in/big.jsonl", 1 << 30, None)]
    assert plan(big, rec.ReaderConfig(), parallelism=CORES).remote_tasks == 0  # left to Spark


def test_output_files_is_bytes_over_target_or_two_tasks_a_core():
    cfg = sizing.OutputConfig(target_file_bytes=256 << 20)
    assert sizing.output_files(0, CORES, cfg) == 4
    assert sizing.output_files(3 << 20, CORES, cfg) == 4
    assert sizing.output_files(10 << 30, CORES, cfg) == 40  # 10 GiB / 256 MiB
    assert sizing.output_files((10 << 30) + 1, CORES, cfg) == 41


def _parquet_files(d: Path) -> int:
    return len(list(d.glob("*.parquet")))


@pytest.mark.slow
def test_small_files_clean_job_tasks_files_and_rows(spark, tmp_path):
    """200 one-record files through the cleaning job: 4 read partitions (13 MB of cost, 64 KiB a
    file, over 2 × cores), at most 2 × cores files in documents/ and rejected/, and the rows of
    the same records read from one file."""
    from bench.bench_small_files import make_inputs, rows
    from etl.corpus import CleanConfig, clean_corpus
    from etl.read.readers import read_raw
    from etl.runtime.progress import Counters

    small, one = make_inputs(tmp_path / "in", 200)
    raw, files = read_raw(spark, [str(small)], rec.ReaderConfig(), Counters(spark.sparkContext))
    assert len(files) == 200 and raw.rdd.getNumPartitions() == 2 * CORES
    for name, inputs in (("small", small), ("one", one)):
        report = clean_corpus(CleanConfig(), [str(inputs)], str(tmp_path / name), spark=spark)
        assert report["input"]["records"] == 200
        for d in ("documents", "rejected"):
            assert 1 <= _parquet_files(tmp_path / name / d) <= 2 * CORES, (name, d)
    for d in ("documents", "rejected"):
        expected = rows(tmp_path / "one" / d)
        assert len(expected) > 20
        assert rows(tmp_path / "small" / d) == expected


@pytest.mark.slow
def test_sized_joins_partitions_in_order(spark, tmp_path):
    """A frame of 20 partitions is written as 2 × cores files (its bytes are far under the
    target), or as ceil(bytes / target) when that is more; rows and their order are kept."""
    df = spark.range(0, 1000, 1, 20)
    sized = sizing.sized(df, 1000, sizing.OutputConfig())
    assert sized.rdd.getNumPartitions() == 2 * CORES
    sized.write.parquet(str(tmp_path / "out"))
    assert _parquet_files(tmp_path / "out") == 2 * CORES
    assert [r.id for r in sized.collect()] == list(range(1000))
    assert sizing.sized(df, 7000, sizing.OutputConfig(target_file_bytes=1000)).rdd.getNumPartitions() == 7


@pytest.mark.slow
def test_listing_walks_directories_like_os_walk(spark, tmp_path):
    """list_inputs (Hadoop listStatus, recursively) against os.walk: every file with its size and
    OS path, files in hidden directories included, hidden files (``_*``, ``.*``) skipped."""
    import os

    from etl.read.readers import list_inputs

    for rel in ("a.jsonl", "_SUCCESS", ".x.jsonl", "d/b c.jsonl", "d/_tmp/e/f.warc.gz", ".h/g.jsonl"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"{}\n" * len(rel))
    expected = sorted(
        (f"file:{os.path.join(d, n)}", os.path.getsize(os.path.join(d, n)), os.path.join(d, n))
        for d, _, names in os.walk(tmp_path)
        for n in names
        if not n.startswith(("_", "."))
    )
    assert len(expected) == 4
    assert [(f.path, f.size, f.local) for f in list_inputs(spark, [str(tmp_path)])] == expected
    assert [f.path for f in list_inputs(spark, [f"file://{tmp_path}/d/*.jsonl"])] == [f"file:{tmp_path}/d/b c.jsonl"]


@pytest.mark.slow
def test_duplicates_are_sized_on_the_spark_path(spark, tmp_path):
    """dedup_phase on the distributed path (groups, edges and components in Spark) with 8
    shuffle partitions and no adaptive coalescing: duplicates/ is 2 × cores files (its bytes are
    far under the target), with the rows of the driver path."""
    import pyarrow.parquet as pq

    from etl.dedup.stage import DedupConfig
    from etl.phases import dedup_phase
    from etl.runtime.publish import LocalStorage, Staging

    texts = [
        f"第{i}篇文章，" + "天下大势分久必合合久必分。" * 3 + "周末七国分争并入于秦。" * (i % 7) for i in range(60)
    ]
    rows = [(f"d{i:03d}", t) for i, t in enumerate(texts)] + [(f"c{i:03d}", texts[i]) for i in range(0, 60, 3)]
    docs = spark.createDataFrame(rows, "doc_id string, text string").repartition(20)
    found = {}
    saved = {k: spark.conf.get(k) for k in ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled")}
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "8")
        spark.conf.set("spark.sql.adaptive.enabled", "false")
        for name, cfg in (("spark", DedupConfig(driver_max_docs=0, driver_max_edges=0)), ("driver", DedupConfig())):
            dedup_phase(docs, cfg, None, Staging(LocalStorage(), str(tmp_path / name)))
            found[name] = sorted(
                tuple(sorted(r.items())) for r in pq.read_table(tmp_path / name / "duplicates").to_pylist()
            )
            assert 1 <= _parquet_files(tmp_path / name / "duplicates") <= 2 * CORES, name
    finally:
        for k, v in saved.items():
            spark.conf.set(k, v)
    assert len(found["spark"]) >= 20 and found["spark"] == found["driver"]
