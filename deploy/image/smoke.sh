#!/usr/bin/env bash
# Build attnviz's image from the Dockerfile and smoke-test it, on a machine with no Docker daemon
# and no registry (CI runs it through `make image-test`). Run it as root; about 6 minutes on 2
# cores from a fresh machine, about 3 when the base image is already in storage.
#
#  1. Tools: buildah and debootstrap (and python3, for the checks) from apt-get when missing.
#  2. Base: the Dockerfile starts FROM ${BASE}, python:3.11-slim, which needs a registry. In its
#     place this makes $BASE_IMAGE from Debian's own packages: bookworm by debootstrap
#     (--variant=minbase; python3, python3-venv, ca-certificates) from the mirror the machine's
#     apt uses, a venv at /opt/python first in PATH (so `python` and `pip` are what they are in
#     python:3.11-slim), committed from `buildah from scratch`. It is kept and reused;
#     SMOKE_FRESH=1 makes it again.
#  3. Image: `buildah bud --format docker` (the OCI format has no HEALTHCHECK) with chroot
#     isolation, BASE=$BASE_IMAGE. When $WHEELS holds the CPU wheel of the Dockerfile's torch
#     for Python 3.11 it is mounted at /wheels and installed from there (TORCH_INDEX empty,
#     TORCH_SPEC torch==X+cpu); else torch comes from the PyTorch CPU index as on any host.
#     The config must have a HEALTHCHECK and a non-root USER.
#  4. Run: `buildah from` the image, then `buildah run --isolation chroot` of its CMD as its USER,
#     with PORT set to a free port (chroot isolation shares the host's network, so loopback
#     reaches it); run the image's own HEALTHCHECK command the same way until it passes; GET /,
#     GET /api/models and POST /api/trace from the host; SIGTERM must stop the server. On a
#     failure the server's log is printed.
#
# Why buildah run and not podman: podman (4.3 in bookworm) needs an OCI runtime and systemd for
# its health check timers; on this CI's sandbox `podman run` fails (crun: setrlimit
# RLIMIT_NOFILE: Operation not permitted; no /run/systemd/private). buildah's chroot isolation
# needs neither and runs the image's config (CMD, USER, ENV, WORKDIR) the same way; `podman
# healthcheck run` would only run the HEALTHCHECK command, which this script reads from the
# image and runs itself.
#
# Storage: vfs under $STORAGE_ROOT, apart from any other containers storage on the machine (see
# it with `buildah --root $STORAGE_ROOT --storage-driver vfs images`). Work files go to a
# temporary folder under /var/tmp, removed at exit with the test container.
#
# Environment: SMOKE_IMAGE (localhost/attnviz:smoke), SMOKE_BASE_IMAGE
# (localhost/attnviz-base:bookworm), SMOKE_WHEELS (/opt/wheels), SMOKE_STORAGE_ROOT
# (/var/lib/containers/attnviz-vfs), SMOKE_FRESH=1, DEBIAN_MIRROR (else the one in
# /etc/apt/sources.list*), HTTP(S)_PROXY and NO_PROXY (passed to the build).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
IMAGE=${SMOKE_IMAGE:-localhost/attnviz:smoke}
BASE_IMAGE=${SMOKE_BASE_IMAGE:-localhost/attnviz-base:bookworm}
WHEELS=${SMOKE_WHEELS:-/opt/wheels}
STORAGE_ROOT=${SMOKE_STORAGE_ROOT:-/var/lib/containers/attnviz-vfs}
FRESH=${SMOKE_FRESH:-0}
SUITE=bookworm
CONTAINER=attnviz-smoke
BASE_WORK=attnviz-base-work
HEALTH_WAIT_S=180
START_S=$SECONDS

BUILDAH=(buildah --root "$STORAGE_ROOT" --runroot "/run/containers/$(basename "$STORAGE_ROOT")"
    --storage-driver vfs)
WORK=
SERVER_PID=
SERVER_LOG=

log() { printf '[smoke %4ds] %s\n' "$((SECONDS - START_S))" "$*"; }
die() {
    log "FAILED: $*"
    exit 1
}

stop_server() {
    # The server runs in its own process group (setsid): buildah, its chroot runner and the
    # server itself.
    [ -n "$SERVER_PID" ] || return 0
    kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
}

cleanup() {
    local rc=$?
    stop_server
    if [ "$rc" != 0 ] && [ -s "$SERVER_LOG" ]; then
        echo "---- server log ($SERVER_LOG) ----"
        cat "$SERVER_LOG"
        echo "---- end of server log ----"
    fi
    if command -v buildah >/dev/null; then
        "${BUILDAH[@]}" rm "$CONTAINER" "$BASE_WORK" >/dev/null 2>&1 || true
    fi
    if [ -n "$WORK" ]; then
        rm -rf "$WORK"
    fi
    if [ "$rc" = 0 ]; then
        log "passed"
    fi
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || die "run as root (debootstrap, buildah's chroot isolation)"

# ---- 1. Tools -------------------------------------------------------------------------------
missing=()
for tool in buildah debootstrap python3; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" != 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
fi

WORK=$(mktemp -d /var/tmp/attnviz-image.XXXXXX)
SERVER_LOG=$WORK/server.log

# The Debian mirror this machine's apt uses (one-line or deb822 sources), else deb.debian.org.
debian_mirror() {
    local uri
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
        /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v '^[[:space:]]*#' |
        grep -oE '(https?|file)://[^[:space:]]+/debian/?([[:space:]]|$)' |
        head -n 1 | tr -d '[:space:]') || true
    echo "${uri:-http://deb.debian.org/debian}"
}

