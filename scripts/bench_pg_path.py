"""The psycopg2 path's cost per op, layer by layer, in instructions counted by callgrind.

Run by ``scripts/bench pg-path [--root DIR ...]``. One private PostgreSQL with a
100,000-row kv table; 8 greenlets on 8 connections run prepared point selects by a
uniform random key, in layers, each in a process of its own under
``valgrind --tool=callgrind``:

* ``loop``: the plain gevent + psycopg2 loop (a new io watcher per wait, as psycogreen
  and scripts/peers/pg_gevent_psycopg2.py wait);
* ``wait``: the same loop on gloaddriver's wait callback (one io watcher per connection);
* ``runner``: the loop calling gloaddriver's statement runner (its pool and op deadline);
* ``driver``: the runner's hot loop (``runner._run_single``: the key, the latency record,
  the accounting) around the built-in select op (``kv_statements``: the key written into
  the statement by the driver).

Each layer runs ``--ops`` twice, N1 and N2 ops; (Ir(N2) - Ir(N1)) / (N2 - N1) is its
instructions per op, the start-up and the connections cancelled out. An instruction count
does not move with the machine's load the way a time does, so one run tells a change of a
few per cent; what it leaves out is the kernel's part (a syscall counts only its user-side
instructions) and the caches' (the same instructions can take longer). The driver's
background (ticker, peak monitor, samplers) is not in it: a whole driver under callgrind
runs fifty times slower, and its once-a-second work would weigh fifty times more per op.
With several --root checkouts each runs its own runner and driver layers (the first also
the loop and wait layers), with the instructions each adds over the ``wait`` layer.
JSON goes to bench-results/pg-path-*.json.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import random
import re
import subprocess
import sys

from benchlib import ROOT, out_path

LAYERS = ('loop', 'wait', 'runner', 'driver')
TABLE = 'kv'
KEYS = 100000
CONNS = 8
SELECT = 'EXECUTE gl_select (%s)'   # the statement the driver prepares for kv


# -- a layer, in the measured process ------------------------------------------------------

def _keys(n):
    rnd = random.Random(1)
    return iter([rnd.randrange(KEYS) for _ in range(n)])


def _plain_wait():
    """The plain loop's wait callback: a new watcher for every wait."""
    import psycopg2.extensions
    from gevent.socket import wait_read, wait_write
    ok, read = psycopg2.extensions.POLL_OK, psycopg2.extensions.POLL_READ

    def wait(conn, timeout=None):
        while True:
            state = conn.poll()
            if state == ok:
                return
            if state == read:
                wait_read(conn.fileno())
            else:
                wait_write(conn.fileno())
    return wait


def _statement_runner(conns):
    """gloaddriver's statement runner on a pool holding ``conns``, and its deadlines."""
    from gloaddriver.backends.postgres import pool as pgpool
    pool = pgpool.Pool('unused: the pool is handed its connections', CONNS)
    for conn in conns:
        pool.put(pgpool.Pooled(conn))
    pool.created = len(conns)
    deadlines = pgpool.Deadlines(60.0)
    deadlines.start()
    try:
        make = pgpool.statement_runner
    except AttributeError:       # a checkout of before 2026-11-27, where workloads had it
        from gloaddriver.backends.postgres.workloads import statement_runner as make
    return make(pool, deadlines, None), deadlines


def _select_op(run, conn):
    """The built-in kv select op on ``run``."""
    try:
        from gloaddriver.backends.postgres import kv_statements
    except ImportError:       # a checkout of before its statements were written in by it
        def op_select(key):
            return run(SELECT, (key,), 'one')
        return op_select
    from gloaddriver import workload
    return kv_statements.ops(run, run, kv_statements.templates(TABLE, True),
                             kv_statements.quoted(conn.cursor(), [u'v']),
                             workload.scan_length)['select']


def layer(name, n, dsn):
    """Run ``n`` selects through layer ``name`` (in this process: valgrind's child)."""
    from gevent import monkey
    monkey.patch_all()
    import gevent
    import psycopg2.extensions
    from gloaddriver.backends.postgres import pool as pgpool
    pgpool.install('cached')
    if name == 'loop':
        psycopg2.extensions.set_wait_callback(_plain_wait())
    conns = [psycopg2.connect(dsn) for _ in range(CONNS)]
    for conn in conns:
        conn.autocommit = True
        conn.cursor().execute('PREPARE gl_select (bigint) AS SELECT value FROM %s WHERE id = $1'
                              % TABLE)
    if name in ('loop', 'wait'):
        keys = _keys(n)

        def plain(conn):
            cur = conn.cursor()
            for k in keys:
                cur.execute(SELECT, (k,))
                cur.fetchone()
        gevent.joinall([gevent.spawn(plain, c) for c in conns])
        return
    run, deadlines = _statement_runner(conns)
    if name == 'runner':
        keys = _keys(n)

        def through_runner():
            for k in keys:
                run(SELECT, (k,), 'one')
        gevent.joinall([gevent.spawn(through_runner) for _ in conns])
    else:
        from gloaddriver.measure.stats import OpStats
        from gloaddriver.run import runner
        from gloaddriver.workload import keys as keygen

        op_select = _select_op(run, conns[0])
        st, budget = OpStats('select'), runner.Budget(n)
        gevent.joinall([gevent.spawn(runner._run_single, budget, st, op_select,
                                     keygen.uniform(KEYS, random.Random(i)))
                        for i in range(CONNS)])
        st.check()
    deadlines.stop()


