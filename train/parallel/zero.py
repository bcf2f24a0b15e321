"""ZeRO-1 AdamW over the data-parallel group, working on each rank's *local* parameter shards.

PanGu-α's "optimizer model parallelism" (Rajbhandari et al. 2020, stage 1): every dp replica
holds the full (tensor/pipeline-local) parameters, but each keeps Adam's moments and fp32 master
copy for only 1/dp of them. One step:

1. flatten the local gradients into a bucket, reduce-scatter it over dp (sum, then / dp: every
   replica's loss is the mean over its slice of the global batch) — each rank now holds the
   averaged gradient of its 1/dp slice;
2. clip by the global gradient norm (``grad_norm`` sums the slices over the whole world, each
   bucket weighted so a value held by several ranks counts once);
3. AdamW on the slice; 4. all-gather the updated slices back into the local parameters.

With ``shard=False`` (``parallel.dp_shard = "none"``, ZeRO stage 0) the same class is plain data
parallelism: the gradients are all-reduced (then / dp) and every rank steps all of them, so it
holds the whole optimizer state; the arithmetic is the same, only the memory and the collectives
differ.

PyTorch's ``ZeroRedundancyOptimizer`` and DDP cannot do this with tensor-parallel DTensor
parameters (``c10d.broadcast_`` has no sharding strategy), hence this class. AdamW is element-wise,
so stepping a flat slice is the same arithmetic as stepping each parameter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.tensor import DTensor


def local_tensor(t: torch.Tensor) -> torch.Tensor:
    """The tensor this rank stores (shares storage with ``t``)."""
    return t.to_local() if isinstance(t, DTensor) else t


def local_grad(p: nn.Parameter) -> torch.Tensor:
    """This rank's slice of ``p.grad`` laid out like the parameter (zeros if it got no gradient)."""
    g = p.grad
    if g is None:
        return torch.zeros_like(local_tensor(p))
    if isinstance(g, DTensor):
        if g.placements != p.placements:  # e.g. Partial sums for a Replicate parameter under SP
            g = g.redistribute(p.device_mesh, p.placements)
        return g.to_local()
    return g


def like_param(p: torch.Tensor, local: torch.Tensor) -> torch.Tensor:
    """``local`` (this rank's part) as a tensor laid out like ``p``: a DTensor with its placements."""
    if isinstance(p, DTensor):
        return DTensor.from_local(local, p.device_mesh, p.placements, shape=p.shape, stride=p.stride())
    return local


@dataclass
class _Bucket:
    params: list[nn.Parameter]
    norm_weight: float  # how much one rank's copy counts in the global gradient norm
    numel: int  # local elements, before padding to a multiple of dp
    shard: nn.Parameter  # this rank's fp32 slice, what AdamW steps
    flat_grad: torch.Tensor  # reused buffer: the local gradients, flattened and padded


