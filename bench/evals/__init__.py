"""Quality evaluations, apart from the speed benchmarks of bench/: how well the chain removes spam
and spares good text, scored against labels rather than timed.

- ``ood``: the cleaning chain on a labelled out-of-domain set (``make bench-ood``, ``-ood-blind``,
  ``-ood-web``); ``classify_ood``: the two classifiers alone on one;
- ``lofo`` (with ``lofo_data``): leave one spam family out (``make bench-lofo``);
- ``fwpairs``: function-word pairs as a grammar signal (tried, not kept);
- ``judge_order``: the rule judge's power under another proxy data order; the judge variants it and
  docs/judge.md run on the evaluation crawls are the ``judge_*_variants.toml`` beside it;
- ``sets/``: the generators of the evaluation sets these read (``ood``, ``ood_blind``, ``ood_web``,
  ``judge_ood``), written to data/.

Each evaluation is ``make bench-NAME`` (docs/benchmarks.md)."""
