"""s3:// inputs against a real S3 API (moto's server on 127.0.0.1): the clean job reads the
hand-built crawl (WARC gzip and plain, WET, JSONL plain and gzip, Parquet, damaged files) plus a
JSONL file many times the split size from the store, and every record, offset, doc_id and the
ledger are those of the same files read from disk. Missing credentials, a missing bucket and a
403 (unknown key, wrong secret, a policy denying the bucket or its objects) are one-line
refusals (exit 2) before any work."""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import re
import select
import socket
import struct
import threading
import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from etl.corpus import CleanConfig, clean_corpus
from etl.read import records as rec
from etl.read.remote import S3Access, S3BucketMissing, S3Config, S3Refused, list_files, list_objects
from filters.quality.crawl_repeat import CrawlRepeatConfig
from jobs import cli
from tests import crawl_fixture
from tests.test_split_read import _jsonl_straddling

pytestmark = pytest.mark.slow
SPLIT = 16384
BUCKET = "crawl"


@pytest.fixture(scope="module")
def store():
    """(endpoint URL, upload(key, bytes)) of a moto S3 server holding the bucket. Uploads go
    through boto3: pyarrow's writer stores a different body for a ``*.gz`` key on moto 5.2.5."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    client = boto3.client(
        "s3", endpoint_url=url, aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
    )
    client.create_bucket(Bucket=BUCKET)
    yield url, lambda key, data: client.put_object(Bucket=BUCKET, Key=key, Body=data)
    server.stop()


def moto_credentials(mp: pytest.MonkeyPatch, root) -> None:
    """The moto server's test keys, and nothing of this machine's AWS settings."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        mp.delenv(name, raising=False)
    mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(root / "no-credentials"))
    mp.setenv("AWS_ACCESS_KEY_ID", "test")
    mp.setenv("AWS_SECRET_ACCESS_KEY", "test")


@pytest.fixture
def creds(monkeypatch, tmp_path):
    moto_credentials(monkeypatch, tmp_path)


def _cfg(url: str) -> CleanConfig:
    reader = rec.ReaderConfig(split_bytes=SPLIT, min_split_bytes=1, s3=S3Config(endpoint_override=url))
    return CleanConfig(reader=reader)


def _derived(prefix: str, src: Path) -> dict[str, tuple[str, int]]:
    """Derived doc_id -> (file name, offset) for every byte offset of every input file: how the
    outputs (documents carry no offset) are matched across file systems."""
    return {rec.derived_doc_id(prefix + f.name, o): (f.name, o) for f in src.iterdir() for o in range(_span(f))}


def _span(f: Path) -> int:
    """Offsets a record of ``f`` may have: decompressed ones for gzip."""
    try:
        return max(f.stat().st_size, len(gzip.decompress(f.read_bytes())))
    except (OSError, EOFError, zlib.error):
        return f.stat().st_size


def _rows(frames, prefix: str, src: Path) -> list[tuple]:
    """Every output row as (part, file name, doc_id or its (file, offset), stage, reason, url, text)."""
    derived, rows = _derived(prefix, src), []
    for part, frame in frames:
        for r in frame.to_dict("records"):
            name = r["source_file"].removeprefix(prefix)
            offset = r.get("offset")
            own = offset is not None and r["doc_id"] == rec.derived_doc_id(r["source_file"], offset)
            doc_id = (name, offset) if own else derived.get(r["doc_id"], r["doc_id"])
            rows.append((part, name, doc_id, r.get("stage"), r.get("reason"), r["url"], r["text"]))
    return sorted(rows, key=repr)


def _frames(spark, out: Path) -> list:
    return [(part, spark.read.parquet(str(out / part)).toPandas()) for part in ("documents", "rejected")]


def _ledger(report: dict, prefix: str) -> dict:
    """The report's ledger with file names made relative (the rest of the report is timings and config)."""
    keep = {k: report[k] for k in report if k not in ("job", "config", "resources")}
    return json.loads(json.dumps(keep).replace(prefix, ""))


