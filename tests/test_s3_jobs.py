"""The corpus jobs on s3:// inputs against moto's S3 server on 127.0.0.1: ``jobs.build_corpus``
(its entry point, in process) and the nightly refresh read the hand-built crawl from the store,
and their ledgers (report.json without timings, config and paths) equal those of the same files
read from disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etl.corpus import BuildConfig, build_corpus
from etl.nightly import NightlyConfig, refresh
from jobs import build_corpus as build_job
from jobs import cli
from jobs.config import load_config
from tests import crawl_fixture
from tests.test_s3_read import BUCKET, creds, store  # noqa: F401 - fixtures

pytestmark = pytest.mark.slow
# tests/test_nightly.py's small build, two shards; 1,300 pieces: the fixture needs ~980 characters at 0.98.
SETTINGS = ["tokenizer.vocab_size=1300", "tokenizer.character_coverage=0.98", "shards.num_shards=2"]


def _crawl(root: Path, upload, prefix: str) -> Path:
    """The hand-built crawl on disk and under ``s3://BUCKET/prefix/``, without its 10 MB line and
    without notes.txt (the nightly refresh lists crawl formats only)."""
    crawl_fixture.build(root)
    crawl_fixture.write_copies(root)  # duplicates for dedup to find
    (root / "part-0.jsonl").unlink()
    (root / "notes.txt").unlink()
    for f in sorted(root.iterdir()):
        upload(f"{prefix}/{f.name}", f.read_bytes())
    return root


def _ledger(report: dict, prefix: str) -> dict:
    """The report without timings (``job``, every ``seconds``), config, resources and the dedup
    index's batch, with file names relative to ``prefix``."""

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("seconds", "index")}
        return [strip(v) for v in x] if isinstance(x, list) else x

    keep = {k: v for k, v in report.items() if k not in ("job", "config", "resources")}
    return json.loads(json.dumps(strip(keep)).replace(prefix, ""))


@pytest.fixture(scope="module")
def local(spark, store, tmp_path_factory):  # noqa: F811
    """The crawl on disk and in the store (under build/ and nightly/), and its build from disk."""
    _, upload = store
    root = tmp_path_factory.mktemp("s3_jobs")
    src = _crawl(root / "in", upload, "build")
    for f in sorted(src.iterdir()):
        upload(f"nightly/{f.name}", f.read_bytes())
    report = build_corpus(load_config(BuildConfig, None, SETTINGS), [str(src)], str(root / "local"), spark=spark)
    return src, _ledger(report, f"file:{src}/")


def test_build_corpus_job_reads_s3_as_local_files(spark, store, creds, local, tmp_path):  # noqa: F811
    url, _ = store
    src, want = local
    # The job's entry point in process: it takes this session (getOrCreate) and sets one conf on it.
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    try:
        code = build_job.main(
            [
                "--input",
                f"s3://{BUCKET}/build/",
                "--output",
                str(tmp_path / "remote"),
                "--set",
                f"reader.s3.endpoint_override={url}",
            ]
            + [a for s in SETTINGS for a in ("--set", s)]
        )
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    assert code == cli.EXIT_FILE_ERRORS  # the crawl's three damaged files
    remote = json.loads((tmp_path / "remote" / "report.json").read_text())
    assert remote["input"]["files"] == len(list(src.iterdir())) and remote["duplicates"] > 0
    assert _ledger(remote, f"s3://{BUCKET}/build/") == want


def test_nightly_refresh_reads_s3_as_local_files(spark, store, creds, local, tmp_path):  # noqa: F811
    """A night on an s3:// crawl root: every object listed with its last-modified time, built
    (ledger as the local build: the index is empty), published; the next night finds nothing new."""
    url, _ = store
    src, want = local
    cfg = load_config(
        NightlyConfig, None, SETTINGS + ["refresh.settle_seconds=0", f"reader.s3.endpoint_override={url}"]
    )
    root, corpus = f"s3://{BUCKET}/nightly/", tmp_path / "corpus"
    first = refresh(cfg, root, str(corpus), spark=spark)
    assert first["published"] == "v000001"
    published = json.loads((corpus / "versions" / "v000001" / "refresh.json").read_text())
    assert sorted(published["files"]) == sorted(root + f.name for f in src.iterdir())
    assert _ledger(first["report"], root) == want
    assert refresh(cfg, root, str(corpus), spark=spark)["published"] is None
