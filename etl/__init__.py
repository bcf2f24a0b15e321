"""Spark stages, in packages that follow the data: ``read`` -> ``clean`` -> ``classify`` ->
``dedup`` -> ``shards``, with ``report`` (ledger, report.json/html) and ``runtime`` (session,
shipping, atomic publishing) under them. The modules here orchestrate the packages: ``documents``
(read -> clean -> classify), ``phases`` (dedup, decontaminate, tokenize + shards), ``corpus``
(the corpus jobs) and ``nightly`` (the refresh); ``judge`` runs corpus builds. No package imports
these modules (``tests/test_import_graph.py``)."""
