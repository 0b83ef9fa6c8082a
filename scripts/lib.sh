# Shared by scripts/demo, scripts/test and the benchmarks (sourced, not run).
# Installs what is missing on a fresh machine: system packages through apt,
# Python environments under .venv/ (one per interpreter, made by
# gloaddriver/compat/envs.py), tracefs for the syscall counters. Everything
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
  # One implementation, shared with "gloaddriver compat": gloaddriver/compat/envs.py
  # (standard library only), run from this checkout before it is installed.
  local boot
  boot=$(command -v python3 || command -v python) || die "no python3 on PATH to set up .venv/ with"
  PYTHONPATH="$ROOT" "$boot" -m gloaddriver.compat.envs ensure "$1" ||
    die "cannot prepare the Python $1 environment (see above)"
}