def test_s3_inputs_read_exactly_as_local_files(spark, store, creds, tmp_path):
    url, upload = store
    src = tmp_path / "in"
    crawl_fixture.build(src)
    (src / "part-0.jsonl").unlink()  # its 10 MB record would be 640 ranges of SPLIT: minutes on 2 cores
    starts = _jsonl_straddling(src / "big.jsonl", 300, seed=3)
    assert (src / "big.jsonl").stat().st_size > 10 * SPLIT
    for f in sorted(src.iterdir()):
        upload(f"in/{f.name}", f.read_bytes())
    assert sorted(
        p for p, _ in list_files(f"s3://{BUCKET}/in/*.jsonl", S3Access.resolve(S3Config(endpoint_override=url)))
    ) == [f"s3://{BUCKET}/in/{n}" for n in ("big.jsonl", "empty.jsonl")]

    local = clean_corpus(_cfg(url), [str(src)], str(tmp_path / "local"), spark=spark)
    remote = clean_corpus(_cfg(url), [f"s3a://{BUCKET}/in"], str(tmp_path / "remote"), spark=spark)

    local_prefix, remote_prefix = f"file:{src}/", f"s3a://{BUCKET}/in/"
    got = _rows(_frames(spark, tmp_path / "remote"), remote_prefix, src)
    want = _rows(_frames(spark, tmp_path / "local"), local_prefix, src)
    assert got == want
    ids = [r[2] for r in got if r[1] == "big.jsonl"]
    assert sorted(i[1] if isinstance(i, tuple) else starts[int(i.strip("rbad"))] for i in ids) == starts
    assert _ledger(remote, remote_prefix) == _ledger(local, local_prefix)
    files = {e["file"] if isinstance(e, dict) else e for e in remote["input"].get("file_errors") or []}
    assert any("broken.warc.gz" in str(f) for f in files)
    assert remote["input"]["files"] == local["input"]["files"] == len(list(src.iterdir()))


def test_missing_credentials_is_a_refusal_before_any_work(spark, store, monkeypatch, tmp_path):
    url, _ = store
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    out = tmp_path / "out"
    with pytest.raises(S3Refused, match="no S3 credentials"):
        clean_corpus(_cfg(url), [f"s3://{BUCKET}/in"], str(out), spark=spark)
    assert (
        cli.run_job(lambda: clean_corpus(_cfg(url), [f"s3://{BUCKET}/in"], str(out), spark=spark)) == cli.EXIT_REFUSED
    )
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_missing_bucket_is_a_refusal_before_any_work(spark, store, creds, tmp_path):
    url, _ = store
    out = tmp_path / "out"
    with pytest.raises(S3BucketMissing, match="input bucket does not exist on 127.0.0.1:.*: s3://no-such-bucket/x"):
        clean_corpus(_cfg(url), ["s3://no-such-bucket/x"], str(out), spark=spark)
    assert (
        cli.run_job(lambda: clean_corpus(_cfg(url), ["s3://no-such-bucket/x"], str(out), spark=spark))
        == cli.EXIT_REFUSED
    )
    assert not out.exists()


@contextlib.contextmanager
def _iam_enforced(url: str):
    """Moto checks signatures and IAM policies while inside (its /moto-api/reset-auth switch);
    every request is let through again after."""
    import requests

    requests.post(f"{url}/moto-api/reset-auth", data=b"0", timeout=10).raise_for_status()
    try:
        yield
    finally:
        requests.post(f"{url}/moto-api/reset-auth", data=b"inf", timeout=10).raise_for_status()


def _iam_user(url: str, name: str, deny: list[dict]) -> tuple[str, str]:
    """(access key, secret) of a new IAM user allowed s3:* except the ``deny`` statements."""
    import boto3

    iam = boto3.client(
        "iam", endpoint_url=url, aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
    )
    iam.create_user(UserName=name)
    statements = [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}] + [{"Effect": "Deny", **d} for d in deny]
    iam.put_user_policy(
        UserName=name, PolicyName="crawl", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": statements})
    )
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


