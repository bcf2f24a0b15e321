"""Outputs on S3 against moto's server on 127.0.0.1 (``etl.runtime.objstore``, ``base.committed``).

The commit protocol on its own (no Spark, subprocesses killed by failpoints): a publish killed
during its upload, after its last file and after its commit object leaves a reader the old
version or the new one, whole; a re-run cleans what was left and publishes the same content.
Two writers: one is refused by the lock, and a writer whose lock was broken cannot commit over
the other's commit (moto 5.2.5 checks ``If-None-Match: *`` and ``If-Match`` on PutObject).

The jobs: three nights of ``jobs.nightly_refresh`` with crawl and corpus roots on s3://, and its
dedup index there too (the corpus root's ``dedup-index``; the index holds every kept document; the
first night publishes the ledger, documents, rejected, duplicates, and byte-identical tokenizer and
shards of the same files built on a local disk; the later ones dedup against the earlier ones and
read the first night's tokenizer back from the store); the trainer over the store (the local
build's samples, a Ray run on the nightly's corpus.json, a changed object refused); ``jobs.dedup``
and ``jobs.train_tokenizer`` from committed s3:// documents to s3:// outputs; ``s3a://`` outputs
refused in one line naming ``s3://`` (an ``s3a://`` index too), a held output refused with exit 3, a
build appending to an index on ``s3://`` (the index itself: ``tests/test_s3_index.py``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from base import committed as cm
from base.s3 import S3Access, S3Config
from etl.corpus import BuildConfig, build_corpus
from etl.dedup.index import DedupIndex
from etl.runtime.failpoints import ENV
from etl.runtime.objstore import OutputLocked, publish_s3
from jobs import build_corpus as build_job
from jobs import cli
from jobs.config import load_config
from tests.test_s3_read import BUCKET, creds, moto_credentials, store  # noqa: F401 - fixtures

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
# 40 news pages and an exact copy: ~30 kept, 22,000 characters, enough for 1,500 pieces at 0.98.
SETTINGS = ["tokenizer.vocab_size=1500", "tokenizer.character_coverage=0.98", "shards.num_shards=2"]

# Publishes VERSION over DEST: three part files and a report (argv: endpoint, dest, version, hold seconds).
WRITER = """
import sys, time
from base.s3 import S3Access, S3Config
from etl.runtime.locks import Locked
from etl.runtime.objstore import publish_s3
access = S3Access.resolve(S3Config(endpoint_override=sys.argv[1]))
try:
    with publish_s3(sys.argv[2], True, access) as st:
        for i in range(3):
            st.write_text(f"part/{i}.txt", f"{sys.argv[3]} {i}")
        time.sleep(float(sys.argv[4]))
        st.write_text("report.json", sys.argv[3])
except Locked as e:
    print(e)
    sys.exit(3)
