# Sourced by spark-daemon.sh and spark-submit.sh: reads the shared Spark secret and hands it to
# Spark without putting it on a command line (`ps` shows those to every user).
#
#   spark_auth_secret   prints the secret, checked (daemons: it goes into _SPARK_AUTH_SECRET)
#   spark_auth_conf     writes a private properties file with the cluster settings plus
#                       spark.authenticate.secret and prints its path (drivers; the caller removes it)
#
# Why two ways: a standalone master or worker takes the secret from the environment variable
# _SPARK_AUTH_SECRET (Spark's own channel: a worker hands the secret to its executors that way),
# which lives and dies with the process and is readable only by its user and root. A driver of a
# standalone cluster must have the spark.authenticate.secret property (SecurityManager requires it
# for spark:// masters), and spark.authenticate.secret.file is accepted in Kubernetes mode only
# ("Secret keys provided via files is only allowed in Kubernetes mode"): hence a mode-600 file.
#
#   SPARK_AUTH_SECRET_FILE  the secret, one line (default /run/secrets/spark_auth_secret, where
#                           docker compose mounts it; see deploy/secrets/README.md)
#   SPARK_CLUSTER_CONF      the settings file (default jobs/configs/spark-cluster.conf)

spark_cluster_conf() {
    printf '%s\n' "${SPARK_CLUSTER_CONF:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/jobs/configs/spark-cluster.conf}"
}

spark_auth_secret() {
    local secret_file secret
    secret_file=${SPARK_AUTH_SECRET_FILE:-/run/secrets/spark_auth_secret}
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
    printf '%s\n' "$secret"
}

spark_auth_conf() {
    local secret conf
    secret=$(spark_auth_secret) || return 1
    conf=$(mktemp "${TMPDIR:-/tmp}/spark-auth.XXXXXX")  # mktemp creates it mode 600
    { cat "$(spark_cluster_conf)"; printf '\nspark.authenticate.secret %s\n' "$secret"; } > "$conf"
    printf '%s\n' "$conf"
}
