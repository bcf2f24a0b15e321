"""Nightly corpus refresh: build the crawl files that arrived since the last published version,
deduplicated against everything already in the corpus, and publish a new version atomically.

CORPUS_ROOT (a POSIX path: local disk or a shared mount):
    CURRENT                      the published version's name, e.g. v000007 (replaced last, by rename)
    versions/vNNNNNN/            a build_corpus output (documents/ rejected/ duplicates/ shards/ report.*,
                                 template_keys/: its template key counts, which later nights add to theirs)
                                 + corpus.json: every shard of every version up to this one, in the
                                 shard-manifest format trainers read (paths relative to it)
                                 + refresh.json: the input files and the watermark after them
    state.json                   a readable copy of the last refresh (CURRENT is the truth)
    dedup-index/                 the persistent dedup index (default)
    .lock                        held while a run works (pid, host, start time)

New files: crawl files whose (mtime, path) sorts after the published watermark and whose mtime is
at least ``refresh.settle_seconds`` old (a file still being copied is left for the next night).
Trainers read ``CURRENT`` → ``versions/<v>/corpus.json`` only, so they never see a half-published
version.

Compaction: after publishing (or finding nothing new), a run merges the dedup index's segments
once there are more than ``dedup.index.compact_after`` of them (``DedupIndex.compact``,
docs/nightly.md), so a year of nights leaves a few files per band and bucket, not one per night.

Recovery: CURRENT is the single commit point. A run killed anywhere leaves either an unpublished
version directory and/or an index batch named after that version; the next run removes both
and rebuilds the same version from the same files, so the published result is what an
uninterrupted run would have published.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from base.manifest import MANIFEST_FILE, merge_loaded, merge_manifests
from etl.corpus import TEMPLATE_KEYS, BuildConfig, build_corpus
from etl.nightly_root import LocalRoot, StoreRoot
from etl.nightly_root import corpus_root as corpus_root_at
from etl.quality.crawl_repeat import template_history
from etl.read import remote
from etl.read.records import detect_format
from etl.runtime.failpoints import failpoint
from etl.runtime.locks import Locked
from etl.runtime.objstore import refuse_store_index
from etl.runtime.publish import write_atomic

log = logging.getLogger("zhcorpus")


# Another refresh holds the corpus lock, or another writer the dedup index's (a compaction):
# jobs.nightly_refresh exits 3 on either.
RefreshLocked = Locked


@dataclass(frozen=True)
class RefreshSection:
    settle_seconds: int = 300  # a file modified more recently may still be arriving
    max_files: int = 0  # 0 = all new files in one version; else at most this many (oldest first)


@dataclass(frozen=True)
class NightlyConfig(BuildConfig):
    """build_corpus's sections under the same keys, plus ``refresh``."""

    refresh: RefreshSection = field(default_factory=RefreshSection)
    RENAMED: ClassVar[dict[str, str]] = {
        **BuildConfig.RENAMED,
        "build": "",
        "settle_seconds": "refresh.settle_seconds",
        "max_files": "refresh.max_files",
    }


def crawl_files(
    root: str, after: list | None, settle_seconds: int, now: float, s3: remote.S3Config | None = None
) -> list[tuple[int, str]]:
    """(mtime_ns, path) of settled crawl files sorting after the watermark ``after``; an
    ``s3://`` root is listed through ``etl.read.remote`` (objects' last-modified times, ``s3``)."""
    if remote.is_s3(root):
        listed = [(t, p) for p, _, t in remote.list_objects(root, remote.S3Access.resolve(s3 or remote.S3Config()))]
    else:
        listed = [(f.stat().st_mtime_ns, str(f)) for f in Path(root).rglob("*") if f.is_file()]
    found = sorted(
        (t, p)
        for t, p in listed
        if detect_format(p) is not None
        and not p.rsplit("/", 1)[-1].startswith((".", "_"))
        and t / 1e9 <= now - settle_seconds
    )
    return [x for x in found if after is None or x > tuple(after)]


def published(corpus: Path | LocalRoot | StoreRoot) -> str | None:
    root = corpus if isinstance(corpus, (LocalRoot, StoreRoot)) else LocalRoot(str(corpus))
    current = root.read_text("CURRENT")
    return current.strip() if current is not None else None


def version_name(n: int) -> str:
    return f"v{n:06d}"


def _recover(root: LocalRoot | StoreRoot, index, current: str | None, version: str) -> None:
    """Remove what a killed run left of ``version``: its directory and its index batch."""
    if root.remove(f"versions/{version}"):
        log.warning("removing unpublished %s left by an interrupted run", root.uri(f"versions/{version}"))
    if index is not None and index.retract(version):
        log.warning("retracted index batch %s of an unpublished build", version)
    for other in root.versions():  # newer than CURRENT: never published
        if current is None or other > current:
            root.remove(f"versions/{other}")


