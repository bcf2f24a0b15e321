"""Generators of the labelled evaluation sets (``python -m bench.evals.sets.ood --output data/ood``,
``ood_blind``, ``ood_web``; ``judge_ood`` cuts a judge crawl and dev set from one). Their sources are
registry packages the demo never reads (``demo.registry``); the same seed gives the same bytes."""
