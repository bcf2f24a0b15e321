"""The per-worker training function of a Ray ``TorchTrainer``: resume, train, evaluate, record,
checkpoint.

Ray starts one worker per rank with the world process group already set up (gloo on CPU, NCCL on
GPU); ``train_loop`` builds the (pp, dp, tp) mesh and the model parts through ``Trainer``, reads
the batch of step s as ``TokenData.batch(s - 1, global_batch)`` (a pure function of the step, so
the data position is the step), and every ``checkpoint_every`` steps and at the end writes a
sharded checkpoint (``train.checkpoint``; with ``async_checkpoint`` in the background while the
next steps run) and, once it is complete, reports it with ``ray.train.report``.

On start it resumes from the newest complete checkpoint in ``RUN_DIR/checkpoints`` that passes
its checksums, whatever layout saved it: model, optimizer moments, Adam step, LR schedule position
(the step), data position, and each rank's RNG state when the world size is unchanged. That is
what makes ``FailureConfig(max_failures)`` restarts and relaunches continue the same loss curve.

Ray keeps its own registry of reported checkpoints under ``RUN_DIR/ray``; what rank 0 reports is
a small pointer (``{"checkpoint": path, "step": n}``) that Ray copies there, so Ray's pruning
and ours (``keep_checkpoints``, applied to ``RUN_DIR/checkpoints``) never touch each other's files.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from base.log import setup_logging
from train import checkpoint
from train.config import TrainConfig, TrainLMConfig
from train.data import TokenData
from train.metrics import MetricsWriter, StepMeter, log_line, perplexity
from train.parallel import Trainer, at_world_size

log = logging.getLogger("zhcorpus")


@dataclass(frozen=True)
class Job(TrainLMConfig):
    """What every worker gets: the job's config as the driver resolved it (``train.job.resolve``:
    the model's vocabulary is the shards', the data already verified) and where to work."""

    manifest: str = ""  # shard manifest.json (already verified by the driver)
    run_dir: str = ""  # RUN_DIR, seen by every worker at this path

    @classmethod
    def of(cls, cfg: TrainLMConfig, manifest: str, run_dir: str, **sections: Any) -> "Job":
        """``cfg``'s sections, ``sections`` replacing some of them, at these paths."""
        tree = {f.name: getattr(cfg, f.name) for f in fields(TrainLMConfig)}
        return cls(**{**tree, **sections}, manifest=manifest, run_dir=run_dir)

    @property
    def threads(self) -> int:
        """torch intra-op threads per worker: its Ray CPUs."""
        return max(1, int(self.ray.cpus_per_worker))


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of (1-based) step ``step``: linear warmup, then cosine or constant."""
    if step <= cfg.warmup:
        return cfg.lr * step / cfg.warmup
    if cfg.lr_schedule == "constant":
        return cfg.lr
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    floor = cfg.lr * cfg.min_lr_ratio
    return floor + (cfg.lr - floor) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def train_loop(config: dict[str, Any]) -> None:
    """``TorchTrainer``'s ``train_loop_per_worker``; ``config["job"]`` is a ``Job``."""
    import ray.train
    import ray.train.torch

    job: Job = config["job"]
    torch.set_num_threads(job.threads)
    rank = dist.get_rank()
    # dp from the world this group got: fewer workers than the layout's in an elastic run (ray.min_workers)
    job = replace(job, parallel=at_world_size(job.parallel, dist.get_world_size()))
    setup_logging()
    log.setLevel(logging.INFO if rank == 0 else logging.WARNING)  # human lines from rank 0 only
    device = ray.train.torch.get_device()
    if device.type == "cuda":
        torch.cuda.set_device(device)
    trainer = Trainer(job.model, job.parallel, job.train, device)
    data = TokenData(job.manifest, job.data, "train")
    valid = TokenData(job.manifest, job.data, "valid") if job.train.eval_every else None
    start = resume(trainer, job)
    writer = MetricsWriter(job.run_dir, start) if rank == 0 else None
    if writer is not None:
        writer.event(
            "resume" if start else "start",
            step=start,
            data_index=start,
            samples=start * job.train.global_batch,
            layout=asdict(job.parallel),
            world_size=dist.get_world_size(),
        )
    try:
        run_steps(trainer, job, data, valid, start, writer)
        if writer is not None:
            writer.event("finish", step=job.train.steps)
    finally:
        if writer is not None:
            writer.close()
    dist.barrier()


