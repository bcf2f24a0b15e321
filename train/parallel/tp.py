"""Tensor parallelism (Megatron-LM §3) as a DTensor plan applied to the single-device model.

Per block: q, k, v and the first MLP layer are column-parallel (each tp rank computes its
``n_heads / tp`` heads and ``ffn_dim / tp`` MLP columns with no communication), the attention
output and the second MLP layer are row-parallel (their partial sums are all-reduced, one
all-reduce per sub-layer forward and one backward). The token embedding is vocab-parallel
(row-wise: each rank holds ``padded_vocab / tp`` rows, looks up the ids it owns, all-reduce), and
the tied output layer is column-parallel over the vocabulary with its logits left sharded so that
``loss_parallel`` computes the cross-entropy without ever gathering them.

With ``sequence_parallel`` (Korthikanti et al. 2022) the activations between sub-layers (LayerNorm,
dropout, residual adds) are sharded along the sequence instead of replicated: the all-reduces
become reduce-scatter + all-gather pairs (same volume) and that memory drops by tp.
"""

from __future__ import annotations

from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

from train.model import GPT


def block_plan(prefix: str, sequence_parallel: bool) -> dict:
    """The plan of one pre-LN block (a transformer layer or the query layer)."""
    between = Shard(1) if sequence_parallel else Replicate()  # layout of the residual stream
    plan = {
        f"{prefix}.attention.wq": ColwiseParallel(),
        f"{prefix}.attention.wk": ColwiseParallel(),
        f"{prefix}.attention.wv": ColwiseParallel(),
        f"{prefix}.attention.wo": RowwiseParallel(output_layouts=between),
        f"{prefix}.mlp.w1": ColwiseParallel(),
        f"{prefix}.mlp.w2": RowwiseParallel(output_layouts=between),
    }
    if sequence_parallel:
        gather = PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))
        plan |= {
            f"{prefix}.attention_norm": SequenceParallel(use_local_output=True),
            f"{prefix}.attention": gather,
            f"{prefix}.mlp_norm": SequenceParallel(use_local_output=True),
            f"{prefix}.mlp": gather,
        }
    return plan


def model_plan(model: GPT, sequence_parallel: bool) -> dict:
    """The plan for the parts this (possibly pipeline-split) model holds."""
    between = Shard(1) if sequence_parallel else Replicate()
    plan: dict = {}
    if model.embed is not None:
        plan["embed.tok"] = RowwiseParallel(input_layouts=Replicate(), output_layouts=Replicate())
        if sequence_parallel:  # the position add runs replicated; then keep this rank's sequence slice
            plan["embed"] = PrepareModuleOutput(output_layouts=Replicate(), desired_output_layouts=Shard(1))
    for name in model.layers:
        plan |= block_plan(f"layers.{name}", sequence_parallel)
    if model.norm is not None and sequence_parallel:
        plan["norm"] = SequenceParallel(use_local_output=True)
    if model.query_layer is not None:
        plan |= block_plan("query_layer", sequence_parallel)
    if model.output is not None:
        # Logits stay a DTensor sharded over the vocabulary, for loss_parallel.
        plan["output"] = ColwiseParallel(input_layouts=between, output_layouts=Shard(-1), use_local_output=False)
    return plan


def apply_tp(model: GPT, tp_mesh: DeviceMesh, sequence_parallel: bool = False) -> None:
    """Shard ``model`` over ``tp_mesh`` in place. Every rank must hold the same full weights: each
    keeps its slice without communication (``src_data_rank=None``)."""
    parallelize_module(model, tp_mesh, model_plan(model, sequence_parallel), src_data_rank=None)
    model.tie_weights()  # both sides are Shard(0) over the vocabulary: share the embedding's DTensor