class ZeroAdamW:
    """AdamW whose state is sharded over ``dp_group`` (``shard=False``: replicated on each of its
    ranks, the gradients averaged over it).

    ``params`` are (name, parameter, weight_decay, norm_weight) tuples; ``norm_weight`` is 1 for
    a value only this rank holds in its dp replica and 1/k for one held by k ranks (e.g. a
    LayerNorm weight replicated over tp), 0 for a copy that must not count (a tied weight's
    second copy on the last pipeline stage).
    """

    def __init__(
        self,
        params: list[tuple[str, nn.Parameter, float, float]],
        dp_group,
        *,
        lr: float,
        betas: tuple[float, float],
        eps: float,
        shard: bool = True,
    ):
        self.dp_group = dp_group
        self.dp = dist.get_world_size(dp_group)
        self.dp_rank = dist.get_rank(dp_group)
        self.sharded = shard and self.dp > 1
        self.parts = self.dp if self.sharded else 1  # slices of each bucket: one per dp rank, or one
        self.part = self.dp_rank if self.sharded else 0  # the slice this rank steps
        self.names = {id(p): name for name, p, _, _ in params}
        self.buckets: list[_Bucket] = []
        groups = []
        keys = sorted({(wd, w) for _, _, wd, w in params})
        for wd, w in keys:
            members = [p for _, p, pwd, pw in params if (pwd, pw) == (wd, w)]
            bucket = self._make_bucket(members, w)
            self.buckets.append(bucket)
            groups.append({"params": [bucket.shard], "weight_decay": wd})
        # One fused kernel per flat slice (CPU and CUDA); the same arithmetic as stock AdamW.
        self.adam = torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, fused=True)

    def _make_bucket(self, params: list[nn.Parameter], norm_weight: float) -> _Bucket:
        numel = sum(local_tensor(p).numel() for p in params)
        flat = self._flatten([local_tensor(p).detach() for p in params], numel)
        size = flat.numel() // self.parts
        shard = nn.Parameter(flat[self.part * size : (self.part + 1) * size].float().clone())
        return _Bucket(params, norm_weight, numel, shard, torch.zeros_like(flat))

    def _flatten(self, tensors: list[torch.Tensor], numel: int, out: torch.Tensor | None = None) -> torch.Tensor:
        """Concatenate into one fp32 vector padded with zeros to a multiple of the slice count."""
        if out is None:
            out = torch.zeros(math.ceil(numel / self.parts) * self.parts, dtype=torch.float32, device=tensors[0].device)
        torch.cat([t.reshape(-1) for t in tensors], out=out[:numel])
        return out

    def set_lr(self, lr: float) -> None:
        for g in self.adam.param_groups:
            g["lr"] = lr

    @torch.no_grad()
    def reduce_grads(self) -> None:
        """Reduce-scatter the local gradients over dp into each bucket's shard (mean over dp);
        unsharded, all-reduce them into the whole bucket."""
        for b in self.buckets:
            flat = self._flatten([local_grad(p) for p in b.params], b.numel, out=b.flat_grad)
            if self.dp == 1:
                shard = flat
            elif not self.sharded:
                shard = flat
                dist.all_reduce(shard, group=self.dp_group)
                shard /= self.dp
            else:
                shard = torch.empty_like(b.shard)
                dist.reduce_scatter_single(shard, flat, group=self.dp_group)
                shard /= self.dp
            b.shard.grad = shard
            for p in b.params:
                p.grad = None

    @torch.no_grad()
    def grad_norm(self) -> torch.Tensor:
        """Global L2 norm of the reduced gradients: one all-reduce over every rank (unsharded,
        each of the dp ranks holds the whole gradient, so each counts 1/dp)."""
        copies = 1 if self.sharded else self.dp
        sq = sum(b.norm_weight / copies * torch.dot(b.shard.grad, b.shard.grad) for b in self.buckets)
        sq = torch.as_tensor(sq, dtype=torch.float32, device=self.buckets[0].shard.device).clone()
        if dist.get_world_size() > 1:
            dist.all_reduce(sq)
        return sq.sqrt()

    @torch.no_grad()
    def step(self, max_norm: float = 0.0) -> torch.Tensor:
        """Reduce, clip to ``max_norm`` (0: no clipping), step, gather. Returns the pre-clip norm."""
        self.reduce_grads()
        norm = self.grad_norm()
        if max_norm > 0:  # the same rule as torch.nn.utils.clip_grad_norm_
            coef = torch.clamp(max_norm / (norm + 1e-6), max=1.0)
            for b in self.buckets:
                b.shard.grad.mul_(coef)
        self.adam.step()
        self.adam.zero_grad(set_to_none=True)
        for b in self.buckets:
            self._gather_into_params(b)
        return norm

    def _gather_into_params(self, b: _Bucket) -> None:
        for p, new in zip(b.params, self._split(self._gather(b.shard), b.params)):
            local_tensor(p).copy_(new)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Adam's moments as ``{"<param name>.exp_avg" / ".exp_avg_sq": tensor}`` shaped and
        placed like each parameter (DTensors where it is one), plus ``"step"``.

        Gathering the 1/dp slices makes the state independent of dp (and, by the parameter
        names and DTensor placements, of tp and pp), so ``torch.distributed.checkpoint`` can
        reshard it between layouts. It costs one all-gather per bucket and moment."""
        out: dict[str, torch.Tensor] = {"step": self._step_tensor().clone()}
        for b in self.buckets:
            state = self.adam.state[b.shard]
            for key in ("exp_avg", "exp_avg_sq"):
                flat = self._gather(state[key]) if state else torch.zeros_like(self._gather(b.shard))
                for p, local in zip(b.params, self._split(flat, b.params)):
                    out[f"{self.names[id(p)]}.{key}"] = like_param(p, local.clone())
        return out

    @torch.no_grad()
    def load_state_dict(self, sd: dict[str, torch.Tensor]) -> None:
        """Take the moments from ``sd`` (the layout of ``state_dict``) and the fp32 master slices
        from the current parameters (load the model weights first)."""
        for b in self.buckets:
            state = self.adam.state[b.shard]
            for key in ("exp_avg", "exp_avg_sq"):
                flat = self._flatten([local_tensor(sd[f"{self.names[id(p)]}.{key}"]) for p in b.params], b.numel)
                state[key] = self._my_slice(flat).clone()
            state["step"] = sd["step"].detach().float().to(b.shard.device, copy=True)  # fused: on the device
            b.shard.copy_(self._my_slice(self._flatten([local_tensor(p).detach() for p in b.params], b.numel)))

    def _step_tensor(self) -> torch.Tensor:
        state = self.adam.state.get(self.buckets[0].shard)
        return state["step"] if state else torch.zeros(())

    def _my_slice(self, flat: torch.Tensor) -> torch.Tensor:
        size = flat.numel() // self.parts
        return flat[self.part * size : (self.part + 1) * size]

    def _gather(self, shard: torch.Tensor) -> torch.Tensor:
        if self.parts == 1:
            return shard.detach()
        flat = torch.empty(shard.numel() * self.dp, dtype=shard.dtype, device=shard.device)
        dist.all_gather_single(flat, shard.detach().contiguous(), group=self.dp_group)
        return flat

    @staticmethod
    def _split(flat: torch.Tensor, params: list[nn.Parameter]) -> list[torch.Tensor]:
        out, offset = [], 0
        for p in params:
            local = local_tensor(p)
            out.append(flat[offset : offset + local.numel()].view_as(local))
            offset += local.numel()
        return out

    def state_numel(self) -> int:
        """Optimizer-state elements this rank holds (fp32 master + two moments)."""
        return 3 * sum(b.shard.numel() for b in self.buckets)
