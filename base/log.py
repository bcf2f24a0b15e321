"""The log set-up of every entry point (jobs, demo generators, benchmarks, training workers).

Library modules log through the project's logger ``zhcorpus`` and never configure output; the
process that runs them calls ``setup_logging`` once, so every driver log has one format.
"""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(message)s"
DATE_FORMAT = "%H:%M:%S"


# Libraries whose INFO lines are about their own plumbing: py4j logs "Closing down clientserver
# connection" for every connection, and "Error while sending or receiving" with a traceback when a
# stopped Spark session's connections are torn down, at the end of every successful run.
QUIET = ("py4j",)


def setup_logging(level: int = logging.INFO) -> None:
    """Root handler with the one format at ``level``; a no-op when the process has one already
    (``logging.basicConfig``), so a job called from a test or a bench keeps the caller's. The
    ``QUIET`` libraries log warnings and errors only."""
    logging.basicConfig(level=level, format=FORMAT, datefmt=DATE_FORMAT)
    for name in QUIET:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
