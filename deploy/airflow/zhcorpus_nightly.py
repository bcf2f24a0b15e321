"""Airflow DAG for the nightly corpus refresh: a Spark step, then the optional Ray training step.

Both tasks run ``deploy/nightly.sh`` (the recipe cron, systemd and the compose scheduler run too),
so the DAG holds only scheduling; what each step does and its exit codes are documented there:

    refresh   spark-submit jobs/nightly_refresh.py      exit 99 (lock held by another run) = skipped
    train     ray job submit nightly-<CURRENT version>  exit 99 (nothing new to train) = skipped

A skipped refresh skips train too (the default all_success trigger rule). The train step skips by
asking Ray whether ``nightly-<version>`` already exists, not by comparing CURRENT before and after
the refresh, so retrying train after a failed submission still submits, and clearing the whole
run never trains a version twice.

Install: copy (or symlink) this file into the Airflow dags folder on hosts that have the project
checked out at ZHCORPUS_HOME (default /opt/zhcorpus) with spark-submit and ray on PATH. Settings
come from the env file named by ZHCORPUS_NIGHTLY_ENV (see deploy/nightly.env.example). Uses only
the BashOperator (no Spark or Ray provider needed); written for Airflow 3, imports fall back to 2.x.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

try:  # Airflow 3
    from airflow.providers.standard.operators.bash import BashOperator
    from airflow.sdk import DAG
except ImportError:  # Airflow 2.x
    from airflow import DAG
    from airflow.operators.bash import BashOperator

ZHCORPUS_HOME = os.environ.get("ZHCORPUS_HOME", "/opt/zhcorpus")
NIGHTLY_ENV = os.environ.get("ZHCORPUS_NIGHTLY_ENV", "/etc/zhcorpus/nightly.env")
SCHEDULE = "0 2 * * *"  # 02:00 every day, in Airflow's default timezone (UTC unless configured)
SKIPPED = 99  # deploy/nightly.sh: nothing to do

with DAG(
    dag_id="zhcorpus_nightly",
    description="Refresh the Chinese pretraining corpus (Spark), then continue training on it (Ray)",
    schedule=SCHEDULE,
    start_date=datetime(2026, 1, 1),
    catchup=False,  # one refresh takes every file since the watermark: missed nights need no backfill
    max_active_runs=1,  # the refresh also holds a lock in CORPUS_ROOT; this keeps Airflow from queueing into it
    dagrun_timeout=timedelta(hours=12),
    default_args={
        "owner": "data",
        "retries": 2,
        "retry_delay": timedelta(minutes=15),
        "retry_exponential_backoff": True,
    },
    tags=["zhcorpus", "spark", "ray"],
) as dag:
    env = {"ZHCORPUS_NIGHTLY_ENV": NIGHTLY_ENV}
    refresh = BashOperator(
        task_id="refresh",
        # Safe to retry: a killed refresh leaves nothing published, and the next attempt rebuilds
        # the same version from the same files (jobs/nightly_refresh.py, "Recovery").
        bash_command=f"{ZHCORPUS_HOME}/deploy/nightly.sh refresh",
        cwd=ZHCORPUS_HOME,
        env=env,
        append_env=True,
        skip_on_exit_code=SKIPPED,
        execution_timeout=timedelta(hours=6),
    )
    train = BashOperator(
        task_id="train",
        # Submits and returns (--no-wait): Ray supervises the training run itself.
        bash_command=f"{ZHCORPUS_HOME}/deploy/nightly.sh train",
        cwd=ZHCORPUS_HOME,
        env=env,
        append_env=True,
        skip_on_exit_code=SKIPPED,
        execution_timeout=timedelta(minutes=15),
        retries=3,
        retry_delay=timedelta(minutes=5),
    )
    refresh >> train
