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
import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from etl import records as rec
from etl.corpus import CleanConfig, clean_corpus
from etl.remote import S3Access, S3BucketMissing, S3Config, S3Refused, list_files
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
    client = boto3.client("s3", endpoint_url=url, aws_access_key_id="test", aws_secret_access_key="test",
                          region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    yield url, lambda key, data: client.put_object(Bucket=BUCKET, Key=key, Body=data)
    server.stop()


@pytest.fixture
def creds(monkeypatch, tmp_path):
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")


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
    assert sorted(p for p, _ in list_files(f"s3://{BUCKET}/in/*.jsonl", S3Access.resolve(S3Config(endpoint_override=url)))) \
        == [f"s3://{BUCKET}/in/{n}" for n in ("big.jsonl", "empty.jsonl")]

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
    assert cli.run_job(lambda: clean_corpus(_cfg(url), [f"s3://{BUCKET}/in"], str(out), spark=spark)) == cli.EXIT_REFUSED
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_missing_bucket_is_a_refusal_before_any_work(spark, store, creds, tmp_path):
    url, _ = store
    out = tmp_path / "out"
    with pytest.raises(S3BucketMissing, match="input bucket does not exist on 127.0.0.1:.*: s3://no-such-bucket/x"):
        clean_corpus(_cfg(url), ["s3://no-such-bucket/x"], str(out), spark=spark)
    assert cli.run_job(lambda: clean_corpus(_cfg(url), ["s3://no-such-bucket/x"], str(out), spark=spark)) \
        == cli.EXIT_REFUSED
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

    iam = boto3.client("iam", endpoint_url=url, aws_access_key_id="test", aws_secret_access_key="test",
                       region_name="us-east-1")
    iam.create_user(UserName=name)
    statements = [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}] + [{"Effect": "Deny", **d} for d in deny]
    iam.put_user_policy(UserName=name, PolicyName="crawl", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": statements}))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


# (input, IAM user's denied statements or None for the moto default keys, secret override):
# keys the store does not know, a wrong secret, a policy denying the bucket, and one allowing
# the listing but not reading any object (found by one GET of the first object listed).
FORBIDDEN = {
    "unknown_key": (f"s3://{BUCKET}/", None, None),
    "wrong_secret": (f"s3://{BUCKET}/", [], "not-the-secret"),
    "bucket_denied": (f"s3://{BUCKET}/in", [{"Action": "s3:*", "Resource": [f"arn:aws:s3:::{BUCKET}",
                                                                           f"arn:aws:s3:::{BUCKET}/*"]}], None),
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


def test_ranges_read_through_the_store_equal_local_ranges(store, creds, tmp_path):
    """Without Spark: the plan of a JSONL file many ranges long and of a plain WARC, read range by
    range from the store (small read-ahead, so refills and seeks happen inside records) and from disk."""
    from etl.readers import InputFile, plan
    from tests.test_split_read import _warc_with_damage

    url, upload = store
    _jsonl_straddling(tmp_path / "r.jsonl", 200, seed=5)
    _warc_with_damage(tmp_path / "r.warc", 60)
    cfg = rec.ReaderConfig(split_bytes=4096, min_split_bytes=1,
                           s3=S3Config(endpoint_override=url, read_ahead_bytes=100_000))
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
