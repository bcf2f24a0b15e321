"""The README and docs/ (and the READMEs of sensitive_words/ and deploy/secrets/) name only what
exists: every ``python -m`` module, ``make`` target, repository path and local link (with its
anchor) they give resolves; the README's jobs table names every job in jobs/ with a library entry
that is defined; every job's ``--help`` runs; the README stays a front page (at most 250 lines)
and links every page of docs/; the cluster tests still find the table of allowed binds.

Paths are checked where they are named as code: inline code spans, code blocks and link targets.
A path counts as the repository's when it starts with one of its source folders or is one of its
top-level files; what a run creates (``out/``, ``data/``, ``dist/``, ``OUT/documents/``) is not.
"""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
# The README, docs/, and the READMEs beside data and deploy files.
PAGES = [ROOT / "README.md", *DOCS, ROOT / "sensitive_words" / "README.md", ROOT / "deploy" / "secrets" / "README.md"]
README_MAX_LINES = 250

SOURCE_DIRS = {
    ".ci",
    "base",
    "bench",
    "demo",
    "deploy",
    "docs",
    "etl",
    "filters",
    "jobs",
    "sensitive_words",
    "tests",
    "train",
}
TOP_FILES = {
    "Makefile",
    "Dockerfile",
    "docker-compose.yml",
    "pyproject.toml",
    "requirements.lock",
    "requirements-nodeps.txt",
    "README.md",
    ".dockerignore",
    ".gitignore",
}
# Made by the user once per deployment and git-ignored (deploy/secrets/README.md).
CREATED_BY_USER = {"deploy/secrets/spark_auth_secret", "deploy/secrets/ray_auth_token"}
PLACEHOLDER = re.compile(r"[<>{}*?$]|\.\.\.|…|\bNAME\b|XXXX")

MODULE = re.compile(r"python3?\s+-m\s+((?:jobs|bench|etl|demo)(?:\.\w+)+)")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)


def text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def code(page_text: str) -> list[str]:
    """Code blocks, then the inline code spans of the prose around them."""
    blocks = FENCE.findall(page_text)
    return blocks + SPAN.findall(FENCE.sub("", page_text))


def repo_path(token: str) -> str | None:
    """``token`` as a repository-relative path, or None when it does not name one."""
    token = token.strip("'\"()[],;:").removeprefix("./").removeprefix("$PWD/")
    token = token.rstrip(".") if not token.endswith("..") else token
    head = token.split("/", 1)[0]
    if "=" in token or "://" in token or PLACEHOLDER.search(token):
        return None
    if ("/" in token and head in SOURCE_DIRS) or token in TOP_FILES:
        return token.split("#", 1)[0]
    return None


def named_paths(page_text: str) -> set[str]:
    found = {p for chunk in code(page_text) for p in map(repo_path, chunk.split()) if p}
    return found - CREATED_BY_USER


def make_targets(page_text: str) -> set[str]:
    """Targets of ``make`` command lines in code: the words after ``make`` up to the first that is
    not a target (a variable, ``&&``, a comment)."""
    found = set()
    for chunk in code(page_text):
        chunk = re.sub(r"(^|\s)#.*$", "", chunk, flags=re.M)  # a shell comment may say "make demo does it"
        for m in re.finditer(r"(?:^|[\s;&|(])make((?: +[a-z][a-z0-9-]*)+)", chunk, re.M):
            found.update(m.group(1).split())
    return found


