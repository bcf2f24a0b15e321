#!/usr/bin/env bash
# Start a Spark standalone master or worker in the foreground with the cluster settings
# (jobs/configs/spark-cluster.conf) and the shared secret. docker-compose.yml runs it; so can any
# host with Spark 4.3, including the pip package (whose pyspark has bin/spark-class but no
# sbin/start-master.sh): with the project's venv on PATH, SPARK_HOME may stay unset.
#
#   deploy/spark-daemon.sh master [Master options: --host HOST --port 7077 --webui-port 8080]
#   deploy/spark-daemon.sh worker spark://HOST:7077 [Worker options: --cores N --memory 4g
#                                 --work-dir DIR --webui-port 8081]
#
# Binds: every socket of the daemon, its web UI and (for a worker) its executors is on
# SPARK_LOCAL_IP, which defaults to the --host given, else 127.0.0.1. Without it Spark binds the
# UI to 0.0.0.0 even when --host is 127.0.0.1.
#
# Ports: a --port or --webui-port (given, else Spark's default: master 7077 and 8080, worker UI 8081)
# that another process already serves on that address is refused, naming the option. Spark itself
# would silently take the next port (7078, ...), and a worker pointed at :7077 would then knock at
# another cluster's master.
#
# The secret reaches the JVM in _SPARK_AUTH_SECRET (see spark-auth.sh): no copy of it is written
# anywhere, so nothing is left behind when the daemon exits or is killed.
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

host=""
if [[ $role == master ]]; then
    port=${SPARK_MASTER_PORT:-7077} ui=${SPARK_MASTER_WEBUI_PORT:-8080}
else
    port=${SPARK_WORKER_PORT:-0} ui=${SPARK_WORKER_WEBUI_PORT:-8081}  # 0: a random RPC port
fi
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
        --host|-h|--ip|-i) host=${args[i + 1]:-} ;;
        --port|-p) port=${args[i + 1]:-} ;;
        --webui-port) ui=${args[i + 1]:-} ;;
    esac
done
export SPARK_LOCAL_IP=${SPARK_LOCAL_IP:-${host:-127.0.0.1}}

for spec in "--port $port" "--webui-port $ui"; do
    p=${spec#* }
    [[ $p =~ ^[1-9][0-9]*$ ]] || continue
    if timeout 2 bash -c 'exec 3<> "/dev/tcp/$1/$2"' _ "$SPARK_LOCAL_IP" "$p" 2> /dev/null; then
        echo "spark-daemon: port $p (${spec% *}) on $SPARK_LOCAL_IP is taken, by another Spark on this host" \
             "perhaps: pass ${spec% *} FREE_PORT" >&2
        exit 1
    fi
done

_SPARK_AUTH_SECRET=$(spark_auth_secret)
export _SPARK_AUTH_SECRET
export SPARK_NO_DAEMONIZE=true
exec "${SPARK_HOME:+$SPARK_HOME/bin/}spark-class" "$class" --properties-file "$(spark_cluster_conf)" "$@"
