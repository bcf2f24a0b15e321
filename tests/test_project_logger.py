"""Library modules log through the project's logger ("zhcorpus"): the training loop keeps rank 0's
human lines by setting that logger's level on every other rank, and the entry points configure its
output once. A module-named logger would escape both."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("base", "train", "demo")
CONFIGURES = {"base/log.py"}  # sets up output, and quiets other libraries' loggers: it logs nothing


def _get_logger_args(path: Path) -> list[str]:
    """The source of the argument of every ``logging.getLogger(...)`` / ``getLogger(...)`` call."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name == "getLogger":
                found.append(ast.unparse(node.args[0]) if node.args else "")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_library_modules_log_through_the_project_logger(package):
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, package
    wrong = {
        str(p.relative_to(ROOT)): args
        for p in files
        if str(p.relative_to(ROOT)) not in CONFIGURES
        if (args := [a for a in _get_logger_args(p) if a != "'zhcorpus'"])
    }
    assert wrong == {}


def test_setup_logging_keeps_py4j_plumbing_out_of_the_log():
    """py4j logs every closed connection at INFO, and a traceback when a stopped Spark session's
    connections are torn down: a successful run printed tracebacks (issue 25)."""
    import logging

    from base.log import setup_logging

    py4j = logging.getLogger("py4j.clientserver")
    setup_logging()
    assert not py4j.isEnabledFor(logging.INFO) and py4j.isEnabledFor(logging.WARNING)
