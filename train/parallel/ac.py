"""Activation recomputation, applied per transformer block from outside the model.

``full``: keep only each block's input; the backward pass re-runs the whole block (memory per
layer = one (B, T, C) tensor, one extra forward of compute).
``selective`` (Korthikanti et al. 2022, op-level like torchtitan): keep the outputs of the matmuls
and of attention, recompute the cheap, activation-heavy ops in between (LayerNorm, GeLU, dropout,
adds). Most of the saving of full recomputation for little of its compute.

Wrapping renames parameters (``layers.0._checkpoint_wrapped_module.…``) but ``state_dict`` strips
the wrapper prefix, so checkpoints do not depend on the mode. Apply after tensor parallelism.
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

from train.shapes import RECOMPUTE_MODES, RecomputeMode

_aten = torch.ops.aten
# Ops whose outputs selective recomputation keeps: the expensive ones.
_SAVE_OPS = {
    _aten.mm.default,
    _aten.addmm.default,
    _aten.bmm.default,
    _aten.linear.default,
    _aten._scaled_dot_product_efficient_attention.default,
    _aten._scaled_dot_product_flash_attention.default,
    _aten._scaled_dot_product_flash_attention_for_cpu.default,
    _aten._scaled_dot_product_cudnn_attention.default,
}


def _save_matmuls(ctx, op, *args, **kwargs) -> CheckpointPolicy:
    return CheckpointPolicy.MUST_SAVE if op in _SAVE_OPS else CheckpointPolicy.PREFER_RECOMPUTE


def _selective_context():
    return create_selective_checkpoint_contexts(_save_matmuls)


def apply_ac(model: nn.Module, mode: RecomputeMode) -> None:
    """Wrap every block of ``model.layers`` (and the query layer) for recomputation in place."""
    if mode not in RECOMPUTE_MODES:
        raise ValueError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {mode!r}")
    if mode == "none":
        return
    kwargs = {"preserve_rng_state": True}
    if mode == "selective":
        kwargs["context_fn"] = _selective_context
    wrap = partial(checkpoint_wrapper, **kwargs)
    for name, block in list(model.layers.items()):
        model.layers[name] = wrap(block)
    if getattr(model, "query_layer", None) is not None:
        model.query_layer = wrap(model.query_layer)
