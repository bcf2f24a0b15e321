"""What several packages share, with neither Spark nor torch (stdlib, numpy, pyarrow only):
``base.indexed_dataset`` (the Megatron ``.bin``/``.idx`` shard format) and ``base.manifest``
(``shards/manifest.json``). Shipped to Spark executors with ``etl``.
"""
