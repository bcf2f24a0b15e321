"""The training job as a library: the checks of its config (``train.config.TrainLMConfig``) before
any worker starts (``resolve``, which makes the ``train.loop.Job`` every worker gets), Ray Train's
``TorchTrainer`` for a layout (``build_trainer``) and ``run``, which ``jobs/train_lm.py`` calls (and
tests and the benchmarks). Ray start-up itself is ``train.launch``; what every worker runs is
``train.loop.train_loop``."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any

from base.manifest import read_manifest
from base.s3 import is_s3
from train import checkpoint, launch
from train.config import RaySection, TrainLMConfig
from train.data import shard_manifest
from train.launch_checks import LaunchError, check_cluster_fits
from train.loop import Job, check_compatible
from train.parallel import at_world_size, elastic_problems, validate
from train.planner import total_params
from train.shapes import ModelConfig

log = logging.getLogger("zhcorpus")
RAY_NAME = "train_lm"  # Ray Train run name: its state lives in RUN_DIR/ray/train_lm
# Ray Train V2 reads it in its controller, which gets it from the driver (ENV_VARS_TO_PROPAGATE)
WORKER_START_TIMEOUT_ENV = "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"


def resolve(cfg: TrainLMConfig, data: str, output: str) -> Job:
    """Check the config against the shards, the layout and the checkpoint it would resume from
    before any worker starts; the ``Job`` every worker gets: ``cfg`` with the shards' vocabulary,
    the data verified once here, and absolute paths (Ray workers run in their own directories)."""
    from train.data import TokenData

    if is_s3(data):  # a build or nightly output on S3: its shards are fetched into the local cache
        manifest: str | Path = data
        vocab_size = read_manifest(shard_manifest(data, cfg.data), verify=False).get("vocab_size")
    else:
        manifest = Path(data).resolve()
        manifest = manifest / "manifest.json" if manifest.is_dir() else manifest
        vocab_size = read_manifest(manifest, verify=False).get("vocab_size")
    if not vocab_size:
        raise LaunchError(f"{manifest} has no vocab_size: the model's vocabulary is the shards' tokenizer's")
    model = cfg.model.replace(vocab_size=vocab_size)
    if cfg.data.seq_len > model.seq_len:
        raise LaunchError(
            f"data.seq_len={cfg.data.seq_len} is longer than the model's context model.seq_len={model.seq_len}"
        )
    validate(cfg.parallel, model, cfg.parallel.world_size, cfg.train.global_batch, cfg.train.micro_batch)
    if cfg.ray.min_workers:
        problems = elastic_problems(
            cfg.parallel, model, cfg.ray.min_workers, cfg.train.global_batch, cfg.train.micro_batch
        )
        if problems:
            raise LaunchError("elastic layout (ray.min_workers):\n  - " + "\n  - ".join(problems))
    # Open both splits here (verifying the checksums once, if data.verify): a bad manifest or an
    # empty split is a config error now, not a worker failure that Ray would retry.
    TokenData(manifest, cfg.data, "train")
    if cfg.train.eval_every:
        TokenData(manifest, dataclasses.replace(cfg.data, verify=False), "valid")
    job = Job.of(
        cfg,
        model=model,
        data=dataclasses.replace(cfg.data, verify=False),
        manifest=str(manifest),
        run_dir=str(Path(output).resolve()),
    )
    newest = checkpoint.complete_steps(job.run_dir)
    if newest:  # the workers will resume from it: refuse now what they would refuse after starting
        check_compatible(checkpoint.read_state(checkpoint.step_dir(job.run_dir, newest[0])), job)
    return job


def init_ray(cfg: RaySection, num_workers: int) -> None:
    """Connect to ``cfg.address`` or $RAY_ADDRESS, else start a local Ray with every socket on
    127.0.0.1 and room for ``num_workers`` workers (train/launch.py)."""
    launch.connect(cfg.address, cpus=num_workers * cfg.cpus_per_worker, dashboard=cfg.dashboard)


def build_trainer(cfg: TrainLMConfig, job: Job, loop=None):
    """The ``TorchTrainer`` for ``job``; ``loop`` replaces ``train.loop.train_loop`` (tests)."""
    import ray
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    from train.loop import train_loop
    from train.rendezvous import BoundStoreTorchConfig

    if cfg.ray.worker_start_timeout_s:  # the driver's environment: Ray Train hands it to its controller
        os.environ[WORKER_START_TIMEOUT_ENV] = repr(float(cfg.ray.worker_start_timeout_s))
    use_gpu = cfg.ray.use_gpu
    if use_gpu == "auto":
        use_gpu = ray.cluster_resources().get("GPU", 0) >= 1
    resources = {"CPU": cfg.ray.cpus_per_worker, **({"GPU": 1} if use_gpu else {})}
    return TorchTrainer(
        loop or train_loop,
        train_loop_config={"job": job},
        torch_config=BoundStoreTorchConfig(),  # torch's store on the master address only, not *:port
        scaling_config=ScalingConfig(
            num_workers=_num_workers(cfg),
            use_gpu=use_gpu,
            resources_per_worker=resources,
            elastic_resize_monitor_interval_s=cfg.ray.resize_interval_s,
        ),
        run_config=RunConfig(
            name=RAY_NAME,
            storage_path=str(Path(job.run_dir) / "ray"),
            failure_config=FailureConfig(max_failures=cfg.ray.max_failures),
            checkpoint_config=CheckpointConfig(num_to_keep=cfg.train.keep_checkpoints or None),
        ),
    )


def _num_workers(cfg: TrainLMConfig) -> int | tuple[int, int]:
    """ScalingConfig's num_workers: the layout's world size, or (min, max) for an elastic run."""
    world = cfg.parallel.world_size
    return (cfg.ray.min_workers, world) if cfg.ray.min_workers and cfg.ray.min_workers < world else world


def run(cfg: TrainLMConfig, data: str, output: str, loop=None) -> dict[str, Any]:
    """Train; returns a summary (final metrics row, paths). Raises on a config error or a run
    that failed more than ``ray.max_failures`` times."""
    job = resolve(cfg, data, output)
    run_dir = Path(job.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    resolved = {**dataclasses.asdict(cfg), "model": dataclasses.asdict(job.model), "manifest": job.manifest}
    (run_dir / "config.json").write_text(json.dumps(resolved, indent=1, default=str), encoding="utf-8")
    init_ray(cfg.ray, cfg.parallel.world_size)
    fewest = at_world_size(cfg.parallel, cfg.ray.min_workers) if cfg.ray.min_workers else cfg.parallel
    check_cluster_fits(fewest, cfg.ray.cpus_per_worker, cfg.ray.use_gpu)  # refuse what Ray would retry forever
    p = cfg.parallel
    workers = _num_workers(cfg)
    log.info(
        "training %s at tp=%d pp=%d dp=%d (%s) on %s workers, %s%s: %d steps of %d x %d tokens -> %s",
        _size(job.model),
        p.tp,
        p.pp,
        p.dp,
        p.dp_shard,
        "%d to %d" % workers if isinstance(workers, tuple) else workers,
        cfg.train.precision,
        ", compiled" if cfg.train.compile else "",
        cfg.train.steps,
        cfg.train.global_batch,
        job.data.seq_len,
        run_dir,
    )
    result = build_trainer(cfg, job, loop).fit()
    rows = _rows(run_dir / "metrics.jsonl")
    evals = [r for r in rows if "val_loss" in r]
    return {
        "run_dir": str(run_dir),
        "metrics": str(run_dir / "metrics.jsonl"),
        "tensorboard": str(run_dir / "tensorboard"),
        "checkpoints": str(run_dir / "checkpoints"),
        "first": rows[0] if rows else None,
        "last": rows[-1] if rows else None,
        "first_eval": evals[0] if evals else None,
        "last_eval": evals[-1] if evals else None,
        "ray_checkpoint": result.checkpoint.path if result.checkpoint else None,
    }


def _size(model: ModelConfig) -> str:
    n = total_params(model)
    return (f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.2f}M") + (
        f" parameters ({model.n_layers} layers, dim {model.dim}, {model.n_heads} heads, "
        f"vocabulary {model.vocab_size} from the shards)"
    )


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """What the driver logs when training is done."""
    lines = []
    first, last = summary["first"], summary["last"]
    if first and last:
        lines.append(f"loss {first['loss']:.4f} (step {first['step']}) -> {last['loss']:.4f} (step {last['step']})")
    a, b = summary["first_eval"], summary["last_eval"]
    if a and b:
        lines.append(
            f"validation loss {a['val_loss']:.4f} (step {a['step']}) -> {b['val_loss']:.4f} "
            f"(step {b['step']}), perplexity {b['val_ppl']:.1f}"
        )
    return lines + [
        f"metrics: {summary['metrics']}",
        f"tensorboard --logdir {summary['tensorboard']}",
        f"checkpoints: {summary['checkpoints']}",
    ]
