#!/usr/bin/env bash
# Start a Spark standalone master or worker in the foreground with the cluster settings and the
# shared secret (see spark-auth.sh). docker-compose.yml runs it; so can any host with Spark 4.3.
#
#   deploy/spark-daemon.sh master [Master options, e.g. --host spark-master --port 7077]
#   deploy/spark-daemon.sh worker spark://spark-master:7077 [Worker options]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/spark-auth.sh"

role=${1:?usage: spark-daemon.sh master|worker [options]}
shift
case $role in
    master) class=org.apache.spark.deploy.master.Master ;;
    worker) class=org.apache.spark.deploy.worker.Worker ;;
    *) echo "spark-daemon: unknown role $role (master or worker)" >&2; exit 2 ;;
esac
conf=$(spark_auth_conf)
# The file stays while the daemon runs (in the container's private /tmp, mode 600): Spark reads it
# once at start, and a restarted container writes a new one.
export SPARK_NO_DAEMONIZE=true
exec "${SPARK_HOME:?SPARK_HOME must point at Spark 4.3}/bin/spark-class" "$class" --properties-file "$conf" "$@"
