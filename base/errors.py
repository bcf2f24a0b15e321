"""The one error type that means "the user asked for something this product will not do": a bad
config, input, output path, model or index. ``jobs.cli.run_job`` turns a ``Refusal`` into one log
line and exit 2; any other exception is a bug and keeps its traceback (issue 35, item 8).

Most refusals have a class of their own, named where they are raised (``ConfigError``,
``PathRefused``, ``ModelError``, ``IndexFileError``, ...), all subclasses of ``Refusal``; a check
with no such class raises ``Refusal`` itself. ``Refusal`` is a ``ValueError``, so code that catches
``ValueError`` around a check still catches them. A config class's own check of a value
(``__post_init__`` raising ``ValueError``) becomes a ``ConfigError`` where ``jobs.config`` builds it."""

from __future__ import annotations


class Refusal(ValueError):
    """A request refused, with the one line that says why (``str(e)``)."""
