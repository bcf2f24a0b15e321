"""Labelled seed data for the pipeline's two text classifiers (spam / ham for the fastText spam
filter, hq / lq for the quality classifier), made from the demo crawl's sources, injectors and
page shape (``build``) and this package's templates (``templates``).

    python -m demo.seed --output data/seed     (``__main__.py``; ``make demo`` runs it)
"""

from demo.seed.build import build_seed_data

__all__ = ["build_seed_data"]