# -- the bench ------------------------------------------------------------------------------

def instructions(python, root, name, n, dsn):
    """Instructions callgrind counted in one layer's process, or None (said on stderr)."""
    env = dict(os.environ, PYTHONPATH=root, GLOADDRIVER_PG_PATH_DSN=dsn)
    p = subprocess.Popen(['valgrind', '--tool=callgrind', '--callgrind-out-file=/dev/null',
                          python, os.path.abspath(__file__), '--layer', name, '--n', str(n)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=root)
    _out, err = p.communicate()
    err = err.decode('utf-8', 'replace')
    m = re.search(r'Collected : (\d+)', err)
    if p.returncode != 0 or not m:
        sys.stderr.write('layer %s (%s) failed (exit %s): %s\n'
                         % (name, root, p.returncode, err[-800:]))
        return None
    return int(m.group(1))


def _load(dsn):
    import psycopg2
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    conn.cursor().execute('CREATE TABLE %s (id bigint PRIMARY KEY, value text)' % TABLE)
    conn.cursor().execute("INSERT INTO %s SELECT i, md5(i::text) FROM generate_series(0, %d) i"
                          % (TABLE, KEYS - 1))
    conn.close()


def measure(opts, say):
    from gloaddriver.backends.postgres.server import PostgresServer
    n1, n2 = opts.ops
    rows = []
    with PostgresServer() as server:
        _load(server.dsn)
        for i, root in enumerate(opts.root):
            for name in opts.layers:
                if i and name in ('loop', 'wait'):
                    continue     # the checkouts' own code starts at the runner
                say('%s: %s' % (root, name))
                a = instructions(opts.python, root, name, n1, server.dsn)
                b = instructions(opts.python, root, name, n2, server.dsn)
                per_op = None if a is None or b is None else (b - a) / float(n2 - n1)
                rows.append({'root': root, 'layer': name, 'ir_per_op': per_op,
                             'ir': [a, b], 'ops': [n1, n2]})
    return rows


def table(rows):
    wait = [r['ir_per_op'] for r in rows if r['layer'] == 'wait' and r['ir_per_op']]
    lines = ['%-40s %-7s %13s %15s' % ('checkout', 'layer', 'instr per op', 'over "wait"')]
    for r in rows:
        per_op = r['ir_per_op']
        over = '-' if per_op is None or not wait else '%+.0f (%+.1f%%)' % (
            per_op - wait[0], 100.0 * (per_op - wait[0]) / wait[0])
        lines.append('%-40s %-7s %13s %15s' % (r['root'][-40:], r['layer'],
                                               '-' if per_op is None else '%.0f' % per_op,
                                               over))
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', action='append', help='a checkout (repeatable; default this one)')
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--ops', default='2000,12000', help='N1,N2: ops of the two runs of a layer')
    ap.add_argument('--layers', default=','.join(LAYERS))
    ap.add_argument('--out', default=None)
    ap.add_argument('--layer', help=argparse.SUPPRESS)   # the measured child
    ap.add_argument('--n', type=int, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.layer:
        return layer(opts.layer, opts.n, os.environ['GLOADDRIVER_PG_PATH_DSN'])
    opts.root = [os.path.abspath(r) for r in (opts.root or [ROOT])]
    opts.layers = [l for l in opts.layers.split(',') if l]
    try:
        opts.ops = [int(x) for x in opts.ops.split(',')]
    except ValueError:
        opts.ops = []
    if len(opts.ops) != 2 or not 0 < opts.ops[0] < opts.ops[1]:
        ap.error('--ops takes N1,N2 with 0 < N1 < N2')
    if set(opts.layers) - set(LAYERS) or not opts.layers:
        ap.error('--layers takes some of %s' % ','.join(LAYERS))

    def say(line):
        sys.stderr.write('bench pg-path: %s\n' % line)
    rows = measure(opts, say)
    print(table(rows))
    path = out_path(opts.out, 'pg-path')
    with open(path, 'w') as f:
        json.dump({'rows': rows, 'python': opts.python}, f, indent=1)
    print('JSON: %s' % path)
    return 0 if all(r['ir_per_op'] for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
