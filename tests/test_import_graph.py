"""The import graph of our packages (issue 25; DESIGN.md "Layout"): no import cycle between modules,
and no arrow against the layering. Every ``import`` statement counts, wherever it stands (module
level, inside a function, under ``TYPE_CHECKING``): a lazy import is still an arrow.

The rules, outermost package first:

- ``base`` imports nothing of ours; ``filters`` imports only ``base``. Within ``filters`` the
  recipes import the text primitives they share (``filters.text``) and no other recipe
  (``FILTERS_LAYERS``); the compiled pass (``docpass``, which mirrors the quality statistics, the
  fluency model and the classifiers' preprocessing) and the tokenizer that runs on it sit at
  ``filters/`` top level, and only the quality screen, which runs the pass, imports it.
- ``etl`` imports ``base``, ``filters`` and ``etl``. Within ``etl`` the stage packages form the DAG
  ``ETL_LAYERS``; the modules at ``etl/`` top level (``corpus``, ``phases``, ``documents``,
  ``nightly``) orchestrate them and no package imports those, except the rule judge, which runs
  corpus builds and is imported by no other ``etl`` module.
- ``train`` imports ``base`` and ``train`` only: never ``etl`` (no Spark on training workers),
  never ``jobs``.
- ``jobs`` imports ``base``, ``filters``, ``etl``, ``train`` and its two helpers ``jobs.cli`` and
  ``jobs.config``; a job never imports another job.
- ``demo`` imports ``base``, ``filters``, ``demo`` and ``etl.read`` (the demo seed reads the demo
  crawl with the readers' pure-Python parser, ``etl.read.records``); never ``jobs``, ``train``,
  ``bench`` or the Spark stages.
- ``bench`` may import every package, and none imports it. Within it (``BENCH_LAYERS``) the
  generated inputs (``bench.corpora``, the evaluation sets of ``bench.evals.sets``) and the peers
  import no benchmark; the speed benchmarks import no quality evaluation (``bench.evals``) and the
  evaluations no speed benchmark: both share ``bench.harness``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("base", "filters", "etl", "train", "jobs", "demo", "bench")

# What each top-level package may import, of ours (itself always).
MAY_IMPORT = {
    "base": set(),
    "filters": {"base"},
    "etl": {"base", "filters"},
    "train": {"base"},
    "jobs": {"base", "filters", "etl", "train"},
    "demo": {"base", "filters", "etl.read"},
    "bench": {"base", "filters", "etl", "train", "jobs", "demo"},
}
# bench's parts, each with the parts of bench it may import: the speed benchmarks (bench/bench_*.py
# and their helpers), the quality evaluations, and what they read or measure against.
BENCH_LAYERS = {
    "harness": set(),  # bench/harness.py: timing, process-tree CPU, Spark jobs, the result file
    "peers": set(),  # bench/peers/: the other implementations a benchmark measures against
    "corpora": set(),  # bench/corpora/: generated inputs of the speed benchmarks
    "sets": set(),  # bench/evals/sets/: generators of the labelled evaluation sets
    "speed": {"harness", "peers", "corpora"},
    "evals": {"harness", "sets"},
}
# etl's packages, each with the etl packages it may import: a DAG (checked below), listed from the
# bottom up. ORCHESTRATION stands for the modules at etl/ top level.
ORCHESTRATION = "(etl top level)"
ETL_LAYERS = {
    "runtime": set(),  # Spark session, shipping to executors, atomic publishing, locks, sizing, progress
    "read": {"runtime"},
    "clean": {"read", "runtime"},
    "decontaminate": {"read", "runtime"},
    "report": {"read", "clean", "decontaminate", "runtime"},
    "quality": {"read", "clean", "report", "runtime"},
    "classify": {"read", "clean", "report", "runtime"},
    "dedup": {"runtime"},
    "shards": {"runtime"},
    ORCHESTRATION: {"runtime", "read", "clean", "report", "quality", "classify", "dedup", "decontaminate", "shards"},
    "judge": {
        "runtime",
        "read",
        "clean",
        "report",
        "quality",
        "classify",
        "dedup",
        "decontaminate",
        "shards",
        ORCHESTRATION,
    },
}
JOB_HELPERS = {"jobs", "jobs.cli", "jobs.config"}
# filters' packages and top-level modules, each with the parts of filters it may import (besides
# the ``filters`` package itself, whose compiled ``_docpass`` is no .py module).
FILTERS_LAYERS = {
    "text": set(),  # character classes, normalisation, conversion, keywords, Markdown, segmentation, PII
    "pangu": {"text"},
    "classifiers": {"text"},
    "dedup": {"text"},
    "quality": {"text", "docpass"},  # the Screen runs the compiled pass
    "docpass": {"text", "quality", "classifiers"},  # the compiled mirror of their reference code
    "tokenizer": {"text", "docpass"},
}


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module of PACKAGES (a package is its ``__init__``)."""
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _target(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` (a module or a name inside one) lies in."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in known:
            return ".".join(parts[:i])
    return None


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ours that ``module`` imports: ``from pkg import sub`` is an arrow to the
    submodule ``pkg.sub`` when there is one, else to ``pkg``."""
    out = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        out |= {t for n in names if (t := _target(n, known)) and t != module}
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: imports(m, p, known) for m, p in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(root: str) -> None:
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter[0]
                    counter[0] += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges.get(succ, ())))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _etl_layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ETL_LAYERS) else ORCHESTRATION


def _filters_part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _bench_part(module: str) -> str:
    parts = module.split(".") + [""]
    if parts[1] in ("harness", "peers", "corpora"):
        return parts[1]
    if parts[1] == "evals":
        return "sets" if parts[2] == "sets" else "evals"
    return "speed"


def _allowed(src: str, dst: str) -> bool:
    src_top, dst_top = src.split(".")[0], dst.split(".")[0]
    if src_top == dst_top:
        if src_top == "filters":
            a, b = _filters_part(src), _filters_part(dst)
            return a == b or b in FILTERS_LAYERS[a] or dst == "filters"
        if src_top == "etl":
            a, b = _etl_layer(src), _etl_layer(dst)
            return a == b or b in ETL_LAYERS[a] or dst == "etl"
        if src_top == "bench":
            a, b = _bench_part(src), _bench_part(dst)
            return a == b or b in BENCH_LAYERS[a] or dst in ("bench", "bench.evals")
        if src_top == "jobs":
            return src in JOB_HELPERS or dst in JOB_HELPERS  # a job imports no other job
        return True
    return any(dst == m or dst.startswith(m + ".") for m in MAY_IMPORT[src_top])


def test_the_graph_is_read():
    edges = graph()
    assert len(edges) > 100 and "base.manifest" in edges["etl.shards.stage"], "the walk found too little"
    assert "train.checkpoint" in edges and "base.atomic" in edges["train.checkpoint"]
    # packages inside filters/ are walked too, and their modules import each other, not the package
    assert "filters.quality.fluency.normalise" in edges["filters.quality.fluency.tokens"]
    assert "filters.quality.fluency" not in edges["filters.quality.fluency.model"]


def test_no_import_cycle():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_arrow_against_the_layering():
    wrong = sorted(f"{src} -> {dst}" for src, dsts in graph().items() for dst in dsts if not _allowed(src, dst))
    assert not wrong, "arrows against the layering (module docstring):\n" + "\n".join(wrong)


def test_the_etl_layers_are_a_dag_naming_every_package():
    assert cycles(ETL_LAYERS) == [] and all(d in ETL_LAYERS for deps in ETL_LAYERS.values() for d in deps)
    packages = {p.parent.name for p in (ROOT / "etl").glob("*/__init__.py")}
    assert packages == set(ETL_LAYERS) - {ORCHESTRATION}


def test_the_filters_layers_name_every_package_and_module():
    root = ROOT / "filters"
    found = {p.parent.name for p in root.glob("*/__init__.py")} | {p.stem for p in root.glob("*.py")}
    assert found - {"__init__"} == set(FILTERS_LAYERS)
    assert all(d in FILTERS_LAYERS for deps in FILTERS_LAYERS.values() for d in deps)


@pytest.mark.parametrize(
    "edges, expected",
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set(), "c": {"a", "b"}}, []),
    ],
)
def test_cycles_finds_exactly_the_cycles(edges, expected):
    assert cycles(edges) == expected


def test_a_new_upward_arrow_is_refused():
    assert not _allowed("etl.read.records", "etl.corpus")  # a stage package imports orchestration
    assert not _allowed("etl.dedup.stage", "etl.read.records")  # not in the DAG
    assert not _allowed("etl.corpus", "etl.judge.run")  # nothing imports the judge
    assert not _allowed("train.checkpoint", "etl.runtime.publish")
    assert not _allowed("jobs.build_corpus", "jobs.dedup")
    assert not _allowed("demo.crawl", "jobs.cli") and not _allowed("base.manifest", "etl.shards.stage")
    assert _allowed("jobs.build_corpus", "jobs.cli") and _allowed("etl.corpus", "etl.dedup.stage")
    assert not _allowed("filters.text.chars", "filters.quality.signals")  # the primitives import no recipe
    assert not _allowed("filters.pangu.rules", "filters.quality.safety")  # a recipe imports no other recipe
    assert not _allowed("filters.dedup.minhash", "filters.docpass")
    assert _allowed("filters.quality.signals", "filters.text.chars") and _allowed("filters.docpass", "filters")
    assert not _allowed("demo.reference", "bench.evals.sets.ood.registry") and not _allowed(
        "etl.corpus", "bench.harness"
    )
    assert not _allowed("bench.bench_corpus", "bench.evals.ood")  # a speed benchmark imports no evaluation
    assert not _allowed("bench.evals.sets.ood.build", "bench.evals.ood")  # a set's generator imports no evaluation
    assert not _allowed("bench.corpora.plain_text", "bench.bench_corpus")
    assert _allowed("bench.evals.lofo", "bench.evals.sets.ood") and _allowed(
        "bench.bench_dedup", "bench.corpora.dedup_corpus"
    )


def test_the_bench_layers_name_every_part():
    assert {_bench_part(m) for m in graph() if m.startswith("bench.")} == set(BENCH_LAYERS)
    assert cycles(BENCH_LAYERS) == [] and all(d in BENCH_LAYERS for deps in BENCH_LAYERS.values() for d in deps)
