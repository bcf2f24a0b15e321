#!/usr/bin/env bash
# spark-submit against an authenticated standalone cluster: the cluster settings and the shared
# secret go in through a private properties file (see spark-auth.sh) that is removed when the
# driver exits. Every argument is passed on to spark-submit.
#
#   deploy/spark-submit.sh --master spark://spark-master:7077 jobs/build_corpus.py --input ... --output ...
#
#   SPARK_SUBMIT            the spark-submit to run (default: the one on PATH)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/spark-auth.sh"

conf=$(spark_auth_conf)
trap 'rm -f "$conf"' EXIT
rc=0
"${SPARK_SUBMIT:-spark-submit}" --properties-file "$conf" "$@" || rc=$?
exit "$rc"
