"""The ``[train]`` section: one class for the step (batch sizes, AdamW, clipping, seed, precision,
compile) and the run around it (length, LR schedule, logging, evaluation, checkpoints). No torch:
``train.parallel.Trainer`` reads the step's fields, ``train.loop`` the run's, and the layout
planner (``train.planner``) the batch sizes.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal

# bf16: bf16 compute (FSDP2's MixedPrecisionPolicy, else autocast), fp32 master weights, gradient
# reductions and optimizer state; bf16 keeps fp32's exponent range, so no loss scaling.
Precision = Literal["fp32", "bf16"]
PRECISIONS: tuple[str, ...] = typing.get_args(Precision)
# inductor: generated kernels (C++ on CPU, Triton on GPU); aot_eager: Dynamo + AOTAutograd graphs run
# by eager kernels (the same capture, no code generation); eager: Dynamo's capture only.
CompileBackend = Literal["inductor", "aot_eager", "eager"]
COMPILE_BACKENDS: tuple[str, ...] = typing.get_args(CompileBackend)
LRSchedule = Literal["cosine", "constant"]
LR_SCHEDULES: tuple[str, ...] = typing.get_args(LRSchedule)


@dataclass(frozen=True)
class TrainConfig:
    # -- the step (train.parallel.Trainer) --
    global_batch: int = 8  # sequences per optimizer step, all dp replicas together
    micro_batch: int = 2  # sequences per forward/backward on one replica
    lr: float = 3e-4  # peak AdamW learning rate (``train_step(lr=…)`` sets it per step)
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    weight_decay: float = 0.1  # on matrices and embeddings; never on biases or LayerNorm
    grad_clip: float = 1.0  # max global gradient L2 norm (all parameters, all ranks); 0: off
    seed: int = 0  # initial weights: identical for every layout
    precision: Precision = "fp32"  # fp32 | bf16 compute with fp32 master weights, reductions, optimizer
    compile: bool = False  # torch.compile each transformer block (train.parallel.compile)
    compile_backend: CompileBackend = "inductor"  # torch.compile backend; the tests use aot_eager (no C++ build)
    # -- the run (train.loop) --
    steps: int = 100  # optimizer steps in the whole run
    warmup: int = 10  # linear LR warmup from lr/warmup to lr over this many steps
    lr_schedule: LRSchedule = "cosine"  # after warmup: cosine (to lr * min_lr_ratio at the last step) | constant
    min_lr_ratio: float = 0.1  # cosine floor as a fraction of lr (GPT-3: 10 %)
    log_every: int = 1  # metrics.jsonl row + log line every this many steps (and the first and last)
    eval_every: int = 0  # validation loss every this many steps; 0: never
    eval_batches: int = 2  # global batches of the validation split per evaluation (the same each time)
    checkpoint_every: int = 50  # sharded checkpoint every this many steps (and after the last); 0: only the last
    async_checkpoint: bool = False  # write checkpoints in the background (DCP async_save) while training goes on
    keep_checkpoints: int = 2  # newest complete checkpoints kept on disk; 0: all
    peak_tflops: float = 989.0  # per worker, for MFU: H100 SXM dense bf16; 0 leaves MFU out

    def __post_init__(self):
        if self.lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {self.lr_schedule!r}")
        for name in ("steps", "log_every", "eval_batches"):
            if getattr(self, name) < 1:
                raise ValueError(f"train.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("warmup", "eval_every", "checkpoint_every", "keep_checkpoints"):
            if getattr(self, name) < 0:
                raise ValueError(f"train.{name} must be >= 0, got {getattr(self, name)}")
