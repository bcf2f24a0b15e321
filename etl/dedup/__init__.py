"""Dedup: ``stage`` (exact keys, MinHash signatures, LSH bands, candidate edges, keep one per
component), ``verify`` (exact Jaccard of candidates), ``components`` (connected components),
``local`` (the same on the driver for small inputs), ``checkpoints``, and the persistent
``index`` (``DedupIndex`` over ``index_log``, ``index_read``, ``index_write`` and
``index_legacy``; ``index_files``, its files read and written by pyarrow alone)."""
