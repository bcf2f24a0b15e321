"""Layout planner: rank (tp, pp, dp, micro-batches) by predicted step time, from closed-form formulas.

Pure Python (no torch): every number comes from a published formula, cited where it is used. The
model is the ``ModelConfig`` that ``train.model`` builds (``train.shapes``, with its presets): in
the formulas h = dim, a = n_heads, f = ffn_dim, l = n_layers, s = seq_len, V = vocab_size.

* Parameters per layer 4h² + 2hf + 9h + f (= 12h² + 13h for f = 4h) and vocabulary padding to a
  multiple of 128·tp: Megatron-LM (Shoeybi et al. 2019; ``_vocab_size_with_padding``).
* FLOPs per iteration, eq. 3 of Narayanan et al. 2021 ("Efficient Large-Scale Language Model
  Training on GPU Clusters Using Megatron-LM"): 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) with full
  recomputation. Without it the blocks drop to 72·…, but the logit term stays 6·B·s·h·V (it was
  never recomputed); ``layer_flops`` + ``logit_flops`` are the same sum written per layer.
* Pipeline bubble (p−1)/m for GPipe / 1F1B, (p−1)/(v·m) interleaved (Narayanan et al. 2021 §2.2).
* Activation bytes per layer (Korthikanti et al. 2022, "Reducing Activation Recomputation in
  Large Transformer Models", Table 2): s·b·h·(34 + 5as/h) unparallelised, ÷t with tensor +
  sequence parallelism, s·b·h·(10 + 24/t + 5as/(ht)) with tensor parallelism alone; selective
  recomputation drops the 5as/h term; full recomputation keeps the 2·s·b·h layer input. The first
  1F1B stage holds p micro-batches, × (1 + (p−1)/(p·v)) interleaved (their §4.2.3).
* Model states, mixed-precision Adam (Rajbhandari et al. 2019, ZeRO §3): 2 + 2 + 12 bytes per
  parameter, 2 + 2 + 12/d with the optimizer state sharded over dp (ZeRO-1, PanGu-α's optimizer
  model parallelism; ``parallel.dp_shard = "zero1"``), 2 + 2 + 12 unsharded (``"none"``). FSDP2
  (``"fsdp"``, ZeRO stage 3): 12/d (fp32 master shard + Adam moments)
  + 4/d (fp32 reduced gradient shards), plus the bf16 weights and gradients of what is gathered
  at once (ours, from how ``train.parallel.fsdp`` shards: without pipelining two blocks' weights,
  the running one and the prefetched next, and one block's gradients; with pipelining the whole
  stage, which stays gathered across micro-batches, gradients accumulated unsharded). Its dp
  traffic is 1.5 all-reduces (ZeRO §7.2.2: all-gather in forward and again in backward,
  reduce-scatter) per micro-batch, one a step with pipelining (gathered once per step).
  ``parallel.fsdp_grad_sync = "last"`` holds the whole stage's bf16 weights and
  its fp32 unsharded gradients across the micro-batches and sends 1.5 all-reduces a step.

A layout is the runtime's own ``[parallel]`` section (``train.layout.ParallelConfig``: degrees,
``dp_shard``, recomputation, virtual stages, sequence parallelism) and the batch its ``[train]``
section's ``global_batch`` and ``micro_batch`` (``train.config.TrainConfig``): the planner reads the
keys a training config sets, and what it ranks is a ``[parallel]`` section ``jobs.train_lm`` runs.

Placement (PanGu-α's topology-aware mapping, as issue 7 states it): ranks are numbered tp
innermost, then pp, then dp, so a tp group is ``tp`` neighbouring ranks (one node when
tp <= gpus_per_node), a pp group spans tp·pp ranks (across nodes) and a dp group the whole job
(across racks). Each group is charged the slowest link it crosses. A tp group wider than a node is
*not* rejected: it is charged inter-node bandwidth, which ranks it below the in-node layouts.

Step time = m·(1 + bubble)·(compute + tp comm + pp comm per micro-batch on the busiest rank)
          + dp_exposed · dp comm (``Cluster.dp_exposed``).
Assumptions (ours): tp all-reduces and pp sends sit on the critical path (not overlapped); the dp
gradient reduce-scatter / parameter all-gather overlaps with the backward pass except the
``dp_exposed`` fraction; stages are balanced except the last, which also runs the logits (and the
PanGu-α query layer).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Iterator

from train.config import TrainConfig
from train.layout import ParallelConfig, layout_problems
from train.shapes import ModelConfig, RecomputeMode, padded_vocab

GIB = 2**30
BYTES_ACT = 2  # bf16/fp16 activations, parameters and gradients
VOCAB_DIVISOR = 128  # Megatron's --make-vocab-size-divisible-by (times tp)


@dataclass(frozen=True)
class Cluster:
    gpus: int = 64
    gpus_per_node: int = 8
    nodes_per_rack: int = 4  # ours: 4 DGX-class nodes per rack
    gpu_mem_gb: float = 80.0  # GiB of device memory per GPU
    peak_tflops: float = 312.0  # A100 dense bf16
    efficiency: float = 0.6  # ours: matmul fraction of peak, before bubble and exposed comm
    intra_node_gbps: float = 300.0  # GB/s per GPU, one direction (A100 NVLink 3: 600 GB/s both ways)
    inter_node_gbps: float = 25.0  # GB/s per GPU: one 200 Gb/s HDR InfiniBand NIC per GPU
    inter_rack_gbps: float = 12.5  # GB/s per GPU across the rack spine (ours: 2:1 oversubscribed)
    overhead_gb: float = 2.0  # ours: CUDA context, NCCL buffers, allocator fragmentation
    dp_exposed: float = 0.3  # ours: fraction of dp traffic not hidden behind the backward

    def __post_init__(self):
        for name in ("gpus", "gpus_per_node", "nodes_per_rack"):
            if getattr(self, name) < 1:
                raise ValueError(f"cluster {name} must be >= 1, got {getattr(self, name)}")
        if not 0 < self.efficiency <= 1:
            raise ValueError(f"efficiency must be in (0, 1], got {self.efficiency}")
        if not 0 <= self.dp_exposed <= 1:
            raise ValueError(f"dp_exposed must be in [0, 1], got {self.dp_exposed}")


# What a plan assumes where it says nothing: training at scale as Megatron-LM does it (global batch
# 512 in micro-batches of 1; selective recomputation with sequence parallelism, Korthikanti et al.),
# the optimizer state sharded over dp (ZeRO-1). The runtime's own defaults are the tiny model's.
PLAN_TRAIN = TrainConfig(global_batch=512, micro_batch=1)
PLAN_PARALLEL = ParallelConfig(recompute="selective", sequence_parallel=True)


def parse_degrees(text: str) -> dict[str, int]:
    """``"8,2,4"`` -> {"tp": 8, "pp": 2, "dp": 4}, for ``dataclasses.replace`` on a ``ParallelConfig``."""
    try:
        tp, pp, dp = (int(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"a layout is 'tp,pp,dp' (three integers), got {text!r}") from None
    return {"tp": tp, "pp": pp, "dp": dp}


@dataclass(frozen=True)
class Memory:
    """GiB per GPU on the worst pipeline stage."""

    weights: float
    grads: float
    optimizer: float
    activations: float
    overhead: float
    stage: str  # "first" or "last"

    @property
    def total(self) -> float:
        return self.weights + self.grads + self.optimizer + self.activations + self.overhead


@dataclass(frozen=True)
class Estimate:
    layout: ParallelConfig
    micro_batches: int
    problems: tuple[str, ...]
    step_s: float = math.nan
    tokens_per_s: float = math.nan
    mfu: float = math.nan
    bubble: float = math.nan
    memory: Memory | None = None
    comm_gb: dict = field(default_factory=dict)  # GB sent per GPU per step: tp, pp, dp
    comm_s: dict = field(default_factory=dict)  # exposed seconds per step: tp, pp, dp
    links: dict = field(default_factory=dict)  # the link each group is charged: tp, pp, dp

    @property
    def feasible(self) -> bool:
        return not self.problems


# ---- formulas -------------------------------------------------------------------------------


def vocab_rows(model: ModelConfig, tp: int) -> int:
    """Embedding rows as Megatron pads them: to a multiple of 128·tp (whatever model.vocab_multiple says)."""
    return padded_vocab(model.vocab_size, VOCAB_DIVISOR * tp)


def layer_params(model: ModelConfig) -> int:
    """Attention 4h² + 4h, MLP 2hf + f + h, two LayerNorms 4h: 12h² + 13h when f = 4h (Megatron)."""
    h, f = model.dim, model.ffn_dim
    return 4 * h * h + 2 * h * f + 9 * h + f


def total_params(model: ModelConfig, tp: int = 1) -> int:
    """Blocks + token (V·h, tied with the output) and position (s·h) embeddings + final LayerNorm,
    + the PanGu-α query layer and its query-position embedding when present."""
    h = model.dim
    n = model.n_layers * layer_params(model) + vocab_rows(model, tp) * h + model.seq_len * h + 2 * h
    if model.query_layer:
        n += layer_params(model) + model.seq_len * h
    return n


def layer_flops(model: ModelConfig, b: int) -> float:
    """Forward matmul FLOPs of one block for b sequences: 8bsh² + 4bshf + 4bs²h (= 24bsh²(1 + s/6h)
    for f = 4h, the per-layer part of Narayanan et al. eq. 3)."""
    s, h = model.seq_len, model.dim
    return 8 * b * s * h * h + 4 * b * s * h * model.ffn_dim + 4 * b * s * s * h


def layer_flops_trained(model: ModelConfig, b: int, recompute: RecomputeMode) -> float:
    """Forward + backward (2×) of one block, + the recomputed forward (full) or the recomputed
    attention core QKᵀ·softmax·V (selective, Korthikanti et al. §5)."""
    extra = {"none": 0.0, "selective": 4 * b * model.seq_len**2 * model.dim, "full": layer_flops(model, b)}[recompute]
    return 3 * layer_flops(model, b) + extra


def logit_flops(model: ModelConfig, b: int, rows: int) -> float:
    """Output layer 2bshV forward (V = ``rows``, the padded vocabulary), × 3 with its backward
    (never recomputed): the 6BshV of eq. 3."""
    return 6 * b * model.seq_len * model.dim * rows


def flops_per_iteration(model: ModelConfig, batch: int, recompute: RecomputeMode = "none", tp: int = 1) -> float:
    """Narayanan et al. 2021 eq. 3 for ``batch`` sequences (96·… with full recompute; without it
    72·B·s·l·h²·(1 + s/6h) + 6·B·s·h·V), generalised to f != 4h and the query layer."""
    blocks = model.n_layers + model.query_layer
    return blocks * layer_flops_trained(model, batch, recompute) + logit_flops(model, batch, vocab_rows(model, tp))


def bubble_fraction(pp: int, micro_batches: int, virtual_stages: int = 1) -> float:
    """Idle time over useful time: (p−1)/m for GPipe/1F1B, (p−1)/(v·m) interleaved."""
    return (pp - 1) / (virtual_stages * micro_batches)


def activation_bytes_per_layer(model: ModelConfig, b: int, tp: int, recompute: RecomputeMode, sp: bool) -> float:
    """Korthikanti et al. 2022 Table 2 per block, with the MLP's 19 written 3 + 4f/h so f != 4h works:
    replicated 10·sbh (LayerNorm inputs, dropout masks, qkv/fc1 inputs) unless sequence-parallel,
    sharded (8 + 4f/h)·sbh, attention scores 5as²b (dropped by selective recompute)."""
    s, h, a = model.seq_len, model.dim, model.n_heads
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / (tp if sp else 1)  # only the block input is kept
    replicated = 10 * sbh / (tp if sp else 1)
    sharded = (8 + 4 * model.ffn_dim / h) * sbh / tp
    scores = 0.0 if recompute == "selective" else 5 * a * s * s * b / tp
    return replicated + sharded + scores


def in_flight(pp: int, micro_batches: int, virtual_stages: int, schedule: str = "1f1b") -> float:
    """Micro-batches whose activations the first stage holds: p for 1F1B, m for GPipe (every forward
    before the first backward), × (1 + (p−1)/(p·v)) when interleaved (Korthikanti et al. §4.2.3)."""
    if schedule == "gpipe" and pp > 1:
        return micro_batches
    n = min(pp, micro_batches)
    return n * (1 + (pp - 1) / (pp * virtual_stages)) if virtual_stages > 1 else n


# ---- placement ------------------------------------------------------------------------------


def link(span: int, cluster: Cluster) -> tuple[str, float]:
    """Slowest link (name, GB/s per GPU) inside a group of ``span`` consecutive ranks."""
    node = cluster.gpus_per_node
    rack = node * cluster.nodes_per_rack
    if span <= 1:
        return "-", math.inf
    if span <= node and node % span == 0:
        return "nvlink", cluster.intra_node_gbps
    if span <= rack and rack % span == 0:
        return "ib", cluster.inter_node_gbps
    return "rack", cluster.inter_rack_gbps


def ring_factor(n: int) -> float:
    """Bytes each rank sends per byte of an all-reduce (2(n−1)/n) on a ring of n."""
    return 2 * (n - 1) / n


# ---- evaluation -----------------------------------------------------------------------------


def partition_problems(model: ModelConfig, cluster: Cluster, train: TrainConfig, par: ParallelConfig) -> list[str]:
    """Why the GPUs, the model and the batch do not split into ``par``: the runtime's own checks
    (``train.layout.layout_problems``) on the cluster's GPU count, so every layout the planner
    accepts is one the runtime accepts (memory is checked later, in ``evaluate``)."""
    return layout_problems(par, model, cluster.gpus, train.global_batch, train.micro_batch)


def stage_memory(model: ModelConfig, cluster: Cluster, train: TrainConfig, par: ParallelConfig, m: int) -> Memory:
    """Model states + activations of the first and the last stage; the larger one."""
    t, p, b, sp = par.tp, par.pp, train.micro_batch, par.sequence_parallel
    h, s = model.dim, model.seq_len
    per_rank = model.n_layers // p
    emb = vocab_rows(model, t) * h / t
    query = (layer_params(model) / t + s * h) if model.query_layer else 0.0
    per_layer = activation_bytes_per_layer(model, b, t, par.recompute, sp)
    working = (
        activation_bytes_per_layer(model, b, t, "none", sp) if par.recompute == "full" else 0.0
    )  # one block re-run during its backward
    logits = 4 * s * b * vocab_rows(model, t) / t  # fp32 logits for the loss (ours)
    blocks = per_rank * layer_params(model) / t
    first_params = blocks + emb + s * h
    last_params = blocks + emb + 2 * h + query  # tied output copy on the last stage
    first_act = in_flight(p, m, par.virtual_stages, par.schedule) * per_rank * per_layer + working
    last_act = (per_rank + model.query_layer) * per_layer + logits + working
    if p == 1:
        first_params = first_params + 2 * h + query
        first_act = first_act + logits + model.query_layer * per_layer
        last_params, last_act = first_params, first_act
    block = layer_params(model) / t
    stages = [
        states_memory(params, block, par) + (act, name)
        for name, params, act in (("first", first_params, first_act), ("last", last_params, last_act))
    ]
    weights, grads, optimizer, act, name = max(stages, key=lambda m: m[0] + m[1] + m[2] + m[3])
    return Memory(
        weights=weights / GIB,
        grads=grads / GIB,
        optimizer=optimizer / GIB,
        activations=act / GIB,
        overhead=cluster.overhead_gb,
        stage=name,
    )


def states_memory(params: float, block: float, par: ParallelConfig) -> tuple[float, float, float]:
    """Bytes of (weights, gradients, optimizer state) for a stage of ``params`` parameters per
    rank whose blocks hold ``block`` each, as ``par.dp_shard`` shares them over dp (module docstring)."""
    d = par.dp
    if par.dp_shard == "fsdp" and par.fsdp_grad_sync == "last" and par.pp == 1:
        return 2 * params, 4 * params / d + 4 * params, 12 * params / d  # gathered weights, fp32 unsharded grads
    if par.dp_shard == "fsdp":
        gathered = params if par.pp > 1 else 2 * block  # bf16 weights held unsharded at once
        grads = params if par.pp > 1 else block  # bf16 gradients before the reduce-scatter
        return 2 * gathered, 4 * params / d + 2 * grads, 12 * params / d
    return 2 * params, 2 * params, 12 * params / (d if par.dp_shard == "zero1" else 1)


def params_on_busiest_rank(model: ModelConfig, par: ParallelConfig) -> float:
    h = model.dim
    blocks = (model.n_layers // par.pp + model.query_layer) * layer_params(model) / par.tp
    return blocks + vocab_rows(model, par.tp) * h / par.tp


def comm_bytes(model: ModelConfig, train: TrainConfig, par: ParallelConfig, m: int) -> dict:
    """Bytes each GPU sends per step. tp: 4 all-reduces of the (b, s, h) activations per block
    (Megatron-LM §3; 2 more with full recompute's re-run forward; all-gather + reduce-scatter under
    sequence parallelism send the same); pp: one activation forward + one gradient backward per
    micro-batch and virtual stage, 1/tp of it with Megatron's scatter/gather; dp: reduce-scatter
    of the gradients + all-gather of the parameters (= one all-reduce) of this rank's parameters."""
    t, p, d, b = par.tp, par.pp, par.dp, train.micro_batch
    act = BYTES_ACT * b * model.seq_len * model.dim
    blocks = model.n_layers // p + model.query_layer
    n_allreduce = 6 if par.recompute == "full" else 4
    tp = m * blocks * n_allreduce * ring_factor(t) * act if t > 1 else 0.0
    pp = m * par.virtual_stages * 2 * act / t if p > 1 else 0.0
    dp = ring_factor(d) * BYTES_ACT * params_on_busiest_rank(model, par) if d > 1 else 0.0
    if par.dp_shard == "fsdp" and p == 1:  # all-gather before forward and again before backward, then reduce-scatter
        dp *= 1.5 * (m if par.fsdp_grad_sync == "every" else 1)  # every micro-batch, or once a step
    return {"tp": tp, "pp": pp, "dp": dp}