def run_steps(
    trainer: Trainer, job: Job, data: TokenData, valid: TokenData | None, start: int, writer: MetricsWriter | None
) -> None:
    cfg = job.train
    meter = StepMeter(
        job.model, job.data.seq_len, cfg.global_batch, dist.get_world_size(), cfg.peak_tflops, trainer.device
    )
    saver = checkpoint.AsyncSaver() if cfg.async_checkpoint else None
    saved_rows: dict[int, dict[str, Any]] = {}  # what Ray is told about each checkpoint once it is complete
    for step in range(start + 1, cfg.steps + 1):
        t0 = time.perf_counter()
        lr = lr_at(step, cfg)
        loss = trainer.train_step(data.batch(step - 1, cfg.global_batch), lr=lr)
        row = meter.row(step, loss, lr, trainer.grad_norm, time.perf_counter() - t0)
        if trainer.compile_seconds is not None and step == start + 1:
            row["compile_s"] = trainer.compile_seconds  # the first step's wall time, compilation included
        if cfg.eval_every and step % cfg.eval_every == 0:
            row["val_loss"] = evaluate(trainer, valid, cfg)
            row["val_ppl"] = perplexity(row["val_loss"])
        if writer is not None and (step % cfg.log_every == 0 or step in (start + 1, cfg.steps) or "val_loss" in row):
            writer.log(row)
            log.info(log_line(row, cfg.steps))
        if saver is not None:
            completed(job, saver.poll(), saved_rows, writer)
        if step == cfg.steps or (cfg.checkpoint_every and step % cfg.checkpoint_every == 0):
            saved_rows[step] = {k: row[k] for k in ("step", "loss", "lr")}
            completed(job, save(trainer, job, step, saver), saved_rows, writer)
    if saver is not None:
        completed(job, saver.wait(), saved_rows, writer)
        saver.close()


def completed(job: Job, path: Path | None, rows: dict[int, dict[str, Any]], writer: MetricsWriter | None) -> None:
    """Checkpoint ``path`` is complete (None: nothing completed): prune older ones, report it to
    Ray, record the event. Every rank calls it with the same ``path``."""
    if path is None:
        return
    step = checkpoint.step_of(path)
    if dist.get_rank() == 0:
        for gone in checkpoint.prune(job.run_dir, job.train.keep_checkpoints):
            log.info("pruned checkpoint %s", gone.name)
    dist.barrier()
    report(rows.pop(step), path)
    if writer is not None:
        writer.event("checkpoint", step=step, path=str(path))


def evaluate(trainer: Trainer, valid: TokenData, cfg: TrainConfig) -> float:
    """Mean loss over the first ``eval_batches`` global batches of the validation split."""
    losses = [trainer.eval_step(valid.batch(i, cfg.global_batch)) for i in range(cfg.eval_batches)]
    return sum(losses) / len(losses)


def rng_state() -> dict[str, torch.Tensor]:
    state = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def _state_dict(trainer: Trainer, with_rng: bool) -> dict[str, Any]:
    sd: dict[str, Any] = trainer.state_dict()
    if with_rng:  # per rank: only the same rank of the same world size can use it
        sd["rng"] = {f"rank{dist.get_rank()}": rng_state()}
    return sd


def save(trainer: Trainer, job: Job, step: int, saver: checkpoint.AsyncSaver | None = None) -> Path | None:
    """Checkpoint the state after ``step`` steps into RUN_DIR/checkpoints. Without ``saver``: the
    path, complete. With it: the save goes on in the background (``saver.poll`` says when it is
    complete) and the return is the previous save's path if this call had to wait for it."""
    cfg = job.train
    path = checkpoint.step_dir(job.run_dir, step)
    state = {
        "step": step,
        "world_size": dist.get_world_size(),
        "layout": asdict(job.parallel),
        "data": {
            "next_index": step,
            "next_sample": step * cfg.global_batch,
            "global_batch": cfg.global_batch,
            "seq_len": job.data.seq_len,
            "seed": job.data.seed,
            "weights": dict(job.data.weights),
            "manifest": job.manifest,
        },
        "lr_schedule": {
            "kind": cfg.lr_schedule,
            "lr": cfg.lr,
            "warmup": cfg.warmup,
            "steps": cfg.steps,
            "min_lr_ratio": cfg.min_lr_ratio,
            "last_lr": lr_at(step, cfg),
        },
        "model": asdict(job.model),
    }
    if saver is not None:
        return saver.start(path, _state_dict(trainer, with_rng=True), state)
    checkpoint.save(path, _state_dict(trainer, with_rng=True), state)
    return path