"""


def _access(url: str) -> S3Access:
    return S3Access.resolve(S3Config(endpoint_override=url))


def _writer(url: str, dest: str, version: str, failpoint: str = "", hold: float = 0.0) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(ENV, None)
    if failpoint:
        env[ENV] = failpoint
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, url, dest, version, str(hold)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def _seen(url: str, dest: str) -> str | None:
    """The version a reader sees at ``dest`` (every committed file read and verified), or None."""
    fs = _access(url).filesystem()
    commit = cm.load(dest, fs)
    if commit is None:
        return None
    texts = [cm.read_bytes(commit, n, fs).decode() for n in commit.names()]
    assert commit.names() == ["part/0.txt", "part/1.txt", "part/2.txt", "report.json"]
    versions = {t.split()[0] for t in texts}
    assert len(versions) == 1, texts  # never a mix
    return versions.pop()


def _keys(url: str, dest: str) -> list[str]:
    fs = _access(url).filesystem()
    from pyarrow import fs as pafs

    infos = fs.get_file_info(pafs.FileSelector(cm.bucket_key(dest), recursive=True, allow_not_found=True))
    return sorted(i.path.split("/", 1)[1] for i in infos if i.type == pafs.FileType.File)


@pytest.mark.parametrize("point", ["publish:upload", "publish:staged", "publish:committed"])
def test_a_publish_killed_at_each_point_leaves_old_or_new_and_a_rerun_cleans(store, creds, point):  # noqa: F811
    url, _ = store
    dest = f"s3://{BUCKET}/kill-{point.split(':')[1]}"
    assert _writer(url, dest, "old").wait() == 0
    assert _seen(url, dest) == "old"
    assert _writer(url, dest, "new", failpoint=point).wait() == -9  # SIGKILL: no cleanup ran
    assert _seen(url, dest) == ("new" if point == "publish:committed" else "old")
    left = _keys(url, dest)
    assert f"{dest.split('/', 3)[3]}/_lock" in left and len({k.split("/")[1] for k in left if "_attempt-" in k}) == 2
    assert _writer(url, dest, "new").wait() == 0  # the dead writer's lock is taken over
    assert _seen(url, dest) == "new"
    left = _keys(url, dest)
    attempts = {k.split("/")[1] for k in left if "_attempt-" in k}
    assert len(attempts) == 1 and not any(k.endswith("_lock") for k in left), left
    assert len(left) == 5  # the commit object and the four files it lists


def test_a_second_writer_is_refused(store, creds):  # noqa: F811
    url, _ = store
    dest = f"s3://{BUCKET}/two-writers"
    first = _writer(url, dest, "first", hold=4.0)
    deadline = time.monotonic() + 30
    while not any(k.endswith("_lock") for k in _keys(url, dest)):  # the first holds the lock now
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.1)
    second = _writer(url, dest, "second")
    out, _ = second.communicate(timeout=60)
    assert second.returncode == 3 and f"another writer of {dest} holds {dest}/_lock" in out
    assert first.wait(timeout=60) == 0
    assert _seen(url, dest) == "first"


def test_a_writer_whose_lock_was_broken_cannot_commit_over_another(store, creds):  # noqa: F811
    """The commit object is a conditional PUT: If-None-Match: * over nothing, If-Match: the ETag
    it replaces. Someone removed the first writer's lock; the second publishes; the first's
    commit is then refused and its attempt removed."""
    url, _ = store
    access, dest = _access(url), f"s3://{BUCKET}/broken-lock"
    for before in (None, "v0"):
        if before:
            with publish_s3(dest, True, access) as st:
                for n in ("part/0.txt", "part/1.txt", "part/2.txt", "report.json"):
                    st.write_text(n, before)
        with pytest.raises(OutputLocked, match="committed .* while this one worked"):
            with publish_s3(dest, True, access) as st:
                st.store.delete(f"{dest.split('/', 3)[3]}/_lock")
                assert _writer(url, dest, f"winner{before}").wait() == 0
                st.write_text("part/0.txt", "loser")
        assert _seen(url, dest) == f"winner{before}"
        assert len(_keys(url, dest)) == 5


# --- the jobs ---------------------------------------------------------------------------------------


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _pages(lo: int, hi: int) -> list[dict]:
    from demo.sources import news_pages

    return [{"id": f"d{i}", "text": "\n".join(news_pages()[i][1]), "source": "news"} for i in range(lo, hi)]


def _ledger(report: dict, prefix: str = "") -> dict:
    """The report without timings, config, resources and the dedup index's batch, file names
    relative to ``prefix``, as a reader of report.json sees it."""

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("seconds", "index")}
        return [strip(v) for v in x] if isinstance(x, list) else x

    keep = {k: v for k, v in report.items() if k not in ("job", "config", "resources")}
    return json.loads(json.dumps(strip(keep)).replace(prefix, "") if prefix else json.dumps(strip(keep)))


def _rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    return sorted(zip(*(table.column(c).to_pylist() for c in columns)), key=repr)


def _committed_table(url: str, uri: str) -> pa.Table:
    """Every committed Parquet file at or under ``uri``, read and verified."""
    fs = _access(url).filesystem()
    commit, name = cm.find(uri, fs)
    files = [n for n in commit.names(name) if n.endswith(".parquet")]
    return pa.concat_tables([pq.read_table(pa.BufferReader(cm.read_bytes(commit, n, fs))) for n in files])


def _committed_json(url: str, uri: str) -> dict:
    fs = _access(url).filesystem()
    commit, name = cm.find(uri, fs)
    return json.loads(cm.read_bytes(commit, name, fs))


def _job(spark, main, argv: list[str]) -> int:
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")  # a job sets it on the shared session
    try:
        return main(argv)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)


@pytest.fixture(scope="module")
def nights(spark, store, tmp_path_factory):  # noqa: F811
    """Three nights of jobs.nightly_refresh on s3:// (crawl root, corpus root, dedup index), and the
    first night's files built locally by build_corpus for reference."""
    from jobs import nightly_refresh

    url, upload = store
    root = tmp_path_factory.mktemp("s3_write")
    first = _pages(0, 40) + [{"id": "copy", "text": _pages(3, 4)[0]["text"], "source": "news"}]
    local = build_corpus(
        load_config(BuildConfig, None, SETTINGS),
        [str(_jsonl(root / "in" / "night1.jsonl", first))],
        str(root / "local"),
        spark=spark,
    )
    with pytest.MonkeyPatch.context() as mp:
        moto_credentials(mp, root)
        kept = pq.read_table(root / "local" / "documents", columns=["doc_id", "text"]).to_pylist()
        kept = sorted(kept, key=lambda d: d["doc_id"])
        near = [
            {"id": f"n2-copy{i}", "text": d["text"][:100] + "的" + d["text"][101:], "source": "news"}
            for i, d in enumerate(kept[:2])
        ]
        second = near + _pages(40, 43)
        third = _pages(43, 46) + [{"id": "n3-copy", "text": second[-1]["text"], "source": "news"}]
        argv = ["--crawl-root", f"s3://{BUCKET}/nightly-in/", "--corpus-root", f"s3://{BUCKET}/nightly"]
        # no --index: the dedup index is the corpus root's, s3://BUCKET/nightly/dedup-index
        argv += ["--set", f"reader.s3.endpoint_override={url}", "--set", "refresh.settle_seconds=0"]
        argv += [a for s in SETTINGS for a in ("--set", s)]
        codes = []
        for n, rows in enumerate((first, second, third), 1):
            upload(f"nightly-in/night{n}.jsonl", _jsonl(root / "in" / f"night{n}.jsonl", rows).read_bytes())
            time.sleep(1.1)  # the next night's object is modified a second later (S3 keeps seconds)
            codes.append(_job(spark, nightly_refresh.main, argv))
        yield {
            "url": url,
            "root": root,
            "local": local,
            "codes": codes,
            "near": {r["id"]: d["doc_id"] for r, d in zip(near, kept)},
        }


