"""What the proxy's vocabulary costs a judge run on CPU: the time of one training step of
jobs/configs/proxy.toml's proxy (4 layers, width 64, 16 x 64 tokens a step, one thread) at the
judge's own 2,000-piece vocabulary (the anchor), the 6,000 pieces the first judge needed, and the
build's 40,000. Median of ``--steps`` steps after ``--warmup``, one process, the vocabularies
interleaved so that load from other work hits them alike.

    python -m bench.bench_judge_proxy [--vocab 2000 6000 40000] [--steps 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench import harness

ROOT = Path(__file__).resolve().parent.parent
ANCHOR = 2000


def _trainer(vocab: int):
    import torch.distributed as dist

    from jobs.config import load_config
    from jobs.judge_rules import JudgeConfig
    from train.parallel import ParallelConfig, Trainer
    from train.proxy import with_vocab

    cfg = with_vocab(load_config(JudgeConfig, str(ROOT / "jobs/configs/proxy.toml"), []).proxy.resolved(), vocab)
    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    return cfg, Trainer(cfg.model, ParallelConfig(), cfg.train, "cpu")


def step_seconds(vocabs: list[int], steps: int, warmup: int) -> dict[int, list[float]]:
    """Seconds per training step at each vocabulary, the vocabularies taking turns step by step."""
    import torch

    torch.set_num_threads(1)
    trainers = {v: _trainer(v) for v in vocabs}
    times: dict[int, list[float]] = {v: [] for v in vocabs}
    gen = torch.Generator().manual_seed(0)
    for i in range(warmup + steps):
        for v, (cfg, trainer) in trainers.items():
            batch = torch.randint(0, v, (cfg.train.global_batch, cfg.data.seq_len + 1), generator=gen)
            t0 = time.perf_counter()
            trainer.train_step(batch, lr=cfg.train.lr)
            if i >= warmup:
                times[v].append(time.perf_counter() - t0)
    return times


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bench_judge_proxy", description=__doc__.split("\n\n")[0])
    p.add_argument("--vocab", type=int, nargs="+", default=[ANCHOR, 6000, 40000])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    harness.add_result_arg(p)
    args = p.parse_args(argv)
    started = time.time()
    vocabs = [ANCHOR] + [v for v in args.vocab if v != ANCHOR]
    times = step_seconds(vocabs, args.steps, args.warmup)
    anchor = statistics.median(times[ANCHOR])
    print(f"proxy step (jobs/configs/proxy.toml, one thread), median of {args.steps}:")
    result = {}
    for v in vocabs:
        med = statistics.median(times[v])
        result[v] = {"step_ms": round(1000 * med, 1), "vs_anchor": round(med / anchor, 2)}
        print(
            f"  vocabulary {v:>6,}: {1000 * med:7.1f} ms/step  x{med / anchor:5.2f} the {ANCHOR:,}-piece anchor"
            f"  -> 1,000 steps {med * 1000 / 60:5.1f} min"
        )
    harness.write_result(
        args.result, "bench.bench_judge_proxy", args, {"anchor": ANCHOR, "vocabularies": result}, started
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