def refresh(
    cfg: NightlyConfig,
    crawl_root: str,
    corpus_root: str,
    index_dir: str | None = None,
    spark=None,
    now: float | None = None,
) -> dict[str, Any]:
    """Returns {"published": version | None, ...}. Raises RefreshLocked. ``corpus_root`` is a
    local path or ``s3://bucket/prefix`` (``etl.nightly_root``: the store's settings are
    ``reader.s3``, as for an s3:// crawl root)."""
    from etl.dedup.index import DedupIndex
    from etl.runtime.spark import session

    root = corpus_root_at(corpus_root, cfg.reader.s3)
    with root.lock():
        current = published(root)
        history = json.loads(root.read_text(f"versions/{current}/refresh.json") or "null") if current else None
        new = crawl_files(
            crawl_root,
            history and history["watermark"],
            cfg.refresh.settle_seconds,
            time.time() if now is None else now,
            cfg.reader.s3,
        )
        if cfg.refresh.max_files:
            new = new[: cfg.refresh.max_files]
        version = version_name(history["number"] + 1 if history else 1)
        spark = spark or session("zhcorpus-nightly", cfg.spark, [p for _, p in new])
        index_dir = index_dir or root.uri("dedup-index")
        refuse_store_index(index_dir)  # s3a://: refused in one line naming s3://
        index = DedupIndex(spark, index_dir, cfg.dedup.minhash.resolved(), cfg.dedup.index, s3=cfg.reader.s3)
        _recover(root, index, current, version)
        if not new:
            log.info("nothing new in %s since %s", crawl_root, current or "the beginning")
            result = {"published": None, "current": current, "new_files": 0}
        else:
            result = _publish_version(cfg, root, history, version, new, index_dir, spark)
        # After publishing, so every batch it merges belongs to a published version (never
        # retracted); a compaction killed here is finished by the next run, new files or not.
        result["compaction"] = index.compact()
        result["index"] = index.describe()
        return result


def _publish_version(
    cfg: NightlyConfig,
    root: LocalRoot | StoreRoot,
    history: dict | None,
    version: str,
    new: list[tuple[int, str]],
    index_dir: str,
    spark,
) -> dict[str, Any]:
    tokenizer = history["tokenizer"] if history else cfg.tokenizer.model
    build_cfg = replace(cfg, tokenizer=replace(cfg.tokenizer, model=tokenizer)) if tokenizer else cfg
    out = root.uri(f"versions/{version}")
    log.info("building %s from %d new files", version, len(new))
    versions = (history["versions"] if history else []) + [version]
    # the template rule counts the published versions' keys with tonight's (a farm a few pages a night)
    # keys cut the way tonight's are (a version built before a change of settings counts nothing)
    prior = template_history(root, versions[:-1], cfg.quality.template, TEMPLATE_KEYS)
    record = {
        "version": version,
        "number": history["number"] + 1 if history else 1,
        "versions": versions,
        "files": [p for _, p in new],
        "watermark": list(new[-1]),
        "tokenizer": tokenizer or f"{out}/tokenizer",
        "config": asdict(cfg),
    }

    def pointers(staging, _report) -> None:  # on a store: committed with the version
        mine = json.loads(staging.read_bytes(f"shards/{MANIFEST_FILE}"))
        loaded = {v: (root.shard_manifest(v), f"../{v}/shards") for v in versions[:-1]}
        merged = merge_loaded({**loaded, version: (mine, "shards")})
        staging.write_text("corpus.json", json.dumps(merged, indent=2, ensure_ascii=False, sort_keys=True))
        staging.write_text("refresh.json", json.dumps(record, indent=2, ensure_ascii=False))

    report = build_corpus(
        build_cfg,
        [p for _, p in new],
        out,
        index_dir=index_dir,
        spark=spark,
        index_run=version,
        template_history=prior,
        before_commit=pointers if root.on_store else None,
    )
    failpoint("refresh:built")
    if not root.on_store:
        corpus = root.path
        merged = merge_manifests(
            {v: corpus / "versions" / v / "shards" for v in versions}, corpus / "versions" / version
        )
        write_atomic(Path(out) / "corpus.json", json.dumps(merged, indent=2, ensure_ascii=False, sort_keys=True))
        write_atomic(Path(out) / "refresh.json", json.dumps(record, indent=2, ensure_ascii=False))
    failpoint("refresh:manifest_written")
    root.write_text("CURRENT", version + "\n")  # the commit point
    failpoint("refresh:published")
    root.write_text(
        "state.json",
        json.dumps(
            {
                "current": version,
                "watermark": record["watermark"],
                "published_at": time.time(),
                "documents": report["documents"],
                "duplicates": report["duplicates"],
            },
            indent=2,
        ),
    )
    log.info(
        "published %s: %d documents, %d duplicates, %d rejected",
        version,
        report["documents"],
        report["duplicates"],
        report["rejected"],
    )
    return {"published": version, "current": version, "new_files": len(new), "report": report}


def submit_training(
    ray_address: str,
    version: str,
    corpus_root: str,
    train_config: str,
    output_root: str,
    working_dir: str | None = None,
) -> str:
    """Submit continued training on ``version`` once: the submission id is ``nightly-<version>``,
    and a job that already exists under that id (running or finished) is not submitted again."""
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(ray_address)
    sid = f"nightly-{version}"
    try:
        info = client.get_job_info(sid)
        log.info("training job %s already exists (%s); not resubmitting", sid, info.status)
        return sid
    except RuntimeError:
        pass  # no such job
    data = (
        f"{corpus_root.rstrip('/')}/versions/{version}/corpus.json"
        if remote.is_s3(corpus_root)
        else Path(corpus_root).resolve() / "versions" / version / "corpus.json"
    )
    client.submit_job(
        submission_id=sid,
        entrypoint=(f"python -m jobs.train_lm --config {train_config} --data {data} --output {output_root}/{version}"),
        runtime_env={"working_dir": working_dir or str(Path(__file__).resolve().parent.parent)},
    )
    log.info("submitted training job %s", sid)
    return sid
