#!/usr/bin/env bash
# spark-submit against an authenticated standalone cluster. Every argument is passed on to
# spark-submit, after --properties-file with the cluster settings (jobs/configs/spark-cluster.conf:
# authentication and encryption on, the driver's web UI off) and the shared secret: a private
# mode-600 file (see spark-auth.sh), removed when the driver exits.
#
#   deploy/spark-submit.sh --master spark://spark-master:7077 jobs/build_corpus.py --input ... --output ...
#
# Binds: with a master on this host's loopback (spark://127.0.0.1:..., spark://localhost:...,
# local[...]) the driver binds to 127.0.0.1 (SPARK_LOCAL_IP, unless already set); for a remote
# master it must listen where the executors reach it: set SPARK_LOCAL_IP to that address.
#
# A master that refuses the secret shows up in Spark only as "All masters are unresponsive"
# after ~60 s; this wrapper watches the driver's log for the failed authentication handshake,
# stops the driver and exits 77 within seconds, saying "authentication failed".
#
#   SPARK_SUBMIT            the spark-submit to run (default: the one on PATH)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/spark-auth.sh"
AUTH_FAILED=77  # sysexits EX_NOPERM

master=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
        --master) master=${args[i + 1]:-} ;;
        --master=*) master=${args[i]#--master=} ;;
    esac
done
if [[ -z ${SPARK_LOCAL_IP:-} && $master =~ ^(local(\[.*\])?$|spark://(127\.[0-9.]+|localhost|\[::1\])(:[0-9]+)?$) ]]; then
    export SPARK_LOCAL_IP=127.0.0.1
fi

conf=$(spark_auth_conf)
work=$(mktemp -d "${TMPDIR:-/tmp}/spark-submit.XXXXXX")
trap 'rm -rf "$conf" "$work"' EXIT
mkfifo "$work/stderr"
"${SPARK_SUBMIT:-spark-submit}" --properties-file "$conf" "$@" 2> "$work/stderr" &
pid=$!
# A background job of a script ignores SIGINT: forward Ctrl-C and TERM to the driver.
trap 'kill -TERM "$pid" 2> /dev/null || true' INT TERM HUP

refused=0
exec 3< "$work/stderr"
while true; do
    if IFS= read -r -t 1 line <&3; then
        printf '%s\n' "$line" >&2
    else
        status=$?
        (( status > 128 )) || break          # end of the driver's stderr
        printf '%s' "$line" >&2              # a partial line so far (its rest comes next)
        # A child of the driver may still hold the pipe: stop reading once the driver is gone
        # (exited, or a zombie until `wait` below reaps it).
        [[ $(ps -o stat= -p "$pid" 2> /dev/null) == [^Z]* ]] || break
        continue
    fi
    # The client side of a refused handshake (the master closes the connection): Spark logs it
    # at ERROR level, then retries for a minute.
    if (( ! refused )) && [[ $line == *"Exception while bootstrapping client"* ]]; then
        refused=1
        echo "spark-submit.sh: authentication failed: ${master:-the master} refused this driver's secret" \
             "(${SPARK_AUTH_SECRET_FILE:-/run/secrets/spark_auth_secret}); every daemon and driver must share one" >&2
        kill -TERM "$pid" 2> /dev/null || true
    fi
done
exec 3<&-
rc=0
wait "$pid" || rc=$?
if (( refused )); then exit "$AUTH_FAILED"; fi
exit "$rc"
