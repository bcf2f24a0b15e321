"""What several packages share, with neither Spark nor torch (stdlib, numpy, pyarrow only):

- ``base.indexed_dataset``: the Megatron ``.bin``/``.idx`` shard format, its writer (``etl``'s
  shard stage) and its memory-mapped reader (``train``'s data loading);
- ``base.manifest``: ``shards/manifest.json``, built by the corpus build, merged by the nightly
  refresh, read and verified by training;
- ``base.atomic``: ``write_atomic``, a small local file replaced whole;
- ``base.log``: ``setup_logging``, the one log format of every entry point;
- ``base.s3``: the S3 settings and credentials (``S3Config``, ``S3Access``) of the readers, the
  writers of outputs on a store and the trainer.

``base`` imports nothing of ours (``tests/test_import_graph.py``): ``etl``, ``train``, ``jobs``,
``demo`` and ``bench`` import it, and it is shipped to Spark executors with ``etl``.
"""