# (input, IAM user's denied statements or None for the moto default keys, secret override):
# keys the store does not know, a wrong secret, a policy denying the bucket, and one allowing
# the listing but not reading any object (found by one GET of the first object listed).
FORBIDDEN = {
    "unknown_key": (f"s3://{BUCKET}/", None, None),
    "wrong_secret": (f"s3://{BUCKET}/", [], "not-the-secret"),
    "bucket_denied": (
        f"s3://{BUCKET}/in",
        [{"Action": "s3:*", "Resource": [f"arn:aws:s3:::{BUCKET}", f"arn:aws:s3:::{BUCKET}/*"]}],
        None,
    ),
    "objects_denied": (f"s3://{BUCKET}/", [{"Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{BUCKET}/*"}], None),
}


@pytest.mark.parametrize("case", sorted(FORBIDDEN))
def test_forbidden_is_a_refusal_before_any_work(spark, store, creds, monkeypatch, tmp_path, caplog, case):
    url, upload = store
    upload("forbidden/a.jsonl", b'{"id": "a", "text": "x"}\n')
    uri, deny, secret = FORBIDDEN[case]
    if deny is not None:
        key, real_secret = _iam_user(url, f"reader-{case}", deny)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret or real_secret)
    out = tmp_path / "out"
    cfg = replace(_cfg(url), reader=replace(_cfg(url).reader, s3=S3Config(endpoint_override=url, retries=1)))
    with _iam_enforced(url):
        with pytest.raises(S3Refused, match=f"access denied listing {re.escape(uri)} on 127.0.0.1:"):
            clean_corpus(cfg, [uri], str(out), spark=spark)
        caplog.clear()
        assert cli.run_job(lambda: clean_corpus(cfg, [uri], str(out), spark=spark)) == cli.EXIT_REFUSED
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a staging directory


class ResetProxy:
    """A TCP proxy on 127.0.0.1 in front of the S3 server that cuts the response to a GET of a
    chosen object with a TCP reset after ``after`` bytes, the first ``times`` times (None: every
    time), for GETs whose range starts at ``from_byte`` or later. One thread a connection, both
    directions in one ``select`` loop, so the reset is sent while nobody else holds the socket."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream, self.faults, self.resets = upstream, {}, {}
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def fail(self, path: str, after: int, times: int | None, from_byte: int = 0) -> None:
        with self._lock:
            self.faults[path] = [after, times, from_byte]
            self.resets[path] = 0

    def close(self) -> None:
        self._sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _fault(self, request: bytes) -> int | None:
        """Bytes of the response to ``request`` to let through before the reset, or None."""
        head = request.split(b"\r\n\r\n", 1)[0].decode("latin-1")
        method, target = head.split(" ", 2)[:2]
        start = re.search(r"(?im)^range: bytes=(\d+)-", head)
        with self._lock:
            fault = self.faults.get(target.split("?", 1)[0].lstrip("/"))
            if method != "GET" or fault is None or fault[1] == 0 or int(start.group(1) if start else 0) < fault[2]:
                return None
            fault[1] = None if fault[1] is None else fault[1] - 1
            self.resets[target.split("?", 1)[0].lstrip("/")] += 1
            return fault[0]

    def _serve(self, client: socket.socket) -> None:
        server, budget = socket.create_connection(self.upstream), None
        try:
            while True:
                ready, _, _ = select.select([client, server], [], [])
                if client in ready:
                    data = client.recv(1 << 16)
                    if not data:
                        return
                    if re.match(rb"[A-Z]+ /", data):  # a request starts (the SDK does not pipeline)
                        budget = self._fault(data)
                    server.sendall(data)
                if server in ready:
                    data = server.recv(1 << 16)
                    if not data:
                        return
                    if budget is not None and len(data) >= budget:
                        client.sendall(data[:budget])
                        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        return  # closed with linger 0: the client sees "connection reset by peer"
                    budget = None if budget is None else budget - len(data)
                    client.sendall(data)
        except OSError:
            pass
        finally:
            client.close()
            server.close()


def _reset_crawl(src: Path) -> dict[str, tuple]:
    """flaky.jsonl (several ranges), dead.warc.gz (one range of 1.3 MB: the reader asks for 1 MiB
    pieces, so a cut after the first MiB comes after ~250 records) and ok.jsonl. Returns the
    faults to inject: object -> (after bytes, times, from byte)."""
    import base64
    import random

    from tests.crawl_fixture import doc, html, response

    src.mkdir()
    _jsonl_straddling(src / "flaky.jsonl", 80, seed=11)
    noise = random.Random(4)  # incompressible padding: the file is long in bytes, short in records
    (src / "dead.warc.gz").write_bytes(
        b"".join(
            gzip.compress(
                response(
                    f"http://e.cn/{k}",
                    html(
                        f"第{k}页", doc(k, k + 3), f"<!-- {base64.b64encode(noise.randbytes(3000)).decode()} -->"
                    ).encode(),
                ),
                mtime=0,
            )
            for k in range(320)
        )
    )
    (src / "ok.jsonl").write_text(
        "".join(json.dumps({"id": f"ok{k}", "text": doc(k, k + 2)}, ensure_ascii=False) + "\n" for k in range(8)),
        encoding="utf-8",
    )
    return {"flaky.jsonl": (1000, 2, 0), "dead.warc.gz": (1000, None, 1 << 20)}


def _through_proxy(url: str, src: Path, upload, prefix: str) -> ResetProxy:
    """``src`` uploaded under ``prefix``, and a proxy injecting ``_reset_crawl``'s faults."""
    faults = _reset_crawl(src)
    for f in src.iterdir():
        upload(f"{prefix}/{f.name}", f.read_bytes())
    host, port = url.removeprefix("http://").split(":")
    proxy = ResetProxy((host, int(port)))
    for name, (after, times, from_byte) in faults.items():
        proxy.fail(f"{BUCKET}/{prefix}/{name}", after, times, from_byte)
    return proxy


