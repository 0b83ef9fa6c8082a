#!/usr/bin/env bash
# Makes the peers' environments for scripts/bench-peers, under .venv/ (ignored by
# git): .venv/peers-py311 (asynctnt + uvloop, aiotarantool on tarantool-python
# 0.7.1, asyncpg, psycopg 3, SQLAlchemy 2.0 with its asyncio extra on asyncpg for
# scripts/bench orm) and .venv/peers-py27 (gtarantool 1.0.12 on
# tarantool-python 0.5.4, gevent 22.10.2, msgpack 0.6 with its C extension).
# Idempotent: a stamp file in each holds the pins it was made with; a second run
# with the same pins does nothing. Prints nothing on success. Used by scripts/bench
# peers, toolbench and orm.
#   scripts/peers/install.sh PYTHON3.11 PYTHON2.7
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
py311=$1
py27=$2
PINS311="asynctnt==2.4.0 uvloop==0.23.0 aiotarantool==1.1.5 tarantool==0.7.1 asyncpg==0.32.0 psycopg[binary]==3.3.9 msgpack==1.2.4 SQLAlchemy[asyncio]==2.0.58 greenlet==3.5.6"
# gtarantool 1.0.12 imports RetryWarning, which tarantool-python dropped after 0.5.4;
# that release asks for msgpack-python, the old name of msgpack: installed without
# its dependencies, it gets msgpack 0.6.2 (same module, C extension on 2.7) instead.
PINS27="gevent==22.10.2 msgpack==0.6.2 six==1.16.0 PyYAML==5.4.1"
NODEPS27="gtarantool==1.0.12 tarantool==0.5.4"

# One at a time: the suite runs its 2.7 and 3.11 halves side by side, and a test in
# each may ask for these environments at once (the second waits, then finds them made).
mkdir -p "$ROOT/.venv"
exec 9>"$ROOT/.venv/.peers-lock"
flock 9

make() {  # make DIR PYTHON STAMP INSTALL...
  local dir=$1 py=$2 stamp=$3
  shift 3
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.peers-installed" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  echo "preparing $dir" >&2
  rm -rf "$dir"
  "$@"
  echo "$stamp" > "$dir/.peers-installed"
}

pip_q() { "$@" -q --disable-pip-version-check 2>&1 | grep -v -e DEPRECATION -e "dependency conflicts" -e "requires msgpack-python" >&2 || true; }

build311() {
  "$py311" -m venv "$ROOT/.venv/peers-py311"
  "$ROOT/.venv/peers-py311/bin/pip" install -q --disable-pip-version-check $PINS311
}
build27() {
  "$py27" -m virtualenv --version >/dev/null 2>&1 || "$py27" -m pip install -q 'virtualenv<20.16'
  "$py27" -m virtualenv -q "$ROOT/.venv/peers-py27"
  pip_q "$ROOT/.venv/peers-py27/bin/pip" install $PINS27
  pip_q "$ROOT/.venv/peers-py27/bin/pip" install --no-deps $NODEPS27
  "$ROOT/.venv/peers-py27/bin/python" -c 'import gtarantool, msgpack._cmsgpack' ||
    { echo "peers-py27: gtarantool does not import" >&2; exit 1; }
}
make "$ROOT/.venv/peers-py311" "$py311" "$PINS311" build311
make "$ROOT/.venv/peers-py27" "$py27" "$PINS27 $NODEPS27" build27
