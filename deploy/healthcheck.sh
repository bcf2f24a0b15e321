#!/usr/bin/env bash
# The image's HEALTHCHECK: cheap, per service (ZHCORPUS_ROLE, set in docker-compose.yml):
# a TCP connect to the service's UI where it listens (the Spark daemons bind to SPARK_LOCAL_IP,
# the Ray dashboard to the container's interfaces), or its process for the services without a
# port of their own.
set -u
tcp() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
case ${ZHCORPUS_ROLE:-} in
    spark-master) tcp "${SPARK_LOCAL_IP:-127.0.0.1}" 8080 ;;
    spark-worker) tcp "${SPARK_LOCAL_IP:-127.0.0.1}" 8081 ;;
    ray-head) tcp 127.0.0.1 8265 ;;
    ray-worker) pgrep -x raylet > /dev/null ;;
    scheduler) pgrep -f scheduler-loop.sh > /dev/null ;;
    *) exit 0 ;;  # a one-off container (docker compose run): nothing to watch
esac
