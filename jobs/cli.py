"""What every entry point shares: the --config/--set/--overwrite arguments, and one mapping from the errors a user can
cause to a one-line message and an exit code.

Exit codes (every job): 0 done; 1 done, but some input files could not be read (listed in
report.json and the log); 2 refused: bad arguments, config, input or output path, or models (one
line, nothing written); 3 another run holds the lock (nightly refresh); 4 no input file could be
read (every one a file-level error; one summary line); anything else a failure (its trace is in
the log; re-run it: nothing half-done is visible).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Callable

log = logging.getLogger("zhcorpus")
EXIT_OK, EXIT_FILE_ERRORS, EXIT_REFUSED, EXIT_LOCKED, EXIT_NOTHING_READ = 0, 1, 2, 3, 4


def parser(
    prog: str, doc: str | None, default_config: str | Path | None = None, example: str = ""
) -> argparse.ArgumentParser:
    """An argument parser with the job's docstring and the shared --config / --set options."""
    p = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--config",
        default=str(default_config) if default_config else None,
        help="TOML config" + (" (default: %(default)s)" if default_config else ""),
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a config key (repeatable){', e.g. --set ' + example if example else ''}",
    )
    return p


def refusals() -> tuple[type[BaseException], ...]:
    """Errors that mean "the user asked for something we will not do": one line, exit 2. Only
    declared ones (``base.errors.Refusal`` and the file errors a path given by the user raises): a
    plain ``ValueError`` is a bug and keeps its traceback."""
    from base.errors import Refusal

    return (Refusal, FileNotFoundError, FileExistsError, PermissionError)  # an existing output: FileExistsError


def run_job(body: Callable[[], int]) -> int:
    """Run ``body`` (which returns the exit code); a refusal becomes one log line and exit 2, a
    lock another run holds (``etl.runtime.locks.Locked``: a refresh's corpus, a dedup index being written)
    one line and exit 3, with the trace at debug level only."""
    from etl.runtime.locks import Locked

    try:
        return body()
    except Locked as e:
        log.debug("locked", exc_info=True)
        log.error("%s", e)
        return EXIT_LOCKED
    except refusals() as e:
        log.debug("refused", exc_info=True)
        log.error("%s", e)
        return EXIT_REFUSED
    except Exception as e:  # a damaged dedup index found by a Spark task: still a one-line refusal
        from etl.dedup.index_checks import raised_in_task

        refused = raised_in_task(e)
        if refused is None:
            raise
        log.debug("refused in a Spark task", exc_info=True)
        log.error("%s", refused)
        return EXIT_REFUSED


def exit_code(report: dict) -> int:
    """0; 1 when some input files could not be read (they are named in the log); 4 when none
    could (``etl.report.ledger.run_outcome``, which also gives the one-line summary)."""
    from etl.report.ledger import run_outcome

    for e in report["input"].get("file_errors") or []:
        log.warning("file not read: %s", e)
    code, line = run_outcome(report)
    (log.info if code == EXIT_OK else log.warning if code == EXIT_FILE_ERRORS else log.error)(line)
    return code
