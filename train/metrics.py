"""What a training run records, from rank 0: ``RUN_DIR/metrics.jsonl``, TensorBoard event files,
``RUN_DIR/events.jsonl``, and one log line per step.

* ``metrics.jsonl``: one JSON object per logged step: ``step``, ``loss``, ``lr``, ``grad_norm``,
  ``tokens_per_s``, ``tflops`` (model FLOPs per second per worker), ``mfu``, ``memory_gib``
  (peak CUDA memory allocated, or the peak resident set size of the process on CPU), ``tokens``
  (seen so far), plus ``val_loss`` and ``val_ppl`` on evaluation steps and ``compile_s`` (the first
  step's wall time, compilation included) on a compiled run's first step. After a resume it is cut
  back to the resumed step, so it always holds the run's one loss curve, each step once.
* ``tensorboard/``: the same scalars (``tensorboard --logdir RUN_DIR/tensorboard``), written with
  tensorboardX (the format TensorBoard reads; ``torch.utils.tensorboard`` needs the
  ``tensorboard`` package itself, which this project does not install).
* ``events.jsonl``: start, resume (with the data position), checkpoint and finish events, with the
  attempt number: the history that ``metrics.jsonl`` leaves out.

Model FLOPs are Narayanan et al. 2021 eq. 3 (``train.planner.flops_per_iteration``, no
recomputation counted), so MFU is the fraction of ``peak_tflops`` per worker the model's
arithmetic used.
"""

from __future__ import annotations

import json
import logging
import math
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import torch

from base.atomic import write_atomic
from train.model import ModelConfig
from train.planner import flops_per_iteration

log = logging.getLogger("zhcorpus")
METRICS = "metrics.jsonl"
EVENTS = "events.jsonl"
TENSORBOARD = "tensorboard"
GIB = 2**30


def flops_per_step(model: ModelConfig, seq_len: int, global_batch: int) -> float:
    """Model FLOPs of one optimizer step (forward + backward) on ``global_batch`` sequences."""
    return flops_per_iteration(model.replace(seq_len=seq_len), global_batch, "none")


def memory_gib(device: torch.device) -> float:
    """Peak CUDA memory allocated on ``device``; on CPU the process's peak resident set size."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / GIB
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return rss / GIB if sys.platform == "darwin" else rss * 1024 / GIB


class StepMeter:
    """Turns a step's loss and wall time into the metrics row."""

    def __init__(
        self,
        model: ModelConfig,
        seq_len: int,
        global_batch: int,
        world_size: int,
        peak_tflops: float,
        device: torch.device,
    ):
        self.tokens_per_step = global_batch * seq_len
        self.flops = flops_per_step(model, seq_len, global_batch)
        self.world, self.peak, self.device = world_size, peak_tflops, device

    def row(self, step: int, loss: float, lr: float, grad_norm: float, seconds: float) -> dict[str, Any]:
        tflops = self.flops / seconds / self.world / 1e12  # per worker
        return {
            "step": step,
            "loss": loss,
            "lr": lr,
            "grad_norm": grad_norm,
            "tokens_per_s": self.tokens_per_step / seconds,
            "tflops": tflops,
            "mfu": tflops / self.peak if self.peak > 0 else None,
            "memory_gib": memory_gib(self.device),
            "tokens": step * self.tokens_per_step,
            "step_time_s": seconds,
        }


def log_line(row: dict[str, Any], steps: int) -> str:
    """The human line for a step (torchtitan's fields)."""
    parts = [
        f"step {row['step']:>{len(str(steps))}}/{steps}",
        f"loss {row['loss']:.4f}",
        f"lr {row['lr']:.2e}",
        f"{row['tokens_per_s']:,.0f} tok/s",
        f"{row['tflops']:.3g} TFLOPS",
    ]
    if row.get("mfu") is not None:
        parts.append(f"mfu {100 * row['mfu']:.2f}%")
    parts.append(f"mem {row['memory_gib']:.2f} GiB")
    if "val_loss" in row:
        parts.append(f"val {row['val_loss']:.4f} (ppl {row['val_ppl']:.1f})")
    return " | ".join(parts)


def perplexity(loss: float) -> float:
    return math.exp(min(loss, 700.0))  # exp overflows a float past ~709


class MetricsWriter:
    """Rank 0's writer of ``metrics.jsonl``, ``events.jsonl`` and the TensorBoard events."""

    def __init__(self, run_dir: str | os.PathLike, resumed_step: int):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._truncate(resumed_step)
        self.attempt = 1 + self._starts()  # this launch or Ray restart of the run, from 1
        self.metrics = open(self.run_dir / METRICS, "a", encoding="utf-8")
        self.events = open(self.run_dir / EVENTS, "a", encoding="utf-8")
        self.tb = _tensorboard(self.run_dir / TENSORBOARD)

    def _truncate(self, step: int) -> None:
        """Drop rows past ``step``: steps a crashed attempt ran after its last checkpoint."""
        path = self.run_dir / METRICS
        if not path.exists():
            return
        rows = [
            line
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line)["step"] <= step
        ]
        write_atomic(path, "".join(r + "\n" for r in rows))

    def _starts(self) -> int:
        path = self.run_dir / EVENTS
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return sum(json.loads(line)["event"] in ("start", "resume") for line in lines if line.strip())

    def log(self, row: dict[str, Any]) -> None:
        self.metrics.write(json.dumps(row) + "\n")
        self.metrics.flush()
        if self.tb is not None:
            for key, value in row.items():
                if key != "step" and isinstance(value, (int, float)):
                    self.tb.add_scalar(
                        f"train/{key}" if not key.startswith("val_") else f"valid/{key[4:]}", value, row["step"]
                    )
            self.tb.flush()

    def event(self, kind: str, **fields: Any) -> None:
        self.events.write(json.dumps({"event": kind, "attempt": self.attempt, "time": time.time(), **fields}) + "\n")
        self.events.flush()

    def close(self) -> None:
        self.metrics.close()
        self.events.close()
        if self.tb is not None:
            self.tb.close()


def _tensorboard(logdir: Path):
    try:
        from tensorboardX import SummaryWriter
    except ImportError:  # tensorboardX comes with ray[train]; without it, metrics.jsonl still has it all
        log.warning("tensorboardX is not installed: no TensorBoard events (metrics.jsonl has every value)")
        return None
    return SummaryWriter(str(logdir))