# ---- 2. Base image --------------------------------------------------------------------------
has_image() { "${BUILDAH[@]}" inspect --type image "$1" >/dev/null 2>&1; }

make_base() {
    local mirror rootfs ctr mnt
    mirror=${DEBIAN_MIRROR:-$(debian_mirror)}
    rootfs=$WORK/rootfs
    log "debootstrap $SUITE from $mirror"
    if ! debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        "$SUITE" "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1; then
        tail -n 30 "$WORK/debootstrap.log"
        die "debootstrap"
    fi
    # pip and python as in python:3.11-slim: a venv, first in PATH. No host environment inside.
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot "$rootfs" python3 -m venv /opt/python
    # Nothing of this machine's (its resolver, hostname, mirror) and no caches or docs.
    rm -f "$rootfs/etc/resolv.conf" "$rootfs/etc/hostname"
    echo "deb http://deb.debian.org/debian $SUITE main" >"$rootfs/etc/apt/sources.list"
    rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* \
        "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
    find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
    find "$rootfs" -xdev -name __pycache__ -type d -prune -exec rm -rf {} +

    "${BUILDAH[@]}" rm "$BASE_WORK" >/dev/null 2>&1 || true
    ctr=$("${BUILDAH[@]}" from --name "$BASE_WORK" scratch)
    mnt=$("${BUILDAH[@]}" mount "$ctr")
    cp -a "$rootfs/." "$mnt/"
    "${BUILDAH[@]}" umount "$ctr" >/dev/null
    "${BUILDAH[@]}" config \
        --env PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --env LANG=C.UTF-8 \
        --cmd python3 \
        --label "org.opencontainers.image.description=Debian $SUITE minbase, Python 3.11 venv \
at /opt/python (attnviz's deploy/image/smoke.sh)" \
        "$ctr"
    "${BUILDAH[@]}" commit --quiet --format docker --rm "$ctr" "$BASE_IMAGE" >/dev/null
    rm -rf "$rootfs"
}

# Leftovers of an interrupted run.
"${BUILDAH[@]}" rm "$CONTAINER" "$BASE_WORK" >/dev/null 2>&1 || true

if [ "$FRESH" = 1 ]; then
    for image in "$IMAGE" "$BASE_IMAGE"; do
        if has_image "$image"; then
            "${BUILDAH[@]}" rmi --force "$image" >/dev/null
        fi
    done
fi
if has_image "$BASE_IMAGE"; then
    log "base $BASE_IMAGE: reused (SMOKE_FRESH=1 makes it again)"
else
    make_base
    log "base $BASE_IMAGE: made"
fi

# ---- 3. The image ---------------------------------------------------------------------------
build_args=(--build-arg "BASE=$BASE_IMAGE")
volumes=()
# The Dockerfile's torch pin (torch==2.13.0), from a local CPU wheel when there is one.
torch_spec=$(sed -n 's/^ARG TORCH_SPEC="\(torch==[^"]*\)"$/\1/p' "$REPO/Dockerfile")
torch_wheel=$(compgen -G "$WHEELS/torch-${torch_spec#torch==}+cpu-cp311-*.whl" | head -n 1 || true)
if [ -n "$torch_spec" ] && [ -n "$torch_wheel" ]; then
    build_args+=(--build-arg TORCH_INDEX= --build-arg "TORCH_SPEC=$torch_spec+cpu")
    volumes+=(--volume "$WHEELS:/wheels:ro")
    log "torch from $torch_wheel"
else
    log "torch from the Dockerfile's index (no CPU wheel of $torch_spec in $WHEELS)"
fi
# pip in the base is Debian's, which trusts /etc/ssl/certs/ca-certificates.crt: during the build
# that is the host's bundle, for hosts behind a TLS-inspecting proxy (this CI's is). A volume, so
# the image keeps its own.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    volumes+=(--volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
fi
for var in HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy; do
    if [ -n "${!var:-}" ]; then
        build_args+=(--build-arg "$var=${!var}")
    fi
done

# One tag, one image: drop the last run's before building (vfs keeps every image in full).
if has_image "$IMAGE"; then
    log "removing the last run's $IMAGE"
    "${BUILDAH[@]}" rmi --force "$IMAGE" >/dev/null
fi
log "building $IMAGE"
if ! "${BUILDAH[@]}" bud --format docker --isolation chroot --pull=never --layers=false \
    "${build_args[@]}" "${volumes[@]}" --tag "$IMAGE" --file "$REPO/Dockerfile" "$REPO" \
    >"$WORK/build.log" 2>&1; then
    tail -n 60 "$WORK/build.log"
    die "buildah bud (the build's last lines above)"
