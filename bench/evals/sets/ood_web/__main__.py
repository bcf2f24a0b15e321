"""python -m bench.evals.sets.ood_web --output data/ood_web [--seed 0]"""

from __future__ import annotations

from bench.evals.sets.ood.__main__ import build_set
from bench.evals.sets.ood_web.build import WebConfig, write


def main(argv: list[str] | None = None) -> int:
    return build_set(
        "python -m bench.evals.sets.ood_web",
        __doc__,
        "data/ood_web",
        lambda out, seed: write(out, WebConfig(seed=seed)),
        argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
