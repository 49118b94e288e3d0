#!/usr/bin/env bash
# Start a self-hosted NDIF on this machine, CPU only: redis, an S3 stand-in (moto), a Ray head
# advertising one pretend GPU, NDIF's controller, and NDIF's API (gunicorn). Waits until the API
# answers, then prints its URL on stdout (the last line) and writes $RUN/env.
#
# Env (all optional):
#   ATTNVIZ_NDIF_HOME       default ~/.cache/attnviz/ndif (venv from setup.sh lives there)
#   ATTNVIZ_NDIF_RUN        run dir for pids, logs and env (default $ATTNVIZ_NDIF_HOME/run)
#   ATTNVIZ_NDIF_API_PORT, _REDIS_PORT, _S3_PORT, _RAY_PORT, _RAY_CLIENT_PORT, _DASHBOARD_PORT
#                           fixed ports; each unset one is a free port picked now (the API
#                           tries 8001 first)
#   ATTNVIZ_NDIF_GPU_BYTES  "GPU" memory the head advertises (default 8 GiB); models are
#                           placed against it, and the shim reports it as the card's size
#   ATTNVIZ_NDIF_DTYPE      dtype models load in (default float32, NDIF's own is bfloat16)
#   ATTNVIZ_NDIF_TIMEOUT    seconds to wait for the API (default 240)
#   NDIF_*                  anything else NDIF reads passes through (e.g. NDIF_POSTGRES_URL)
set -euo pipefail

HOME_DIR="${ATTNVIZ_NDIF_HOME:-$HOME/.cache/attnviz/ndif}"
VENV="$HOME_DIR/venv"
RUN="${ATTNVIZ_NDIF_RUN:-$HOME_DIR/run}"
PY="$VENV/bin/python"
[ -x "$PY" ] || { echo "start.sh: no NDIF venv at $VENV; run deploy/ndif/setup.sh" >&2; exit 1; }
if [ -f "$RUN/api.pid" ] && kill -0 "$(cat "$RUN/api.pid")" 2>/dev/null; then
    echo "start.sh: already running (pids in $RUN); run stop.sh first" >&2; exit 1