def test_three_nights_on_s3_publish_what_a_local_build_publishes(spark, nights):
    url, local, corpus = nights["url"], nights["root"] / "local", f"s3://{BUCKET}/nightly"
    assert nights["codes"] == [cli.EXIT_OK] * 3
    v1 = f"{corpus}/versions/v000001"
    report = _committed_json(url, f"{v1}/report.json")
    src = nights["root"] / "in"
    assert nights["local"]["duplicates"] > 0 and nights["local"]["rejected"] > 0
    assert _ledger(report, f"s3://{BUCKET}/nightly-in/") == _ledger(nights["local"], f"file:{src}/")
    for part, columns in {
        "documents": ["doc_id", "text", "source"],
        "rejected": ["doc_id", "stage", "reason"],
        "duplicates": ["doc_id", "duplicate_of", "kind"],
    }.items():
        got = _rows(_committed_table(url, f"{v1}/{part}"), columns)
        assert got == _rows(pq.read_table(local / part), columns), part
    fs = _access(url).filesystem()
    commit, _ = cm.find(v1, fs)
    for name in commit.names("shards") + commit.names("tokenizer"):  # byte-identical
        assert commit.files[name].sha256 == hashlib.sha256((local / name).read_bytes()).hexdigest(), name
    assert commit.names("shards") == sorted(f"shards/{p.name}" for p in (local / "shards").iterdir())
    assert not any(n.startswith("_dedup_keys") for n in commit.names())  # staged, removed before the commit
    # the later nights: deduplicated against the index of the earlier ones, one corpus.json over all
    got = fs.open_input_stream(f"{BUCKET}/nightly/CURRENT").read().decode()
    assert got == "v000003\n"
    dup = dict(_rows(_committed_table(url, f"{corpus}/versions/v000002/duplicates"), ["doc_id", "duplicate_of"]))
    assert {k: dup.get(k) for k in nights["near"]} == nights["near"]
    assert _rows(_committed_table(url, f"{corpus}/versions/v000003/duplicates"), ["doc_id", "duplicate_of"]) == [
        ("n3-copy", "d42")
    ]
    merged = _committed_json(url, f"{corpus}/versions/v000003/corpus.json")
    assert merged["versions"] == ["v000001", "v000002", "v000003"] and len(merged["shards"]) == 6
    refresh2 = _committed_json(url, f"{corpus}/versions/v000002/refresh.json")
    assert refresh2["tokenizer"] == f"{v1}/tokenizer"  # night 2 fetched it from the store
    # the dedup index those nights used lives on the store, beside the versions: every kept document
    # of the three nights is in it, read back through its commit records
    index = DedupIndex.existing(spark, f"{corpus}/dedup-index", s3=S3Config(endpoint_override=url))
    kept = sum(_committed_table(url, f"{corpus}/versions/v00000{n}/documents").num_rows for n in (1, 2, 3))
    assert index.committed() and index.describe()["documents"] == kept
    assert not (nights["root"] / "index").exists()


