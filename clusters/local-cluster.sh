#!/usr/bin/env bash
# A single-node Ray cluster on this machine, with the dashboard and the Jobs API.
#
#   clusters/local-cluster.sh start     # ray start --head --block, in the background
#   clusters/local-cluster.sh status    # is it up? prints the address to use
#   clusters/local-cluster.sh stop      # ends exactly the processes this script started
#
# Settings (environment): RAYSTUDY_CLUSTER_DIR (state, logs, Ray's temp dir; default
# /tmp/raystudy-cluster), NUM_CPUS (default: all cores), RAY_PORT (6379), DASHBOARD_PORT
# (8265), CLIENT_PORT (10001), AGENT_PORT (52365), OBJECT_STORE_BYTES (Ray's default).
#
# Token authentication stays on: with no RAY_AUTH_TOKEN/RAY_AUTH_TOKEN_PATH and no
# ~/.ray/auth_token, `ray get-auth-token --generate` writes ~/.ray/auth_token first.
# Clients then need RAY_AUTH_MODE=token (and that token).
#
# `stop` does not run `ray stop`, which would end every Ray on the machine: it ends the
# process tree of the `ray start --block` it launched (pid in $RAYSTUDY_CLUSTER_DIR).
set -euo pipefail

DIR=${RAYSTUDY_CLUSTER_DIR:-/tmp/raystudy-cluster}
RAY_PORT=${RAY_PORT:-6379}
DASHBOARD_PORT=${DASHBOARD_PORT:-8265}
CLIENT_PORT=${CLIENT_PORT:-10001}
AGENT_PORT=${AGENT_PORT:-52365}
NUM_CPUS=${NUM_CPUS:-$(nproc)}
RAY=${RAY:-ray}
PID_FILE="$DIR/head.pid"
DASHBOARD="http://127.0.0.1:$DASHBOARD_PORT"

running() { [[ -f "$PID_FILE" ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }

any_alive() {
    local pid
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done
    return 1
}

descendants() {  # every process below $1, children before their parents
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        descendants "$child"
        echo "$child"
    done
}

start() {
    if running; then
        echo "already running (pid $(cat "$PID_FILE")); dashboard $DASHBOARD"
        return 0
    fi
    mkdir -p "$DIR"
    export RAY_AUTH_MODE=token
    if [[ -z "${RAY_AUTH_TOKEN:-}" && -z "${RAY_AUTH_TOKEN_PATH:-}" \
          && ! -s "$HOME/.ray/auth_token" ]]; then
        "$RAY" get-auth-token --generate > /dev/null
    fi
    local extra=()
    [[ -n "${OBJECT_STORE_BYTES:-}" ]] && extra+=(--object-store-memory "$OBJECT_STORE_BYTES")
    setsid "$RAY" start --head --block --disable-usage-stats \
        --port "$RAY_PORT" --num-cpus "$NUM_CPUS" --temp-dir "$DIR/ray" \
        --dashboard-host 127.0.0.1 --dashboard-port "$DASHBOARD_PORT" \
        --ray-client-server-port "$CLIENT_PORT" --dashboard-agent-listen-port "$AGENT_PORT" \
        "${extra[@]}" > "$DIR/head.log" 2>&1 < /dev/null &
    echo $! > "$PID_FILE"
    for _ in $(seq 1 120); do
        if curl -sf "$DASHBOARD/api/gcs_healthz" > /dev/null 2>&1; then
            echo "Ray is up: dashboard and Jobs API at $DASHBOARD (logs: $DIR/head.log)"
            echo "  export RAY_API_SERVER_ADDRESS=$DASHBOARD RAY_AUTH_MODE=token"
            return 0
        fi
        if ! running; then
            echo "ray start failed; last lines of $DIR/head.log:" >&2
            tail -n 20 "$DIR/head.log" >&2
            return 1
        fi
        sleep 1
    done
    echo "the dashboard did not answer at $DASHBOARD within 120 s (see $DIR/head.log)" >&2
    stop
    return 1
}

stop() {
    if ! running; then
        echo "not running"
        rm -f "$PID_FILE"
        return 0
    fi
    local root pids
    root=$(cat "$PID_FILE")
    pids="$(descendants "$root") $root"
    # shellcheck disable=SC2086
    kill -TERM $pids 2>/dev/null || true
    for _ in $(seq 1 15); do
        # shellcheck disable=SC2086
        any_alive $pids || break
        sleep 1
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    rm -f "$PID_FILE"
    echo "stopped the cluster started from $DIR"
}

status() {
    if running && curl -sf "$DASHBOARD/api/gcs_healthz" > /dev/null 2>&1; then
        echo "running (pid $(cat "$PID_FILE")); dashboard and Jobs API at $DASHBOARD"
    else
        echo "not running"
        return 1
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