fi
"${BUILDAH[@]}" rmi --prune >/dev/null 2>&1 || true

# The image's config, as the fields this test needs (one per line; arrays NUL-separated).
"${BUILDAH[@]}" inspect --type image "$IMAGE" >"$WORK/image.json"
config() {
    python3 -c '
import json, sys
config, what = json.load(open(sys.argv[1]))["Docker"]["config"], sys.argv[2]
if what == "user":
    print(config.get("User") or "")
elif what == "cmd":
    argv = (config.get("Entrypoint") or []) + (config.get("Cmd") or [])
    sys.stdout.write("".join(a + "\0" for a in argv))
elif what == "health":
    test = (config.get("Healthcheck") or {}).get("Test") or []
    if test[:1] == ["CMD-SHELL"]:
        test = ["/bin/sh", "-c", test[1]]
    elif test[:1] == ["CMD"]:
        test = test[1:]
    else:
        test = []
    sys.stdout.write("".join(a + "\0" for a in test))
elif what == "health_timeout":
    print(max(1, ((config.get("Healthcheck") or {}).get("Timeout") or 30 * 10**9) // 10**9))
' "$WORK/image.json" "$1"
}

user=$(config user)
mapfile -d '' cmd < <(config cmd)
mapfile -d '' health < <(config health)
health_timeout=$(config health_timeout) # plus 10 s below for buildah run's own start
size=$("${BUILDAH[@]}" images --format '{{.Size}}' "$IMAGE" | head -n 1)
log "image $IMAGE: $size, User=$user, Cmd=${cmd[*]}"
log "healthcheck: ${health[*]}"
[ "${#health[@]}" != 0 ] || die "the image has no HEALTHCHECK"
case "${user%%:*}" in
    "" | 0 | root) die "the image runs as root (User=\"$user\")" ;;
esac
[ "${#cmd[@]}" != 0 ] || die "the image has no CMD"

# ---- 4. Run it ------------------------------------------------------------------------------
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
"${BUILDAH[@]}" from --quiet --pull=never --name "$CONTAINER" "$IMAGE" >/dev/null
in_container=("${BUILDAH[@]}" run --isolation chroot --user "$user" --env "PORT=$port"
    "$CONTAINER" --)

log "starting the container as $user, PORT=$port"
setsid "${in_container[@]}" "${cmd[@]}" >"$SERVER_LOG" 2>&1 </dev/null &
SERVER_PID=$!

deadline=$((SECONDS + HEALTH_WAIT_S))
until timeout "$((health_timeout + 10))" "${in_container[@]}" "${health[@]}" >/dev/null 2>&1; do
    kill -0 "$SERVER_PID" 2>/dev/null || die "the server exited before its health check passed"
    [ "$SECONDS" -lt "$deadline" ] || die "the health check did not pass in ${HEALTH_WAIT_S}s"
    sleep 2
done
log "health check passed"

python3 - "http://127.0.0.1:$port" <<'EOF'
import json
import sys
import urllib.request

base = sys.argv[1]


def fetch(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    req = urllib.request.Request(base + path, data=data, headers=headers)
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read()


status, ctype, page = fetch("/")
assert status == 200 and ctype.startswith("text/html") and b"<html" in page.lower(), (status, ctype)
status, _, raw = fetch("/api/models")
models = json.loads(raw)["models"]
assert status == 200 and models, raw[:300]
name = models[0]["name"]
status, ctype, raw = fetch("/api/trace", {"model": name, "text": "The cat sat on the mat."})
trace = json.loads(raw)
att = trace["attentions"]
assert status == 200 and ctype.startswith("application/json"), (status, ctype)
assert len(att) == trace["layers"] and len(att[0]) == trace["heads"], (len(att), len(att[0]))
assert abs(sum(att[0][0][0]) - 1) < 1e-4, sum(att[0][0][0])
shape = f"{trace['n']} tokens, {trace['layers']} layers x {trace['heads']} heads"
print(f"GET / {len(page)} bytes; POST /api/trace {name}: {shape}")
EOF

# Stop it as `docker stop` does: SIGTERM to the container's first process (the CMD, the child of
# buildah's buildah-chroot-exec; buildah run itself would answer SIGTERM with a SIGKILL), which
# must then exit by itself within docker's 10 s. (Its status is not checked: uvicorn ends by
# raising the SIGTERM again, as a signalled exit, which buildah reports as status 1.)
chroot_exec=$(pgrep -g "$SERVER_PID" -f '^buildah-chroot-exec ' || true)
server=$([ -z "$chroot_exec" ] || pgrep -P "$chroot_exec" || true)
[ -n "$server" ] || die "cannot find the server process"
kill -TERM "$server"
timeout 10 tail --pid="$SERVER_PID" -f /dev/null || die "the server did not stop on SIGTERM in 10 s"
wait "$SERVER_PID" || true
SERVER_PID=
log "server stopped on SIGTERM"
