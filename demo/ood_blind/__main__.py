"""python -m demo.ood_blind --output data/ood_blind [--seed 0]"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from demo.ood_blind.build import BlindConfig, write

log = logging.getLogger("zhcorpus")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m demo.ood_blind", description=__doc__)
    p.add_argument("--output", default="data/ood_blind", help="directory for ood.jsonl and MANIFEST.json")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    man = write(Path(args.output), BlindConfig(seed=args.seed))
    log.info("wrote %s/ood.jsonl: %d records, %.1f MiB, sha256 %s", args.output, man["records"],
             man["bytes"] / 2**20, man["sha256"][:16])
    for label, families in man["counts"].items():
        log.info("  %s: %s", label, {f: sum(s.values()) for f, s in families.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