def makefile_targets() -> set[str]:
    targets = set()
    for line in text(ROOT / "Makefile").splitlines():
        m = re.match(r"^([A-Za-z0-9_./%$() -]+?)\s*:(?!=)", line)
        if m and not line.startswith("\t"):
            targets.update(m.group(1).split())
    return targets


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces to -."""
    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    return re.sub(r"[^\w\- ]", "", plain.lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for h in HEADING.findall(FENCE.sub("", text(page))):
        s = slug(h)
        out.add(s if s not in seen else f"{s}-{seen[s]}")
        seen[s] = seen.get(s, 0) + 1
    return out


def broken_links(page: Path) -> list[str]:
    bad = []
    for target in LINK.findall(FENCE.sub("", text(page))):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading with that anchor")
    return bad


def module_file(name: str) -> bool:
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def entry_points() -> list[str]:
    return sorted(p.stem for p in (ROOT / "jobs").glob("*.py") if 'if __name__ == "__main__"' in text(p))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_exist(page):
    named = {m for m in MODULE.findall(text(page)) if not re.search(r"\.[A-Z]+$", m)}  # not jobs.NAME
    missing = sorted(m for m in named if not module_file(m))
    assert not missing, f"{page.relative_to(ROOT)} runs modules that do not exist: {missing}"


def benchmark_module(target: str) -> str | None:
    """The module ``make bench-NAME`` runs through the Makefile's ``bench-%`` rule: the speed
    benchmark bench/bench_NAME.py, else the quality evaluation bench/evals/NAME.py."""
    name = target.removeprefix("bench-").replace("-", "_")
    for path, module in (
        (f"bench/bench_{name}.py", f"bench.bench_{name}"),
        (f"bench/evals/{name}.py", f"bench.evals.{name}"),
    ):
        if target.startswith("bench-") and (ROOT / path).is_file():
            return module
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_make_targets_exist(page):
    missing = sorted(t for t in make_targets(text(page)) - makefile_targets() if not benchmark_module(t))
    assert not missing, f"{page.relative_to(ROOT)} names make targets the Makefile lacks: {missing}"


# Runnable modules under bench/ that are no benchmark: a regression check, the generators of the
# benchmarks' inputs and of the evaluation sets, and the peers a benchmark runs.
NOT_BENCHMARKS = ("bench/compare_builds.py", "bench/corpora/", "bench/evals/sets/", "bench/peers/")


def benchmarks() -> dict[str, str]:
    """``make`` target -> module of every runnable module under bench/ (``if __name__ ==
    "__main__"``) that NOT_BENCHMARKS does not name."""
    found = {}
    for path in sorted((ROOT / "bench").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if "__main__" not in path.read_text(encoding="utf-8") or rel.startswith(NOT_BENCHMARKS):
            continue
        name = path.stem.removeprefix("bench_") if path.parent.name == "bench" else path.stem
        found["bench-" + name.replace("_", "-")] = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return found


def test_every_benchmark_runs_from_make_and_is_listed():
    """Issue 35: every benchmark under bench/ (speed benchmarks bench/bench_NAME.py, quality
    evaluations bench/evals/NAME.py) is ``make bench-NAME`` and has a row in docs/benchmarks.md
    naming both; a runnable module anywhere else in bench/ must be named in NOT_BENCHMARKS."""
    log, found = text(ROOT / "docs" / "benchmarks.md"), benchmarks()
    assert {"bench-clean", "bench-ood", "bench-lofo", "bench-fluency"} <= set(found), "the walk found too little"
    rows = [line for line in log.splitlines() if line.startswith("| `make ")]
    for target, module in found.items():
        assert benchmark_module(target) == module, f"{module}: make {target} would run {benchmark_module(target)}"
        assert any(f"`make {target}`" in r and f"`python -m {module}`" in r for r in rows), (
            f"docs/benchmarks.md has no row with `make {target}` and `python -m {module}`"
        )
        dry = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True)
        assert dry.returncode == 0 and f"-m {module} " in dry.stdout + " ", (target, dry.stdout[-300:], dry.stderr)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_paths_exist(page):
    missing = sorted(p for p in named_paths(text(page)) if not (ROOT / p).exists())
    assert not missing, f"{page.relative_to(ROOT)} names repository paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_local_links_resolve(page):
    bad = broken_links(page)
    assert not bad, f"{page.relative_to(ROOT)} has broken links: {bad}"


def test_readme_is_a_front_page():
    readme = text(ROOT / "README.md")
    lines = readme.count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; at most {README_MAX_LINES}: move detail to docs/"
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in LINK.findall(readme)}
    unlinked = sorted(p.name for p in DOCS if p.resolve() not in linked)
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


def job_table() -> dict[str, str]:
    """The README's jobs table: job module → library entry (the first code span of each column)."""
    rows = {}
    for line in text(ROOT / "README.md").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `jobs.") and len(cells) >= 2:
            rows[SPAN.search(cells[0]).group(1)] = SPAN.search(cells[1]).group(1)
    return rows


def defines(dotted: str) -> bool:
    """Whether ``dotted`` (module, then a function or class, then perhaps a method) is defined in
    the repository's source, read as text: importing every library would start Spark and torch."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if module_file(".".join(parts[:cut])):
            base = ROOT.joinpath(*parts[:cut])
            source = text(base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py")
            return all(re.search(rf"^\s*(?:def|class) {name}\b", source, re.M) for name in parts[cut:])
    return False


def test_the_job_table_names_every_job_and_real_entries():
    table = job_table()
    assert sorted(j.removeprefix("jobs.") for j in table) == entry_points(), "README's jobs table against jobs/*.py"
    missing = sorted(entry for entry in table.values() if not defines(entry))
    assert not missing, f"library entries in the README's jobs table that are not defined: {missing}"


def test_the_cluster_tests_find_their_table():
    """tests/test_cluster_ray.py checks every bind beyond loopback against this table (cluster-marked,
    so rarely run): its rows must still parse where the page keeps them."""
    from tests.cluster_fixture import readme_binds

    assert {
        ("gcs_server", "wildcard"),
        ("raylet", "wildcard"),
        ("dashboard agent", "address"),
        ("ray worker", "wildcard"),
    } <= readme_binds()


def test_every_job_answers_help():
    jobs = entry_points()
    assert len(jobs) >= 10, jobs  # the parse below would otherwise hide a renamed guard
    venv = ROOT / ".venv" / "bin" / "python"
    python = str(venv if venv.exists() else sys.executable)

    def run(job: str) -> tuple[str, subprocess.CompletedProcess]:
        return job, subprocess.run(
            [python, "-m", f"jobs.{job}", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
        )

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(pool.map(run, jobs))
    failed = {job: r.stderr[-2000:] for job, r in results.items() if r.returncode != 0 or "usage" not in r.stdout}
    assert not failed, f"jobs whose --help fails: {failed}"


def test_checks_see_what_they_look_for():
    """The extractors on a hand-made page: each finds what a page names, and only that."""
    page = (
        "Run `python -m jobs.clean --help`, `make demo`, and see `etl/runtime/paths.py`, `OUT/documents/`,\n"
        "`--set rules.ads.extra_keywords='[\"x\"]'`, [a page](docs/judge.md#settings).\n\n"
        "```\nmake install demo-crawl && . .venv/bin/activate\n"
        "spark-submit jobs/clean.py --input s3a://b/ --output out/clean --config ./jobs/configs/clean.toml\n"
        "make bench-corpus BENCH_ARGS=--quick   # make demo does it\n```\n"
    )
    assert MODULE.findall(page) == ["jobs.clean"]
    assert make_targets(page) == {"demo", "install", "demo-crawl", "bench-corpus"}
    assert named_paths(page) == {"etl/runtime/paths.py", "jobs/clean.py", "jobs/configs/clean.toml"}
    assert slug("Settings (`[judge]` in `jobs/configs/proxy.toml`)") == "settings-judge-in-jobsconfigsproxytoml"
    assert {"demo", "test", "judge-demo", "spark-package"} <= makefile_targets()
