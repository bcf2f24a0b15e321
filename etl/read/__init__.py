"""Read: raw crawl files (WARC, WET, JSONL, Parquet; local, Hadoop or ``s3://`` paths) -> records.

``readers`` plans byte ranges and reads them on Spark; under it, pure Python: ``records``
(format detection, dispatch, JSONL), ``rows`` (the record layout, the read reasons, one range's
state), ``warc``/``warc_records``, ``parquet_records``, ``streams``, ``decode`` (charsets, HTML ->
text), ``ids`` (unique doc_ids) and ``remote`` (object storage).
"""
