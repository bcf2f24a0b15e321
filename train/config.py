"""The training job's config tree (``jobs.train_lm --config``), one class per section, no torch:

``TrainLMConfig``: ``[model]`` (``train.shapes.ModelConfig``), ``[parallel]``
(``train.layout.ParallelConfig``), ``[train]`` (``TrainConfig``: the step, batch sizes, AdamW,
clipping, seed, precision, compile, and the run around it, length, LR schedule, logging,
evaluation, checkpoints), ``[data]`` (``DataConfig``) and ``[ray]`` (``RaySection``). The driver
(``train.job``) checks it and hands every worker the same tree with its paths (``train.loop.Job``);
``train.parallel.Trainer`` reads the step's fields, ``train.loop`` the run's, and the layout planner
(``train.planner``) the batch sizes and ``[parallel]``.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import Literal

from base.s3 import S3Config
from train.layout import ParallelConfig
from train.shapes import ModelConfig

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
ORDERS = ("shuffle", "paired")  # DataConfig.order


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


@dataclass(frozen=True)
class DataConfig:
    """The ``[data]`` section: how ``train.data.TokenData`` cuts and blends the shards into samples."""

    seq_len: int = 128  # tokens per sample is seq_len + 1 (inputs + shifted targets)
    weights: dict[str, float] = field(default_factory=dict)  # source -> mixture weight; {} = proportional to tokens
    valid_fraction: float = 0.01  # documents held out for validation (deterministic by (seed, shard, doc index) hash)
    seed: int = 0
    verify: bool = True  # check every sha256 in the manifest on open
    # "shuffle": seeded permutations of document positions and block positions (training).
    # "paired": orders keyed by a hash of the documents' tokens, so that runs on two corpora that
    # share documents see them at nearly the same steps (the rule judge's paired runs; hashing
    # reads every document once, so it is for the judge's small corpora).
    order: str = "shuffle"
    # The store of an s3:// manifest (a build's or a nightly refresh's output published there):
    # every shard is fetched once into the local cache ($ZHCORPUS_CACHE, else ~/.cache/zhcorpus),
    # verified against the commit's sha256, and memory-mapped from there (docs/storage.md).
    s3: S3Config = field(default_factory=S3Config)

    def __post_init__(self):
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {self.order!r}")
        if self.seq_len < 1:
            raise ValueError(f"seq_len must be >= 1, got {self.seq_len}")
        if not 0.0 <= self.valid_fraction <= 1.0:
            raise ValueError(f"valid_fraction must be in [0, 1], got {self.valid_fraction}")


@dataclass(frozen=True)
class RaySection:
    """The ``[ray]`` section: where the workers run and how failures and lost nodes are handled."""

    address: str = ""  # "" = $RAY_ADDRESS if set (inside `ray job submit`), else a new local Ray
    use_gpu: Literal["auto", True, False] = "auto"  # auto: GPUs when the cluster has any (NCCL), else CPU (gloo)
    cpus_per_worker: float = 1.0  # Ray CPU resource per worker, and torch threads per worker
    max_failures: int = 1  # worker-group restarts from the last checkpoint (FailureConfig)
    # Elastic data parallelism (Ray Train V2; tp = pp = 1): 0 = always the layout's dp workers. Else
    # the run starts with as many workers as the cluster has room for, from this many up to dp, goes
    # on with fewer when a node is lost (from the last checkpoint, dp smaller) and grows back when
    # room returns, checked every resize_interval_s. docs/training.md
    min_workers: int = 0
    resize_interval_s: float = 60.0
    # How long Ray Train waits for a worker group to start before it gives up on that size (its
    # RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S, 60 s by default, which 0 leaves as it is). After a node
    # is lost, an elastic run first tries the size the cluster reported before the loss and waits
    # this long before it restarts with the workers that are left (docs/training.md).
    worker_start_timeout_s: float = 0.0

    def __post_init__(self):
        if self.min_workers < 0:
            raise ValueError(f"ray.min_workers must be >= 0 (0: not elastic), got {self.min_workers}")
        if self.resize_interval_s <= 0:
            raise ValueError(f"ray.resize_interval_s must be > 0, got {self.resize_interval_s}")
        if self.worker_start_timeout_s < 0:
            raise ValueError(f"ray.worker_start_timeout_s must be >= 0 (0: Ray's), got {self.worker_start_timeout_s}")

    dashboard: bool = True  # local Ray only: the dashboard, on 127.0.0.1 (Train's state API needs it)


@dataclass(frozen=True)
class TrainLMConfig:
    """The root of ``jobs.train_lm``'s config."""

    # [model]: ``preset`` (train.shapes: debug, 350M, 2.6B, 13B, 200B) and any ModelConfig field on
    # top of it. model.vocab_size is always the shards' (their manifest's, the tokenizer's).
    model: ModelConfig = field(default_factory=lambda: ModelConfig.from_preset("debug"))
    parallel: ParallelConfig = field(default_factory=ParallelConfig)  # tp * pp * dp = number of workers
    train: TrainConfig = field(default_factory=TrainConfig)
    data: DataConfig = field(default_factory=DataConfig)
    ray: RaySection = field(default_factory=RaySection)
