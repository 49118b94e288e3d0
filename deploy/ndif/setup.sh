#!/usr/bin/env bash
# Build the self-hosted NDIF's venv (Python 3.12) at $ATTNVIZ_NDIF_HOME/venv and install the cpu
# shim into it; install Debian's redis-server when it is missing. A second run whose
# requirements.txt + constraints.txt hash matches the venv's stamp only refreshes the shim.
#
# Env: ATTNVIZ_NDIF_HOME (default ~/.cache/attnviz/ndif), ATTNVIZ_NDIF_PYTHON (a python3.12 to
# use instead of searching PATH, pyenv, then apt), ATTNVIZ_NDIF_FORCE=1 (rebuild regardless),
# UV (a uv binary: the venv is made and filled by it instead of pip, the same pins; 14 s against
# pip's 89 s on a new machine of this project's, 2026-12-05, and 52 s once pip compiled no
# bytecode, 2026-12-07).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
HOME_DIR="${ATTNVIZ_NDIF_HOME:-$HOME/.cache/attnviz/ndif}"
VENV="$HOME_DIR/venv"
STAMP="$VENV/.attnviz-ndif-stamp"
started=$(date +%s)

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
    command -v apt-get >/dev/null || return 1
    as_root apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

# 1. redis-server (Debian)
if ! command -v redis-server >/dev/null; then
    echo "setup.sh: installing redis-server with apt" >&2
    apt_install redis-server || { echo "setup.sh: could not install redis-server" >&2; exit 1; }
fi

install_shim() {
    local site
    site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    install -m 0644 "$HERE/cpu_shim/attnviz_ndif_cpu.py" "$HERE/cpu_shim/attnviz_ndif_cpu.pth" "$site/"
}

want=$(cat "$HERE/requirements.txt" "$HERE/constraints.txt" | sha256sum | cut -d' ' -f1)
if [ "${ATTNVIZ_NDIF_FORCE:-0}" != 1 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] \
    && "$VENV/bin/python" -c 'from importlib.metadata import version as v; v("ndif"); v("nnsight")' \
        2>/dev/null; then
    install_shim
    echo "setup.sh: $VENV is up to date ($(( $(date +%s) - started ))s)" >&2
    exit 0
fi

# 2. a Python 3.12: ATTNVIZ_NDIF_PYTHON, PATH, pyenv, then Debian's python3.12
is312() { [ -n "$1" ] && "$1" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; }
find_python() {
    local candidate
    for candidate in "${ATTNVIZ_NDIF_PYTHON:-}" "$(command -v python3.12 || true)"; do
        is312 "$candidate" && { echo "$candidate"; return; }
    done
    local root="${PYENV_ROOT:-$HOME/.pyenv}"
    command -v pyenv >/dev/null && root="$(pyenv root)"
    for candidate in $(ls -d "$root"/versions/3.12*/bin/python3.12 2>/dev/null | sort -V -r); do
        is312 "$candidate" && { echo "$candidate"; return; }
    done
    if command -v apt-cache >/dev/null && apt-cache show python3.12-venv >/dev/null 2>&1; then
        apt_install python3.12 python3.12-venv && is312 /usr/bin/python3.12 && { echo /usr/bin/python3.12; return; }
    fi
    return 1
}
PY312=$(find_python) || { echo "setup.sh: no Python 3.12 found (PATH, pyenv, apt); set ATTNVIZ_NDIF_PYTHON" >&2; exit 1; }
echo "setup.sh: building $VENV with $PY312" >&2

# 3. build beside the old venv, then swap it in
mkdir -p "$HOME_DIR"
NEW="$VENV.new"
rm -rf "$NEW"
if [ -n "${UV:-}" ]; then
    "$UV" venv -q --python "$PY312" "$NEW"
    "$UV" pip install -q --python "$NEW/bin/python" \
        -r "$HERE/requirements.txt" -c "$HERE/constraints.txt"
else
    "$PY312" -m venv "$NEW"
    "$NEW/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
    # Without compiling every module's bytecode (as uv does): what runs is compiled at its
    # first import, once.
    "$NEW/bin/python" -m pip install -q --disable-pip-version-check --no-compile \
        -r "$HERE/requirements.txt" -c "$HERE/constraints.txt"
fi
rm -rf "$VENV"
mv "$NEW" "$VENV"
# A venv's scripts name their interpreter by absolute path: point them at the final location.
grep -rlI --null "$NEW" "$VENV/bin" | xargs -0 -r sed -i "s#$NEW#$VENV#g"
install_shim
echo "$want" >"$STAMP"
echo "setup.sh: built $VENV in $(( $(date +%s) - started ))s ($(du -sh "$VENV" | cut -f1))" >&2
