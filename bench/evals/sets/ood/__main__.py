"""python -m bench.evals.sets.ood --output data/ood [--seed 0]"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from base.log import setup_logging
from bench.evals.sets.ood.build import OodConfig, write

log = logging.getLogger("zhcorpus")


def build_set(prog: str, doc: str | None, default_output: str, make, argv: list[str] | None = None) -> int:
    """The command line of an OOD-set builder: ``make(output_dir, seed)`` writes the set and
    returns its manifest (``bench.evals.sets.ood.build.write``, ``bench.evals.sets.ood_blind.build.write``)."""
    p = argparse.ArgumentParser(prog=prog, description=doc)
    p.add_argument("--output", default=default_output, help="directory for ood.jsonl and MANIFEST.json")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    setup_logging()
    man = make(Path(args.output), args.seed)
    log.info(
        "wrote %s/ood.jsonl: %d records, %.1f MiB, sha256 %s",
        args.output,
        man["records"],
        man["bytes"] / 2**20,
        man["sha256"][:16],
    )
    for label, families in man["counts"].items():
        log.info("  %s: %s", label, {f: sum(s.values()) for f, s in families.items()})
    return 0


def main(argv: list[str] | None = None) -> int:
    return build_set(
        "python -m bench.evals.sets.ood", __doc__, "data/ood", lambda out, seed: write(out, OodConfig(seed=seed)), argv
    )


if __name__ == "__main__":
    raise SystemExit(main())