def test_the_trainer_reads_shards_from_s3(nights, tmp_path, monkeypatch, creds):  # noqa: F811
    """TokenData over the store (fetched into a cache, verified) gives the local build's samples; a
    training run on the nightly's corpus.json; an object changed in the store is refused."""
    import ray

    from jobs.train_lm import CONFIGS
    from train.data import DataConfig, TokenData
    from train.job import TrainLMConfig, run

    url, corpus = nights["url"], f"s3://{BUCKET}/nightly"
    monkeypatch.setenv(cm.CACHE_ENV, str(tmp_path / "cache"))
    cfg = DataConfig(seq_len=16, s3=S3Config(endpoint_override=url))
    remote = TokenData(f"{corpus}/versions/v000001/corpus.json", cfg)
    local = TokenData(nights["root"] / "local" / "shards", cfg)
    assert np.array_equal(remote.samples(0, 64).numpy(), local.samples(0, 64).numpy())
    latest = f"{corpus}/versions/v000003/corpus.json"
    documents = _committed_json(url, latest)["totals"]["documents"]
    assert sum(len(ds) for ds in TokenData(latest, cfg).shards) == documents

    settings = ["train.steps=2", "train.eval_every=0", "ray.dashboard=false", f"data.s3.endpoint_override={url}"]
    try:
        summary = run(load_config(TrainLMConfig, CONFIGS / "debug.toml", settings), latest, str(tmp_path / "run"))
    finally:
        ray.shutdown()
    assert summary["last"]["step"] == 2 and np.isfinite(summary["last"]["loss"])

    fs = _access(url).filesystem()
    commit, _ = cm.find(f"{corpus}/versions/v000003", fs)
    name = max(commit.names("shards"), key=lambda n: commit.files[n].size)
    with fs.open_output_stream(cm.bucket_key(commit.physical(name))) as f:
        f.write(b"\0" * commit.files[name].size)  # the same size, other bytes
    monkeypatch.setenv(cm.CACHE_ENV, str(tmp_path / "fresh-cache"))
    with pytest.raises(cm.CommitError, match=f"v000003/{name}: .* but the commit lists"):
        TokenData(latest, cfg)


