"""Training-step benchmarks for the hybrid-parallel GPT, each against a named anchor.

    python -m bench.bench_train [--parts speed bubble memory] [--dim 256 --layers 4 ...]

speed   tokens/s of ``Trainer.train_step`` at tp = pp = dp = 1 against the anchor: a plain
        single-process GPT defined in this file (nanoGPT's shape: fused qkv, ``torch.optim.AdamW``,
        ``clip_grad_norm_``) of the same size, batch and micro-batches. The two alternate step by
        step so that load from other processes hits both alike. Goal: ratio >= 0.95.
bubble  the idle fraction of each pipeline rank (1 - time inside a stage's forward/backward /
        step time) for GPipe and 1F1B, against the analytic bubble (p - 1) / (m + p - 1), which
        assumes equal stages and free communication: the last stage also runs the output layer
        and the loss, and gloo send/recv counts as idle, so the first rank idles more.
memory  parameter + optimizer-state bytes per rank as tp, pp and dp change, against the ideal
        (the whole model's bytes / (tp * pp) for weights, / (tp * pp * dp) for optimizer state).

Prints one JSON document, then a Markdown table per part. CPU + gloo runs are for shape, not
absolute speed: on a shared 2-core machine the processes of one run compete for the cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn

from bench import harness
from bench.harness import free_port
from train.layout import ParallelConfig
from train.model import ModelConfig, preset
from train.parallel.step import TrainConfig, Trainer
from train.parallel.zero import local_tensor


# ---------------------------------------------------------------- the anchor: a plain GPT
class PlainBlock(nn.Module):
    def __init__(self, dim: int, heads: int, ffn: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc, self.out = nn.Linear(dim, ffn), nn.Linear(ffn, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class PlainGPT(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.tok, self.pos = nn.Embedding(cfg.padded_vocab, cfg.dim), nn.Embedding(cfg.seq_len, cfg.dim)
        n_blocks = cfg.n_layers + (1 if cfg.query_layer else 0)  # same size as ours
        self.blocks = nn.ModuleList(PlainBlock(cfg.dim, cfg.n_heads, cfg.ffn_dim) for _ in range(n_blocks))
        self.ln = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.padded_vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def plain_step_fn(cfg: ModelConfig, tc: TrainConfig):
    torch.manual_seed(tc.seed)
    model = PlainGPT(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, betas=(tc.beta1, tc.beta2), weight_decay=tc.weight_decay)
    m = tc.global_batch // tc.micro_batch

    def step(tokens):
        for mb in tokens.tensor_split(m):
            logits = model(mb[:, :-1])
            (F.cross_entropy(logits.flatten(0, 1), mb[:, 1:].flatten()) / m).backward()
        nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step, sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------- helpers
def _init(rank: int, world: int, port: int, threads: int) -> None:
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)


def _batch(cfg: ModelConfig, tc: TrainConfig, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, cfg.vocab_size, (tc.global_batch, cfg.seq_len + 1), generator=g)


# ---------------------------------------------------------------- speed
def bench_speed(cfg: ModelConfig, tc: TrainConfig, steps: int, threads: int) -> dict:
    _init(0, 1, free_port(), threads)
    try:
        trainer = Trainer(cfg, ParallelConfig(), tc, "cpu")
        plain, plain_params = plain_step_fn(cfg, tc)
        ours_params = sum(local_tensor(p).numel() for _, p in trainer.named_parameters())
        tokens = _batch(cfg, tc)
        wall = {"ours": [], "plain": []}
        cpu = {"ours": [], "plain": []}
        runners = {"ours": trainer.train_step, "plain": plain}
        for i in range(steps + 2):
            for name in ("ours", "plain") if i % 2 else ("plain", "ours"):
                t0, c0 = time.perf_counter(), time.process_time()
                runners[name](tokens)
                if i >= 2:  # two warm-up steps each
                    wall[name].append(time.perf_counter() - t0)
                    cpu[name].append(time.process_time() - c0)
    finally:
        dist.destroy_process_group()
    tok = tc.global_batch * cfg.seq_len
    ours, anchor = (tok / statistics.median(wall[k]) for k in ("ours", "plain"))
    ours_cpu, anchor_cpu = (tok / statistics.median(cpu[k]) for k in ("ours", "plain"))
    return {
        "params_ours": ours_params,
        "params_anchor": plain_params,
        "tokens_per_step": tok,
        "tokens_per_s": round(ours, 1),
        "anchor_tokens_per_s": round(anchor, 1),
        "ratio": round(ours / anchor, 3),
        # CPU time of this process: what other processes on a shared machine disturb least
        "tokens_per_cpu_s": round(ours_cpu, 1),
        "anchor_tokens_per_cpu_s": round(anchor_cpu, 1),
        "ratio_cpu_time": round(ours_cpu / anchor_cpu, 3),
    }


# ---------------------------------------------------------------- pipeline bubble
def _timed(fn, busy: list[float]):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            busy[0] += time.perf_counter() - t0

    return wrapper


def _bubble_worker(rank, world, port, cfg, tc, schedule, steps, threads, out):
    _init(rank, world, port, threads)
    try:
        trainer = Trainer(cfg, ParallelConfig(pp=world, schedule=schedule), tc, "cpu")
        stages = getattr(trainer.schedule, "_stages", None) or [trainer.schedule._stage]
        busy = [0.0]
        for s in stages:
            s.forward_one_chunk = _timed(s.forward_one_chunk, busy)
            s.backward_one_chunk = _timed(s.backward_one_chunk, busy)
        tokens = _batch(cfg, tc)
        trainer.train_step(tokens)  # warm-up (shape inference, first allocations)
        idle = []
        for _ in range(steps):
            busy[0] = 0.0
            dist.barrier()
            t0 = time.perf_counter()
            with trainer._context():
                trainer._forward_backward(tokens[:, :-1], tokens[:, 1:])
            wall = time.perf_counter() - t0
            idle.append(1 - busy[0] / wall)
            for _, p in trainer.named_parameters():  # only the pipeline is timed: drop the grads
                p.grad = None
        torch.save(statistics.median(idle), f"{out}/idle{rank}.pt")
        dist.barrier()
    finally:
        dist.destroy_process_group()


def bench_bubble(
    cfg: ModelConfig, tc: TrainConfig, pp: int, microbatches: list[int], steps: int, threads: int
) -> list[dict]:
    rows = []
    for schedule in ("gpipe", "1f1b"):
        for m in microbatches:
            mtc = TrainConfig(**{**tc.__dict__, "global_batch": m * tc.micro_batch})
            with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as out:
                mp.spawn(_bubble_worker, args=(pp, free_port(), cfg, mtc, schedule, steps, threads, out), nprocs=pp)
                idle = [torch.load(f"{out}/idle{r}.pt") for r in range(pp)]
            rows.append(
                {
                    "schedule": schedule,
                    "pp": pp,
                    "microbatches": m,
                    "idle_fraction": round(statistics.mean(idle), 3),
                    "idle_per_rank": [round(x, 3) for x in idle],
                    "analytic": round((pp - 1) / (m + pp - 1), 3),
                }
            )
    return rows


# ---------------------------------------------------------------- memory
def _memory_worker(rank, world, port, cfg, tc, layouts, threads, out):
    _init(rank, world, port, threads)
    try:
        for i, par in enumerate(layouts):
            trainer = Trainer(cfg, par, tc, "cpu")
            trainer.train_step(_batch(cfg, tc))  # Adam allocates its moments on the first step
            params = sum(local_tensor(p).numel() * p.element_size() for _, p in trainer.named_parameters())
            opt = trainer.optimizer
            state = sum(
                t.numel() * t.element_size() for st in opt.adam.state.values() for t in st.values() if t.ndim > 0
            )
            state += sum(b.shard.numel() * b.shard.element_size() for b in opt.buckets)
            torch.save({"params": params, "optim": state}, f"{out}/mem{i}.{rank}.pt")
            dist.barrier()
    finally:
        dist.destroy_process_group()


def bench_memory(cfg: ModelConfig, tc: TrainConfig, layouts: list[tuple[int, int, int]], threads: int) -> list[dict]:
    by_world: dict[int, list[ParallelConfig]] = {}
    for t, p, d in layouts:
        by_world.setdefault(t * p * d, []).append(ParallelConfig(tp=t, pp=p, dp=d))
    full = None
    rows = []
    for world, pars in sorted(by_world.items()):
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as out:
            mp.spawn(_memory_worker, args=(world, free_port(), cfg, tc, pars, threads, out), nprocs=world)
            for i, par in enumerate(pars):
                per_rank = [torch.load(f"{out}/mem{i}.{r}.pt") for r in range(world)]
                worst = max(per_rank, key=lambda x: x["params"] + x["optim"])
                if world == 1:
                    full = worst
                rows.append(
                    {
                        "tp": par.tp,
                        "pp": par.pp,
                        "dp": par.dp,
                        "param_MiB": round(worst["params"] / 2**20, 2),
                        "optim_MiB": round(worst["optim"] / 2**20, 2),
                    }
                )
    for r in rows:  # ideal: the 1x1x1 bytes split evenly
        if full:
            r["param_ideal_MiB"] = round(full["params"] / (r["tp"] * r["pp"]) / 2**20, 2)
            r["optim_ideal_MiB"] = round(full["optim"] / (r["tp"] * r["pp"] * r["dp"]) / 2**20, 2)
    return rows


# ---------------------------------------------------------------- report
def markdown(results: dict) -> str:
    lines = []
    if "speed" in results:
        s = results["speed"]
        lines += [
            "| step at 1x1x1 | tokens/s (wall) | ratio | tokens per CPU-s | ratio |",
            "|---|---|---|---|---|",
            f"| Trainer.train_step | {s['tokens_per_s']} | {s['ratio']}x | "
            f"{s['tokens_per_cpu_s']} | {s['ratio_cpu_time']}x |",
            f"| plain GPT + AdamW (anchor) | {s['anchor_tokens_per_s']} | 1.0x | "
            f"{s['anchor_tokens_per_cpu_s']} | 1.0x |",
            "",
        ]
    if "bubble" in results:
        lines += [
            "| schedule | pp | micro-batches | idle fraction (per rank) | (p-1)/(m+p-1) |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['schedule']} | {r['pp']} | {r['microbatches']} | {r['idle_fraction']} "
            f"({', '.join(map(str, r['idle_per_rank']))}) | {r['analytic']} |"
            for r in results["bubble"]
        ] + [""]
    if "memory" in results:
        lines += ["| tp | pp | dp | params MiB/rank (ideal) | optimizer MiB/rank (ideal) |", "|---|---|---|---|---|"]
        lines += [
            f"| {r['tp']} | {r['pp']} | {r['dp']} | {r['param_MiB']} ({r.get('param_ideal_MiB')}) | "
            f"{r['optim_MiB']} ({r.get('optim_ideal_MiB')}) |"
            for r in results["memory"]
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", nargs="+", default=["speed", "bubble", "memory"], choices=["speed", "bubble", "memory"])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=2000)
    ap.add_argument("--global-batch", type=int, default=8)
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10, help="timed steps per measurement")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per process")
    ap.add_argument("--pp", type=int, default=2, help="pipeline ranks for the bubble part")
    ap.add_argument("--microbatches", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument(
        "--layouts",
        nargs="+",
        default=["1x1x1", "2x1x1", "1x2x1", "1x1x2", "2x2x1", "1x1x4", "2x2x2"],
        help="tp x pp x dp layouts for the memory part",
    )
    harness.add_result_arg(ap)
    args = ap.parse_args(argv)
    started = time.time()
    cfg = preset(
        "350M",
        n_layers=args.layers,
        dim=args.dim,
        ffn_dim=4 * args.dim,
        n_heads=args.heads,
        seq_len=args.seq_len,
        vocab_size=args.vocab,
        query_layer=False,
    )
    tc = TrainConfig(global_batch=args.global_batch, micro_batch=args.micro_batch)
    results: dict = {"model": cfg.__dict__, "train": tc.__dict__, "threads": args.threads}
    if "speed" in args.parts:
        results["speed"] = bench_speed(cfg, tc, args.steps, args.threads)
    if "bubble" in args.parts:
        btc = TrainConfig(global_batch=args.micro_batch, micro_batch=max(1, args.micro_batch // 4))
        results["bubble"] = bench_bubble(cfg, btc, args.pp, args.microbatches, args.steps, args.threads)
    if "memory" in args.parts:
        layouts = [tuple(int(x) for x in s.split("x")) for s in args.layouts]
        results["memory"] = bench_memory(cfg, TrainConfig(global_batch=8, micro_batch=2), layouts, args.threads)
    print(json.dumps(results, indent=2))
    harness.write_result(args.result, "bench.bench_train", args, results, started)
    print()
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
