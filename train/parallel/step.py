"""The composed training step: mesh, model parts, tensor/pipeline/data parallelism, ZeRO-1 or
FSDP2, mixed precision, ``torch.compile``.

A training loop (e.g. a Ray ``TorchTrainer`` worker, after the world process group exists)::

    trainer = Trainer(preset("debug"), ParallelConfig(tp=2, pp=2, dp=2), TrainConfig(seed=0))
    for tokens in batches:                  # (global_batch, seq_len + 1) int64, same on every rank
        loss = trainer.train_step(tokens)   # the global mean loss, on every rank
    dcp.save(trainer.state_dict(), checkpoint_id=path)

Every layout computes the same step as one process running the whole global batch: each dp
replica takes its contiguous slice of the batch, splits it into micro-batches, and the
gradients are averaged so that they are those of the mean loss over all global_batch sequences.

A part is built in torchtitan's order: seeded weights, tensor parallelism, activation
recomputation, ``torch.compile`` per block, FSDP2 (``parallel.dp_shard = "fsdp"``).
"""

from __future__ import annotations

import contextlib
import logging
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.tensor import DTensor, Shard
from torch.distributed.tensor.parallel import loss_parallel

from train.config import PRECISIONS, TrainConfig
from train.layout import ParallelConfig, num_microbatches, validate
from train.model import GPT, ModelConfig
from train.parallel.ac import apply_ac
from train.parallel.compile import apply_compile
from train.parallel.dims import MESH_DIMS, build_mesh
from train.parallel.fsdp import ShardAdamW, apply_fsdp, copies
from train.parallel.pp import TiedEmbeddingSync, build_schedule, materialize, stage_ids, stage_model
from train.parallel.tp import apply_tp
from train.parallel.zero import ZeroAdamW, local_tensor

