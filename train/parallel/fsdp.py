"""FSDP2 (``torch.distributed.fsdp.fully_shard``) as the data-parallel sharding, and the AdamW
that steps its shards.

``apply_fsdp`` shards one model part over the dp sub-mesh of the trainer's single
(pp, dp_replicate, dp_shard, tp) mesh, as torchtitan composes it: tensor parallelism first (the
parameters are already DTensors over tp; FSDP adds the dp dimension), then activation
recomputation and ``torch.compile`` per block, then ``fully_shard`` on every transformer block
(and the query layer) and last on the part itself, whose unit holds the embeddings, the final
LayerNorm and the tied output layer. A dp mesh of two dimensions (dp_replicate, dp_shard) is
HSDP: parameters are sharded over dp_shard and replicated over dp_replicate.

Each unit all-gathers its parameters just before its forward (and again before its backward when
``reshard_after_forward``) and reduce-scatters its gradients right after its backward, averaged
over dp (FSDP divides by the dp size: every replica's loss is the mean over its slice of the
global batch, so the mean of the replicas' gradients is the global batch's gradient).

Mixed precision (``MixedPrecisionPolicy``): with ``bf16`` the gathered parameters, the activations
and the gradients the backward computes are bf16, while the sharded parameters (the master
weights AdamW updates), the gradient reduce-scatter and everything the optimizer keeps are fp32.
bf16 has fp32's exponent range, so no loss scaling is needed (fp16 would need it).
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor, Partial, Replicate

from train.model import GPT
from train.parallel.zero import like_param, local_grad, local_tensor

PARAM_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def mixed_precision(precision: str) -> MixedPrecisionPolicy:
    """Compute in ``precision``; reduce gradients and keep the sharded (master) weights in fp32."""
    return MixedPrecisionPolicy(param_dtype=PARAM_DTYPES[precision], reduce_dtype=torch.float32)


def apply_fsdp(model: GPT, dp_mesh: DeviceMesh, precision: str, pipelined: bool) -> None:
    """``fully_shard`` every block of ``model`` (a whole model or a pipeline stage), then the rest.

    Under pipeline parallelism the blocks keep their gathered parameters from forward to backward
    (``reshard_after_forward=False``, torchtitan's default with pp): otherwise every micro-batch
    would all-gather each block twice. The root unit is never resharded after forward: its
    output layer is the first thing the backward needs."""
    policy = mixed_precision(precision)
    for block in model.layers.values():
        fully_shard(block, mesh=dp_mesh, mp_policy=policy, reshard_after_forward=not pipelined)
    if model.query_layer is not None:
        fully_shard(model.query_layer, mesh=dp_mesh, mp_policy=policy, reshard_after_forward=not pipelined)
    fully_shard(model, mesh=dp_mesh, mp_policy=policy, reshard_after_forward=False)


def copies(p: torch.Tensor, ranks: int) -> float:
    """How many of the ``ranks`` ranks that hold one pipeline stage hold each element of ``p``:
    ``ranks`` over the number of distinct pieces ``p`` is cut into. (A LayerNorm weight under
    FSDP2 + TP is a DTensor over dp only: it is still replicated over tp.)"""
    pieces = 1
    if isinstance(p, DTensor):
        for size, placement in zip(p.device_mesh.mesh.shape, p.placements):
            if not isinstance(placement, (Replicate, Partial)):  # Shard or FSDP's _StridedShard
                pieces *= size
    return ranks / pieces


class ShardAdamW:
    """AdamW over parameters that are already sharded (FSDP2's DTensors): each rank steps the
    local shards it owns with one fused kernel, the same element-wise arithmetic as stock AdamW.

    ``params`` are (name, parameter, weight_decay, norm_weight) tuples as for ``ZeroAdamW``
    (``norm_weight``: 1 / the number of ranks holding the same values, 0 for a copy that must not
    count); the interface (``set_lr``, ``step``, ``state_dict``, ``load_state_dict``,
    ``state_numel``) and the checkpoint keys are ``ZeroAdamW``'s, so a checkpoint of either
    layout loads into the other.
    """

    def __init__(
        self, params: list[tuple[str, nn.Parameter, float, float]], *, lr: float, betas: tuple[float, float], eps: float
    ):
        self.params = [p for _, p, _, _ in params]
        self.names = {id(p): name for name, p, _, _ in params}
        self.norm_weights = [w for _, _, _, w in params]
        # Plain tensors sharing storage with each shard: the fused kernel never sees a DTensor.
        self.locals = [nn.Parameter(local_tensor(p).detach(), requires_grad=False) for p in self.params]
        groups: dict[float, list[nn.Parameter]] = {}
        for (_, _, wd, _), local in zip(params, self.locals):
            groups.setdefault(wd, []).append(local)
        self.adam = torch.optim.AdamW(
            [{"params": ps, "weight_decay": wd} for wd, ps in groups.items()], lr=lr, betas=betas, eps=eps, fused=True
        )
        for local in self.locals:  # state up front: a checkpoint loads into it before the first step
            # fused AdamW keeps ``step`` on the parameter's device
            self.adam.state[local] = {
                "step": torch.zeros((), dtype=torch.float32, device=local.device),
                "exp_avg": torch.zeros_like(local),
                "exp_avg_sq": torch.zeros_like(local),
            }

    def set_lr(self, lr: float) -> None:
        for g in self.adam.param_groups:
            g["lr"] = lr

    @torch.no_grad()
    def grad_norm(self) -> torch.Tensor:
        """Global L2 norm of the (already reduce-scattered) gradients: one all-reduce."""
        sq = torch.zeros((), dtype=torch.float32, device=self.locals[0].device)
        for p, w in zip(self.params, self.norm_weights):
            if w:
                g = local_grad(p).float()
                sq += w * torch.dot(g.reshape(-1), g.reshape(-1))
        if dist.get_world_size() > 1:
            dist.all_reduce(sq)
        return sq.sqrt()

    @torch.no_grad()
    def step(self, max_norm: float = 0.0) -> torch.Tensor:
        """Clip to ``max_norm`` (0: no clipping) and step. Returns the pre-clip norm."""
        norm = self.grad_norm()
        coef = torch.clamp(max_norm / (norm + 1e-6), max=1.0) if max_norm > 0 else None
        for p, local in zip(self.params, self.locals):
            g = local_grad(p).to(local.dtype)
            local.grad = g * coef if coef is not None else g
            p.grad = None
        self.adam.step()
        self.adam.zero_grad(set_to_none=True)
        return norm

    def state_dict(self) -> dict[str, torch.Tensor]:
        """``{"<param name>.exp_avg" / ".exp_avg_sq": DTensor like the parameter, "step": …}``
        (``ZeroAdamW``'s keys); the DTensors share storage with the state, so DCP loads in place."""
        out: dict[str, torch.Tensor] = {"step": self.adam.state[self.locals[0]]["step"].clone()}
        for p, local in zip(self.params, self.locals):
            state = self.adam.state[local]
            for key in ("exp_avg", "exp_avg_sq"):
                out[f"{self.names[id(p)]}.{key}"] = like_param(p, state[key])
        return out

    @torch.no_grad()
    def load_state_dict(self, sd: dict[str, torch.Tensor]) -> None:
        """Take the moments and step from ``sd`` (the layout of ``state_dict``)."""
        for p, local in zip(self.params, self.locals):
            state = self.adam.state[local]
            for key in ("exp_avg", "exp_avg_sq"):
                src = local_tensor(sd[f"{self.names[id(p)]}.{key}"])
                if src.data_ptr() != state[key].data_ptr():
                    state[key].copy_(src)
            state["step"] = sd["step"].detach().float().to(local.device, copy=True)

    def state_numel(self) -> int:
        """Optimizer-state elements this rank holds (fp32 master shard + two moments)."""
        return 3 * sum(local.numel() for local in self.locals)
