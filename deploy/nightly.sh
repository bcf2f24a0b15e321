#!/usr/bin/env bash
# The nightly refresh, one recipe for Airflow, cron, systemd and the compose scheduler:
#
#   deploy/nightly.sh refresh   spark-submit jobs/nightly_refresh.py (publishes CORPUS_ROOT/CURRENT)
#   deploy/nightly.sh train     submit continued training on the published version to Ray
#   deploy/nightly.sh all       refresh, then train (what cron and systemd run)
#
# Exit status: 0 done; 99 nothing to do (Airflow's BashOperator marks exit 99 "skipped"); any
# other status a failure. `all` turns 99 into 0.
#   refresh: 99 when another refresh holds the corpus lock (nightly_refresh exit 3): tonight's
#            files wait for the next run, which picks up everything after the watermark.
#   train:   the Ray submission id is nightly-<version in CURRENT>. If Ray already knows that id
#            (this version was submitted before: the refresh published nothing new) or nothing
#            was ever published, it exits 99. So a night without new data skips training, a
#            retry after a failed submission submits, and no version is trained twice. To train
#            a version again, `ray job delete nightly-<version>` first.
#
# Settings (environment; cron and systemd read them from ZHCORPUS_NIGHTLY_ENV, see nightly.env.example):
#   CRAWL_ROOT, CORPUS_ROOT          the crawl drop directory and the published corpus
#   SPARK_MASTER                     e.g. spark://spark-master:7077 (default), yarn, k8s://https://...
#   SPARK_SUBMIT_ARGS                more spark-submit options, e.g. "--archives dist/zhcorpus-env.tar.gz#env"
#   REFRESH_ARGS                     more nightly_refresh options, e.g. "--config /etc/zhcorpus/refresh.toml"
#   RAY_ADDRESS                      the Ray dashboard, e.g. http://ray-head:8265; empty = no training step
#   TRAIN_CONFIG, TRAIN_OUTPUT       the trainer's config, and where run directories go (CORPUS_ROOT/runs)
#   SPARK_AUTH_SECRET_FILE, RAY_AUTH_TOKEN_PATH   the secrets (deploy/secrets/README.md)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SKIP=99
if [[ -n ${ZHCORPUS_NIGHTLY_ENV:-} ]]; then
    set -a; source "$ZHCORPUS_NIGHTLY_ENV"; set +a
fi
: "${CRAWL_ROOT:=/data/input}" "${CORPUS_ROOT:=/data/corpus}" "${SPARK_MASTER:=spark://spark-master:7077}"
: "${RAY_ADDRESS=http://ray-head:8265}" "${TRAIN_CONFIG:=jobs/configs/debug.toml}" "${TRAIN_OUTPUT:=$CORPUS_ROOT/runs}"
export RAY_AUTH_MODE=token  # the client must send the token: the cluster rejects requests without it

log() { printf '%s nightly: %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }

refresh() {
    local extra_submit extra_refresh rc=0
    read -ra extra_submit <<< "${SPARK_SUBMIT_ARGS:-}"
    read -ra extra_refresh <<< "${REFRESH_ARGS:-}"
    "$ROOT/deploy/spark-submit.sh" --master "$SPARK_MASTER" --name zhcorpus-nightly "${extra_submit[@]}" \
        "$ROOT/jobs/nightly_refresh.py" --crawl-root "$CRAWL_ROOT" --corpus-root "$CORPUS_ROOT" \
        "${extra_refresh[@]}" || rc=$?
    case $rc in
        0) log "refresh done; CURRENT is $(current_version || echo 'not published')" ;;
        3) log "another refresh holds the lock in $CORPUS_ROOT: skipping tonight"; return $SKIP ;;
        *) log "refresh failed (exit $rc)"; return "$rc" ;;
    esac
}

current_version() {
    local v
    [[ -f $CORPUS_ROOT/CURRENT ]] || return 1
    v=$(tr -d '[:space:]' < "$CORPUS_ROOT/CURRENT")
    [[ $v =~ ^[A-Za-z0-9._-]+$ ]] || { log "unexpected CURRENT: '$v'"; return 2; }
    printf '%s\n' "$v"
}

train() {
    local version sid out rc=0
    if [[ -z $RAY_ADDRESS ]]; then log "RAY_ADDRESS is empty: no training step"; return $SKIP; fi
    version=$(current_version) || rc=$?
    if [[ $rc == 1 ]]; then log "nothing published in $CORPUS_ROOT yet"; return $SKIP; fi
    [[ $rc == 0 ]] || return "$rc"
    sid="nightly-$version"
    if out=$(ray job status --address "$RAY_ADDRESS" "$sid" 2>&1); then
        log "Ray already has $sid (${out##*$'\n'}): nothing new to train"
        return $SKIP
    elif [[ $out != *"does not exist"* ]]; then
        printf '%s\n' "$out" >&2
        log "cannot ask Ray at $RAY_ADDRESS about $sid"
        return 1
    fi
    log "submitting $sid to $RAY_ADDRESS"
    # --no-wait: training runs for hours under Ray's supervision (FailureConfig restarts workers);
    # follow it with `ray job logs -f nightly-<version>` or on the dashboard.
    ray job submit --address "$RAY_ADDRESS" --submission-id "$sid" --no-wait --working-dir "$ROOT" -- \
        python -m jobs.train_lm --config "$TRAIN_CONFIG" \
        --data "$CORPUS_ROOT/versions/$version/corpus.json" --output "$TRAIN_OUTPUT/$version"
}

case ${1:-} in
    refresh) refresh ;;
    train) train ;;
    all)
        rc=0; refresh || rc=$?
        if [[ $rc == 0 ]]; then rc=0; train || rc=$?; fi
        [[ $rc == "$SKIP" ]] && rc=0
        exit "$rc" ;;
    *) echo "usage: $0 refresh|train|all" >&2; exit 2 ;;
esac
