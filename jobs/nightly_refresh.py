"""Nightly corpus refresh: build the crawl files that arrived since the last published version,
deduplicated against everything already in the corpus, and publish a new version atomically.

    spark-submit jobs/nightly_refresh.py --crawl-root /data/input --corpus-root /data/corpus \\
        [--index /data/corpus/dedup-index] [--config TOML] [--set k=v ...] \\
        [--submit-training --ray-address http://127.0.0.1:8265 --train-config jobs/configs/debug.toml]

Exit codes: 0 published a version or found nothing new; 3 another run holds the lock; 2 bad
input or configuration; anything else a failure (re-run it: nothing half-done is visible).

CORPUS_ROOT (a POSIX path: local disk or a shared mount):
    CURRENT                      the published version's name, e.g. v000007 (replaced last, by rename)
    versions/vNNNNNN/            a build_corpus output (documents/ rejected/ duplicates/ shards/ report.*)
                                 + corpus.json: every shard of every version up to this one, in the
                                 shard-manifest format trainers read (paths relative to it)
                                 + refresh.json: the input files and the watermark after them
    state.json                   a readable copy of the last refresh (CURRENT is the truth)
    dedup-index/                 the persistent dedup index (default --index)
    .lock                        held while a run works (pid, host, start time)

New files: crawl files whose (mtime, path) sorts after the published watermark and whose mtime is
at least ``settle_seconds`` old (a file still being copied is left for the next night). Trainers
read ``CURRENT`` → ``versions/<v>/corpus.json`` only, so they never see a half-published version.

Recovery: CURRENT is the single commit point. A run killed anywhere leaves either an unpublished
version directory and/or an index batch named after that version; the next run removes both
and rebuilds the same version from the same files, so the published result is what an
uninterrupted run would have published.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from etl.records import detect_format  # noqa: E402
from jobs.build_corpus import BuildConfig  # noqa: E402
from jobs.config import ConfigError, load_config, to_dict  # noqa: E402

log = logging.getLogger("zhcorpus")
EXIT_LOCKED = 3


class RefreshLocked(RuntimeError):
    pass


@dataclass(frozen=True)
class RefreshConfig:
    build: BuildConfig = field(default_factory=BuildConfig)
    settle_seconds: int = 300  # a file modified more recently may still be arriving
    max_files: int = 0  # 0 = all new files in one version; else at most this many (oldest first)


# -- files and state ---------------------------------------------------------------------------

def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def crawl_files(root: Path, after: list | None, settle_seconds: int, now: float) -> list[tuple[int, str]]:
    """(mtime_ns, path) of settled crawl files sorting after the watermark ``after``."""
    found = []
    for f in sorted(root.rglob("*")):
        if f.is_file() and detect_format(f.name) is not None and not f.name.startswith((".", "_")):
            st = f.stat()
            if st.st_mtime <= now - settle_seconds:
                found.append((st.st_mtime_ns, str(f)))
    found.sort()
    return [x for x in found if after is None or x > tuple(after)]


def published(corpus: Path) -> str | None:
    current = corpus / "CURRENT"
    return current.read_text(encoding="utf-8").strip() if current.exists() else None


def version_name(n: int) -> str:
    return f"v{n:06d}"


class Lock:
    """``CORPUS_ROOT/.lock`` created exclusively. A lock left by a dead process on this host is
    taken over; a live holder (or one on another host) makes the run exit with EXIT_LOCKED."""

    def __init__(self, corpus: Path):
        self.path = corpus / ".lock"
        self.held = False

    def __enter__(self) -> "Lock":
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not self._stale():
                    holder = self.path.read_text(encoding="utf-8", errors="replace")
                    raise RefreshLocked(f"another refresh holds {self.path}: {holder}; "
                                        "wait for it, or remove the file if that process is gone") from None
                log.warning("removing stale lock %s", self.path)
                self.path.unlink(missing_ok=True)
                continue
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
            self.held = True
            return self
        raise RefreshLocked(f"could not take {self.path}")

    def _stale(self) -> bool:
        try:
            holder = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False  # being written right now, or unreadable: not ours to judge
        if holder.get("host") != socket.gethostname():
            return False
        try:
            os.kill(int(holder["pid"]), 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def __exit__(self, *exc) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)


# -- the refresh -------------------------------------------------------------------------------

def combined_manifest(corpus: Path, versions: list[str], version_dir: Path) -> dict[str, Any]:
    """The shard manifests of ``versions`` merged into one, paths relative to ``version_dir``."""
    merged: dict[str, Any] | None = None
    for v in versions:
        m = json.loads((corpus / "versions" / v / "shards" / "manifest.json").read_text(encoding="utf-8"))
        rel = os.path.relpath(corpus / "versions" / v / "shards", version_dir)
        shards = []
        for s in m["shards"]:
            entry = {**s, "version": v}
            for key in ("name", "bin", "idx", "src"):
                if key in s:
                    entry[key] = f"{rel}/{s[key]}"
            if "sources" in m:
                entry["sources"] = m["sources"]  # a shard's .src ids index its own version's list
            shards.append(entry)
        if merged is None:
            merged = {k: v2 for k, v2 in m.items() if k not in ("shards", "totals", "tokens_per_source", "sources")}
            merged.update(shards=[], tokens_per_source={})
        elif m["tokenizer_sha256"] != merged["tokenizer_sha256"]:
            raise RuntimeError(f"version {v} was tokenized with another tokenizer than {versions[0]}")
        merged["shards"] += shards
        for src, n in m["tokens_per_source"].items():
            merged["tokens_per_source"][src] = merged["tokens_per_source"].get(src, 0) + n
    assert merged is not None
    merged["sources"] = sorted(merged["tokens_per_source"])
    merged["tokens_per_source"] = dict(sorted(merged["tokens_per_source"].items()))
    merged["totals"] = {"shards": len(merged["shards"]), "documents": sum(s["documents"] for s in merged["shards"]),
                        "tokens": sum(s["tokens"] for s in merged["shards"])}
    merged["versions"] = versions
    return merged


def _recover(corpus: Path, index, current: str | None, version: str) -> None:
    """Remove what a killed run left of ``version``: its directory and its index batch."""
    leftover = corpus / "versions" / version
    if leftover.exists():
        log.warning("removing unpublished %s left by an interrupted run", leftover)
        shutil.rmtree(leftover)
    if index is not None and index.retract(version):
        log.warning("retracted index batch %s of an unpublished build", version)
    for other in (corpus / "versions").glob("v*"):  # newer than CURRENT: never published
        if current is None or other.name > current:
            shutil.rmtree(other, ignore_errors=True)


def refresh(cfg: RefreshConfig, crawl_root: str, corpus_root: str, index_dir: str | None = None,
            spark=None, now: float | None = None) -> dict[str, Any]:
    """Returns {"published": version | None, ...}. Raises RefreshLocked."""
    from etl.dedup_index import DedupIndex
    from etl.failpoints import failpoint
    from etl.spark import get_spark
    from jobs import build_corpus

    corpus = Path(corpus_root).resolve()
    (corpus / "versions").mkdir(parents=True, exist_ok=True)
    with Lock(corpus):
        current = published(corpus)
        history = json.loads((corpus / "versions" / current / "refresh.json").read_text()) if current else None
        new = crawl_files(Path(crawl_root), history and history["watermark"], cfg.settle_seconds,
                          time.time() if now is None else now)
        if cfg.max_files:
            new = new[: cfg.max_files]
        version = version_name(history["number"] + 1 if history else 1)
        spark = spark or get_spark("zhcorpus-nightly", cfg.build.spark.master or None)
        index_dir = index_dir or str(corpus / "dedup-index")
        index = DedupIndex(spark, index_dir, cfg.build.dedup.minhash)
        _recover(corpus, index, current, version)
        if not new:
            log.info("nothing new in %s since %s", crawl_root, current or "the beginning")
            return {"published": None, "current": current, "new_files": 0}
        build_cfg = cfg.build
        tokenizer = history["tokenizer"] if history else build_cfg.tokenizer.model
        if tokenizer:
            build_cfg = _with_tokenizer(build_cfg, tokenizer)
        out = corpus / "versions" / version
        log.info("building %s from %d new files", version, len(new))
        report = build_corpus.run(build_cfg, [p for _, p in new], str(out), index_dir=index_dir, spark=spark,
                                  index_run=version)
        failpoint("refresh:built")
        versions = (history["versions"] if history else []) + [version]
        _write_atomic(out / "corpus.json", json.dumps(combined_manifest(corpus, versions, out), indent=2,
                                                      ensure_ascii=False, sort_keys=True))
        record = {"version": version, "number": history["number"] + 1 if history else 1, "versions": versions,
                  "files": [p for _, p in new], "watermark": list(new[-1]),
                  "tokenizer": tokenizer or str(out / "tokenizer"), "config": to_dict(cfg)}
        _write_atomic(out / "refresh.json", json.dumps(record, indent=2, ensure_ascii=False))
        failpoint("refresh:manifest_written")
        _write_atomic(corpus / "CURRENT", version + "\n")  # the commit point
        failpoint("refresh:published")
        _write_atomic(corpus / "state.json", json.dumps(
            {"current": version, "watermark": record["watermark"], "published_at": time.time(),
             "documents": report["documents"], "duplicates": report["duplicates"]}, indent=2))
        log.info("published %s: %d documents, %d duplicates, %d rejected", version, report["documents"],
                 report["duplicates"], report["rejected"])
        return {"published": version, "current": version, "new_files": len(new), "report": report}


def _with_tokenizer(cfg: BuildConfig, path: str) -> BuildConfig:
    from dataclasses import replace

    return replace(cfg, tokenizer=replace(cfg.tokenizer, model=path))


def submit_training(ray_address: str, version: str, corpus_root: str, train_config: str, output_root: str) -> str:
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
    data = Path(corpus_root).resolve() / "versions" / version / "corpus.json"
    client.submit_job(submission_id=sid, entrypoint=(
        f"python -m jobs.train_lm --config {train_config} --data {data} --output {output_root}/{version}"),
        runtime_env={"working_dir": str(Path(__file__).resolve().parent.parent)})
    log.info("submitted training job %s", sid)
    return sid


def main(argv: list[str] | None = None) -> int:
    from etl.dedup_index import IndexSettingsMismatch
    from filters.classify import ModelError

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    p = argparse.ArgumentParser(prog="jobs.nightly_refresh", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--crawl-root", required=True, help="directory the crawler drops files into")
    p.add_argument("--corpus-root", required=True, help="the published corpus (versions/, CURRENT, state.json)")
    p.add_argument("--index", default=None, help="dedup index (default: CORPUS_ROOT/dedup-index)")
    p.add_argument("--config", default=None, help="TOML: [build] is build_corpus's config, plus settle_seconds, max_files")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="e.g. --set build.classify.spam_model=models/spam --set settle_seconds=60")
    p.add_argument("--submit-training", action="store_true", help="after publishing, submit continued training to Ray")
    p.add_argument("--ray-address", default="http://127.0.0.1:8265")
    p.add_argument("--train-config", default="jobs/configs/debug.toml")
    p.add_argument("--train-output", default=None, help="run directories (default: CORPUS_ROOT/runs)")
    args = p.parse_args(argv)
    try:
        cfg = load_config(RefreshConfig, args.config, args.overrides)
        result = refresh(cfg, args.crawl_root, args.corpus_root, args.index)
    except RefreshLocked as e:
        log.error("%s", e)
        return EXIT_LOCKED
    except (ConfigError, FileNotFoundError, ValueError, ModelError, IndexSettingsMismatch) as e:
        log.error("%s", e)
        return 2
    if result["published"] and args.submit_training:
        submit_training(args.ray_address, result["published"], args.corpus_root, args.train_config,
                        args.train_output or str(Path(args.corpus_root).resolve() / "runs"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
