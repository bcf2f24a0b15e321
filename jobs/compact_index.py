"""Compact a dedup index: merge its segments (one batch a night) into bucketed files of
``dedup.index.target_file_mb``, sorted by key, so a night opens a few files per band and bucket.

    python -m jobs.compact_index --index CORPUS/dedup-index            # everything into one segment
    python -m jobs.compact_index --index DIR --auto                    # only what the nightly rule asks
    spark-submit jobs/compact_index.py --index hdfs:///corpus/dedup-index --set dedup.index.target_file_mb=256

The nightly refresh compacts by itself (``--auto``'s rule: more than ``dedup.index.compact_after``
segments). One writer at a time: while a refresh appends to the index (or another compaction
runs) this one is refused, and a refresh that finds it compacting exits 3. A compaction killed
anywhere leaves the index readable as it was (or already compacted); run it again to finish. The
layout and the commit protocol: etl/dedup/index.py, docs/nightly.md.

Exit codes: 0 compacted, or nothing to do; 2 not an index, a bad config, or another writer holds
the index's lock (INDEX/.lock, named with its holder); anything else a failure (re-run it).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field

from base.log import setup_logging
from etl.dedup.stage import DedupConfig
from etl.read.records import ReaderConfig
from etl.runtime.spark import SparkConfig
from jobs import cli
from jobs.config import load_config


@dataclass(frozen=True)
class CompactJobConfig:
    """The nightly's ``spark`` and ``dedup`` sections (only ``dedup.index`` is used here: the
    index's MinHash settings are the ones it records)."""

    spark: SparkConfig = field(default_factory=SparkConfig)
    dedup: DedupConfig = field(default_factory=DedupConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)  # reader.s3: an s3:// index's store


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    p = cli.parser("jobs.compact_index", __doc__, None, "dedup.index.target_file_mb=256")
    p.add_argument("--index", required=True, help="the dedup index (a local, HDFS or s3:// path)")
    p.add_argument(
        "--auto",
        action="store_true",
        help="merge only when there are more than dedup.index.compact_after segments (the nightly rule)",
    )
    args = p.parse_args(argv)

    def body() -> int:
        from etl.dedup.index import DedupIndex
        from etl.runtime.spark import session

        cfg = load_config(CompactJobConfig, args.config, args.overrides)
        spark = session("zhcorpus-compact-index", cfg.spark)
        index = DedupIndex.existing(spark, args.index, cfg.dedup.index, s3=cfg.reader.s3)
        before = index.describe()
        summary = index.compact(full=not args.auto)  # another writer's lock: exit 3 (cli.run_job)
        after = index.describe()
        cli.log.info(
            "dedup index %s: %s", args.index, json.dumps({"before": before, "compaction": summary, "after": after})
        )
        return cli.EXIT_OK

    return cli.run_job(body)


if __name__ == "__main__":
    sys.exit(main())
