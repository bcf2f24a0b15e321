"""Generated inputs of the speed benchmarks, made once and cached under their --out (never demo
data, never shipped): ``dedup_corpus`` (Chinese documents with injected near-duplicate families,
``bench.bench_dedup``), ``plain_text`` (plain Chinese text as JSONL of a given size) and
``scaled_crawl`` (a demo-shaped crawl N times the demo crawl's size; both ``bench.bench_corpus``).
They draw on the demo's sources (``demo.sources``, ``demo.crawl``), which is why they live in bench/:
demo/ imports nothing of bench/."""
