"""The nightly schedule: the Airflow DAG, the recipe it runs (deploy/nightly.sh), and the cron,
systemd and compose-scheduler variants.

Real Airflow is not in the project's venv: apache-airflow 3.3.2 resolves against
requirements.lock (checked with ``pip install --dry-run -c requirements.lock``) but adds ~130
packages (SQLAlchemy, FastAPI, OpenTelemetry, ...) to a venv the Spark and Ray jobs share. So the
DAG file is executed here against a small fake ``airflow`` package that records the DAG's
arguments, the operators and their dependencies; ``test_dag_loads_in_real_airflow`` runs the
same checks through Airflow's own DagBag when airflow is importable (skipped otherwise).
"""

import importlib.util
import os
import subprocess
import sys
import types
from datetime import timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DAG_FILE = ROOT / "deploy" / "airflow" / "zhcorpus_nightly.py"
NIGHTLY = ROOT / "deploy" / "nightly.sh"
SCHEDULE = "0 2 * * *"


class _FakeDAG:
    current = None

    def __init__(self, **kwargs):
        self.kwargs, self.tasks = kwargs, {}

    def __enter__(self):
        _FakeDAG.current = self
        return self

    def __exit__(self, *exc):
        _FakeDAG.current = None


class _FakeBashOperator:
    def __init__(self, task_id, **kwargs):
        self.task_id, self.kwargs, self.downstream = task_id, kwargs, set()
        _FakeDAG.current.tasks[task_id] = self

    def __rshift__(self, other):
        self.downstream.add(other.task_id)
        return other


@pytest.fixture
def fake_dag(monkeypatch):
    """Import the DAG file with a fake airflow (Airflow 3 module layout) in sys.modules."""
    modules = {
        name: types.ModuleType(name)
        for name in (
            "airflow",
            "airflow.sdk",
            "airflow.providers",
            "airflow.providers.standard",
            "airflow.providers.standard.operators",
            "airflow.providers.standard.operators.bash",
        )
    }
    modules["airflow.sdk"].DAG = _FakeDAG
    modules["airflow.providers.standard.operators.bash"].BashOperator = _FakeBashOperator
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location("zhcorpus_nightly_dag", DAG_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def test_dag_schedule_and_run_policy(fake_dag):
    kw = fake_dag.kwargs
    assert kw["dag_id"] == "zhcorpus_nightly"
    assert kw["schedule"] == SCHEDULE
    assert kw["catchup"] is False and kw["max_active_runs"] == 1
    assert kw["default_args"]["retries"] >= 1 and kw["default_args"]["retry_delay"] >= timedelta(minutes=1)
    assert kw["dagrun_timeout"] >= timedelta(hours=6)


def test_dag_runs_refresh_then_train_through_the_recipe(fake_dag):
    tasks = fake_dag.tasks
    assert set(tasks) == {"refresh", "train"}
    assert tasks["refresh"].downstream == {"train"} and not tasks["train"].downstream
    for step, task in tasks.items():
        command = task.kwargs["bash_command"].split()
        assert command[0].endswith("/deploy/nightly.sh") and command[1:] == [step]
        assert task.kwargs["skip_on_exit_code"] == 99  # nightly.sh: nothing to do
        assert task.kwargs["append_env"] is True and "ZHCORPUS_NIGHTLY_ENV" in task.kwargs["env"]
        assert timedelta(0) < task.kwargs["execution_timeout"] <= fake_dag.kwargs["dagrun_timeout"]
    assert tasks["train"].kwargs["execution_timeout"] < tasks["refresh"].kwargs["execution_timeout"]
    assert os.access(NIGHTLY, os.X_OK)


def test_dag_loads_in_real_airflow(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path))
    monkeypatch.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
    airflow = pytest.importorskip("airflow", reason="apache-airflow is not installed (see the module docstring)")
    assert getattr(airflow, "__file__", None), f"'airflow' is a bare directory on sys.path: {list(airflow.__path__)}"
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAG_FILE.parent))  # examples are off through the environment
    assert bag.import_errors == {}
    dag = bag.dags["zhcorpus_nightly"]  # get_dag() would ask the metadata database
    assert dag.catchup is False and dag.max_active_runs == 1
    timetable = dag.timetable  # Airflow 3: the SDK's CronTriggerTimetable; 2.x: core timetables
    assert (getattr(timetable, "expression", None) or getattr(timetable, "summary", None)) == SCHEDULE
    assert {t.task_id for t in dag.tasks} == {"refresh", "train"}
    assert dag.get_task("refresh").downstream_task_ids == {"train"}
    assert dag.get_task("train").skip_on_exit_code == [99]


def test_cron_systemd_and_compose_share_the_schedule():
    cron = [
        line.split()
        for line in (ROOT / "deploy" / "cron" / "zhcorpus-nightly.cron").read_text().splitlines()
        if line.strip() and not line.startswith("#") and "=" not in line.split()[0]
    ]
    assert len(cron) == 1
    assert " ".join(cron[0][:5]) == SCHEDULE and cron[0][5] == "corpus"  # m h dom mon dow user
    assert "deploy/nightly.sh all" in " ".join(cron[0][6:])
    timer = (ROOT / "deploy" / "systemd" / "zhcorpus-nightly.timer").read_text()
    assert "OnCalendar=*-*-* 02:00:00" in timer
    service = (ROOT / "deploy" / "systemd" / "zhcorpus-nightly.service").read_text()
    assert "ExecStart=/opt/zhcorpus/deploy/nightly.sh all" in service and "User=corpus" in service
    import yaml

    scheduler = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["scheduler"]
    assert scheduler["command"] == ["deploy/scheduler-loop.sh"]
    assert scheduler["environment"]["NIGHTLY_AT"] == "02:00"


