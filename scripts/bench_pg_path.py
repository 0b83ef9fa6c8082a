"""The psycopg2 path's cost per op, layer by layer, in instructions counted by callgrind
(or in Python calls, ``--count``).

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

The script layers (``--layers``, on pgbench's tables at scale 1, PREPAREd): the plain
loop of pgbench's select-only transaction (``select-loop``: its EXECUTE, a draw of
``rnd.random()``) and of its TPC-B-like one (``tpcb-loop``: BEGIN, the five statements,
END), and the same built-in scripts through gloaddriver's backend and the runner's hot
loop, on psycopg2 (``select-script``, ``tpcb-script``) and on the pipelined connector
(``select-pipelined``, ``tpcb-pipelined``); ``kv-pipelined`` is the kv select there.
Each is judged against its own plain loop (the kv layers against ``wait``), the
pipelined select-only script against ``kv-pipelined``.

``--count``: no valgrind; each layer runs under a profile function that counts Python
calls (and the C calls made from them) by where the function lives: the script
interpreter, the script runner, the pool, the pipelined connector, the driver's loop,
gevent, psycopg2, random, other (a script's commands written as one function count as
other, ``<script block>``), with the functions called once or more per op.

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

from benchlib import PGBENCH_PREPARED, ROOT, out_path

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


# The script layers: pgbench's select-only and TPC-B-like transactions (pgbench's tables,
# scale 1) as a plain loop and through gloaddriver's script interpreter; the kv select on
# the pipelined connector, the script's pipelined peer.
SCRIPT_LAYERS = ('select-loop', 'select-script', 'select-pipelined', 'kv-pipelined',
                 'tpcb-loop', 'tpcb-script', 'tpcb-pipelined')
ACCOUNTS = 100000      # pgbench's accounts at scale 1


def _plain_layer(name, n, conns):
    """The plain loops: the kv select (``loop``, ``wait``), and the select-only and
    TPC-B-like transactions as pgbench's scripts draw them, PREPAREd."""
    import gevent
    if name in ('loop', 'wait'):
        keys = _keys(n)

        def plain(conn):
            cur = conn.cursor()
            for k in keys:
                cur.execute(SELECT, (k,))
                cur.fetchone()
        gevent.joinall([gevent.spawn(plain, c) for c in conns])
        return
    for conn in conns:
        cur = conn.cursor()
        for sql in PLAIN_TPCB:
            cur.execute(sql)
    keys = iter(range(n))     # (the transactions' draws are their own)

    def select(conn):
        cur = conn.cursor()
        rnd = random.Random(conn.fileno()).random
        for _ in keys:
            cur.execute('EXECUTE s (%s)', (int(rnd() * ACCOUNTS) + 1,))
            cur.fetchall()

    def tpcb(conn):
        cur = conn.cursor()
        rnd = random.Random(conn.fileno()).random
        for _ in keys:
            aid = int(rnd() * ACCOUNTS) + 1
            bid = int(rnd() * 1) + 1
            tid = int(rnd() * 10) + 1
            delta = int(rnd() * 10001) - 5000
            cur.execute('BEGIN')
            cur.execute('EXECUTE a (%s, %s)', (delta, aid))
            cur.execute('EXECUTE s (%s)', (aid,))
            cur.fetchall()
            cur.execute('EXECUTE t (%s, %s)', (delta, tid))
            cur.execute('EXECUTE b (%s, %s)', (delta, bid))
            cur.execute('EXECUTE h (%s, %s, %s, %s)', (tid, bid, aid, delta))
            cur.execute('END')
    loop = select if name == 'select-loop' else tpcb
    gevent.joinall([gevent.spawn(loop, c) for c in conns])


PLAIN_TPCB = PGBENCH_PREPARED['tpcb-like']


