"""Proxy-model runs for judging cleaning rules (PanGu-α §3.1.3): a small GPT trained on each rule
variant's shards for the same token budget, scored by its loss on a held-out dev set.

Each (variant, seed) is one Ray task (``ray.cpus_per_run`` CPUs, ``ray.gpus_per_run`` GPUs), so
the runs are independent and Ray places them side by side on whatever the cluster has: two at a
time on a 2-core laptop, one per GPU on a GPU cluster. A task trains with the project's own
training step (``train.parallel.Trainer`` in a one-rank process group, ``train.loop.lr_at``,
``train.data.TokenData``), so a proxy run is the same computation as ``jobs.train_lm`` at
tp = pp = dp = 1 with the same ``[model]``/``[train]``/``[data]`` settings; the differences are the
evaluation (the external dev set, every one of its full batches, at every ``train.eval_every``
steps and at the end) and that nothing is checkpointed (a failed run is reported, not resumed).
The final evaluation is kept per dev document (``dev_doc_nll``: summed next-token loss,
``dev_doc_tokens``: tokens scored; one numbering for every run), so the judge can pair runs
document by document and report the dev set's own sampling error (``etl.judge.stats``).

A task that raises or whose worker dies is a failed run (``status = "failed"`` with the error); the
other runs go on. Everything a run returns is a function of (config, seed, shards): the same seeds
give the same losses (CPU; one torch thread count per run).

Before any task starts, ``check_runs`` refuses what would fail or mislead later: a variant whose
corpus is empty or shorter than one training sample, shards and dev set made with different
tokenizers, a dev set smaller than one global batch of windows.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from base.errors import Refusal
from train.config import DataConfig, TrainConfig
from train.shapes import ModelConfig

log = logging.getLogger("zhcorpus")
DEV_SOURCE_SEED = 0  # the dev set's window order: one order for every run, whatever its seed


class ProxyError(Refusal):
    """A proxy setup that cannot give comparable runs (refused before any training)."""


@dataclass(frozen=True)
class ProxyRaySection:
    address: str = ""  # "" = $RAY_ADDRESS if set (inside `ray job submit`), else a new local Ray
    cpus_per_run: float = 1.0  # Ray CPUs per proxy run, and its torch threads
    gpus_per_run: float = 0.0  # 1 on a GPU cluster (each run on its own GPU); 0 = CPU
    max_retries: int = 0  # Ray retries of a run whose worker died; a run that still fails is reported


@dataclass(frozen=True)
class ProxyConfig:
    """The ``proxy`` section of ``jobs.judge_rules``: ``[proxy.model]`` (a ``train.shapes`` preset and
    fields; the vocabulary is always the shards'), ``[proxy.train]`` and ``[proxy.data]`` as in
    ``jobs.train_lm``. ``train.seed`` and ``data.seed`` are each run's seed."""

    model: ModelConfig = field(default_factory=lambda: ModelConfig.from_preset("debug"))
    train: TrainConfig = field(default_factory=lambda: TrainConfig(steps=100, eval_every=25, log_every=25))
    data: DataConfig = field(default_factory=lambda: DataConfig(seq_len=16, valid_fraction=0.0))
    tokens: int = 0  # tokens each run trains on; 0 = train.steps x global_batch x seq_len, else the steps follow
    ray: ProxyRaySection = field(default_factory=ProxyRaySection)

    def resolved(self) -> "ProxyConfig":
        """``train.steps`` from ``tokens`` when it is set (rounded up to whole steps)."""
        if self.data.valid_fraction != 0.0:
            raise ProxyError(
                "proxy.data.valid_fraction must be 0: a proxy trains on its whole variant corpus "
                "and is scored on the --dev set"
            )
        if self.data.seq_len > self.model.seq_len:
            raise ProxyError(
                f"proxy.data.seq_len={self.data.seq_len} is longer than proxy.model.seq_len={self.model.seq_len}"
            )
        if self.tokens <= 0:
            return self
        steps = -(-self.tokens // self.tokens_per_step)
        return dataclasses.replace(self, tokens=0, train=dataclasses.replace(self.train, steps=steps))

    @property
    def tokens_per_step(self) -> int:
        return self.train.global_batch * self.data.seq_len

    @property
    def budget(self) -> int:
        """Tokens every run trains on (after ``resolved``)."""
        return self.train.steps * self.tokens_per_step


@dataclass(frozen=True)
class ProxyRun:
    variant: str
    seed: int
    manifest: str  # the variant's shards/manifest.json (a path every Ray node sees)
    dev_manifest: str  # the dev set's shards/manifest.json


def _stream(manifest: str, cfg: ProxyConfig, seed: int, split: str):
    from train.data import TokenData

    # the dev set is scored in one fixed packed order whatever the training order (dev_set's windows)
    order = "shuffle" if split == "valid" else cfg.data.order
    data = dataclasses.replace(
        cfg.data, seed=seed, verify=False, valid_fraction=1.0 if split == "valid" else 0.0, order=order
    )
    return TokenData(manifest, data, split)


def check_runs(cfg: ProxyConfig, runs: list[ProxyRun]) -> dict[str, Any]:
    """Refuse, before training, what cannot give comparable runs; return what the report states
    per variant (``tokens``, ``documents``, ``epochs`` of the budget) and for the dev set."""
    from base.manifest import read_manifest
    from train.data import DataError

    manifests = {r.manifest: r.variant for r in runs} | {runs[0].dev_manifest: "the dev set"}
    tokenizers = {}
    for path, who in manifests.items():
        m = read_manifest(path, verify=False)
        tokenizers.setdefault((m.get("tokenizer_sha256"), m.get("vocab_size")), []).append(who)
    if len(tokenizers) > 1:
        raise ProxyError(
            "tokenizer mismatch: the variants and the dev set must share one tokenizer; "
            + "; ".join(f"{sha and sha[:12]} (vocabulary {v}): {', '.join(w)}" for (sha, v), w in tokenizers.items())
        )
    variants: dict[str, Any] = {}
    for r in runs:
        if r.variant in variants:
            continue
        try:
            data = _stream(r.manifest, cfg, 0, "train")
        except DataError as e:
            raise ProxyError(
                f"variant {r.variant}: its corpus cannot give one training sample of "
                f"{cfg.data.seq_len + 1} tokens ({e})"
            ) from e
        tokens = sum(data.tokens_per_source.values())
        variants[r.variant] = {"tokens": tokens, "documents": int(len(data.documents())), "epochs": cfg.budget / tokens}
    try:
        dev = _stream(runs[0].dev_manifest, cfg, DEV_SOURCE_SEED, "valid")
    except DataError as e:
        raise ProxyError(f"the dev set cannot give one window of {cfg.data.seq_len + 1} tokens ({e})") from e
    windows = dev.describe()["samples_per_epoch"]
    batches = sum(windows.values()) // cfg.train.global_batch
    if batches < 1:
        raise ProxyError(
            f"the dev set has {sum(windows.values())} windows of {cfg.data.seq_len} tokens, fewer "
            f"than one global batch ({cfg.train.global_batch}): give a larger dev set"
        )
    dev_tokens = batches * cfg.train.global_batch * cfg.data.seq_len
    ((sha, vocab),) = tokenizers
    return {
        "variants": variants,
        "vocab_size": vocab,
        "tokenizer_sha256": sha,
        "dev": {
            "tokens": sum(dev.tokens_per_source.values()),
            "documents": int(len(dev.documents())),
            "eval_batches": batches,
            "eval_tokens": dev_tokens,
        },
    }


@dataclass(frozen=True)
class DevSet:
    """The dev set as every run scores it: full global batches of its epoch-0 windows in one fixed
    order (every source back to back, the last partial batch left out), and for every target
    token the number of the dev document it belongs to (the same numbering in every run)."""

    batches: list  # torch (global_batch, seq_len + 1) int64 tensors
    doc_of: Any  # (batches x global_batch, seq_len) int64: document number of each target token
    n_docs: int  # documents numbered; those with no scored token get 0 tokens


def dev_set(manifest: str, cfg: ProxyConfig) -> DevSet:
    """Window j of a source covers tokens [jL, jL + L + 1) of its documents in epoch-0 order; its
    targets are tokens jL + 1 ... jL + L, each in the document whose token range holds it."""
    import numpy as np
    import torch

    dev = _stream(manifest, cfg, DEV_SOURCE_SEED, "valid")
    per_epoch = dev.describe()["samples_per_epoch"]
    L, gb = cfg.data.seq_len, cfg.train.global_batch
    windows, owners, first = [], [], 0
    for s in dev.sources:
        order = dev.documents(s, epoch=0)  # (n, 2) shard, document
        lengths = np.array([dev.shards[sh].document_lengths[i] for sh, i in order], np.int64)
        cum = np.concatenate([[0], np.cumsum(lengths)])
        targets = np.arange(per_epoch[s])[:, None] * L + np.arange(1, L + 1)[None, :]  # (windows, L)
        owners.append(first + np.searchsorted(cum, targets, side="right") - 1)
        windows += [dev.source_sample(s, j) for j in range(per_epoch[s])]
        first += len(order)
    usable = len(windows) // gb * gb
    doc_of = np.concatenate(owners)[:usable] if owners else np.empty((0, L), np.int64)
    batches = [torch.from_numpy(np.stack(windows[i : i + gb])) for i in range(0, usable, gb)]
    return DevSet(batches, doc_of, first)


def token_losses(model, batches: list, cfg: ProxyConfig, device: str):
    """(batches x global_batch, seq_len) float64 next-token losses of a one-rank model, in
    micro-batches, in eval mode (the same computation as ``Trainer.eval_step``, kept per token)."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    model.eval()
    out = []
    try:
        with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16, enabled=cfg.train.precision == "bf16"):
            for batch in batches:
                for part in batch.split(cfg.train.micro_batch):
                    x, y = part[:, :-1].to(device), part[:, 1:].to(device)
                    logits = model(x)  # (b, T, V)
                    loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(), reduction="none")
                    out.append(loss.view(y.shape).double().cpu().numpy())
    finally:
        model.train()
    return np.concatenate(out) if out else np.empty((0, cfg.data.seq_len))


def doc_scores(losses, dev: DevSet) -> tuple[list[float], list[int]]:
    """(summed loss, tokens scored) per dev document, in the dev set's document numbering."""
    import numpy as np

    nll = np.bincount(dev.doc_of.ravel(), weights=losses.ravel(), minlength=dev.n_docs)
    tokens = np.bincount(dev.doc_of.ravel(), minlength=dev.n_docs)
    return nll.tolist(), tokens.tolist()


def train_one(cfg: ProxyConfig, run: ProxyRun) -> dict[str, Any]:
    """One proxy run in this process (a Ray task calls it): a one-rank process group, the
    project's ``Trainer``, the dev loss every ``train.eval_every`` steps and at the end."""
    import torch
    import torch.distributed as dist

    from train.loop import lr_at
    from train.parallel import ParallelConfig, Trainer

    torch.set_num_threads(max(1, int(cfg.ray.cpus_per_run)))
    device = "cuda" if cfg.ray.gpus_per_run > 0 and torch.cuda.is_available() else "cpu"
    dist.init_process_group("nccl" if device == "cuda" else "gloo", store=dist.HashStore(), rank=0, world_size=1)
    start = time.perf_counter()
    try:
        loop = dataclasses.replace(cfg.train, seed=run.seed)
        trainer = Trainer(cfg.model, ParallelConfig(), loop, device)
        data = _stream(run.manifest, cfg, run.seed, "train")
        dev = dev_set(run.dev_manifest, cfg)
        curve, train_loss = [], []
        for step in range(1, loop.steps + 1):
            loss = trainer.train_step(data.batch(step - 1, loop.global_batch), lr=lr_at(step, loop))
            if not math.isfinite(loss):
                raise FloatingPointError(f"training loss is {loss} at step {step}")
            if step % loop.log_every == 0 or step == loop.steps:
                train_loss.append([step, loss])
            if loop.eval_every and step % loop.eval_every == 0 and step < loop.steps:
                curve.append([step, sum(trainer.eval_step(b) for b in dev.batches) / len(dev.batches)])
        losses = token_losses(trainer.parts[0], dev.batches, cfg, device)  # the final score, kept per document
        nll, tokens = doc_scores(losses, dev)
        curve.append([loop.steps, float(losses.mean())])
        return {
            "variant": run.variant,
            "seed": run.seed,
            "status": "ok",
            "dev_curve": curve,
            "train_loss": train_loss,
            "dev_loss": curve[-1][1],
            "dev_doc_nll": nll,
            "dev_doc_tokens": tokens,
            "seconds": time.perf_counter() - start,
        }
    finally:
        dist.destroy_process_group()


def init_ray(section: ProxyRaySection) -> None:
    """Connect to ``ray.address`` or $RAY_ADDRESS, else start a local Ray (no dashboard, every
    socket on 127.0.0.1) with this machine's CPUs (train/launch.py)."""
    from train import launch

    launch.connect(section.address, cpus=section.cpus_per_run)


def run_proxies(
    cfg: ProxyConfig, runs: list[ProxyRun], on_result: Callable[[dict[str, Any]], None] | None = None
) -> list[dict[str, Any]]:
    """Every run as a Ray task, side by side; results in ``runs`` order. A run that fails (an
    exception, a dead worker) is ``{"status": "failed", "error": ...}``; the others go on.
    ``on_result`` sees each result as it arrives (progress lines)."""
    import ray

    init_ray(cfg.ray)
    task = ray.remote(num_cpus=cfg.ray.cpus_per_run, num_gpus=cfg.ray.gpus_per_run, max_retries=cfg.ray.max_retries)(
        train_one
    )
    pending = {task.remote(cfg, r): i for i, r in enumerate(runs)}
    results: list[dict[str, Any] | None] = [None] * len(runs)
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        i = pending.pop(done[0])
        try:
            results[i] = ray.get(done[0])
        except Exception as e:  # noqa: BLE001 -- RayTaskError, WorkerCrashedError, ...: reported per run
            cause = getattr(e, "cause", None) or e
            lines = str(cause).strip().splitlines() or [""]
            results[i] = {
                "variant": runs[i].variant,
                "seed": runs[i].seed,
                "status": "failed",
                "error": f"{type(cause).__name__}: {lines[0][:300]}",
            }
            log.warning("proxy run %s seed %d failed: %s", runs[i].variant, runs[i].seed, results[i]["error"])
        if on_result is not None:
            on_result(results[i])
    return results  # type: ignore[return-value]


def with_vocab(cfg: ProxyConfig, vocab_size: int) -> ProxyConfig:
    """The model's vocabulary is the shards' (as in ``jobs.train_lm``)."""
    return dataclasses.replace(cfg, model=cfg.model.replace(vocab_size=vocab_size))


class ProxyTrainer:
    """The training side of ``etl.judge.run.judge_rules`` (its ``Trainer`` protocol)."""

    def __init__(self, cfg: ProxyConfig):
        self.cfg = cfg.resolved()
        self.base_steps = self.cfg.train.steps  # the configured budget, before any escalation

    @property
    def budget(self) -> int:
        """Tokens each run trains on now."""
        return self.cfg.budget

    def set_budget_factor(self, factor: int) -> None:
        """Later runs train ``factor`` times the configured steps (the judge's token escalation)."""
        self.cfg = dataclasses.replace(
            self.cfg, train=dataclasses.replace(self.cfg.train, steps=self.base_steps * factor)
        )

    def _runs(self, manifests: dict[str, str], dev_manifest: str, seeds=(0,)) -> list[ProxyRun]:
        return [ProxyRun(name, seed, path, dev_manifest) for name, path in manifests.items() for seed in seeds]

    def check(self, manifests: dict[str, str], dev_manifest: str) -> dict[str, Any]:
        checked = check_runs(self.cfg, self._runs(manifests, dev_manifest))
        self.cfg = with_vocab(self.cfg, checked["vocab_size"])
        return checked

    def run(
        self,
        manifests: dict[str, str],
        dev_manifest: str,
        seeds: tuple[int, ...],
        on_result: Callable[[dict[str, Any]], None] | None = None,
    ) -> list[dict[str, Any]]:
        runs = self._runs(manifests, dev_manifest, seeds)
        log.info(
            "judge: %d proxy runs (%d variants x %d seeds), %s tokens each",
            len(runs),
            len(manifests),
            len(seeds),
            f"{self.cfg.budget:,}",
        )
        return run_proxies(self.cfg, runs, on_result)

    def describe(self) -> dict[str, Any]:
        from train.planner import total_params

        return {
            "parameters": total_params(self.cfg.model),
            "budget_tokens": self.cfg.budget,
            "steps": self.cfg.train.steps,
            "config": dataclasses.asdict(self.cfg),
        }
