"""A dedup index on S3 (``etl.dedup.index_store``), against moto's server on 127.0.0.1.

``jobs.dedup --index s3://…`` finds the duplicates a local index finds, night one and night two
(the second deduplicated against the first's batch); a damaged file of the index on S3 is refused
in one line naming it (exit 2), the index unchanged; a second writer is refused by the lock, a
writer whose lock was broken cannot commit over the other's commit (``If-Match`` on the commit
records), and what a killed append left is removed by the next writer.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from base.s3 import S3Access, S3Config
from etl.dedup import index_checks as ixc
from etl.dedup import index_write as index_mod
from etl.dedup.index import DedupIndex, IndexConfig, IndexLocked
from etl.dedup.index_store import HEAD
from etl.dedup.stage import DedupConfig
from etl.runtime.objstore import Store
from jobs import cli
from jobs import dedup as dedup_job
from tests.crawl_fixture import doc
from tests.test_s3_read import BUCKET, creds, moto_credentials, store  # noqa: F401 - fixtures

pytestmark = pytest.mark.slow


def _store(url: str) -> Store:
    return Store(S3Access.resolve(S3Config(endpoint_override=url)), BUCKET, "test")


def _night(path: Path, rows: list[tuple[str, str]]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([{"doc_id": i, "text": t} for i, t in rows]), path)
    return str(path)


def _dedup(spark, night: str, out: Path, index: str, url: str) -> int:
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")  # a job sets it on the shared session
    try:
        argv = ["--input", night, "--output", str(out), "--index", index]
        return dedup_job.main(argv + ["--set", f"reader.s3.endpoint_override={url}"])
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)


def _duplicates(out: Path) -> list[tuple[str, str]]:
    t = pq.read_table(out / "duplicates", columns=["doc_id", "duplicate_of"])
    return sorted(zip(t.column("doc_id").to_pylist(), t.column("duplicate_of").to_pylist()))


@pytest.fixture(scope="module")
def nights(spark, store, tmp_path_factory):  # noqa: F811
    """Two nights of ``jobs.dedup``, once with a local index and once with an index on S3."""
    url, _ = store
    root = tmp_path_factory.mktemp("s3_index")
    first = [(f"n1-{i}", doc(i, i + 2)) for i in range(8)] + [("n1-copy", doc(0, 2))]
    second = [(f"n2-{i}", doc(i, i + 5)) for i in range(4)]
    second += [("n2-exact", doc(1, 3)), ("n2-near", doc(2, 4) + "\n（完）")]
    inputs = [_night(root / "in" / f"night{n}.parquet", rows) for n, rows in ((1, first), (2, second))]
    out: dict = {"url": url, "root": root, "s3": f"s3://{BUCKET}/index", "codes": [], "dups": {}}
    with pytest.MonkeyPatch.context() as mp:
        moto_credentials(mp, root)
        for where, index in (("local", str(root / "index")), ("s3", out["s3"])):
            for n, night in enumerate(inputs, 1):
                dest = root / f"{where}-out{n}"
                out["codes"].append(_dedup(spark, night, dest, index, url))
                out["dups"][where, n] = _duplicates(dest)
        yield out


def test_an_s3_index_finds_the_duplicates_a_local_index_finds(nights):
    assert nights["codes"] == [cli.EXIT_OK] * 4
    assert nights["dups"]["s3", 1] == nights["dups"]["local", 1] == [("n1-copy", "n1-0")]
    # night two against night one's batch: an exact and a near copy of indexed documents
    assert nights["dups"]["s3", 2] == nights["dups"]["local", 2]
    assert ("n2-exact", "n1-1") in nights["dups"]["s3", 2] and ("n2-near", "n1-2") in nights["dups"]["s3", 2]
    keys = _store(nights["url"]).list("index/")
    head = json.loads(_store(nights["url"]).get(f"index/{HEAD}")[0])
    records = head["records"]
    assert len(records) == 2  # one batch a night
    listed = {f"index/{p}": s for r in records.values() for p, (s, _) in r["checksums"].items()}
    assert {k: keys[k] for k in listed} == listed  # every file its record lists, at its size
    assert set(keys) == set(listed) | {"index/settings.json", f"index/{HEAD}"}  # and nothing else (no lock)


def test_a_damaged_index_file_on_s3_is_refused_in_one_line(spark, nights, creds, caplog, monkeypatch):  # noqa: F811
    url, root = nights["url"], nights["root"]
    st = _store(url)
    bad = max((k for k in st.list("index/") if "/exact/" in k), key=lambda k: st.list(k)[k])
    data = bytearray(st.get(bad)[0])
    mid = len(data) // 2
    data[mid : mid + 64] = bytes(b ^ 0xFF for b in data[mid : mid + 64])
    st.put(bad, bytes(data))
    before = {k: st.get(k)[0] for k in st.list("index/")}
    monkeypatch.setattr(ixc, "_verified", set())  # a file is checked once a process: this is the next night's
    night3 = _night(root / "in" / "night3.parquet", [("n3-0", doc(5, 1)), ("n3-copy", doc(3, 5))])
    caplog.clear()
    with caplog.at_level(logging.INFO, "zhcorpus"):
        code = _dedup(spark, night3, root / "damaged-out", nights["s3"], url)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert code == cli.EXIT_REFUSED and len(errors) == 1 and "\n" not in errors[0], errors
    assert bad.split("/", 1)[1] in errors[0] and "sha256" in errors[0], errors[0]
    assert not (root / "damaged-out").exists()
    assert {k: st.get(k)[0] for k in st.list("index/")} == before  # the index unchanged


def _batch(params, prefix: str, n: int = 20) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(abs(hash(prefix)) % 2**32)
    ids = [f"{prefix}-{i}" for i in range(n)]
    bands = pa.table(
        {
            "band": pa.array(np.tile(np.arange(params.bands, dtype=np.int32), n)),
            "key": pa.array(rng.integers(-(2**63), 2**63 - 1, n * params.bands, dtype=np.int64)),
            "doc_id": pa.array(np.repeat(ids, params.bands)),
        }
    )
    exact = pa.table({"exact_key": [f"{i:016x}{prefix}" for i in rng.integers(0, 2**62, n)], "doc_id": ids})
    return bands, exact


def test_two_writers_one_is_refused_and_a_killed_append_is_cleaned(spark, store, creds, monkeypatch):  # noqa: F811
    url, _ = store
    s3, root = S3Config(endpoint_override=url), f"s3://{BUCKET}/writers"
    params = DedupConfig().minhash.resolved()
    st = _store(url)
    first, second = DedupIndex(spark, root, params, s3=s3), DedupIndex(spark, root, params, s3=s3)
    first.append_arrow(*_batch(params, "a"), "a")

    # a live holder of the lock: the second writer is refused before it writes anything
    me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()})
    st.put("writers/.lock", me.encode())
    keys = set(st.list("writers/"))
    with pytest.raises(IndexLocked, match=f"another writer of the dedup index holds {root}/.lock"):
        second.append_arrow(*_batch(params, "b"), "b")
    assert set(st.list("writers/")) == keys
    st.delete("writers/.lock")

    # the second's lock is broken while it writes and the first commits: the second cannot commit
    fired: list[str] = []

    def broken(name: str) -> None:
        if name == "index:batch_written" and not fired:
            fired.append(name)
            st.delete("writers/.lock")
            first.append_arrow(*_batch(params, "c"), "c")

    with monkeypatch.context() as mp, pytest.raises(IndexLocked, match="committed the dedup index .* while this"):
        mp.setattr(index_mod, "failpoint", broken)
        second.append_arrow(*_batch(params, "d"), "d")
    assert DedupIndex(spark, root, params, s3=s3).committed() == ["a", "c"]

    # a killed append: its files and a dead process's lock, removed by the next writer
    st.put("writers/batches/dead/exact/bucket=0/part-00000.parquet", b"half a file")
    dead = json.dumps({"pid": 2**22 + 1, "host": socket.gethostname(), "started": time.time()})
    st.put("writers/.lock", dead.encode())
    assert first.compact() is None  # two segments: nothing to merge, only leftovers to remove
    left = st.list("writers/")
    assert not any("/dead/" in k or "/d/" in k for k in left) and "writers/.lock" not in left, left
    assert first.retract("c") and DedupIndex(spark, root, params, s3=s3).committed() == ["a"]
    assert not any("/c/" in k for k in st.list("writers/"))

    # a compaction on the store: one segment replaces both, the merged ones' files removed
    first.append_arrow(*_batch(params, "e"), "e")
    assert first.compact(full=True)["merged"] == ["a", "e"]
    after = DedupIndex(spark, root, params, s3=s3)
    assert after.describe()["documents"] == 40 and after.committed()[0].startswith("compacted-")
    assert not any(k.startswith("writers/batches/") for k in st.list("writers/"))


def test_spark_tasks_write_and_read_an_s3_index_as_a_local_one(spark, store, creds, tmp_path):  # noqa: F811
    """Above ``driver_max_rows`` the executors write the segment and look it up, through pyarrow's
    S3 file system: the same files, byte for byte, as on a disk, and the same answers."""
    url, _ = store
    s3, params = S3Config(endpoint_override=url), DedupConfig().minhash.resolved()
    cfg = IndexConfig(driver_max_rows=1)
    bands, exact = _batch(params, "x")
    files = {}
    for where, root in (("local", str(tmp_path / "index")), ("s3", f"s3://{BUCKET}/tasks")):
        index = DedupIndex(spark, root, params, cfg, s3=s3)
        index.append(spark.createDataFrame(bands), spark.createDataFrame(exact), "x")
        (seg,) = index.segments()
        files[where] = {f.path: (f.size, f.sha256) for f in seg.files}
        found = index.touched_arrow(bands.slice(0, 40).select(["band", "key"]))
        assert index.last_lookup["where"] == "spark"
        files[where, "found"] = sorted(zip(*(found.column(c).to_pylist() for c in found.column_names)))
    assert files["s3"] == files["local"] and len(files["s3"]) == params.bands + 2
    assert files["s3", "found"] == files["local", "found"] and len(files["s3", "found"]) == 40