def test_dedup_and_tokenizer_jobs_read_and_write_s3(spark, nights, creds):  # noqa: F811
    from jobs import dedup as dedup_job
    from jobs import train_tokenizer as tokenizer_job

    url, v1 = nights["url"], f"s3://{BUCKET}/nightly/versions/v000001"
    at = ["--set", f"reader.s3.endpoint_override={url}"]
    out = f"s3://{BUCKET}/dedup"
    assert _job(spark, dedup_job.main, ["--input", f"{v1}/documents", "--output", out] + at) == cli.EXIT_OK
    report = _committed_json(url, f"{out}/report.json")
    kept = _committed_table(url, f"{v1}/documents").num_rows
    assert (report["input"]["records"], report["documents"], report["duplicates"]) == (kept, kept, 0)
    assert _committed_table(url, f"{out}/documents").num_rows == kept
    tok = f"s3://{BUCKET}/tokenizer"
    settings = [a for s in SETTINGS[:2] for a in ("--set", s)]
    assert _job(spark, tokenizer_job.main, ["--input", f"{v1}/documents", "--output", tok] + at + settings) == 0
    fs = _access(url).filesystem()
    mine, built = cm.find(tok, fs)[0], cm.find(v1, fs)[0]
    assert mine.files["tokenizer.model"] == built.files["tokenizer/tokenizer.model"]  # the same sample, the same model


def _run_build(spark, argv: list[str]) -> int:
    return _job(spark, build_job.main, argv + [a for s in SETTINGS for a in ("--set", s)])


def test_s3a_output_and_a_held_output_are_refused(spark, store, creds, tmp_path, caplog):  # noqa: F811
    url, _ = store
    crawl = _jsonl(tmp_path / "in" / "a.jsonl", _pages(0, 3)).parent
    caplog.set_level(logging.ERROR, logger="zhcorpus")
    assert _run_build(spark, ["--input", str(crawl), "--output", f"s3a://{BUCKET}/x"]) == cli.EXIT_REFUSED
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert "\n" not in line and f"write it as s3://{BUCKET}/x" in line
    caplog.clear()
    argv = ["--input", str(crawl), "--output", str(tmp_path / "out"), "--index", f"s3a://{BUCKET}/index"]
    assert _run_build(spark, argv) == cli.EXIT_REFUSED
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert f"write it as s3://{BUCKET}/index" in line and not (tmp_path / "out").exists()
    # an index on s3:// (tests/test_s3_index.py): the build appends its kept documents to it
    argv = ["--input", str(crawl), "--output", str(tmp_path / "out"), "--index", f"s3://{BUCKET}/build-index"]
    assert _run_build(spark, argv + ["--set", f"reader.s3.endpoint_override={url}"]) == cli.EXIT_OK
    kept = pq.read_table(tmp_path / "out" / "documents").num_rows
    index = DedupIndex.existing(spark, f"s3://{BUCKET}/build-index", s3=S3Config(endpoint_override=url))
    assert kept > 0 and len(index.committed()) == 1 and index.describe()["documents"] == kept
    held = f"s3://{BUCKET}/held"
    me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()})
    fs = _access(url).filesystem()
    with fs.open_output_stream(f"{BUCKET}/held/_lock") as f:
        f.write(me.encode())
    argv = ["--input", str(crawl), "--output", held, "--set", f"reader.s3.endpoint_override={url}"]
    assert _run_build(spark, argv) == cli.EXIT_LOCKED
    assert _keys(url, held) == ["held/_lock"]  # nothing written