log = logging.getLogger("zhcorpus")  # the project's logger: the training loop keeps rank 0's lines only


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token loss; ``logits`` may be a vocab-sharded DTensor (inside ``loss_parallel``)."""
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(0, 1))


def _plain(t: torch.Tensor) -> torch.Tensor:
    return t.full_tensor() if isinstance(t, DTensor) else t


class Trainer:
    """One rank's share of the model and optimizer, and the step that trains them."""

    def __init__(
        self,
        model_cfg: ModelConfig,
        par: ParallelConfig,
        train_cfg: TrainConfig,
        device: torch.device | str | None = None,
    ):
        if train_cfg.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {train_cfg.precision!r}")
        validate(par, model_cfg, dist.get_world_size(), train_cfg.global_batch, train_cfg.micro_batch)
        self.model_cfg, self.par, self.train_cfg = model_cfg, par, train_cfg
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.mesh = build_mesh(par, self.device.type)
        self.pp_rank, replica, shard, self.tp_rank = (self.mesh.get_local_rank(d) for d in MESH_DIMS)
        self.dp_rank = replica * par.shard_degree + shard  # this rank's slice of the global batch
        self.stages = stage_ids(self.pp_rank, par.pp, par.virtual_stages)
        self.parts: list[GPT] = [self._build_part(s) for s in self.stages]
        self.n_microbatches = num_microbatches(par, train_cfg.global_batch, train_cfg.micro_batch)
        self.has_last_stage = par.num_stages - 1 in self.stages
        self.tied = TiedEmbeddingSync(self.mesh, self.parts)
        self.schedule = None
        if par.pp > 1:
            self.schedule = build_schedule(
                self.parts,
                self.stages,
                par.num_stages,
                self.n_microbatches,
                par.schedule,
                cross_entropy,
                self.mesh.get_group("pp"),
                self.device,
            )
        self.optimizer = self._build_optimizer()
        self.grad_norm: float = 0.0  # global gradient norm of the last step, before clipping
        self.compile_seconds: float | None = None  # wall time of the first (compiling) step
        if dist.get_rank() == 0:
            log.info(
                "layout tp=%d pp=%d dp=%d (%s%s, %s, %d stages), %d micro-batches of %d per replica, "
                "%d parameters on rank 0, %s%s",
                par.tp,
                par.pp,
                par.dp,
                par.dp_shard,
                f" x{par.dp_replicate} replicas" if par.dp_replicate > 1 else "",
                par.schedule if par.pp > 1 else "no pipeline",
                par.num_stages,
                self.n_microbatches,
                train_cfg.micro_batch,
                sum(local_tensor(p).numel() for _, p in self.named_parameters()),
                train_cfg.precision,
                f", compiled ({train_cfg.compile_backend})" if train_cfg.compile else "",
            )

    def _build_part(self, stage: int) -> GPT:
        """One stage's model, parallelised in torchtitan's order: TP, recomputation, compile, FSDP."""
        par, cfg = self.par, self.train_cfg
        part = materialize(stage_model(self.model_cfg, stage, par.num_stages), cfg.seed, self.device)
        if par.tp > 1:
            apply_tp(part, self.mesh["tp"], par.sequence_parallel)
        # Full recomputation wraps the compiled block (eager checkpoint re-runs compiled code):
        # torch 2.13's Dynamo cannot trace a plain checkpoint over DTensor weights ("expected all
        # tensors_saved_with_vc_check to be Tensors": it saves the DeviceMesh). Selective
        # recomputation is traced inside the compiled region, as torchtitan does, so its policy
        # sees the individual matmuls.
        compile_first = cfg.compile and par.recompute == "full"
        if compile_first:
            apply_compile(part, cfg.compile_backend)
        apply_ac(part, par.recompute)
        if cfg.compile and not compile_first:
            apply_compile(part, cfg.compile_backend)
        if self.fsdp:
            apply_fsdp(part, self.dp_mesh(), cfg.precision, pipelined=par.pp > 1)
        return part.train()

    @property
    def fsdp(self) -> bool:
        return self.par.dp_shard == "fsdp"

    def dp_mesh(self):
        """FSDP2's mesh: dp_shard, or (dp_replicate, dp_shard) for HSDP."""
        return self.mesh["dp_replicate", "dp_shard"] if self.par.dp_replicate > 1 else self.mesh["dp_shard"]

    def _build_optimizer(self):
        cfg = self.train_cfg
        kwargs = {"lr": cfg.lr, "betas": (cfg.beta1, cfg.beta2), "eps": cfg.eps}
        if self.fsdp:
            return ShardAdamW(self._param_specs(), **kwargs)
        shard = self.par.dp_shard == "zero1"  # "none": every replica holds the whole optimizer state
        return ZeroAdamW(self._param_specs(), self.mesh.get_group("dp_shard"), shard=shard, **kwargs)

    def named_parameters(self):
        """(fully qualified name in the whole model, parameter) for this rank, each once."""
        seen = set()
        for part in self.parts:
            for name, p in part.named_parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    yield name.replace("_checkpoint_wrapped_module.", ""), p

    def _param_specs(self) -> list[tuple[str, torch.nn.Parameter, float, float]]:
        tied_copy = self.tied.weight if self.tied.weight is not None and self.pp_rank != 0 else None
        specs = []
        for name, p in self.named_parameters():
            wd = self.train_cfg.weight_decay if p.ndim >= 2 else 0.0
            if p is tied_copy:
                name, w = "embed.tok.weight", 0.0  # stage 0's copy is the one counted in the norm
            elif self.fsdp:
                w = 1.0 / copies(p, self.par.dp * self.par.tp)  # tp-replicated ones; dp_replicate (HSDP)
            elif isinstance(p, DTensor) and any(isinstance(pl, Shard) for pl in p.placements):
                w = 1.0
            else:
                w = 1.0 / self.par.tp  # replicated over tp: every tp rank holds the same values
            specs.append((name, p, wd, w))
        return specs

    def _context(self) -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        if self.par.tp > 1:
            stack.enter_context(loss_parallel())
        if self.train_cfg.precision == "bf16" and not self.fsdp:  # FSDP2 casts by its MixedPrecisionPolicy
            stack.enter_context(torch.autocast(self.device.type, dtype=torch.bfloat16))
        return stack

    def _local_batch(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """This dp replica's rows of the global batch, as (inputs, targets)."""
        B = self.train_cfg.global_batch
        if tokens.ndim != 2 or tokens.shape[0] != B or tokens.shape[1] > self.model_cfg.seq_len + 1:
            raise ValueError(
                f"expected tokens of shape ({B}, <= {self.model_cfg.seq_len + 1}), got {tuple(tokens.shape)}"
            )
        rows = B // self.par.dp
        local = tokens[self.dp_rank * rows : (self.dp_rank + 1) * rows].to(self.device)
        return local[:, :-1], local[:, 1:]

    def train_step(self, tokens: torch.Tensor, lr: float | None = None) -> float:
        """One optimizer step on a global batch ``tokens`` (global_batch, T + 1); returns its mean loss.

        Every rank may pass the whole batch (it keeps its dp slice); ranks of one dp replica must
        pass the same rows. Under pp > 1 the shape must not change between steps (the pipeline
        stages size their buffers on the first step)."""
        t0 = time.perf_counter()
        inputs, targets = self._local_batch(tokens)
        with self._context():
            loss = self._forward_backward(inputs, targets)
        self.tied.sync()
        if lr is not None:
            self.optimizer.set_lr(lr)
        self.grad_norm = float(self.optimizer.step(self.train_cfg.grad_clip))
        mean = self._global_mean(loss)
        if self.train_cfg.compile and self.compile_seconds is None:
            self.compile_seconds = time.perf_counter() - t0
            if dist.get_rank() == 0:
                log.info(
                    "first step with torch.compile (%s): %.1f s, compilation included",
                    self.train_cfg.compile_backend,
                    self.compile_seconds,
                )
        return mean

    @torch.no_grad()
    def eval_step(self, tokens: torch.Tensor) -> float:
        """Mean loss of a global batch ``tokens`` (global_batch, T + 1), changing nothing: the
        validation loss. The same batch split as ``train_step``; under pp > 1 the pipeline
        schedule's forward-only ``eval`` (which re-plans its buffers when it switches between
        training and evaluation, so interleave the two as often as needed)."""
        inputs, targets = self._local_batch(tokens)
        for part in self.parts:
            part.eval()
        try:
            with self._context():
                loss = self._forward_only(inputs, targets)
        finally:
            for part in self.parts:
                part.train()
        return self._global_mean(loss)

    def _forward_only(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        m = self.n_microbatches
        if self.schedule is None:
            losses = [
                _plain(cross_entropy(self.parts[0](x), y))
                for x, y in zip(inputs.tensor_split(m), targets.tensor_split(m))
            ]
        else:
            losses = []
            self.schedule.eval(*((inputs,) if 0 in self.stages else ()), target=targets, losses=losses)
            if not self.has_last_stage:
                return torch.zeros((), device=self.device)
            losses = [_plain(loss) for loss in losses]
        return torch.stack(losses).mean()

    def _forward_backward(self, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean micro-batch loss where this rank computes it (last stage), else 0."""
        m = self.n_microbatches
        if self.schedule is None:
            total = torch.zeros((), device=self.device)
            for i, (x, y) in enumerate(zip(inputs.tensor_split(m), targets.tensor_split(m))):
                self._fsdp_accumulate(last=i == m - 1)
                loss = cross_entropy(self.parts[0](x), y)
                (loss / m).backward()
                total += _plain(loss.detach())
            return total / m
        losses: list[torch.Tensor] = []
        args = (inputs,) if 0 in self.stages else ()
        self.schedule.step(*args, target=targets, losses=losses, return_outputs=False)
        if not self.has_last_stage:
            return torch.zeros((), device=self.device)
        return torch.stack([_plain(loss.detach()) for loss in losses]).mean()

    def _fsdp_accumulate(self, last: bool) -> None:
        """Under ``fsdp_grad_sync = "last"``: before the last micro-batch, no reduce-scatter and
        no resharding (the gathered weights and unsharded gradients stay); the last one reshards
        after its forward and reduce-scatters the accumulated gradients (FSDPModule setters)."""
        if not (self.fsdp and self.par.fsdp_grad_sync == "last" and self.n_microbatches > 1):
            return
        part = self.parts[0]
        part.set_requires_gradient_sync(last)
        part.set_reshard_after_backward(last)
        for module in part.modules():  # the root keeps its own (False); every block follows the micro-batch
            if module is not part and hasattr(module, "set_reshard_after_forward"):
                module.set_reshard_after_forward(last, recurse=False)

    def _global_mean(self, loss: torch.Tensor) -> float:
        """Average the dp replicas' losses, taken once per replica from a last-stage rank."""
        counts = self.has_last_stage and self.tp_rank == 0
        loss = (loss.detach().float() if counts else torch.zeros((), device=self.device)) / self.par.dp
        if dist.get_world_size() > 1:
            dist.all_reduce(loss)
        return float(loss)

    def model_state_dict(self) -> dict[str, torch.Tensor]:
        """This rank's weights under full-model names (DTensors for tp-sharded ones), sharing
        storage with the model: ``torch.distributed.checkpoint.load`` into it loads in place."""
        sd: dict[str, torch.Tensor] = {}
        for part in self.parts:
            sd.update(part.state_dict())
        return sd

    def state_dict(self) -> dict[str, dict[str, torch.Tensor]]:
        """``{"model": …, "optim": …}`` for ``torch.distributed.checkpoint.save``; keys are
        full-model parameter names and tensors are DTensors where sharded over tp, so a checkpoint
        loads into any other (tp, pp, dp) layout. A collective: every rank must call it."""
        return {"model": self.model_state_dict(), "optim": self.optimizer.state_dict()}

    def load_state_dict(self, sd: dict[str, dict[str, torch.Tensor]]) -> None:
        """Finish a load: ``sd`` is ``self.state_dict()`` after ``dcp.load`` filled it in place."""
        own = self.model_state_dict()
        with torch.no_grad():
            for name, t in sd["model"].items():
                mine, theirs = local_tensor(own[name]), local_tensor(t)
                if theirs.data_ptr() != mine.data_ptr():  # not loaded in place (e.g. a copied dict)
                    mine.copy_(theirs)
        self.optimizer.load_state_dict(sd["optim"])