@pytest.mark.parametrize("at, ok", [("02:00", True), ("23:59", True), ("24:00", False), ("2am", False)])
def test_scheduler_loop_waits_for_the_next_run(at, ok):
    run = subprocess.run(
        [str(ROOT / "deploy" / "scheduler-loop.sh"), "--next"],
        env={**os.environ, "NIGHTLY_AT": at},
        capture_output=True,
        text=True,
        timeout=10,
    )
    if ok:
        assert run.returncode == 0 and 0 < int(run.stdout) <= 86400
    else:
        assert run.returncode == 2


# -- deploy/nightly.sh against stub spark-submit and ray -----------------------------------------

SPARK_STUB = """#!/usr/bin/env bash
printf '%s\\n' "$@" > "$STUB_DIR/spark.argv"
exit "${SPARK_RC:-0}"
"""
RAY_STUB = """#!/usr/bin/env bash
# `ray job status`: exit RAY_STATUS_RC, printing RAY_STATUS_OUT; `ray job submit`: record argv
if [[ $2 == status ]]; then echo "${RAY_STATUS_OUT:-}"; exit "${RAY_STATUS_RC:-0}"; fi
printf '%s\\n' "$@" > "$STUB_DIR/ray.argv"
"""


@pytest.fixture
def recipe(tmp_path):
    """Runs ``nightly.sh STEP`` with stubs; returns (exit status, the stubs' recorded argvs)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("spark-submit", SPARK_STUB), ("ray", RAY_STUB)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    secret = tmp_path / "secret"
    secret.write_text("cd" * 32)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    base = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "STUB_DIR": str(tmp_path),
        "SPARK_AUTH_SECRET_FILE": str(secret),
        "TMPDIR": str(tmp_path),
        "CRAWL_ROOT": "/crawl",
        "CORPUS_ROOT": str(corpus),
        "SPARK_MASTER": "spark://m:7077",
        "RAY_ADDRESS": "http://ray:8265",
        "TRAIN_CONFIG": "jobs/configs/debug.toml",
        "REFRESH_ARGS": "--set settle_seconds=0",
    }

    def run(step, current=None, **env):
        if current:
            (corpus / "CURRENT").write_text(current + "\n")
        for f in ("spark.argv", "ray.argv"):
            (tmp_path / f).unlink(missing_ok=True)
        proc = subprocess.run([str(NIGHTLY), step], env={**base, **env}, capture_output=True, text=True, timeout=30)
        argv = {
            f.split(".")[0]: (tmp_path / f).read_text().splitlines()
            for f in ("spark.argv", "ray.argv")
            if (tmp_path / f).exists()
        }
        return proc.returncode, argv, proc.stderr

    run.corpus = corpus
    return run


@pytest.mark.parametrize("spark_rc, expected", [("0", 0), ("3", 99), ("1", 1), ("2", 2)])
def test_refresh_maps_the_lock_to_skipped(recipe, spark_rc, expected):
    rc, argv, _ = recipe("refresh", SPARK_RC=spark_rc)
    assert rc == expected
    spark = argv["spark"]
    assert spark[spark.index("--master") + 1] == "spark://m:7077"
    app = spark.index(str(ROOT / "jobs" / "nightly_refresh.py"))
    assert spark[app + 1 :] == [
        "--crawl-root",
        "/crawl",
        "--corpus-root",
        str(recipe.corpus),
        "--set",
        "settle_seconds=0",
    ]


def test_train_submits_the_published_version_once(recipe):
    rc, argv, _ = recipe(
        "train",
        current="v000002",
        RAY_STATUS_RC="1",
        RAY_STATUS_OUT="RuntimeError: Job nightly-v000002 does not exist.",
    )
    assert rc == 0
    ray = argv["ray"]
    assert ray[:2] == ["job", "submit"] and ray[ray.index("--submission-id") + 1] == "nightly-v000002"
    entry = ray[ray.index("--") + 1 :]
    assert entry[:3] == ["python", "-m", "jobs.train_lm"]
    assert entry[entry.index("--data") + 1] == f"{recipe.corpus}/versions/v000002/corpus.json"
    # the next night publishes nothing: Ray already knows nightly-v000002
    rc, argv, err = recipe("train", RAY_STATUS_RC="0", RAY_STATUS_OUT="Job has succeeded")
    assert rc == 99 and "ray" not in argv and "nothing new to train" in err


def test_train_skips_or_fails_without_submitting(recipe):
    assert recipe("train")[0] == 99  # nothing ever published
    assert recipe("train", current="v000001", RAY_ADDRESS="")[0] == 99  # no Ray step configured
    rc, argv, _ = recipe("train", current="v000001", RAY_STATUS_RC="1", RAY_STATUS_OUT="ConnectionError: refused")
    assert rc == 1 and "ray" not in argv  # Ray unreachable is a failure, not "nothing to do"
    assert recipe("train", current="v1; rm -rf /", RAY_STATUS_RC="1", RAY_STATUS_OUT="does not exist")[0] == 2


def test_all_runs_both_steps_and_counts_skips_as_success(recipe):
    rc, argv, _ = recipe("all", current="v000003", RAY_STATUS_RC="1", RAY_STATUS_OUT="does not exist")
    assert rc == 0 and "spark" in argv and "ray" in argv
    rc, argv, _ = recipe("all", SPARK_RC="3")
    assert rc == 0 and "ray" not in argv  # locked: tonight is skipped, training too
    rc, argv, _ = recipe("all", SPARK_RC="1")
    assert rc == 1 and "ray" not in argv
