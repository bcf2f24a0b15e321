"""What the proxies' data order does to the judge's power: the variants of a finished judge run
(``jobs.judge_rules`` output, or its staging directory while its proxies train) trained again with
another ``proxy.data.order`` and the same seeds, on the same shards and dev set, and compared with
the baseline as the judge compares them (``etl.judge.stats.compare``: paired seed sd, dev SE, MDD).

    python -m bench.evals.judge_order --judge out/judge-pangu-paired --order shuffle \
        --variants baseline pangu_off --seeds 0 1 2 3 --output out/judge-pangu-shuffle

Writes OUTPUT/runs.json (every run, per-document scores included) and OUTPUT/compare.json, and
logs one comparison line per variant.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from base.log import setup_logging
from bench import harness

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("zhcorpus")


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    p = argparse.ArgumentParser(prog="python -m bench.evals.judge_order", description=__doc__.split("\n\n")[0])
    p.add_argument("--judge", required=True, help="a judge output (or staging) directory with variants/ and dev/")
    p.add_argument("--order", default="shuffle", choices=("shuffle", "paired"))
    p.add_argument("--variants", nargs="+", default=["baseline"], help="baseline first")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    p.add_argument("--config", default=str(ROOT / "jobs/configs/proxy.toml"))
    p.add_argument("--set", dest="overrides", action="append", default=[], help="KEY=VALUE, as jobs.judge_rules")
    p.add_argument("--output", required=True)
    args = p.parse_args(argv)
    started = time.time()

    from etl.judge.report import comparison_line
    from etl.judge.stats import compare
    from jobs.config import load_config
    from jobs.judge_rules import JudgeConfig
    from train.proxy import ProxyTrainer

    cfg = load_config(JudgeConfig, args.config, args.overrides + [f'proxy.data.order="{args.order}"'])
    judge = Path(args.judge)
    manifests = {v: str(judge / "variants" / v / "shards" / "manifest.json") for v in args.variants}
    dev = str(judge / "dev" / "shards" / "manifest.json")
    trainer = ProxyTrainer(cfg.proxy)
    trainer.check(manifests, dev)
    t0 = time.monotonic()
    runs = trainer.run(manifests, dev, tuple(args.seeds))
    seconds = time.monotonic() - t0
    comparisons = compare(runs, args.variants[0], cfg.judge.power_spec)
    for name, c in comparisons.items():
        log.info("order %s: %s", args.order, comparison_line(name, c))
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs.json").write_text(json.dumps(runs))
    summary = {
        "judge": args.judge,
        "order": args.order,
        "seeds": args.seeds,
        "budget_tokens": trainer.budget,
        "train_s": round(seconds, 1),
        "dev_loss": {v: {r["seed"]: r.get("dev_loss") for r in runs if r["variant"] == v} for v in args.variants},
        "vs_baseline": comparisons,
    }
    harness.write_result(out / "compare.json", "bench.evals.judge_order", args, summary, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