def test_connection_resets_are_retried_then_the_ranges_error(store, creds, tmp_path):
    """Without Spark, range by range: flaky.jsonl's first 2 GETs cut mid-response are retried
    (retries=3) and its rows equal the local rows; dead.warc.gz, cut on every GET past its first
    MiB, yields the records before the cut, then an ``unreadable`` error of its range."""
    from etl.read.readers import InputFile, plan

    url, upload = store
    src = tmp_path / "in"
    proxy = _through_proxy(url, src, upload, "resets-ranges")
    cfg = rec.ReaderConfig(split_bytes=SPLIT, min_split_bytes=1, s3=S3Config(endpoint_override=proxy.url, retries=3))
    access = S3Access.resolve(cfg.s3)
    rows = {}
    try:
        for name in ("flaky.jsonl", "dead.warc.gz"):
            uri, size = f"s3://{BUCKET}/resets-ranges/{name}", (src / name).stat().st_size
            local = plan([InputFile(uri, size, str(src / name))], cfg, 2)
            remote = plan([InputFile(uri, size, uri)], cfg, 2, access)
            rows[name] = (
                [row for t in remote.tasks for r in t for row in rec.parse_range(r, cfg, s3=access)],
                [row for t in local.tasks for r in t for row in rec.parse_range(r, cfg)],
            )
    finally:
        proxy.close()
    assert proxy.resets == {f"{BUCKET}/resets-ranges/flaky.jsonl": 2, f"{BUCKET}/resets-ranges/dead.warc.gz": 3}
    got, want = rows["flaky.jsonl"]
    assert got == want and len(got) > 60
    got, want = rows["dead.warc.gz"]
    records = [r for r in got if r["kind"] == rec.RECORD]
    assert 200 < len(records) < 320 and records == want[: len(records)]  # the records before the cut
    stats = json.loads(got[-1]["file_stats"])
    (error,) = stats["errors"]
    assert error["reason"] == rec.UNREADABLE and "Connection reset by peer" in error["detail"], error
    assert stats["records"] == len(records)


