"""Train the GPT on token shards with Ray Train: one worker per rank of a tp × pp × dp layout.

    python -m jobs.train_lm --config jobs/configs/debug.toml --data out/demo/corpus/shards \\
        --output out/runs/debug [--set parallel.tp=2 --set parallel.dp=2 --set train.steps=50 ...]

starts a local Ray (token authentication on, dashboard on 127.0.0.1 only) and trains there. Against
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
    checkpoints/     step-XXXXXXX/ sharded DCP checkpoints, each with a COMPLETE marker (train/checkpoint.py)
    config.json      the resolved config of the latest launch
    ray/             Ray Train's run state (pointers to our checkpoints)

Launching again on the same RUN_DIR continues from its newest complete checkpoint, at any layout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jobs.config import ConfigError, load_config, to_dict  # noqa: E402
from train.data import DataConfig  # noqa: E402
from train.indexed_dataset import read_manifest  # noqa: E402
from train import checkpoint  # noqa: E402
from train.loop import Job, LoopConfig, check_compatible  # noqa: E402
from train.model import ModelConfig, preset  # noqa: E402
from train.parallel import ParallelConfig, layout_problems  # noqa: E402

log = logging.getLogger("zhcorpus")
CONFIGS = Path(__file__).resolve().parent / "configs"
RAY_NAME = "train_lm"  # Ray Train run name: its state lives in RUN_DIR/ray/train_lm


@dataclass(frozen=True)
class ModelSection:
    preset: str = "debug"              # a train.model preset: debug, 350M, 2.6B, 13B, 200B
    # Each field that is set replaces the preset's value (see train.model.ModelConfig).
    vocab_size: int | None = None      # unset: the shard manifest's vocab_size (the tokenizer's)
    vocab_multiple: int | None = None
    seq_len: int | None = None         # context length (position embeddings); >= data.seq_len
    n_layers: int | None = None
    dim: int | None = None
    ffn_dim: int | None = None
    n_heads: int | None = None
    query_layer: bool | None = None
    dropout: float | None = None
    norm_eps: float | None = None
    init_std: float | None = None

    def build(self, manifest_vocab: int | None) -> ModelConfig:
        changes = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                   if f.name != "preset" and getattr(self, f.name) is not None}
        if "vocab_size" not in changes:
            if manifest_vocab is None:
                raise ConfigError("the shard manifest has no vocab_size: set model.vocab_size")
            changes["vocab_size"] = manifest_vocab
        return preset(self.preset, **changes)


@dataclass(frozen=True)
class RaySection:
    address: str = ""                  # "" = $RAY_ADDRESS if set (inside `ray job submit`), else a new local Ray
    use_gpu: Literal["auto", True, False] = "auto"  # auto: GPUs when the cluster has any (NCCL), else CPU (gloo)
    cpus_per_worker: float = 1.0       # Ray CPU resource per worker, and torch threads per worker
    max_failures: int = 1              # worker-group restarts from the last checkpoint (FailureConfig)
    dashboard: bool = True             # local Ray only: the dashboard, on 127.0.0.1 (Train's state API needs it)


@dataclass(frozen=True)
class TrainLMConfig:
    model: ModelSection = field(default_factory=ModelSection)
    parallel: ParallelConfig = field(default_factory=ParallelConfig)  # tp * pp * dp = number of workers
    train: LoopConfig = field(default_factory=LoopConfig)
    data: DataConfig = field(default_factory=DataConfig)
    ray: RaySection = field(default_factory=RaySection)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="jobs.train_lm", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=str(CONFIGS / "debug.toml"), help="TOML config (default: %(default)s)")
    p.add_argument("--data", required=True, help="shard directory or its manifest.json")
    p.add_argument("--output", required=True, help="RUN_DIR: metrics, TensorBoard events, checkpoints")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="e.g. --set parallel.tp=2 --set train.steps=200 (repeatable)")
    return p.parse_args(argv)


def resolve(cfg: TrainLMConfig, data: str, output: str) -> Job:
    """Check the config against the shards, the layout and the checkpoint it would resume from
    before any worker starts; the ``Job`` every worker gets (absolute paths: Ray workers run in
    their own directories)."""
    from train.data import TokenData

    manifest = Path(data).resolve()
    manifest = manifest / "manifest.json" if manifest.is_dir() else manifest
    model = cfg.model.build(read_manifest(manifest, verify=False).get("vocab_size"))
    if cfg.data.seq_len > model.seq_len:
        raise ConfigError(f"data.seq_len={cfg.data.seq_len} is longer than the model's context "
                          f"model.seq_len={model.seq_len}")
    problems = layout_problems(cfg.parallel, model, cfg.parallel.world_size, cfg.train.global_batch,
                               cfg.train.micro_batch)
    if problems:
        raise ConfigError("invalid parallel layout:\n  - " + "\n  - ".join(problems))
    # Open both splits here (verifying the checksums once, if data.verify): a bad manifest or an
    # empty split is a config error now, not a worker failure that Ray would retry.
    TokenData(manifest, cfg.data, "train")
    if cfg.train.eval_every:
        TokenData(manifest, dataclasses.replace(cfg.data, verify=False), "valid")
    job = Job(model=model, parallel=cfg.parallel, train=cfg.train, data=dataclasses.replace(cfg.data, verify=False),
              manifest=str(manifest), run_dir=str(Path(output).resolve()),
              threads=max(1, int(cfg.ray.cpus_per_worker)))
    newest = checkpoint.complete_steps(job.run_dir)
    if newest:  # the workers will resume from it: refuse now what they would refuse after starting
        check_compatible(checkpoint.read_state(checkpoint.step_dir(job.run_dir, newest[0])), job)
    return job


def init_ray(cfg: RaySection, num_workers: int) -> None:
    """Connect to ``cfg.address`` or $RAY_ADDRESS, else start a local Ray with the dashboard (if
    any) on loopback only. Ray 2.60 turns token authentication on for a local cluster unless
    RAY_AUTH_MODE says otherwise (the token is ~/.ray/auth_token, generated on first use); a
    client of a ``ray start`` cluster needs RAY_AUTH_MODE=token and that token."""
    import ray

    if ray.is_initialized():
        return
    address = cfg.address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address)
        return
    # Logical CPUs: a local run may ask for more workers than cores (slower, still correct).
    cpus = max(os.cpu_count() or 1, num_workers * cfg.cpus_per_worker)
    ray.init(address="local", num_cpus=cpus, include_dashboard=cfg.dashboard,
             dashboard_host="127.0.0.1", configure_logging=False)


def build_trainer(cfg: TrainLMConfig, job: Job, loop=None):
    """The ``TorchTrainer`` for ``job``; ``loop`` replaces ``train.loop.train_loop`` (tests)."""
    import ray
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    from train.loop import train_loop

    use_gpu = cfg.ray.use_gpu
    if use_gpu == "auto":
        use_gpu = ray.cluster_resources().get("GPU", 0) >= 1
    resources = {"CPU": cfg.ray.cpus_per_worker, **({"GPU": 1} if use_gpu else {})}
    return TorchTrainer(
        loop or train_loop,
        train_loop_config={"job": job},
        scaling_config=ScalingConfig(num_workers=cfg.parallel.world_size, use_gpu=use_gpu,
                                     resources_per_worker=resources),
        run_config=RunConfig(name=RAY_NAME, storage_path=str(Path(job.run_dir) / "ray"),
                             failure_config=FailureConfig(max_failures=cfg.ray.max_failures),
                             checkpoint_config=CheckpointConfig(num_to_keep=cfg.train.keep_checkpoints or None)))


def run(cfg: TrainLMConfig, data: str, output: str, loop=None) -> dict[str, Any]:
    """Train; returns a summary (final metrics row, paths). Raises on a config error or a run
    that failed more than ``ray.max_failures`` times."""
    job = resolve(cfg, data, output)
    run_dir = Path(job.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    resolved = {**to_dict(cfg), "model": dataclasses.asdict(job.model), "manifest": job.manifest}
    (run_dir / "config.json").write_text(json.dumps(resolved, indent=1, default=str), encoding="utf-8")
    init_ray(cfg.ray, cfg.parallel.world_size)
    p = cfg.parallel
    log.info("training %s (%s) at tp=%d pp=%d dp=%d on %d workers: %d steps of %d x %d tokens -> %s",
             cfg.model.preset, _size(job.model), p.tp, p.pp, p.dp, p.world_size, cfg.train.steps,
             cfg.train.global_batch, job.data.seq_len, run_dir)
    result = build_trainer(cfg, job, loop).fit()
    rows = _rows(run_dir / "metrics.jsonl")
    evals = [r for r in rows if "val_loss" in r]
    return {"run_dir": str(run_dir), "metrics": str(run_dir / "metrics.jsonl"),
            "tensorboard": str(run_dir / "tensorboard"), "checkpoints": str(run_dir / "checkpoints"),
            "first": rows[0] if rows else None, "last": rows[-1] if rows else None,
            "first_eval": evals[0] if evals else None, "last_eval": evals[-1] if evals else None,
            "ray_checkpoint": result.checkpoint.path if result.checkpoint else None}


def _size(model: ModelConfig) -> str:
    from train.planner import ModelShape, total_params

    n = total_params(ModelShape.from_model_config(model))
    return f"{n / 1e9:.2f}B parameters" if n >= 1e9 else f"{n / 1e6:.2f}M parameters"


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    args = parse_args(argv)
    try:
        cfg = load_config(TrainLMConfig, args.config, args.overrides)
        summary = run(cfg, args.data, args.output)
    except (ConfigError, ValueError, FileNotFoundError, checkpoint.CheckpointError) as e:
        log.error("%s", e)
        return 2
    first, last = summary["first"], summary["last"]
    if first and last:
        log.info("loss %.4f (step %d) -> %.4f (step %d)", first["loss"], first["step"], last["loss"], last["step"])
    a, b = summary["first_eval"], summary["last_eval"]
    if a and b:
        log.info("validation loss %.4f (step %d) -> %.4f (step %d), perplexity %.1f", a["val_loss"], a["step"],
                 b["val_loss"], b["step"], b["val_ppl"])
    log.info("metrics: %s", summary["metrics"])
    log.info("tensorboard --logdir %s", summary["tensorboard"])
    log.info("checkpoints: %s", summary["checkpoints"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
