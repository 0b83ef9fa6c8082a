"""What the benchmark scripts share: running the driver as a user would, a server's
rows, where their JSON goes and their exit code."""
from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# pgbench's built-in scripts' SQL, PREPAREd: the statements of the plain loops that
# scripts/bench pgbench and scripts/bench pg-path set beside gloaddriver.
PGBENCH_PREPARED = {
    'select-only': ['PREPARE s AS SELECT abalance FROM pgbench_accounts WHERE aid = $1'],
    'tpcb-like': [
        'PREPARE a AS UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2',
        'PREPARE s AS SELECT abalance FROM pgbench_accounts WHERE aid = $1',
        'PREPARE t AS UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2',
        'PREPARE b AS UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2',
        'PREPARE h AS INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) '
        'VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)'],
}


def median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2.0


def driver(python, args, password, while_running=None, stderr_lines=False, root=ROOT,
           env=None):
    """``python -m gloaddriver ARGS`` in a process of its own; its JSON result, or None
    (with ``stderr_lines``: and the non-empty lines it wrote on stderr).

    ``while_running`` is called once the process has started (to pause a server mid-run,
    say). ``root``: the checkout whose gloaddriver runs (this one by default).
    ``password`` None: none is set (a --spawn run makes its own). ``env``: variables
    added to the process's environment. A failed run is reported on stderr with its exit
    code and last words.
    """
    fd, path = tempfile.mkstemp(suffix='.json')
    os.close(fd)
    env = dict(os.environ, PYTHONPATH=root, **(env or {}))
    if password is not None:
        env['GLOADDRIVER_PASSWORD'] = password
    p = subprocess.Popen([python, '-m', 'gloaddriver', '--progress', '0', '--json', path] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=root)
    if while_running is not None:
        while_running()
    _out, err = p.communicate()
    try:
        with open(path) as f:
            result = json.load(f)
    except ValueError:
        result = None
    finally:
        os.unlink(path)
    err = err.decode('utf-8', 'replace')
    if p.returncode != 0 or result is None:
        sys.stderr.write('run failed (%s; exit %s): %s\n' % (' '.join(args), p.returncode,
                                                            err[-500:]))
    if stderr_lines:
        return result, [l for l in err.splitlines() if l.strip()]
    return result


def out_path(given, kind):
    """--out, or bench-results/KIND-DATE-TIME.json; its folder made if missing."""
    path = given or os.path.join(ROOT, 'bench-results',
                                 '%s-%s.json' % (kind, time.strftime('%Y%m%d-%H%M%S')))
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        os.makedirs(folder)
    return path


def fill_tarantool(server, keys):
    """``keys`` rows of 1.5 KB in the driver's space of a spawned Tarantool: what the
    select phases of the benchmarks read."""
    from gloaddriver.backends.tarantool.connection import Connection
    conn = Connection(server.host, server.port, server.user, server.password).connect()
    try:
        conn.eval(u"local s = box.space.gloaddriver for i = 0, ... - 1 do "
                  u"s:replace({i, string.rep('x', 1536)}) end", keys)
    finally:
        conn.close()


def write_json(out, data):
    with open(out, 'w') as f:
        json.dump(data, f, indent=1, sort_keys=True)
    print('JSON: %s' % out)


def exit_code(runs, expected, failed=lambda run: run['failed']):
    """0 when all ``expected`` runs came back and none had a failed op, else 1."""
    return 1 if sum(failed(x) for x in runs) or len(runs) != expected else 0


def pin(args, server):
    """--pin: the server's processes and threads on the first CPU, this process (and so
    every client it starts from now on) on the second, so that no round waits for the
    other side's CPU or moves a process: at concurrency 1 the client and the server take
    turns, and a client-bound round has a core of its own whatever the server does."""
    if not args.pin:
        return
    from gloaddriver.measure import procfs
    for pid in sorted(procfs.family(server.proc.pid) or [server.proc.pid]):   # its children too
        subprocess.check_call(['taskset', '-a', '-p', '-c', '0', str(pid)],
                              stdout=subprocess.PIPE)
    subprocess.check_call(['taskset', '-p', '-c', '1', str(os.getpid())], stdout=subprocess.PIPE)
