"""Single-GPU training throughput of the trainer against a plain PyTorch loop of the same model.

    python -m bench.bench_train_gpu [--preset 350M --micro-batch 8 --global-batch 32 --steps 20]
    python -m bench.bench_train_gpu --device cpu --preset debug --steps 3 --compile-backend aot_eager

Three variants train the same ``train.model.GPT`` (the preset, seeded weights, random tokens) on
one device in bf16 (``--precision``):

plain          the anchor: the model as a plain module, ``torch.optim.AdamW(fused=True)``,
               autocast, ``clip_grad_norm_``, micro-batches accumulated (nanoGPT's loop);
trainer        ``train.parallel.Trainer`` at (tp, pp, dp) = (1, 1, 1), ZeRO-1 (autocast);
fsdp_compile   the trainer with ``parallel.dp_shard = "fsdp"`` (FSDP2's bf16 policy) and
               ``train.compile`` (every block compiled; the first step's compile time is reported);
compile, fsdp  each of the two alone (``--variants``, to tell which one a difference comes from).

For each: tokens/s per device (median of the timed steps, after ``--warmup`` untimed ones), MFU
(model FLOPs per token from the config, Narayanan et al. 2021 eq. 3 without recomputation, as the
training loop's metrics count them, against the device's dense bf16 peak from ``PEAK_TFLOPS``),
and peak memory (CUDA: ``max_memory_allocated`` per variant; CPU: the process's peak resident
set, which only grows from one variant to the next). Prints one JSON document and a Markdown
table with each variant's ratio to the plain loop. On CPU it checks that everything runs; its
speeds say nothing about a GPU's.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import socket
import statistics
import time
from typing import Any, Callable

import torch
import torch.distributed as dist
import torch.nn.functional as F

from bench import harness
from train.layout import ParallelConfig
from train.metrics import memory_gib
from train.model import build_model, preset
from train.parallel.step import TrainConfig, Trainer
from train.planner import flops_per_iteration
from train.shapes import ModelConfig

# Dense (no sparsity) bf16 tensor-core peak per device, TFLOPS, from NVIDIA's datasheets; the first
# entry whose key is in ``torch.cuda.get_device_name()`` wins, so the specific names come first.
PEAK_TFLOPS: tuple[tuple[str, float], ...] = (
    ("H100 PCIe", 756.0),  # H100 PCIe: 1,513 with sparsity
    ("H100", 989.0),  # H100 SXM5 ("NVIDIA H100 80GB HBM3"): 1,979 with sparsity
    ("H200", 989.0),  # H200 SXM: the H100's tensor cores, more and faster memory
    ("A100", 312.0),  # A100 SXM4 / PCIe
)
VARIANTS = ("plain", "trainer", "fsdp_compile", "compile", "fsdp")
DEFAULT_VARIANTS = VARIANTS[:3]


def peak_tflops(device_name: str) -> float | None:
    """The dense bf16 peak of a device by its name (``torch.cuda.get_device_name()``); None if unknown."""
    for key, tflops in PEAK_TFLOPS:
        if key in device_name:
            return tflops
    return None


def flops_per_token(model: ModelConfig) -> float:
    """Model FLOPs of one trained token (forward + backward), the count MFU divides by the peak."""
    return flops_per_iteration(model, 1, "none") / model.seq_len


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench.bench_train_gpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="350M", help="train.shapes preset (350M: PanGu-alpha's released size)")
    p.add_argument("--seq-len", type=int, default=0, help="tokens per sequence (0: the preset's context)")
    p.add_argument("--micro-batch", type=int, default=8, help="sequences per forward/backward")
    p.add_argument("--global-batch", type=int, default=32, help="sequences per optimizer step")
    p.add_argument("--steps", type=int, default=20, help="timed steps per variant")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (compilation happens here)")
    p.add_argument("--precision", choices=("bf16", "fp32"), default="bf16")
    p.add_argument("--compile-backend", default="inductor", help="torch.compile backend of fsdp_compile")
    p.add_argument("--device", default="", help="cuda or cpu (default: cuda when there is one)")
    p.add_argument("--peak-tflops", type=float, default=0.0, help="override the device's peak (0: from the table)")
    p.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(DEFAULT_VARIANTS))
    p.add_argument("--json", default="", help="also write the JSON document here")
    p.add_argument(
        "--fsdp-grad-sync",
        choices=("every", "last"),
        default="every",
        help="parallel.fsdp_grad_sync of the fsdp variants",
    )
    p.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="after the timed steps, profile N more steps per variant and print the top operators",
    )
    return p.parse_args(argv)


def _batches(cfg: ModelConfig, args, device: torch.device) -> Callable[[int], torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    data = [torch.randint(0, cfg.vocab_size, (args.global_batch, cfg.seq_len + 1), generator=g) for _ in range(4)]
    data = [d.to(device) for d in data]
    return lambda i: data[i % len(data)]


def plain_runner(cfg: ModelConfig, train: TrainConfig, device: torch.device) -> Callable[[torch.Tensor], float]:
    """The anchor: one step of a plain single-device loop over the same model."""
    model = build_model(cfg, train.seed, device).train()
    params = list(model.parameters())
    opt = torch.optim.AdamW(
        [
            {"params": [p for p in params if p.ndim >= 2], "weight_decay": train.weight_decay},
            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
        ],
        lr=train.lr,
        betas=(train.beta1, train.beta2),
        eps=train.eps,
        fused=True,
    )
    m = train.global_batch // train.micro_batch

    def step(tokens: torch.Tensor) -> float:
        total = torch.zeros((), device=device)
        for chunk in tokens.tensor_split(m):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=train.precision == "bf16"):
                logits = model(chunk[:, :-1])
            loss = F.cross_entropy(logits.flatten(0, 1).float(), chunk[:, 1:].flatten(0, 1))
            (loss / m).backward()
            total += loss.detach()
        torch.nn.utils.clip_grad_norm_(params, train.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(total / m)  # a device sync, as Trainer.train_step's

    return step


def trainer_runner(cfg: ModelConfig, train: TrainConfig, device: torch.device, par: ParallelConfig):
    trainer = Trainer(cfg, par, train, device)
    return trainer.train_step, trainer


def measure(step: Callable[[torch.Tensor], float], batch: Callable[[int], torch.Tensor], args) -> dict[str, Any]:
    """Run ``warmup`` then ``steps`` steps; the first step's wall time and the timed steps' median."""
    times, first = [], None
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        loss = step(batch(i))
        dt = time.perf_counter() - t0
        first = dt if first is None else first
        if i >= args.warmup:
            times.append(dt)
    return {"first_step_s": first, "step_s": statistics.median(times), "last_loss": loss}


def profile(
    step: Callable[[torch.Tensor], float], batch: Callable[[int], torch.Tensor], n: int, device: torch.device
) -> str:
    """``torch.profiler``'s table of ``n`` steps: operators by self device time, then by self CPU
    time (a step bound by the host shows in the second)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with torch_profile(activities=activities) as prof:
        for i in range(n):
            step(batch(i))
    ops = prof.key_averages()
    by_device = ops.table(sort_by="self_cuda_time_total", row_limit=12) if device.type == "cuda" else ""
    return by_device + "\n" + ops.table(sort_by="self_cpu_time_total", row_limit=12)


