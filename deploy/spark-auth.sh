# Sourced by spark-daemon.sh and spark-submit.sh: writes a private Spark properties file with the
# cluster settings (jobs/configs/spark-cluster.conf) plus the shared secret, and prints its path.
#
# Why a generated file: Spark standalone takes the secret only from the spark.authenticate.secret
# property; spark.authenticate.secret.file (and .driver.file / .executor.file) exist in Spark 4.3
# but SecurityManager accepts them in Kubernetes mode only ("Secret keys provided via files is only
# allowed in Kubernetes mode"). Passing it with --conf would show it in `ps`; a mode-600 file
# made by mktemp does not.
#
#   SPARK_AUTH_SECRET_FILE  the secret, one line (default /run/secrets/spark_auth_secret, where
#                           docker compose mounts it; see deploy/secrets/README.md)
#   SPARK_CLUSTER_CONF      the settings file (default jobs/configs/spark-cluster.conf)

spark_auth_conf() {
    local root secret_file base secret conf
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    secret_file=${SPARK_AUTH_SECRET_FILE:-/run/secrets/spark_auth_secret}
    base=${SPARK_CLUSTER_CONF:-$root/jobs/configs/spark-cluster.conf}
    if [[ ! -r $secret_file ]]; then
        echo "spark-auth: cannot read the Spark secret $secret_file (deploy/secrets/README.md says how to make it)" >&2
        return 1
    fi
    secret=$(tr -d '\r\n' < "$secret_file")
    # A Java properties value: backslashes and leading blanks would be rewritten, so allow only
    # the characters `openssl rand -hex 32` / `-base64 32` produce.
    if [[ ${#secret} -lt 32 || ! $secret =~ ^[A-Za-z0-9+/=_.-]+$ ]]; then
        echo "spark-auth: $secret_file must hold one line of >= 32 characters from [A-Za-z0-9+/=_.-] (openssl rand -hex 32)" >&2
        return 1
    fi
    conf=$(mktemp "${TMPDIR:-/tmp}/spark-auth.XXXXXX")  # mktemp creates it mode 600
    { cat "$base"; printf '\nspark.authenticate.secret %s\n' "$secret"; } > "$conf"
    printf '%s\n' "$conf"
}