def report(metrics: dict[str, Any], path: Path) -> None:
    """``ray.train.report`` from every rank (Train V2 needs the same number of calls on each);
    rank 0 attaches a pointer to checkpoint ``path`` for Ray to keep."""
    import ray.train

    if dist.get_rank() != 0:
        ray.train.report(metrics)
        return
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "pointer.json").write_text(json.dumps({"checkpoint": str(path), "step": metrics["step"]}))
        ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(tmp))


def resume(trainer: Trainer, job: Job) -> int:
    """Load the newest complete, intact checkpoint of ``job.run_dir``; the step it holds, or 0."""
    candidates = [checkpoint.complete_steps(job.run_dir) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(candidates, src=0)  # one list for all, even on a flaky shared FS
    for step in candidates[0]:
        path = checkpoint.step_dir(job.run_dir, step)
        if checkpoint.verify(path):
            break
        log.warning("checkpoint %s does not match its checksums: skipped", path)
    else:
        _check_ray_agrees(0)
        return 0
    state = checkpoint.read_state(path)
    check_compatible(state, job)
    same_world = state["world_size"] == dist.get_world_size()
    sd = _state_dict(trainer, with_rng=same_world)
    checkpoint.load(path, sd)
    trainer.load_state_dict(sd)
    if same_world:
        torch.set_rng_state(sd["rng"][f"rank{dist.get_rank()}"]["cpu"])
        if "cuda" in sd["rng"][f"rank{dist.get_rank()}"]:
            torch.cuda.set_rng_state(sd["rng"][f"rank{dist.get_rank()}"]["cuda"])
    log.info(
        "resumed from %s (saved at tp=%d pp=%d dp=%d%s): next step %d, data index %d, sample %d",
        path,
        state["layout"]["tp"],
        state["layout"]["pp"],
        state["layout"]["dp"],
        "" if same_world else "; new world size, RNG streams restarted",
        step + 1,
        state["data"]["next_index"],
        state["data"]["next_sample"],
    )
    _check_ray_agrees(step)
    return step


def check_compatible(state: dict[str, Any], job: Job) -> None:
    """A checkpoint continues this run only if the steps after it would see the data they would
    have seen: same global batch, sequence length, data seed and mixture."""
    d = state["data"]
    mine = {
        "global_batch": job.train.global_batch,
        "seq_len": job.data.seq_len,
        "seed": job.data.seed,
        "weights": dict(job.data.weights),
    }
    diff = {k: (d[k], v) for k, v in mine.items() if d[k] != v}
    if diff:
        raise checkpoint.CheckpointError(
            f"checkpoint step-{state['step']:07d} was saved with "
            + ", ".join(f"{k}={a!r}" for k, (a, _) in diff.items())
            + "; this run has "
            + ", ".join(f"{k}={b!r}" for k, (_, b) in diff.items())
            + ": resuming would change what data the remaining steps see. Use a new RUN_DIR."
        )


def _check_ray_agrees(step: int) -> None:
    """Ray's latest reported checkpoint can only be older than the one we found (a crash between
    our marker and the report), never newer: that would mean a checkpoint went missing."""
    import ray.train

    ckpt = ray.train.get_checkpoint()
    if ckpt is None or dist.get_rank() != 0:
        return
    with ckpt.as_directory() as d:
        pointer = json.loads((Path(d) / "pointer.json").read_text())
    if pointer["step"] > step:
        log.warning(
            "Ray's latest checkpoint is step %d (%s) but the newest intact one in RUN_DIR is step %d",
            pointer["step"],
            pointer["checkpoint"],
            step,
        )
