"""The parallel layout, declared once: its degrees (``ParallelConfig``, the ``[parallel]`` section),
every problem that keeps a model and batch from running at it, each with its fix
(``layout_problems``), and the layout an elastic run takes on fewer workers. No torch: the
runtime (``train.parallel``, which builds the mesh in ``train.parallel.dims``) and the planner
(``train.planner``, which adds only cluster and memory checks) ask the same questions here.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Literal

from base.errors import Refusal
from train.shapes import RECOMPUTE_MODES, ModelConfig, RecomputeMode

Schedule = Literal["gpipe", "1f1b", "interleaved_1f1b"]  # torch.distributed.pipelining schedules
SCHEDULES: tuple[str, ...] = typing.get_args(Schedule)
# How the dp replicas share the model states (the ZeRO stages of Rajbhandari et al. 2019):
# none: every replica holds all (tp/pp-local) weights, gradients and Adam state (plain data
#   parallelism, ZeRO stage 0; the gradients all-reduced);
# zero1: the same weights and gradients, Adam state and fp32 master weights sharded over dp
#   (ZeRO stage 1, PanGu-α's optimizer model parallelism; train.parallel.zero);
# fsdp: FSDP2 fully_shard, weights + gradients + Adam state sharded over dp (ZeRO stage 3;
#   train.parallel.fsdp).
DpShard = Literal["none", "zero1", "fsdp"]
DP_SHARDS: tuple[str, ...] = typing.get_args(DpShard)
# fsdp only, with several micro-batches a step: every: each micro-batch's backward reduce-scatters
# its gradients and reshards (least memory); last: the micro-batches before the last keep the
# parameters gathered and accumulate unsharded fp32 gradients, and the last reduce-scatters once
# (one copy of the unsharded weights and gradients more per rank, a third of the collectives and
# of FSDP's per-unit host work: on one H200 the 350M model at micro-batch 8 was host-bound).
FsdpGradSync = Literal["every", "last"]
FSDP_GRAD_SYNCS: tuple[str, ...] = typing.get_args(FsdpGradSync)


@dataclass(frozen=True)
class ParallelConfig:
    tp: int = 1  # tensor-parallel degree (Megatron-LM §3): splits heads, FFN, vocab
    pp: int = 1  # pipeline stages across ranks
    dp: int = 1  # data-parallel ranks: each runs global_batch / dp sequences a step
    dp_shard: DpShard = "zero1"  # how dp shares the model states: none | zero1 | fsdp (FSDP2)
    dp_replicate: int = 1  # fsdp only: copies of the sharded states (HSDP); shards over dp / dp_replicate
    fsdp_grad_sync: FsdpGradSync = "every"  # fsdp only: reduce-scatter every micro-batch, or the last only
    virtual_stages: int = 1  # pipeline stages per pp rank (> 1 needs interleaved_1f1b)
    schedule: Schedule = "1f1b"  # pipeline schedule
    sequence_parallel: bool = False  # shard LayerNorm/dropout activations over tp along the sequence
    recompute: RecomputeMode = "none"  # activation recomputation per block (train.parallel.ac)

    @property
    def world_size(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def num_stages(self) -> int:
        return self.pp * self.virtual_stages

    @property
    def shard_degree(self) -> int:
        """Ranks one copy of the dp-sharded states is split over (ZeRO-1: optimizer only; none:
        nothing is sharded, the mesh's dp_shard dimension only numbers the replicas)."""
        return max(1, self.dp // max(1, self.dp_replicate))


class LayoutError(Refusal):
    """A parallel layout that cannot run this model / batch; the message lists every problem."""


def at_world_size(par: ParallelConfig, world_size: int) -> ParallelConfig:
    """``par`` with dp = ``world_size / (tp * pp)``: the layout an elastic run (``ray.min_workers``)
    takes on the workers it got; tensor and pipeline groups never change size, only dp does."""
    group = par.tp * par.pp
    if world_size < group or world_size % group:
        raise LayoutError(
            f"{world_size} workers do not form whole tp*pp = {par.tp}*{par.pp} = {group} groups: "
            f"an elastic run needs a worker count that is a multiple of {group}"
        )
    return dataclasses.replace(par, dp=world_size // group)


def elastic_problems(
    par: ParallelConfig, model: ModelConfig, min_workers: int, global_batch: int, micro_batch: int
) -> list[str]:
    """What is wrong with letting a run at layout ``par`` shrink to ``min_workers`` workers. Ray
    Train V2 starts any worker count between the minimum and the maximum that the cluster has room
    for, not whole tp*pp groups, so only pure data parallelism can shrink (tp = pp = 1); every dp
    from ``min_workers`` to ``par.dp`` must split the batch (and the HSDP replicas) as ``par.dp`` does."""
    if not 1 <= min_workers <= par.world_size:
        return [
            f"ray.min_workers={min_workers} must be between 1 and the layout's {par.world_size} workers "
            "(0: not elastic)"
        ]
    if par.tp * par.pp > 1 and min_workers < par.world_size:
        return [
            f"an elastic run needs tp = pp = 1, not tp={par.tp} pp={par.pp}: Ray Train starts any worker "
            f"count between ray.min_workers={min_workers} and {par.world_size}, which need not be whole "
            f"tp*pp = {par.tp * par.pp} groups"
        ]
    problems = []
    for dp in range(min_workers, par.dp):
        smaller = dataclasses.replace(par, dp=dp)
        problems += [
            f"at dp={dp}: {p}" for p in layout_problems(smaller, model, smaller.world_size, global_batch, micro_batch)
        ]
    return problems


def layout_problems(
    par: ParallelConfig, model: ModelConfig, world_size: int, global_batch: int, micro_batch: int
) -> list[str]:
    """Everything wrong with running ``model`` at layout ``par`` on ``world_size`` ranks, each with
    its fix; empty when it can run. (The planner's ``partition_problems`` asks the same of a
    cluster that does not exist yet, memory aside.)"""
    degrees = {
        "tp": par.tp,
        "pp": par.pp,
        "dp": par.dp,
        "dp_replicate": par.dp_replicate,
        "virtual_stages": par.virtual_stages,
        "micro_batch": micro_batch,
        "global_batch": global_batch,
    }
    bad = [f"{k} must be >= 1, got {v}" for k, v in degrees.items() if v < 1]
    if bad:
        return bad
    p: list[str] = []
    if par.world_size != world_size:
        p.append(f"tp*pp*dp = {par.tp}*{par.pp}*{par.dp} = {par.world_size} does not equal the world size {world_size}")
    if par.schedule not in SCHEDULES:
        p.append(f"unknown pipeline schedule {par.schedule!r}; choose from {', '.join(SCHEDULES)}")
    if par.virtual_stages > 1 and par.schedule != "interleaved_1f1b":
        p.append(f"virtual_stages={par.virtual_stages} needs schedule 'interleaved_1f1b', not {par.schedule!r}")
    if par.virtual_stages > 1 and par.pp == 1:
        p.append(f"virtual_stages={par.virtual_stages} needs pp > 1")
    if par.recompute not in RECOMPUTE_MODES:
        p.append(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {par.recompute!r}")
    p += _dp_problems(par)
    p += _tp_problems(par, model)
    if model.n_layers % par.num_stages:
        p.append(
            f"n_layers={model.n_layers} does not divide into pp*virtual_stages = "
            f"{par.pp}*{par.virtual_stages} = {par.num_stages} pipeline stages"
        )
    p += _batch_problems(par, global_batch, micro_batch)
    return p


def _dp_problems(par: ParallelConfig) -> list[str]:
    if par.dp_shard not in DP_SHARDS:
        return [f"dp_shard must be one of {', '.join(DP_SHARDS)}, got {par.dp_shard!r}"]
    if par.dp % par.dp_replicate:
        return [f"dp={par.dp} does not split into dp_replicate={par.dp_replicate} replica groups"]
    if par.dp_replicate > 1 and par.dp_shard != "fsdp":
        return [
            f"dp_replicate={par.dp_replicate} (HSDP) needs dp_shard='fsdp'; ZeRO-1 shards over all of dp, "
            "none over nothing"
        ]
    if par.fsdp_grad_sync not in FSDP_GRAD_SYNCS:
        return [f"fsdp_grad_sync must be one of {', '.join(FSDP_GRAD_SYNCS)}, got {par.fsdp_grad_sync!r}"]
    if par.fsdp_grad_sync != "every" and par.dp_shard != "fsdp":
        return [
            f"fsdp_grad_sync={par.fsdp_grad_sync!r} needs dp_shard='fsdp' ({par.dp_shard} reduces once a step already)"
        ]
    if par.fsdp_grad_sync != "every" and par.pp > 1:
        return [
            f"fsdp_grad_sync={par.fsdp_grad_sync!r} does nothing with pp={par.pp}: a pipeline stage stays "
            "gathered across the micro-batches and reduces once a step already; leave it 'every'"
        ]
    return []


def _tp_problems(par: ParallelConfig, model: ModelConfig) -> list[str]:
    t, p = par.tp, []
    if model.n_heads % t:
        p.append(f"n_heads={model.n_heads} does not divide by tp={t} (each tp rank runs whole heads)")
    if model.ffn_dim % t:
        p.append(f"ffn_dim={model.ffn_dim} does not divide by tp={t}")
    if model.padded_vocab % t:
        p.append(
            f"vocabulary {model.vocab_size} padded to a multiple of {model.vocab_multiple} = "
            f"{model.padded_vocab} rows does not divide by tp={t}; set model.vocab_multiple to a "
            f"multiple of {t} (Megatron-LM uses 128*tp)"
        )
    if model.dropout > 0 and t > 1:
        p.append(
            f"dropout={model.dropout} with tp={t} is not supported: tp ranks would draw different "
            f"masks for the activations they replicate; use dropout=0"
        )
    if par.sequence_parallel and model.seq_len % t:
        p.append(f"sequence parallel needs seq_len={model.seq_len} divisible by tp={t}")
    return p


def _batch_problems(par: ParallelConfig, global_batch: int, micro_batch: int) -> list[str]:
    if global_batch % (par.dp * micro_batch):
        return [
            f"global_batch={global_batch} sequences do not split into dp={par.dp} replicas of "
            f"micro-batches of {micro_batch}"
        ]
    m = num_microbatches(par, global_batch, micro_batch)
    if par.pp > 1 and m < par.pp:
        return [
            f"{m} micro-batches per step < pp={par.pp}: the pipeline could never fill; "
            f"raise global_batch or lower micro_batch"
        ]
    rounds = max(1, m // par.pp)
    if par.schedule == "interleaved_1f1b" and par.pp > 1 and m % rounds:
        return [
            f"interleaved 1F1B runs {m} micro-batches in {rounds} rounds of pp={par.pp}: "
            f"the micro-batch count must divide by the round count"
        ]
    return []


def num_microbatches(par: ParallelConfig, global_batch: int, micro_batch: int) -> int:
    """Micro-batches each dp replica runs per optimizer step."""
    return global_batch // (par.dp * micro_batch)


def validate(par: ParallelConfig, model: ModelConfig, world_size: int, global_batch: int, micro_batch: int) -> None:
    problems = layout_problems(par, model, world_size, global_batch, micro_batch)
    if problems:
        raise LayoutError("invalid parallel layout:\n  - " + "\n  - ".join(problems))