def _backend_layer(name, n, dsn):
    """A layer through gloaddriver's own backend (its pool or pipelined connections,
    the script interpreter) and the runner's hot loop, as a run has them."""
    import gevent
    from gloaddriver import backends, config as configuration
    from gloaddriver.measure.stats import OpStats
    from gloaddriver.measure.syscalls import SyscallCounter
    from gloaddriver.run import runner
    from gloaddriver.workload import keys as keygen
    what, _, how = name.partition('-')
    argv = ['--backend', 'postgres', '--dsn', dsn, '--greenlets', str(CONNS), '--ops', str(n),
            '--no-syscalls']
    if what == 'kv':
        argv += ['--table', TABLE, '--prepared', '--connector', 'pipelined',
                 '--pool-size', str(CONNS), '--phases', 'select']
    else:
        argv += ['--builtin', 'select-only' if what == 'select' else 'tpcb-like',
                 '--protocol', 'prepared']
        if how == 'pipelined':
            argv += ['--connector', 'pipelined', '--pool-size', str(CONNS)]
    config = configuration.parse(argv)
    backend = backends.get('postgres').backend(config, SyscallCounter(enable=False))
    backend.open()
    try:
        ops = [backend.worker_ops(i) for i in range(CONNS)]
        op_name = 'select' if what == 'kv' else sorted(ops[0])[0]
        st, budget = OpStats(op_name), runner.Budget(n)
        gevent.joinall([gevent.spawn(runner._run_single, budget, st, ops[i][op_name],
                                     keygen.uniform(KEYS, random.Random(i)))
                        for i in range(CONNS)])
        st.check()
        if st.failed_total or st.timed_out:
            raise SystemExit('layer %s: %d of %d ops failed' % (name, st.failed_total +
                                                                 st.timed_out, n))
    finally:
        backend.close()


def layer(name, n, dsn):
    """Run ``n`` ops through layer ``name`` (in this process: valgrind's child)."""
    from gevent import monkey
    monkey.patch_all()
    import gevent
    import psycopg2.extensions
    from gloaddriver.backends.postgres import pool as pgpool
    if name in SCRIPT_LAYERS and not name.endswith('-loop'):
        return _backend_layer(name, n, dsn)
    pgpool.install('cached')
    if name in ('loop', 'select-loop', 'tpcb-loop'):
        psycopg2.extensions.set_wait_callback(_plain_wait())
    conns = [psycopg2.connect(dsn) for _ in range(CONNS)]
    for conn in conns:
        conn.autocommit = True
        conn.cursor().execute('PREPARE gl_select (bigint) AS SELECT value FROM %s WHERE id = $1'
                              % TABLE)
    if name in ('loop', 'wait') or name in SCRIPT_LAYERS:
        return _plain_layer(name, n, conns)
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


# -- --count: Python calls per op, by where they are ---------------------------------------

# Where a function lives -> the layer it is counted in (the first match of its file).
GROUPS = (
    ('script interpreter', ('gloaddriver/workload/script/',)),
    ('script runner', ('backends/postgres/script_',)),
    ('pool and holder', ('backends/postgres/pool', 'backends/postgres/user.py', 'contextlib')),
    ('pipelined connector', ('backends/postgres/pipelined', 'backends/postgres/replies',
                             'backends/shared_socket', 'backends/postgres/kv_')),
    ('driver loop', ('gloaddriver/run/', 'gloaddriver/measure/', 'gloaddriver/workload/')),
    ('gevent', ('gevent/', 'greenlet')),
    ('psycopg2', ('psycopg2',)),
    ('random', ('random.py',)),
)


def _group(filename):
    name = filename.replace(os.sep, '/')
    for group, parts in GROUPS:
        if any(part in name for part in parts):
            return group
    return 'other'


def counted(name, n, dsn):
    """Run layer ``name`` with a profile function counting calls: {group: [Python calls,
    C calls]} and {function: Python calls}, printed as JSON (the parent takes the
    difference of two runs)."""
    groups, functions, seen = {}, {}, {}

    def where(frame):
        code = frame.f_code
        key = seen.get(code)
        if key is None:
            key = seen[code] = (_group(code.co_filename), '%s:%s' % (
                os.path.basename(code.co_filename), code.co_name))
        return key

    def profile(frame, event, arg):
        if event == 'call':
            group, fn = where(frame)
            groups.setdefault(group, [0, 0])[0] += 1
            functions[fn] = functions.get(fn, 0) + 1
        elif event == 'c_call':
            # a C function is counted where it was called from
            groups.setdefault(where(frame)[0], [0, 0])[1] += 1
    import threading
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        layer(name, n, dsn)
    finally:
        sys.setprofile(None)
    print(json.dumps({'groups': groups, 'functions': functions}))


