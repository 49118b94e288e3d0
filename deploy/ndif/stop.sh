#!/usr/bin/env bash
# Stop what start.sh started: the API (gunicorn), the Ray head (and with it the controller and
# model actors), moto and redis. Only the pids recorded in the run dir, plus `ray stop` against
# this run's Ray temp dir. Safe to run twice.
set -uo pipefail
HOME_DIR="${ATTNVIZ_NDIF_HOME:-$HOME/.cache/attnviz/ndif}"
VENV="$HOME_DIR/venv"
RUN="${ATTNVIZ_NDIF_RUN:-$HOME_DIR/run}"

stop_pid() { # stop_pid NAME: TERM its process group (start.sh setsid's each service),
    # wait up to 15 s, then KILL what is left of the group
    local file="$RUN/$1.pid" pid
    [ -f "$file" ] || return 0
    pid=$(cat "$file")
    local target="-$pid"                          # the group, when it leads one
    kill -0 -- "$target" 2>/dev/null || target="$pid"
    if kill -0 -- "$target" 2>/dev/null; then
        kill -TERM -- "$target" 2>/dev/null
        for _ in $(seq 30); do kill -0 -- "$target" 2>/dev/null || break; sleep 0.5; done
        kill -KILL -- "$target" 2>/dev/null
    fi
    rm -f "$file"
}

stop_pid api
if [ -f "$RUN/ray_tmp" ] && [ -x "$VENV/bin/ray" ]; then
    # `ray stop` ends this machine's Ray processes (raylet, GCS, workers, dashboard).
    "$VENV/bin/ray" stop --force >/dev/null 2>&1 || true
    rm -rf "$(cat "$RUN/ray_tmp")" "$RUN/ray_tmp"
fi
stop_pid moto
stop_pid redis
rm -f "$RUN/env"
echo "stop.sh: stopped (logs kept in $RUN)" >&2
