"""Plan a (tp, pp, dp, micro-batches) layout: rank them by predicted step time, or check one.

    python -m jobs.plan_layout --model 13b --gpus 64 --gpus-per-node 8 --gpu-mem-gb 80
    python -m jobs.plan_layout --model 200b --gpus 2048 --gpu-mem-gb 32 --peak-tflops 256 \\
        --recompute full --global-batch 512 --check 8,16,16
    python -m jobs.plan_layout --layers 76 --hidden 16384 --heads 128 --ffn 65536 --no-query-layer \\
        --vocab 53005 --seq 2048 --gpus 2128 --global-batch 3360 --dp-shard none --recompute full \\
        --check 8,38,7 --json

Every flag is a shorthand for ``--set section.key=value`` on the config tree below (sections
[model], [parallel], [train], [cluster]; ``--config plan.toml`` loads one), so a plan can be kept as
TOML. [model], [parallel] and [train] are the sections ``jobs.train_lm`` reads, in its vocabulary:
[model] is ``train.shapes.ModelConfig``, ``preset`` (default 13B) and any field replacing the
preset's (``--layers`` = ``model.n_layers``, ``--hidden`` = ``model.dim``, ``--heads`` =
``model.n_heads``, ``--ffn`` = ``model.ffn_dim``, ``--vocab`` = ``model.vocab_size``); [parallel]
is ``train.layout.ParallelConfig`` (``--dp-shard`` none | zero1 | fsdp, ``--recompute``,
``--virtual-stages`` with ``--schedule interleaved_1f1b``; its tp, pp, dp are what the planner
chooses, or ``--check``); of [train] (``train.config.TrainConfig``) the planner reads the batch
sizes. The formulas, their sources and the overlap assumptions are in ``train/planner.py``.
Output: a ranked table (or ``--json``); ``--check`` exits 0 when the layout is feasible, 1 when it
is not (with every reason), 2 on invalid input.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
from dataclasses import dataclass, field
from typing import ClassVar

from jobs.config import ConfigError, load_config
from train.config import TrainConfig
from train.layout import ParallelConfig
from train.planner import (
    PLAN_PARALLEL,
    PLAN_TRAIN,
    Cluster,
    Estimate,
    evaluate,
    flops_per_iteration,
    parse_degrees,
    plan,
    total_params,
)
from train.shapes import ModelConfig


@dataclass(frozen=True)
class PlanLayoutConfig:
    # Keys that were the planner's own spellings before [model], [parallel] and [train] became the
    # training job's sections (training.zero 0 | 1 | 3 is parallel.dp_shard none | zero1 | fsdp).
    RENAMED: ClassVar[dict[str, str]] = {
        "model.layers": "model.n_layers",
        "model.hidden": "model.dim",
        "model.heads": "model.n_heads",
        "model.ffn": "model.ffn_dim",
        "model.vocab": "model.vocab_size",
        "training.zero": "parallel.dp_shard",
        "training.recompute": "parallel.recompute",
        "training.virtual_stages": "parallel.virtual_stages",
        "training.sequence_parallel": "parallel.sequence_parallel",
        "training.fsdp_grad_sync": "parallel.fsdp_grad_sync",
        "training.global_batch": "train.global_batch",
        "training.micro_batch": "train.micro_batch",
        "training.dp_exposed": "cluster.dp_exposed",
    }
    model: ModelConfig = field(default_factory=lambda: ModelConfig.from_preset("13B"))
    parallel: ParallelConfig = PLAN_PARALLEL  # tp, pp, dp: chosen by the planner (or --check)
    train: TrainConfig = PLAN_TRAIN  # the planner reads global_batch and micro_batch
    cluster: Cluster = field(default_factory=Cluster)
    top: int = 10  # rows of the ranked table


# flag -> (config key, type); each given flag becomes a --set override
FLAGS = {
    "--model": ("model.preset", str),
    "--layers": ("model.n_layers", int),
    "--hidden": ("model.dim", int),
    "--heads": ("model.n_heads", int),
    "--ffn": ("model.ffn_dim", int),
    "--vocab": ("model.vocab_size", int),
    "--seq": ("model.seq_len", int),
    "--seq-len": ("model.seq_len", int),
    "--gpus": ("cluster.gpus", int),
    "--gpus-per-node": ("cluster.gpus_per_node", int),
    "--nodes-per-rack": ("cluster.nodes_per_rack", int),
    "--gpu-mem-gb": ("cluster.gpu_mem_gb", float),
    "--peak-tflops": ("cluster.peak_tflops", float),
    "--efficiency": ("cluster.efficiency", float),
    "--intra-node-gbps": ("cluster.intra_node_gbps", float),
    "--inter-node-gbps": ("cluster.inter_node_gbps", float),
    "--inter-rack-gbps": ("cluster.inter_rack_gbps", float),
    "--dp-exposed": ("cluster.dp_exposed", float),
    "--global-batch": ("train.global_batch", int),
    "--micro-batch": ("train.micro_batch", int),
    "--dp-shard": ("parallel.dp_shard", str),
    "--fsdp-grad-sync": ("parallel.fsdp_grad_sync", str),
    "--recompute": ("parallel.recompute", str),
    "--virtual-stages": ("parallel.virtual_stages", int),
    "--schedule": ("parallel.schedule", str),
    "--zero": ("training.zero", int),  # refused: --dp-shard (load)
    "--top": ("top", int),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="jobs.plan_layout", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for flag, (key, tp) in FLAGS.items():
        p.add_argument(flag, dest=key, type=tp, default=argparse.SUPPRESS, metavar=key.split(".")[-1].upper())
    p.add_argument(
        "--no-sequence-parallel",
        dest="parallel.sequence_parallel",
        action="store_false",
        default=argparse.SUPPRESS,
        help="tensor parallelism without sequence parallelism",
    )
    p.add_argument(
        "--query-layer",
        dest="model.query_layer",
        action=argparse.BooleanOptionalAction,
        default=argparse.SUPPRESS,
        help="PanGu-α query layer on top of the blocks (the presets have it)",
    )
    p.add_argument("--config", default=None, help="TOML config (sections [model], [parallel], [train], [cluster])")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="e.g. --set cluster.inter_node_gbps=50 --set cluster.dp_exposed=0.5",
    )
    p.add_argument("--check", default=None, metavar="TP,PP,DP", help="evaluate this one layout; exit 1 if infeasible")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    return p.parse_args(argv)


def load(args: argparse.Namespace) -> PlanLayoutConfig:
    if "training.zero" in vars(args):
        raise ConfigError("--zero was replaced by --dp-shard (ZeRO stage 0: none, 1: zero1, 3: fsdp)")
    flags = [f"{k}={json.dumps(v)}" for k, v in vars(args).items() if "." in k or k == "top"]
    return load_config(PlanLayoutConfig, args.config, flags + args.overrides)


def to_json(e: Estimate) -> dict:
    d = dataclasses.asdict(e)
    d["layout"] = {"tp": e.layout.tp, "pp": e.layout.pp, "dp": e.layout.dp}
    if e.memory is not None:
        d["memory"]["total"] = e.memory.total
    d["feasible"] = e.feasible
    return d


HEADER = (
    f"{'tp':>3} {'pp':>3} {'dp':>4} {'m':>5} {'step s':>8} {'tokens/s':>9} {'MFU':>5} "
    f"{'w+g':>5} {'opt':>5} {'act':>5} {'mem GiB':>7} {'bubble':>6}  {'comm GB tp/pp/dp':>18}  links tp/pp/dp"
)


def row(e: Estimate) -> str:
    m, c = e.memory, e.comm_gb
    return (
        f"{e.layout.tp:>3} {e.layout.pp:>3} {e.layout.dp:>4} {e.micro_batches:>5} {e.step_s:>8.2f} "
        f"{e.tokens_per_s:>9.0f} {e.mfu:>5.1%} {m.weights + m.grads:>5.1f} {m.optimizer:>5.1f} "
        f"{m.activations:>5.1f} {m.total:>7.1f} {e.bubble:>6.1%}  "
        f"{c['tp']:>6.1f}/{c['pp']:>4.1f}/{c['dp']:>5.1f}  {e.links['tp']}/{e.links['pp']}/{e.links['dp']}"
    )


def summary(cfg: PlanLayoutConfig) -> str:
    m, tr, par, cl = cfg.model, cfg.train, cfg.parallel, cfg.cluster
    return (
        f"model: {total_params(m) / 1e9:.2f}B parameters, {m.n_layers} layers, h={m.dim}, "
        f"a={m.n_heads}, f={m.ffn_dim}, V={m.vocab_size}, s={m.seq_len}"
        f"{', query layer' if m.query_layer else ''}\n"
        f"step: {tr.global_batch} sequences = {tr.global_batch * m.seq_len:,} tokens, "
        f"{flops_per_iteration(m, tr.global_batch) / 1e15:.1f} PFLOP (eq. 3, no recompute); "
        f"micro-batch {tr.micro_batch}, recompute {par.recompute}, dp_shard {par.dp_shard}, "
        f"v={par.virtual_stages}\n"
        f"cluster: {cl.gpus} GPUs, {cl.gpus_per_node}/node, {cl.nodes_per_rack} nodes/rack, "
        f"{cl.gpu_mem_gb:g} GiB, {cl.peak_tflops:g} TFLOPS x {cl.efficiency:g}"
    )


def reason_kind(problem: str) -> str:
    if problem.startswith("memory"):
        return "memory"
    return "batch" if "micro-batch" in problem or "global_batch" in problem else "shape"


def reason_counts(infeasible: list[Estimate]) -> str:
    kinds = collections.Counter(reason_kind(p) for e in infeasible for p in e.problems)
    return ", ".join(f"{k}: {n}" for k, n in kinds.most_common())


def run_check(cfg: PlanLayoutConfig, text: str, as_json: bool) -> int:
    e = evaluate(cfg.model, cfg.cluster, cfg.train, dataclasses.replace(cfg.parallel, **parse_degrees(text)))
    if as_json:
        print(json.dumps(to_json(e), indent=2))
    else:
        print(summary(cfg))
        if e.memory is not None:
            print(HEADER + "\n" + row(e))
        print("feasible" if e.feasible else "infeasible:\n  - " + "\n  - ".join(e.problems))
    return 0 if e.feasible else 1


def run_plan(cfg: PlanLayoutConfig, as_json: bool) -> int:
    feasible, infeasible = plan(cfg.model, cfg.cluster, cfg.train, cfg.parallel)
    if as_json:
        print(
            json.dumps(
                {"feasible": [to_json(e) for e in feasible[: cfg.top]], "infeasible": [to_json(e) for e in infeasible]},
                indent=2,
            )
        )
    else:
        print(summary(cfg))
        print(
            f"{len(feasible)} feasible, {len(infeasible)} infeasible layouts"
            + (f" ({reason_counts(infeasible)})" if infeasible else "")
        )
        if feasible:
            print(HEADER)
            print("\n".join(row(e) for e in feasible[: cfg.top]))
    return 0 if feasible else 1


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cfg = load(args)
        if args.check:
            return run_check(cfg, args.check, args.json)
        return run_plan(cfg, args.json)
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