def calls(python, root, name, n, dsn):
    """counted()'s JSON from a child process, or None (said on stderr)."""
    env = dict(os.environ, PYTHONPATH=root, GLOADDRIVER_PG_PATH_DSN=dsn)
    p = subprocess.Popen([python, os.path.abspath(__file__), '--layer', name, '--n', str(n),
                          '--count'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, cwd=root)
    out, err = p.communicate()
    try:
        return json.loads(out.decode('utf-8').strip().splitlines()[-1])
    except (ValueError, IndexError):
        sys.stderr.write('layer %s (%s) failed (exit %s): %s\n'
                         % (name, root, p.returncode, err.decode('utf-8', 'replace')[-800:]))
        return None


def per_op(a, b, n):
    """{group: [Python calls, C calls] per op} and the top functions of b - a, per op."""
    groups = {}
    for g in set(a['groups']) | set(b['groups']):
        x, y = a['groups'].get(g, [0, 0]), b['groups'].get(g, [0, 0])
        groups[g] = [(y[0] - x[0]) / float(n), (y[1] - x[1]) / float(n)]
    functions = dict((f, (b['functions'][f] - a['functions'].get(f, 0)) / float(n))
                     for f in b['functions'])
    top = sorted(((c, f) for f, c in functions.items() if c >= 0.5), reverse=True)
    return groups, [(f, c) for c, f in top]


def _load(dsn, scripts):
    import psycopg2
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    conn.cursor().execute('CREATE TABLE %s (id bigint PRIMARY KEY, value text)' % TABLE)
    conn.cursor().execute("INSERT INTO %s SELECT i, md5(i::text) FROM generate_series(0, %d) i"
                          % (TABLE, KEYS - 1))
    if scripts:
        from gloaddriver.backends.postgres import pgbench_tables
        pgbench_tables.create(conn.cursor(), 1, quiet=True)
    conn.close()


def measure(opts, say):
    from gloaddriver.backends.postgres.server import PostgresServer
    n1, n2 = opts.ops
    rows = []
    with PostgresServer() as server:
        _load(server.dsn, set(opts.layers) & set(SCRIPT_LAYERS))
        for i, root in enumerate(opts.root):
            for name in opts.layers:
                if i and name in ('loop', 'wait', 'select-loop', 'tpcb-loop'):
                    continue     # the checkouts' own code starts at the runner
                say('%s: %s' % (root, name))
                row = {'root': root, 'layer': name, 'ops': [n1, n2]}
                if opts.count:
                    a = calls(opts.python, root, name, n1, server.dsn)
                    b = calls(opts.python, root, name, n2, server.dsn)
                    if a is not None and b is not None:
                        row['calls'], row['top'] = per_op(a, b, n2 - n1)
                    row['calls_per_op'] = sum(
                        c[0] for c in row['calls'].values()) if 'calls' in row else None
                else:
                    a = instructions(opts.python, root, name, n1, server.dsn)
                    b = instructions(opts.python, root, name, n2, server.dsn)
                    row['ir'] = [a, b]
                    row['ir_per_op'] = (None if a is None or b is None
                                        else (b - a) / float(n2 - n1))
                rows.append(row)
    return rows


def table(rows):
    """Instructions per op, with what each layer adds over ``wait`` and over the plain
    loop of its own transaction (select-loop, tpcb-loop)."""
    by_layer = dict((r['layer'], r['ir_per_op']) for r in rows[::-1] if r.get('ir_per_op'))
    own = dict(((r['root'], r['layer']), r['ir_per_op']) for r in rows if r.get('ir_per_op'))
    lines = ['%-40s %-16s %13s %17s' % ('checkout', 'layer', 'instr per op', 'over its loop')]
    for r in rows:
        per_op = r['ir_per_op']
        base = own.get((r['root'], _base_of(r['layer'])), by_layer.get(_base_of(r['layer'])))
        over = '-' if per_op is None or not base or _base_of(r['layer']) == r['layer'] \
            else '%+.0f (%.2fx)' % (per_op - base, per_op / base)
        lines.append('%-40s %-16s %13s %17s' % (r['root'][-40:], r['layer'],
                                                '-' if per_op is None else '%.0f' % per_op,
                                                over))
    return '\n'.join(lines)


def _base_of(layer):
    """The plain loop a layer is judged against: the kv layers against ``wait`` (the loop
    on gloaddriver's wait callback), the scripts against their own plain loop."""
    if layer == 'select-pipelined':
        return 'kv-pipelined'     # the pipelined connector's own select
    if layer.startswith('select-'):
        return 'select-loop'
    if layer.startswith('tpcb-'):
        return 'tpcb-loop'
    return 'wait'


def count_table(rows):
    """Python calls per op by layer (and C calls made from it), then the functions
    called at least once per op of each layer."""
    groups = [g for g, _ in GROUPS] + ['other']
    head = '%-20s %-16s %8s  ' % ('checkout', 'layer', 'calls') + '  '.join(groups)
    lines = ['Python calls per op (C calls from there in brackets), by where they run:', head]
    for r in rows:
        if 'calls' not in r:
            lines.append('%-20s %-16s %8s' % (r['root'][-20:], r['layer'], 'failed'))
            continue
        c = r['calls']
        cells = ['%*s' % (len(g), '%.1f (%.1f)' % tuple(c.get(g, [0, 0]))) for g in groups]
        lines.append('%-20s %-16s %8.1f  ' % (r['root'][-20:], r['layer'], r['calls_per_op']) +
                     '  '.join(cells))
    for r in rows:
        if r.get('top'):
            lines.append('\n%s (%s): %s' % (r['layer'], r['root'][-30:], ', '.join(
                '%s %.1f' % (f, c) for f, c in r['top'])))
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', action='append', help='a checkout (repeatable; default this one)')
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--ops', default=None, help='N1,N2: ops of the two runs of a layer '
                    '(default 2000,12000; with --count 2000,6000)')
    ap.add_argument('--layers', default=','.join(LAYERS),
                    help='some of %s (default the first four)'
                    % ','.join(LAYERS + SCRIPT_LAYERS))
    ap.add_argument('--count', action='store_true',
                    help='Python calls per op by layer (a profile function counting them), '
                    'not instructions: no valgrind')
    ap.add_argument('--out', default=None)
    ap.add_argument('--layer', help=argparse.SUPPRESS)   # the measured child
    ap.add_argument('--n', type=int, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.layer:
        if opts.count:
            return counted(opts.layer, opts.n, os.environ['GLOADDRIVER_PG_PATH_DSN'])
        return layer(opts.layer, opts.n, os.environ['GLOADDRIVER_PG_PATH_DSN'])
    opts.root = [os.path.abspath(r) for r in (opts.root or [ROOT])]
    opts.layers = [l for l in opts.layers.split(',') if l]
    try:
        opts.ops = [int(x) for x in (opts.ops or ('2000,6000' if opts.count
                                                  else '2000,12000')).split(',')]
    except ValueError:
        opts.ops = []
    if len(opts.ops) != 2 or not 0 < opts.ops[0] < opts.ops[1]:
        ap.error('--ops takes N1,N2 with 0 < N1 < N2')
    if set(opts.layers) - set(LAYERS + SCRIPT_LAYERS) or not opts.layers:
        ap.error('--layers takes some of %s' % ','.join(LAYERS + SCRIPT_LAYERS))

    def say(line):
        sys.stderr.write('bench pg-path: %s\n' % line)
    rows = measure(opts, say)
    print(count_table(rows) if opts.count else table(rows))
    path = out_path(opts.out, 'pg-path')
    with open(path, 'w') as f:
        json.dump({'rows': rows, 'python': opts.python}, f, indent=1)
    print('JSON: %s' % path)
    key = 'calls_per_op' if opts.count else 'ir_per_op'
    return 0 if all(r[key] for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
