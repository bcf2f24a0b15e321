"""The log set-up of every entry point (jobs, demo generators, benchmarks, training workers).

Library modules log through the project's logger ``zhcorpus`` and never configure output; the
process that runs them calls ``setup_logging`` once, so every driver log has one format.
"""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(message)s"
DATE_FORMAT = "%H:%M:%S"


def setup_logging(level: int = logging.INFO) -> None:
    """Root handler with the one format at ``level``; a no-op when the process has one already
    (``logging.basicConfig``), so a job called from a test or a bench keeps the caller's."""
    logging.basicConfig(level=level, format=FORMAT, datefmt=DATE_FORMAT)
