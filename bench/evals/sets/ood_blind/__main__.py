"""python -m bench.evals.sets.ood_blind --output data/ood_blind [--seed 0]"""

from __future__ import annotations

from bench.evals.sets.ood.__main__ import build_set
from bench.evals.sets.ood_blind.build import BlindConfig, write


def main(argv: list[str] | None = None) -> int:
    return build_set(
        "python -m bench.evals.sets.ood_blind",
        __doc__,
        "data/ood_blind",
        lambda out, seed: write(out, BlindConfig(seed=seed)),
        argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
