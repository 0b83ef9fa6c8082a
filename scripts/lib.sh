# Shared by scripts/demo, scripts/test and the benchmarks (sourced, not run).
# Installs what is missing on a fresh machine: system packages through apt,
# Python environments under .venv/ (one per interpreter), tracefs for the
# syscall counters. Everything is idempotent and skips work already done.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENVS="$ROOT/.venv"

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

find_python() {  # find_python 2.7|3.11 -> path of a working interpreter
  local v=$1 c
  for c in "python$v" "$(pyenv root 2>/dev/null)"/versions/"$v".*/bin/python \
           /usr/local/bin/python"$v" /usr/bin/python"$v"; do
    [ -n "$c" ] || continue
    if "$c" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$v' else 1)" \
        >/dev/null 2>&1; then
      command -v "$c" 2>/dev/null || echo "$c"
      return 0
    fi
  done
  return 1
}

ensure_venv() {  # ensure_venv 2.7|3.11 -> prints the venv's python
  local v=$1 py dir stamp want
  py=$(find_python "$v") || die "Python $v not found (looked on PATH and in pyenv); it is required"
  dir="$VENVS/py${v/./}"
  want=$(cat "$ROOT/setup.cfg" "$ROOT/setup.py" | cksum | cut -d' ' -f1)
  stamp="$dir/.gloaddriver-installed"
  if [ -x "$dir/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    echo "$dir/bin/python"; return 0
  fi
  say "preparing $dir (Python $v)"
  rm -rf "$dir"
  if [ "$v" = 2.7 ]; then
    # 2.7 has no venv module; virtualenv < 20.16 still runs on it. Never
    # pip --target/PYTHONPATH: zope namespace packages would break gevent.
    "$py" -m virtualenv --version >/dev/null 2>&1 ||
      "$py" -m pip install -q --disable-pip-version-check "virtualenv<20.16" >&2 2>/dev/null ||
      die "cannot install virtualenv for Python 2.7"
    "$py" -m virtualenv -q "$dir" >&2
  else
    "$py" -m venv "$dir" >&2
  fi
  "$dir/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT[profile,test]" >&2 \
    2> >(grep -v -e DEPRECATION -e 'Python 2.7' >&2) || die "pip install failed in $dir"
  echo "$want" > "$stamp"
  echo "$dir/bin/python"
}
