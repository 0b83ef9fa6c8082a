# Shared by scripts/demo, scripts/test and the benchmarks (sourced, not run).
# Installs what is missing on a fresh machine: system packages through apt,
# Python environments under .venv/ (one per interpreter, made by
# scripts/envs.py), tracefs for the syscall counters. Everything
# is idempotent and skips work already done.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

say() { printf '%s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    die "need root for: $* (run as root or install sudo)"; fi
}

_apt_updated=""
apt_install() {  # apt_install PACKAGE... (only the missing ones)
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing system packages: ${missing[*]}"
  if [ -z "$_apt_updated" ]; then as_root apt-get update -q >/dev/null; _apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
}

ensure_tracefs() {
  # The syscall counters read tracepoint ids from tracefs; a fresh VM may not
  # have it mounted. Without it the driver falls back to connector I/O counts.
  [ -d /sys/kernel/tracing/events/raw_syscalls ] && return 0
  [ -d /sys/kernel/debug/tracing/events/raw_syscalls ] && return 0
  as_root mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
    say "note: could not mount tracefs; syscalls/op will be connector I/O counts (a lower bound)"
}

ensure_venv() {  # ensure_venv 2.7|3.11|3.13 -> prints the python of .venv/pyXY
  # One implementation: scripts/envs.py (standard library only), run from this
  # checkout before it is installed.
  local boot
  boot=$(command -v python3 || command -v python) || die "no python3 on PATH to set up .venv/ with"
  "$boot" "$ROOT/scripts/envs.py" ensure "$1" ||
    die "cannot prepare the Python $1 environment (see above)"
}

# -- Docker (scripts/build-image, scripts/many-hosts) -------------------------------
# What these helpers start is written to STARTED_FILE (when set), one word a line
# ("dockerd PID", "swarm"), so the caller can stop exactly that and nothing else.

DOCKERD_LOG=${DOCKERD_LOG:-/tmp/gloaddriver-dockerd.log}

ensure_dockerd() {  # start dockerd as root in the background when no engine answers
  docker info >/dev/null 2>&1 && return 0
  command -v dockerd >/dev/null || die "no Docker engine: install docker.io (apt) or Docker"
  say "starting dockerd (log: $DOCKERD_LOG)"
  as_root sh -c "dockerd >'$DOCKERD_LOG' 2>&1 & echo \$! > /tmp/gloaddriver-dockerd.pid"
  local pid i
  pid=$(cat /tmp/gloaddriver-dockerd.pid)
  [ -n "${STARTED_FILE:-}" ] && echo "dockerd $pid" >> "$STARTED_FILE"
  for i in $(seq 1 60); do
    docker info >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || die "dockerd exited; see $DOCKERD_LOG"
    sleep 0.5
  done
  die "dockerd did not answer within 30 s; see $DOCKERD_LOG"
}

ensure_swarm() {  # a one-node swarm on 127.0.0.1 when this engine is in none
  local state
  state=$(docker info --format '{{.Swarm.LocalNodeState}}' 2>/dev/null)
  [ "$state" = active ] && return 0
  say "initialising a one-node swarm on 127.0.0.1"
  docker swarm init --advertise-addr 127.0.0.1 >/dev/null || die "docker swarm init failed"
  [ -n "${STARTED_FILE:-}" ] && echo "swarm" >> "$STARTED_FILE"
  return 0
}
