"""Benchmarks, each ``make bench-NAME`` and a row of docs/benchmarks.md.

- ``bench_*.py``: speed benchmarks, each against a named anchor measured in the same run;
  ``harness`` is what they measure with and writes every result file in one shape;
  ``corpora/`` makes their inputs, ``peers/`` holds the implementations they run against;
- ``evals/``: quality evaluations, scored against labels (``evals/sets/`` makes the sets);
- ``compare_builds``: two builds byte for byte, the regression check of a refactor."""
