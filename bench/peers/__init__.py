"""The peers the benchmarks measure the project against, written the way their authors' projects
run them: a BigCode-style PySpark MinHash-LSH job (``bigcode_dedup``) and text-dedup 0.4.1 in its
own venv (``text_dedup_peer``: not ``text_dedup``, the package it imports). They are anchors, not
part of the product."""
