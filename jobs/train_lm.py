"""Train the GPT on token shards with Ray Train: one worker per rank of a tp × pp × dp layout.

    python -m jobs.train_lm --config jobs/configs/debug.toml --data out/demo/corpus/shards \\
        --output out/runs/debug [--set parallel.tp=2 --set parallel.dp=2 --set train.steps=50 ...]

starts a local Ray (token authentication on, every socket on 127.0.0.1: train/launch.py) and trains there. Against
a running cluster the same module is the entrypoint of a Ray job; ``RAY_ADDRESS`` (which ``ray job
submit`` sets for its entrypoint) or ``--set ray.address=HOST:PORT`` selects it:

    ray job submit --address http://127.0.0.1:8265 --working-dir . -- \\
        python -m jobs.train_lm --config jobs/configs/debug.toml --data SHARDS --output RUN_DIR

The job's entrypoint runs in a copy of the working directory, so give --data and --output as
absolute paths there. RUN_DIR (and the shards) must be at the same path on every node: on one
machine any directory; on a cluster a shared file system. It gets::

    metrics.jsonl    one row per logged step (step, loss, lr, tokens_per_s, mfu, memory_gib, val_loss…)
    events.jsonl     start / resume / checkpoint / finish, with attempt numbers
    tensorboard/     TensorBoard event files
    checkpoints/     step-XXXXXXX/ sharded DCP checkpoints, each with a COMPLETE marker (train/checkpoint.py),
                     written in the background with train.async_checkpoint (docs/training.md)
    config.json      the resolved config of the latest launch
    ray/             Ray Train's run state (pointers to our checkpoints)

Launching again on the same RUN_DIR continues from its newest complete checkpoint, at any layout.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from base.log import setup_logging
from jobs import cli
from jobs.config import ConfigError, load_config
from train import checkpoint
from train.job import TrainLMConfig, run, summary_lines

log = logging.getLogger("zhcorpus")
CONFIGS = Path(__file__).resolve().parent / "configs"
REFUSED = (ConfigError, ValueError, FileNotFoundError, checkpoint.CheckpointError)  # one line, exit 2


def parse_args(argv: list[str] | None = None):
    p = cli.parser("jobs.train_lm", __doc__, CONFIGS / "debug.toml", example="parallel.tp=2 --set train.steps=200")
    p.add_argument("--data", required=True, help="shard directory or its manifest.json")
    p.add_argument("--output", required=True, help="RUN_DIR: metrics, TensorBoard events, checkpoints")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    args = parse_args(argv)
    try:
        cfg = load_config(TrainLMConfig, args.config, args.overrides)
        summary = run(cfg, args.data, args.output)
    except REFUSED as e:
        log.error("%s", e)
        return cli.EXIT_REFUSED
    for line in summary_lines(summary):
        log.info("%s", line)
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
