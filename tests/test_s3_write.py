"""Outputs on S3 against moto's server on 127.0.0.1 (``etl.runtime.objstore``, ``base.committed``).

The commit protocol on its own (no Spark, subprocesses killed by failpoints): a publish killed
during its upload, after its last file and after its commit object leaves a reader the old
version or the new one, whole; a re-run cleans what was left and publishes the same content.
Two writers: one is refused by the lock, and a writer whose lock was broken cannot commit over
the other's commit (moto 5.2.5 checks ``If-None-Match: *`` and ``If-Match`` on PutObject).

The jobs: ``jobs.build_corpus --output s3://`` publishes the ledger, documents, rejected,
duplicates, tokenizer and shards of the same build on a local disk (shards byte-identical);
``s3a://`` is refused in one line naming ``s3://``; a held output is refused with exit 3.
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

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from base import committed as cm
from base.s3 import S3Access, S3Config
from etl.corpus import BuildConfig, build_corpus
from etl.runtime.failpoints import ENV
from etl.runtime.objstore import OutputLocked, publish_s3
from jobs import build_corpus as build_job
from jobs import cli
from jobs.config import load_config
from tests.test_s3_read import BUCKET, creds, store  # noqa: F401 - fixtures

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


# --- the jobs -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crawl(tmp_path_factory) -> Path:
    from demo.sources import news_pages

    src = tmp_path_factory.mktemp("s3_write") / "in"
    src.mkdir()
    rows = [{"id": f"d{i}", "text": "\n".join(p), "source": "news"} for i, (_, p, _) in enumerate(news_pages()[:40])]
    rows.append({"id": "copy", "text": rows[3]["text"], "source": "news"})
    (src / "a.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return src


@pytest.fixture(scope="module")
def local_build(spark, crawl, tmp_path_factory):
    out = tmp_path_factory.mktemp("s3_write_local") / "corpus"
    report = build_corpus(load_config(BuildConfig, None, SETTINGS), [str(crawl)], str(out), spark=spark)
    return out, report


def _ledger(report: dict) -> dict:
    """The report without timings, config and resources."""

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("seconds",)}
        return [strip(v) for v in x] if isinstance(x, list) else x

    return json.loads(json.dumps(strip({k: v for k, v in report.items() if k not in ("job", "config", "resources")})))


def _rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    return sorted(zip(*(table.column(c).to_pylist() for c in columns)), key=repr)


def _committed_table(commit: cm.Commit, fs, name: str) -> pa.Table:
    files = [n for n in commit.names(name) if n.endswith(".parquet")]
    return pa.concat_tables([pq.read_table(pa.BufferReader(cm.read_bytes(commit, n, fs))) for n in files])


def _run_build(spark, argv: list[str]) -> int:
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")  # the job sets it on the shared session
    try:
        return build_job.main(argv + [a for s in SETTINGS for a in ("--set", s)])
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)


def test_build_corpus_job_publishes_to_s3_what_it_publishes_locally(spark, store, creds, crawl, local_build):  # noqa: F811
    url, _ = store
    local, want = local_build
    dest = f"s3://{BUCKET}/corpus"
    argv = ["--input", str(crawl), "--output", dest, "--set", f"reader.s3.endpoint_override={url}"]
    assert _run_build(spark, argv) == cli.EXIT_OK
    fs = _access(url).filesystem()
    commit = cm.load(dest, fs)
    report = json.loads(cm.read_bytes(commit, "report.json", fs))
    assert want["duplicates"] > 0 and want["rejected"] > 0
    assert _ledger(report) == _ledger(want)
    for part, columns in {
        "documents": ["doc_id", "text", "source"],
        "rejected": ["doc_id", "stage", "reason"],
        "duplicates": ["doc_id", "duplicate_of", "kind"],
    }.items():
        assert _rows(_committed_table(commit, fs, part), columns) == _rows(pq.read_table(local / part), columns), part
    # shards and tokenizer byte-identical: the commit's sha256 of each file is the local file's
    for name in commit.names("shards") + commit.names("tokenizer"):
        assert commit.files[name].sha256 == hashlib.sha256((local / name).read_bytes()).hexdigest(), name
    assert sorted(commit.names("shards")) == sorted(f"shards/{p.name}" for p in (local / "shards").iterdir())
    assert not any(n.startswith("_dedup_keys") for n in commit.names())  # staged, removed before the commit


def test_s3a_output_and_a_held_output_are_refused(spark, store, creds, crawl, caplog):  # noqa: F811
    url, _ = store
    caplog.set_level(logging.ERROR, logger="zhcorpus")
    assert _run_build(spark, ["--input", str(crawl), "--output", f"s3a://{BUCKET}/x"]) == cli.EXIT_REFUSED
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert "\n" not in line and f"write it as s3://{BUCKET}/x" in line
    held = f"s3://{BUCKET}/held"
    me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()})
    fs = _access(url).filesystem()
    with fs.open_output_stream(f"{BUCKET}/held/_lock") as f:
        f.write(me.encode())
    argv = ["--input", str(crawl), "--output", held, "--set", f"reader.s3.endpoint_override={url}"]
    assert _run_build(spark, argv) == cli.EXIT_LOCKED
    assert _keys(url, held) == ["held/_lock"]  # nothing written