def run_variant(name: str, cfg: ModelConfig, train: TrainConfig, device: torch.device, args) -> dict[str, Any]:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    trainer = None
    if name == "plain":
        step = plain_runner(cfg, train, device)
    elif name == "trainer":
        step, trainer = trainer_runner(cfg, train, device, ParallelConfig())
    else:
        compiled = dataclasses.replace(train, compile=True, compile_backend=args.compile_backend)
        step, trainer = trainer_runner(
            cfg,
            train if name == "fsdp" else compiled,
            device,
            ParallelConfig()
            if name == "compile"
            else ParallelConfig(dp_shard="fsdp", fsdp_grad_sync=args.fsdp_grad_sync),
        )
    out = measure(step, _batches(cfg, args, device), args)
    if args.profile:
        out["profile"] = profile(step, _batches(cfg, args, device), args.profile, device)
        print(f"{name}: the top operators of {args.profile} steps\n{out['profile']}", flush=True)
    if trainer is not None and trainer.compile_seconds is not None:
        out["compile_s"] = trainer.compile_seconds
    out["memory_gib"] = memory_gib(device)
    del step, trainer
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def _init_world_of_one(device: torch.device) -> bool:
    """A one-rank process group for ``Trainer`` (gloo on CPU, NCCL on CUDA); True if we made it."""
    if dist.is_initialized():
        return False
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group(
        "nccl" if device.type == "cuda" else "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1
    )
    return True


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every variant's figures and their ratios to the plain loop, as one JSON-ready dict."""
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())  # set_device and the memory stats want an index
    if device.type == "cuda":
        torch.cuda.set_device(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    peak = args.peak_tflops or peak_tflops(name)
    cfg = preset(args.preset, **({"seq_len": args.seq_len} if args.seq_len else {}))
    train = TrainConfig(global_batch=args.global_batch, micro_batch=args.micro_batch, precision=args.precision)
    tokens = args.global_batch * cfg.seq_len
    per_token = flops_per_token(cfg)
    made = _init_world_of_one(device)
    try:
        results = {v: run_variant(v, cfg, train, device, args) for v in args.variants}
    finally:
        if made:
            dist.destroy_process_group()
    for r in results.values():
        r["tokens_per_s"] = tokens / r["step_s"]
        r["tflops"] = per_token * r["tokens_per_s"] / 1e12
        r["mfu"] = r["tflops"] / peak if peak else None
    anchor = results.get("plain")
    if anchor is not None:
        for r in results.values():
            r["vs_plain"] = r["tokens_per_s"] / anchor["tokens_per_s"]
    return {
        "date": time.strftime("%Y-%m-%d"),
        "device": name,
        "peak_tflops": peak,
        "torch": torch.__version__,
        "model": args.preset,
        "seq_len": cfg.seq_len,
        "global_batch": args.global_batch,
        "micro_batch": args.micro_batch,
        "fsdp_grad_sync": args.fsdp_grad_sync,
        "precision": args.precision,
        "compile_backend": args.compile_backend,
        "flops_per_token": per_token,
        "steps": args.steps,
        "warmup": args.warmup,
        "variants": results,
    }


def table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['model']} on {report['device']} ({report['precision']}, {report['global_batch']} x "
        f"{report['seq_len']} tokens a step, peak {report['peak_tflops'] or '?'} TFLOPS)",
        "",
        "| variant | tokens/s | vs plain | TFLOPS | MFU | first step s | peak memory GiB |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in report["variants"].items():
        mfu = f"{100 * r['mfu']:.1f} %" if r["mfu"] is not None else "-"
        vs = f"{r['vs_plain']:.2f}" if "vs_plain" in r else "-"
        lines.append(
            f"| {name} | {r['tokens_per_s']:,.0f} | {vs} | {r['tflops']:.3g} | {mfu} | "
            f"{r['first_step_s']:.1f} | {r['memory_gib']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    started = time.time()
    report = run(args)
    text = json.dumps(report, indent=1)
    harness.write_result(args.json, "bench.bench_train_gpu", args, report, started)
    print(text)
    print(table(report))
    return report


if __name__ == "__main__":
    main()