def test_a_file_cut_on_every_retry_is_that_files_error_not_the_runs(spark, store, creds, tmp_path):
    """The same through the clean job: dead.warc.gz is the one file error (exit 1, the run
    finishes), flaky.jsonl and ok.jsonl are read in full."""
    url, upload = store
    src = tmp_path / "in"
    proxy = _through_proxy(url, src, upload, "resets")
    reader = replace(_cfg(url).reader, s3=S3Config(endpoint_override=proxy.url, retries=3))
    try:
        # dead.warc.gz is 320 pages of 8 texts under numbered titles: near-copies, which the
        # template rule counts as templates (docs/quality.md); this test is about the reads
        quality = replace(CleanConfig().quality, template=CrawlRepeatConfig(enabled=False))
        report = clean_corpus(
            CleanConfig(reader=reader, quality=quality), [f"s3://{BUCKET}/resets/"], str(tmp_path / "out"), spark=spark
        )
    finally:
        proxy.close()
    assert proxy.resets == {f"{BUCKET}/resets/flaky.jsonl": 2, f"{BUCKET}/resets/dead.warc.gz": 3}
    (error,) = report["input"]["file_errors"]
    assert error["file"] == f"s3://{BUCKET}/resets/dead.warc.gz" and error["reason"] == rec.UNREADABLE, error
    assert cli.exit_code(report) == cli.EXIT_FILE_ERRORS
    files = {k.rsplit("/", 1)[1]: v for k, v in report["files"].items()}
    local = rec.ReaderConfig(split_bytes=SPLIT, min_split_bytes=1)
    assert files["flaky.jsonl"]["records"] == sum(
        r["kind"] == rec.RECORD for r in rec.parse_file("flaky.jsonl", (src / "flaky.jsonl").read_bytes(), local)
    )
    assert files["flaky.jsonl"]["errors"] == files["ok.jsonl"]["errors"] == []
    assert 200 < files["dead.warc.gz"]["records"] < 320
    docs = spark.read.parquet(str(tmp_path / "out" / "documents")).toPandas()
    ok = docs[docs["source_file"].str.endswith("ok.jsonl")]
    assert sorted(ok["doc_id"]) == [f"ok{k}" for k in range(8)]
    dead = docs[docs["source_file"].str.endswith("dead.warc.gz")]["url"]
    assert sorted(dead, key=lambda u: int(u.rsplit("/", 1)[1])) == [f"http://e.cn/{k}" for k in range(len(dead))]


def test_ranges_read_through_the_store_equal_local_ranges(store, creds, tmp_path):
    """Without Spark: the plan of a JSONL file many ranges long and of a plain WARC, read range by
    range from the store (small read-ahead, so refills and seeks happen inside records) and from disk."""
    from etl.read.readers import InputFile, plan
    from tests.test_split_read import _warc_with_damage

    url, upload = store
    _jsonl_straddling(tmp_path / "r.jsonl", 200, seed=5)
    _warc_with_damage(tmp_path / "r.warc", 60)
    cfg = rec.ReaderConfig(
        split_bytes=4096, min_split_bytes=1, s3=S3Config(endpoint_override=url, read_ahead_bytes=100_000)
    )
    access = S3Access.resolve(cfg.s3)
    for name in ("r.jsonl", "r.warc"):
        data = (tmp_path / name).read_bytes()
        upload(f"ranges/{name}", data)
        uri = f"s3://{BUCKET}/ranges/{name}"
        local = plan([InputFile(uri, len(data), str(tmp_path / name))], cfg, 2)
        remote = plan([InputFile(uri, len(data), uri)], cfg, 2, access)
        assert [(r.start, r.end) for t in remote.tasks for r in t] == [(r.start, r.end) for t in local.tasks for r in t]
        assert remote.ranges > 10
        got = [row for t in remote.tasks for r in t for row in rec.parse_range(r, cfg, s3=access)]
        want = [row for t in local.tasks for r in t for row in rec.parse_range(r, cfg)]
        assert got == want


def test_objects_are_listed_with_their_last_modified_time(store, creds):
    """What a nightly refresh over an s3:// crawl root orders new files by."""
    import time

    url, upload = store
    before = time.time_ns()
    for name in ("b.jsonl", "a/c.warc.gz", "_hidden.jsonl"):
        upload(f"listed/{name}", b"{}\n")
    after = time.time_ns()
    access = S3Access.resolve(S3Config(endpoint_override=url))
    listed = list_objects(f"s3://{BUCKET}/listed/", access)
    assert [(p, n) for p, n, _ in listed] == list_files(f"s3://{BUCKET}/listed/", access)
    assert [p.rsplit("listed/", 1)[1] for p, _, _ in listed] == ["_hidden.jsonl", "a/c.warc.gz", "b.jsonl"]
    assert all(before // 10**9 * 10**9 <= t <= after for _, _, t in listed), (before, listed, after)