def busiest_rank_flops(model: ModelConfig, train: TrainConfig, par: ParallelConfig) -> float:
    """FLOPs per micro-batch on the slowest rank: the last stage, which adds logits (+ query layer)."""
    b = train.micro_batch
    blocks = model.n_layers // par.pp + model.query_layer
    flops = blocks * layer_flops_trained(model, b, par.recompute)
    return (flops + logit_flops(model, b, vocab_rows(model, par.tp))) / par.tp


def evaluate(model: ModelConfig, cluster: Cluster, train: TrainConfig, par: ParallelConfig) -> Estimate:
    """Predicted step time, memory, bubble and communication of layout ``par`` (the runtime's
    ``[parallel]`` section) for ``train``'s batch, with every problem."""
    problems = partition_problems(model, cluster, train, par)
    if problems:
        m = train.global_batch // max(1, par.dp * train.micro_batch)
        return Estimate(layout=par, micro_batches=m, problems=tuple(problems))
    m = train.global_batch // (par.dp * train.micro_batch)
    groups = {"tp": (par.tp, par.tp), "pp": (par.pp, par.tp * par.pp), "dp": (par.dp, cluster.gpus)}
    links = {k: link(span, cluster) if size > 1 else ("-", math.inf) for k, (size, span) in groups.items()}
    sent = comm_bytes(model, train, par, m)
    secs = {k: sent[k] / (links[k][1] * 1e9) if sent[k] else 0.0 for k in sent}
    secs["dp"] *= cluster.dp_exposed
    per_mb = busiest_rank_flops(model, train, par) / (cluster.peak_tflops * 1e12 * cluster.efficiency)
    per_mb += (secs["tp"] + secs["pp"]) / m
    bubble = bubble_fraction(par.pp, m, par.virtual_stages)
    step = m * (1 + bubble) * per_mb + secs["dp"]
    model_flops = flops_per_iteration(model, train.global_batch, "none", par.tp)
    mem = stage_memory(model, cluster, train, par, m)
    if mem.total > cluster.gpu_mem_gb:
        problems.append(
            f"memory: {mem.total:.1f} GiB per GPU on the {mem.stage} stage > {cluster.gpu_mem_gb:g} GiB "
            f"(weights {mem.weights:.1f} + grads {mem.grads:.1f} + optimizer {mem.optimizer:.1f} "
            f"+ activations {mem.activations:.1f} + overhead {mem.overhead:.1f})"
        )
    return Estimate(
        layout=par,
        micro_batches=m,
        problems=tuple(problems),
        step_s=step,
        tokens_per_s=train.global_batch * model.seq_len / step,
        mfu=model_flops / (step * cluster.gpus * cluster.peak_tflops * 1e12),
        bubble=bubble,
        memory=mem,
        comm_gb={k: v / 1e9 for k, v in sent.items()},
        comm_s=secs,
        links={k: v[0] for k, v in links.items()},
    )


def divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def candidate_layouts(model: ModelConfig, cluster: Cluster, par: ParallelConfig) -> Iterator[ParallelConfig]:
    """``par`` at every (tp, pp, dp) with tp·pp·dp = gpus, tp dividing the heads and pp·v dividing
    the layers (its other keys, ``dp_shard``, recomputation…, as given)."""
    for t in divisors(cluster.gpus):
        if model.n_heads % t:
            continue
        for p in divisors(cluster.gpus // t):
            if model.n_layers % (p * par.virtual_stages) == 0:
                yield dataclasses.replace(par, tp=t, pp=p, dp=cluster.gpus // (t * p))


def plan(
    model: ModelConfig, cluster: Cluster, train: TrainConfig, par: ParallelConfig = PLAN_PARALLEL
) -> tuple[list[Estimate], list[Estimate]]:
    """(feasible layouts fastest first, infeasible layouts with their problems); ``par``'s degrees
    are ignored, its other keys are every candidate's."""
    estimates = [evaluate(model, cluster, train, lay) for lay in candidate_layouts(model, cluster, par)]
    feasible = sorted((e for e in estimates if e.feasible), key=lambda e: e.step_s)
    return feasible, [e for e in estimates if not e.feasible]
