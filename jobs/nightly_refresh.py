"""Nightly corpus refresh: build the crawl files that arrived since the last published version,
deduplicated against everything already in the corpus, and publish a new version atomically.

    spark-submit jobs/nightly_refresh.py --crawl-root /data/input --corpus-root /data/corpus \\
        [--index /data/corpus/dedup-index] [--config TOML] [--set k=v ...] \\
        [--submit-training --ray-address http://127.0.0.1:8265 --train-config jobs/configs/debug.toml]

The config is build_corpus's, under the same keys (--set classify.spam_model=DIR,
--set tokenizer.model=DIR ...), plus [refresh] settle_seconds and max_files. After publishing, a
run compacts the dedup index once it holds more than dedup.index.compact_after segments
(--set dedup.index.compact_after=8, dedup.index.target_file_mb=256). The layout of CORPUS_ROOT,
the watermark and the recovery rules: etl/nightly.py; the index and its growth: docs/nightly.md.

Exit codes: 0 published a version or found nothing new; 1 published, but some new files could not
be read; 2 bad input or configuration; 3 another run holds the lock; anything else a failure
(re-run it: nothing half-done is visible).
"""

from __future__ import annotations

import sys
from pathlib import Path

from base.errors import Refusal
from base.log import setup_logging
from etl.nightly import NightlyConfig, refresh, submit_training
from etl.runtime.paths import check_job_paths
from jobs import cli
from jobs.config import load_config


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    p = cli.parser(
        "jobs.nightly_refresh", __doc__, None, "classify.spam_model=models/spam --set refresh.settle_seconds=60"
    )
    p.add_argument("--crawl-root", required=True, help="directory the crawler drops files into")
    p.add_argument(
        "--corpus-root", required=True, help="the published corpus (versions/, CURRENT, state.json): a path or s3://"
    )
    p.add_argument("--index", default=None, help="dedup index (default: CORPUS_ROOT/dedup-index)")
    p.add_argument("--submit-training", action="store_true", help="after publishing, submit continued training to Ray")
    p.add_argument("--ray-address", default="http://127.0.0.1:8265")
    p.add_argument("--train-config", default="jobs/configs/debug.toml")
    p.add_argument("--train-output", default=None, help="run directories (default: CORPUS_ROOT/runs)")
    args = p.parse_args(argv)

    def body() -> int:
        cfg = load_config(NightlyConfig, args.config, args.overrides)
        check_job_paths([args.crawl_root], args.corpus_root, args.index)  # the crawl is never written
        if args.submit_training and not args.train_output and "://" in args.corpus_root:
            raise Refusal(f"--corpus-root {args.corpus_root} is on a store: pass --train-output (runs are local)")
        result = refresh(cfg, args.crawl_root, args.corpus_root, args.index)  # a held lock: exit 3 (cli.run_job)
        if result["published"] and args.submit_training:
            submit_training(
                args.ray_address,
                result["published"],
                args.corpus_root,
                args.train_config,
                args.train_output or str(Path(args.corpus_root).resolve() / "runs"),
            )
        return cli.exit_code(result["report"]) if result["published"] else cli.EXIT_OK

    return cli.run_job(body)


if __name__ == "__main__":
    sys.exit(main())
