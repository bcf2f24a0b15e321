#!/usr/bin/env bash
# Start or stop one Ray node with token authentication, so that stopping it stops exactly what it
# started (never `ray stop`, which ends every Ray process of the user on the machine).
#
#   deploy/ray-node.sh head TEMP_DIR [ray start options]        one-host head, all on 127.0.0.1
#   deploy/ray-node.sh cluster-head TEMP_DIR [ray start options] a head other nodes can join
#   deploy/ray-node.sh join TEMP_DIR HEAD:PORT [ray start options]
#   deploy/ray-node.sh stop TEMP_DIR
#
# TEMP_DIR is the node's own --temp-dir (two nodes on one host need two). The node's processes
# run in a session of their own whose id is kept in TEMP_DIR/node.sid; `stop` sends them SIGTERM,
# then SIGKILL to what is left after RAY_NODE_STOP_GRACE seconds (default 10: Ray's GCS and
# monitor outlast SIGTERM).
#
# The token: RAY_AUTH_TOKEN_PATH, else ~/.ray/auth_token. If it does not exist it is created
# (32 random bytes, hex, mode 600); an existing one readable by others is refused. Ray 2.60 will
# not start a head with RAY_AUTH_MODE=token until a token exists, and every node and client of the
# cluster needs the same one.
#
# Binds. `head` keeps every socket on 127.0.0.1: Ray swaps --node-ip-address=127.0.0.1 for the
# host's LAN address unless RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, which this sets (its only other
# effect: no node can join), and points torch.distributed's gloo and NCCL transports at the loopback
# interface (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME; gloo would listen on the address the host's name
# resolves to, NCCL on the first interface that is not loopback). A job's own local Ray does the
# same (train/launch.py). `cluster-head` and `join` cannot stay on loopback: GCS, raylets and
# workers listen on all interfaces, agents on the node's address, and three metrics endpoints on
# 0.0.0.0 without authentication. Firewall them (docs/clusters.md, "Ray on several nodes, and what it exposes").
set -euo pipefail

usage() { sed -n '5,8p' "$0" | sed 's/^# *//' >&2; exit 2; }
mode=${1:-}; temp_dir=${2:-}
[[ -n $mode && -n $temp_dir ]] || usage
shift 2

ensure_token() {
    local token=${RAY_AUTH_TOKEN_PATH:-$HOME/.ray/auth_token}
    if [[ ! -e $token ]]; then
        mkdir -p "$(dirname "$token")"
        (umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' > "$token")
        echo "ray-node: created the cluster token $token (mode 600); every node and client needs this file" >&2
    elif [[ $(stat -c %a "$token") != [4-7]00 ]]; then
        echo "ray-node: $token is readable by other users: chmod 600 it" >&2
        return 1
    fi
}

start() {  # start EXTRA_ENV... -- ray start options
    local env=()
    while [[ $1 != -- ]]; do env+=("$1"); shift; done
    shift
    mkdir -p "$temp_dir"
    temp_dir=$(cd "$temp_dir" && pwd)
    if [[ -s $temp_dir/node.sid ]] && [[ -n $(session_pids "$(cat "$temp_dir/node.sid")") ]]; then
        echo "ray-node: a node started from $temp_dir is still running (deploy/ray-node.sh stop $temp_dir)" >&2
        return 1
    fi
    ensure_token
    # setsid: a new session whose id is the pid of this bash, written before exec'ing ray start.
    env "${env[@]}" RAY_AUTH_MODE=token setsid -w bash -c 'echo $$ > "$1/node.sid"; shift; exec "$@"' _ \
        "$temp_dir" ray start --temp-dir "$temp_dir" --disable-usage-stats "$@" < /dev/null
}

option() {  # option NAME DEFAULT ARGS...: the value of --NAME in ARGS (--NAME V or --NAME=V), else DEFAULT
    local name=$1 value=$2; shift 2
    while (($#)); do
        case $1 in
            "--$name") value=${2:-}; shift ;;
            "--$name="*) value=${1#*=} ;;
        esac
        shift
    done
    printf '%s\n' "$value"
}

check_ports() {  # check_ports "NAME DEFAULT" ... -- ARGS: refuse ports another process already serves
    local specs=() spec port
    while [[ $1 != -- ]]; do specs+=("$1"); shift; done
    shift
    for spec in "${specs[@]}"; do
        port=$(option ${spec% *} ${spec#* } "$@")
        if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then
            # Ray would start anyway and fail later (an agent that cannot bind: "No available agent").
            echo "ray-node: port $port (--${spec% *}) is taken, by another Ray on this host perhaps: pass --${spec% *}=FREE_PORT" >&2
            return 1
        fi
    done
}

loopback_interface() {  # the name of the loopback network interface (IFF_LOOPBACK = 0x8), else lo
    local flags
    for flags in /sys/class/net/*/flags; do
        [[ -r $flags ]] && (( $(< "$flags") & 0x8 )) && { basename "$(dirname "$flags")"; return; }
    done
    echo lo
}

session_pids() {  # the pids of session $1 (zombies left out: they are gone, their parent has not reaped them yet)
    ps -eo pid=,sid=,stat= | awk -v s="$1" '$2 == s && $3 !~ /^Z/ { print $1 }'
}

stop() {
    local sid pids pid grace=${RAY_NODE_STOP_GRACE:-10}
    local -A termed=()
    [[ -s $temp_dir/node.sid ]] || { echo "ray-node: no node.sid in $temp_dir: nothing started there" >&2; return 1; }
    sid=$(cat "$temp_dir/node.sid")
    # The session is listed again at every step: a raylet may start a worker while the node stops,
    # and a process never signalled would outlive the node.
    for ((i = 0; i <= grace * 2; i++)); do
        pids=$(session_pids "$sid")
        [[ -z $pids ]] && break
        for pid in $pids; do
            [[ -n ${termed[$pid]:-} ]] || { kill -TERM "$pid" 2> /dev/null || true; termed[$pid]=1; }
        done
        sleep 0.5
    done
    for ((i = 0; i < 20; i++)); do  # SIGKILL what is left, and any child started meanwhile
        pids=$(session_pids "$sid")
        [[ -z $pids ]] && break
        kill -KILL $pids 2> /dev/null || true
        sleep 0.1
    done
    rm -f "$temp_dir/node.sid"
}

HEAD_PORTS=("port 6379" "dashboard-port 8265" "ray-client-server-port 10001" "dashboard-agent-listen-port 52365")
case $mode in
    head|cluster-head) check_ports "${HEAD_PORTS[@]}" -- "$@" ;;
    join) check_ports "dashboard-agent-listen-port 52365" -- "$@" ;;
esac
case $mode in
    head) lo=$(loopback_interface)
          start RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 GLOO_SOCKET_IFNAME="$lo" NCCL_SOCKET_IFNAME="$lo" -- \
              --head --node-ip-address=127.0.0.1 \
              --dashboard-host=127.0.0.1 "$@" ;;
    cluster-head) start -- --head --dashboard-host=127.0.0.1 "$@" ;;
    join) address=${1:?usage: ray-node.sh join TEMP_DIR HEAD:PORT [options]}; shift
          start -- --address="$address" "$@" ;;
    stop) stop ;;
    *) usage ;;
esac
