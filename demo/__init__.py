"""Generators of the demo crawl, seed labels and benchmark corpora (never shipped to executors)."""