fi
mkdir -p "$RUN"
rm -f "$RUN"/*.pid "$RUN"/*.log "$RUN/env"
started=$(date +%s.%N)
# The venv is installed without bytecode (setup.sh): its processes write it at their first
# imports, into the venv, so that a later start reads it (not compiled again at every start).
unset PYTHONDONTWRITEBYTECODE

free_port() { # free_port [preferred]
    "$PY" - "${1:-0}" <<'EOF'
import socket, sys
want = int(sys.argv[1])
for port in ([want] if want else []) + [0]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn/redis bind
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(s.getsockname()[1]); s.close(); break
EOF
}
API_PORT="${ATTNVIZ_NDIF_API_PORT:-$(free_port 8001)}"
REDIS_PORT="${ATTNVIZ_NDIF_REDIS_PORT:-$(free_port)}"
S3_PORT="${ATTNVIZ_NDIF_S3_PORT:-$(free_port)}"
RAY_PORT="${ATTNVIZ_NDIF_RAY_PORT:-$(free_port)}"
RAY_CLIENT_PORT="${ATTNVIZ_NDIF_RAY_CLIENT_PORT:-$(free_port)}"
DASHBOARD_PORT="${ATTNVIZ_NDIF_DASHBOARD_PORT:-$(free_port)}"
GPU_BYTES="${ATTNVIZ_NDIF_GPU_BYTES:-$((8 * 1024 * 1024 * 1024))}"
# Ray's unix socket paths must stay short (108 bytes): keep its temp dir under /tmp.
RAY_TMP="${ATTNVIZ_NDIF_RAY_TMP:-/tmp/attnviz-ndif-ray-$RAY_PORT}"

export PATH="$VENV/bin:$PATH"
export ATTNVIZ_NDIF_CPU=1 ATTNVIZ_NDIF_GPU_BYTES="$GPU_BYTES"   # turns the cpu shim on
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"                     # local model folders only
export GRPC_ENABLE_FORK_SUPPORT="${GRPC_ENABLE_FORK_SUPPORT:-0}"  # as NDIF's ray/start.sh
export NDIF_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
export NDIF_OBJECT_STORE_URL="http://127.0.0.1:$S3_PORT"
export NDIF_OBJECT_STORE_ACCESS_KEY="${NDIF_OBJECT_STORE_ACCESS_KEY:-attnviz}"
export NDIF_OBJECT_STORE_SECRET_KEY="${NDIF_OBJECT_STORE_SECRET_KEY:-attnviz-secret}"
export AWS_ACCESS_KEY_ID="$NDIF_OBJECT_STORE_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$NDIF_OBJECT_STORE_SECRET_KEY"
export NDIF_API_URL="http://127.0.0.1:$API_PORT" NDIF_API_PORT="$API_PORT"
export NDIF_RAY_ADDRESS="ray://127.0.0.1:$RAY_CLIENT_PORT" NDIF_RAY_HEAD_PORT="$RAY_PORT"
export NDIF_DEFAULT_DTYPE="${ATTNVIZ_NDIF_DTYPE:-float32}"
export NDIF_SERVICE=ndif

cleanup_on_error() { echo "start.sh: failed; logs in $RUN" >&2; "$(dirname "$0")/stop.sh" >&2 || true; }
trap cleanup_on_error ERR

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
    local until=$(( $(date +%s) + $1 )) what=$2; shift 2
    until "$@" >/dev/null 2>&1; do
        if [ "$(date +%s)" -ge "$until" ]; then echo "start.sh: timed out waiting for $what" >&2; return 1; fi
        sleep 0.5
    done
}
tcp_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# 1. redis (Debian's redis-server), no persistence
# Each long-running service gets its own session (setsid), so stop.sh can end it with
# everything it spawned (gunicorn's master spawns the queue dispatcher, which outlives a
# TERM to the master) by signalling the process group.
setsid redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$RUN" --daemonize no >"$RUN/redis.log" 2>&1 &
echo $! >"$RUN/redis.pid"

# 2. object store: moto's S3 server (NDIF itself ships rustfs)
setsid moto_server -H 127.0.0.1 -p "$S3_PORT" >"$RUN/moto.log" 2>&1 &
echo $! >"$RUN/moto.pid"
wait_for 30 redis tcp_open "$REDIS_PORT"
wait_for 60 moto tcp_open "$S3_PORT"

# 3. Ray head with one pretend GPU and the custom resources NDIF's resources.py would compute
CPU_BYTES=$("$PY" -c 'import psutil; print(psutil.virtual_memory().total)')
RESOURCES="{\"head\": 10, \"cuda_memory_bytes\": $GPU_BYTES, \"cpu_memory_bytes\": $CPU_BYTES}"
echo "$RAY_TMP" >"$RUN/ray_tmp"
ray start --head --disable-usage-stats \
    --node-ip-address=127.0.0.1 \
    --port="$RAY_PORT" --ray-client-server-port="$RAY_CLIENT_PORT" \
    --num-cpus="${ATTNVIZ_NDIF_RAY_CPUS:-4}" --num-gpus=1 --resources="$RESOURCES" \
    --include-dashboard=true --dashboard-host=127.0.0.1 --dashboard-port="$DASHBOARD_PORT" \
    --temp-dir="$RAY_TMP" >"$RUN/ray.log" 2>&1

# 4. NDIF controller (a detached actor; the launching driver exits)
RAY_ADDRESS="127.0.0.1:$RAY_PORT" "$PY" -m ndif.services.ray.deployments.controller.controller \
    >"$RUN/controller.log" 2>&1

# 5. NDIF API (gunicorn + uvicorn workers; its master runs the queue dispatcher)
setsid gunicorn --config python:ndif.services.api.gunicorn_conf ndif.services.api.app:app \
    >"$RUN/api.log" 2>&1 &
echo $! >"$RUN/api.pid"

api_up() { "$PY" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=5)" "$NDIF_API_URL/connected"; }
wait_for "${ATTNVIZ_NDIF_TIMEOUT:-240}" "the API at $NDIF_API_URL/connected" api_up
trap - ERR

cat >"$RUN/env" <<EOF
NDIF_HOST=$NDIF_API_URL
API_PORT=$API_PORT
REDIS_PORT=$REDIS_PORT
S3_PORT=$S3_PORT
RAY_PORT=$RAY_PORT
RAY_CLIENT_PORT=$RAY_CLIENT_PORT
DASHBOARD_PORT=$DASHBOARD_PORT
RAY_TMP=$RAY_TMP
EOF
elapsed=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $started}")
echo "start.sh: NDIF up in ${elapsed}s (run dir $RUN)" >&2
echo "$NDIF_API_URL"
