#!/usr/bin/env bash
# The compose scheduler: run deploy/nightly.sh all every day at NIGHTLY_AT (HH:MM, the
# container's clock, UTC unless TZ is set). A sleep loop rather than Debian's cron because cron
# must start as root to switch users, and every container here runs as uid 1000; hosts with
# cron, systemd or Airflow use deploy/cron/, deploy/systemd/ or deploy/airflow/ instead.
# One run at a time by construction; a run that outlasts a day delays the next, never doubles it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
at=${NIGHTLY_AT:-02:00}
[[ $at =~ ^([01][0-9]|2[0-3]):[0-5][0-9]$ ]] || { echo "scheduler: NIGHTLY_AT must be HH:MM, got '$at'" >&2; exit 2; }

seconds_until() {  # seconds from now until the next HH:MM
    local now next
    now=$(date +%s)
    next=$(date -d "today $1" +%s)
    (( next > now )) || next=$(date -d "tomorrow $1" +%s)
    echo $(( next - now ))
}

if [[ ${1:-} == --next ]]; then seconds_until "$at"; exit 0; fi  # for tests and the curious
while true; do
    wait_s=$(seconds_until "$at")
    echo "$(date -u +%FT%TZ) scheduler: next nightly run at $at, in ${wait_s}s" >&2
    sleep "$wait_s" & wait $!  # `wait` lets SIGTERM from `docker compose stop` end the sleep at once
    "$here/nightly.sh" all
    echo "$(date -u +%FT%TZ) scheduler: nightly run exited $?" >&2
done
