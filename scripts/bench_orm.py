"""SQLAlchemy ORM side by side: the founding comparison's programs, a plain gevent loop
and gloaddriver's orm and relational workloads on one private PostgreSQL.

Run by ``scripts/bench orm`` (which installs the peers into .venv/peers-py311 first).
The workload is the one the project grew from (scripts/peers/ormlib.py): two models,
``orm_a`` and ``orm_b``, --ops ops, half "create" (one transaction adding 3 A's with 2,
1 and 2 B's) and half "read" (10 A's with their B's by selectinload), in seeded random
order. The programs, each its own process, each a row:

1. SQLAlchemy's sync Session: one Session on one connection, the ops in a loop
   (scripts/peers/orm_sync.py);
2. SQLAlchemy asyncio on asyncpg, create_async_engine(pool_size=3000), every op a
   task, all gathered at once (scripts/peers/orm_asyncio.py3 --chunk 0);
3. the same in chunks of --chunk (40) tasks gathered one after the other;
4. a plain gevent + psycogreen SQLAlchemy loop: patch_all(), patch_psycopg(), a
   QueuePool of --greenlets (40) connections and as many greenlets taking ops from one
   shared iterator, a Session per op (scripts/peers/orm_gevent.py);
5. gloaddriver --workload orm --greenlets 40;
6. gloaddriver --workload relational --greenlets 40: the same ops written as raw SQL,
   one statement each (the ORM's take a BEGIN, two INSERTs or SELECTs and the end of
   the transaction), so the difference is what the ORM and its statements cost the
   client.

Before each program the tables are dropped (each program makes them again: the peers
by the models' metadata before their clock starts, gloaddriver by --init), so every
one starts from empty tables. Rounds are interleaved (every program once per round,
the order rotated each round) and each round has its own seed. Measured for each
program: its seconds and ops/s over the ops (its own clock), client CPU per op (its
own getrusage over the ops; gloaddriver's phase figure) and the whole process's
(os.wait4's user+sys, start-up and imports included), and the server's peak of
client connections while it ran (this script's own connection sampling
pg_stat_activity every 50 ms, itself, gloaddriver's monitor connections and backends
that have not run a statement yet left out).

The server runs with max_connections 100 by default (--max-connections): PostgreSQL's
own default, which the founding comparison's "about 100 connections" for the every-
task-at-once program came from. Its pool asks for up to 3,010 connections at the first
step of the loop, so there the server refuses the ones past its limit and, with
35,000 tasks queued on the pool, tasks still waiting after the pool's 30 s time out:
those ops count as failed, and ops/s counts the ops that succeeded. The exit code is
1 when a program did not finish or failed an op, that program's failures excepted.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from benchlib import ROOT, median, out_path, pin, write_json

sys.path.insert(0, ROOT)

import psycopg2  # noqa: E402

from gloaddriver.backends.postgres.pool import MONITOR_NAME  # noqa: E402
from gloaddriver.backends.postgres.server import PostgresServer  # noqa: E402

PEERS = os.path.join(ROOT, 'scripts', 'peers')
TABLES = ('orm_b', 'orm_a', 'rel_child', 'rel_parent')
ALL_AT_ONCE = 'asyncio-all'
# A backend that has not run a statement yet (query '') is left out too: gloaddriver's
# monitor connections are named by a SET after they connect, and one caught in between
# showed as a 41st connection beside a pool of 40.
PEAK_SQL = ("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
            "AND datname = current_database() AND pid <> pg_backend_pid() "
            "AND application_name <> %s AND query <> ''")


def programs(args):
    """(key, row name, how, interpreter, extra arguments) of each program, in order."""
    g, c = args.greenlets, args.chunk
    return [
        ('sync', 'SQLAlchemy sync Session', 'orm_sync.py', args.python, []),
        (ALL_AT_ONCE, 'asyncio + asyncpg, every task at once', 'orm_asyncio.py3',
         args.peers311, ['--chunk', '0', '--pool-size', str(args.pool_size)]),
        ('asyncio-chunks', 'asyncio + asyncpg, chunks of %d gathered' % c, 'orm_asyncio.py3',
         args.peers311, ['--chunk', str(c), '--pool-size', str(args.pool_size)]),
        ('gevent', 'gevent + psycogreen SQLAlchemy loop, %d greenlets' % g, 'orm_gevent.py',
         args.python, ['--greenlets', str(g)]),
        ('orm', 'gloaddriver orm, %d greenlets' % g, 'driver', args.python,
         ['--workload', 'orm']),
        ('relational', 'gloaddriver relational, %d greenlets' % g, 'driver', args.python,
         ['--workload', 'relational']),
    ]


class Peak(object):
    """The server's most client connections at once while a program runs: a thread of
    this process sampling pg_stat_activity every 50 ms on a connection of its own."""

    def __init__(self, dsn):
        self.conn = psycopg2.connect(dsn, application_name='bench-orm-monitor')
        self.conn.autocommit = True
        self.cur = self.conn.cursor()

    def __enter__(self):
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop)
        self._thread.daemon = True
        self._thread.start()
        return self

    def _loop(self):
        while not self._stop.is_set():
            self.cur.execute(PEAK_SQL, (MONITOR_NAME,))
            self.peak = max(self.peak, self.cur.fetchone()[0])
            self._stop.wait(0.05)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def reset(self):
        """Every program starts from no tables (each makes its own)."""
        self.cur.execute('DROP TABLE IF EXISTS %s CASCADE' % ', '.join(TABLES))

    def close(self):
        self.conn.close()


def child(argv, env, timeout, peak):
    """Run ``argv`` to its end under ``peak``: (exit code, stdout, stderr, wall seconds,
    the process's user+sys CPU seconds from os.wait4)."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    t0 = time.time()
    with peak:
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=ROOT)
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        try:
            _pid, status, usage = os.wait4(p.pid, 0)
        finally:
            killer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)   # reaped here, not by Popen
    wall = time.time() - t0
    out.seek(0)
    err.seek(0)
    return (p.returncode, out.read().decode('utf-8', 'replace'),
            err.read().decode('utf-8', 'replace'), wall, usage.ru_utime + usage.ru_stime)


def run_peer(args, server, script, python, extra, seed, peak):
    argv = [python, os.path.join(PEERS, script), '--host', server.host, '--port',
            str(server.port), '--user', server.user, '--database', server.database,
            '--ops', str(args.ops), '--seed', str(seed)] + extra
    env = dict(os.environ, PGPASSWORD=server.password)
    rc, out, err, wall, cpu = child(argv, env, args.timeout, peak)
    try:
        res = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        sys.stderr.write('%s failed (exit %s): %s\n' % (script, rc, err[-800:]))
        return None
    return {'seconds': res['seconds'], 'ops': res['ops'], 'ok': res['ok'],
            'failed': res['failed'], 'cpu_us_per_op': res['cpu_us_per_op'],
            'errors': res['errors'], 'bs_read': res['bs_read'], 'client': res['client'],
            'python': res['python'], 'wall_seconds': wall, 'process_cpu_seconds': cpu}


def run_driver(args, server, python, extra, seed, peak):
    fd, path = tempfile.mkstemp(suffix='.json')
    os.close(fd)
    dsn = 'host=%s port=%d dbname=%s user=%s sslmode=disable' % (
        server.host, server.port, server.database, server.user)
    argv = [python, '-m', 'gloaddriver', '--backend', 'postgres', '--dsn', dsn] + extra + [
        '--greenlets', str(args.greenlets), '--ops', str(args.ops), '--init', '--seed',
        str(seed), '--json', path, '--progress', '0']
    env = dict(os.environ, PYTHONPATH=ROOT, GLOADDRIVER_PASSWORD=server.password)
    try:
        rc, _out, err, wall, cpu = child(argv, env, args.timeout, peak)
        with open(path) as f:
            res = json.load(f)
    except ValueError:
        res = None
    finally:
        os.unlink(path)
    if rc != 0 or res is None:
        sys.stderr.write('run failed (%s; exit %s): %s\n' % (' '.join(extra), rc, err[-800:]))
        return None
    p = max(res['phases'], key=lambda x: x['attempted'])   # the mix, not a load or setup
    m = res['manifest']
    return {'seconds': p['seconds'], 'ops': p['attempted'], 'ok': p['ok'],
            'failed': p['failed'] + p['timed_out'], 'cpu_us_per_op': p['cpu_us_per_op'],
            'errors': p.get('errors'), 'client': 'gloaddriver %s' % m.get('gloaddriver', ''),
            'python': m.get('interpreter'), 'dependencies': m.get('dependencies'),
            'driver_peak': p.get('server_connections_peak'), 'wall_seconds': wall,
            'process_cpu_seconds': cpu}


def summarize(args, runs):
    rows = []
    for key, name, _how, _py, _extra in programs(args):
        mine = [r for r in runs if r['program'] == key and r['result']]
        if not mine:
            continue
        res = [r['result'] for r in mine]
        rows.append({
            'program': key, 'name': name, 'rounds': len(mine),
            'seconds': median([x['seconds'] for x in res]),
            'ops_per_sec': median([x['ok'] / x['seconds'] for x in res]),
            'ops_per_sec_range': [min(x['ok'] / x['seconds'] for x in res),
                                  max(x['ok'] / x['seconds'] for x in res)],
            'connections': median([r['peak'] for r in mine]),
            'cpu_us_per_op': median([x['cpu_us_per_op'] for x in res]),
            'process_cpu_us_per_op': median([x['process_cpu_seconds'] * 1e6 / x['ops']
                                             for x in res]),
            'ok': sum(x['ok'] for x in res), 'failed': sum(x['failed'] for x in res),
            'client': res[0]['client'], 'python': res[0]['python']})
    return rows


def ratios(runs, rows):
    """The issue's criteria: gloaddriver orm's ops/s over the asyncio chunks' and over the
    gevent loop's (of the medians, and per round), and the ORM's added CPU per op."""
    by = dict((r['program'], r) for r in rows)
    per_round = {}
    for r in runs:
        if r['result']:
            per_round.setdefault(r['round'], {})[r['program']] = (
                r['result']['ok'] / r['result']['seconds'])
    out = {}
    for other in ('asyncio-chunks', 'gevent'):
        if 'orm' in by and other in by:
            rs = [v['orm'] / v[other] for v in per_round.values() if 'orm' in v and other in v]
            out['orm_over_' + other.replace('-', '_')] = {
                'of_medians': by['orm']['ops_per_sec'] / by[other]['ops_per_sec'],
                'per_round': rs}
    if 'orm' in by and 'relational' in by:
        o, r = by['orm']['cpu_us_per_op'], by['relational']['cpu_us_per_op']
        po, pr = by['orm']['process_cpu_us_per_op'], by['relational']['process_cpu_us_per_op']
        out['orm_added_cpu'] = {'us_per_op': o - r, 'ratio': o / r,
                                'process_us_per_op': po - pr, 'process_ratio': po / pr}
    return out


def _rate(x):
    return '%.1f' % x if x < 10 else '{:,}'.format(int(x))


def print_table(args, rows, crit, header):
    print(header)
    fmt = '%-50s %7s %7s %-13s %5s %6s %7s %11s'
    print(fmt % ('program', 'total s', 'ops/s', '(range)', 'conns', 'cpu us', 'proc us',
                 'ok/failed'))
    for x in rows:
        lo, hi = x['ops_per_sec_range']
        print(fmt % (x['name'], '%.1f' % x['seconds'], _rate(x['ops_per_sec']),
                     '%s-%s' % (_rate(lo), _rate(hi)),
                     '%d' % x['connections'], '%.0f' % x['cpu_us_per_op'],
                     '%.0f' % x['process_cpu_us_per_op'], '%d/%d' % (x['ok'], x['failed'])))
    print('medians over %d rounds; total s: seconds over the ops (the program\'s own clock); '
          'ops/s: ops that succeeded per second (range over rounds); conns: the server\'s '
          'peak of client connections while the program ran; cpu us: client CPU per op '
          'over the ops; proc us: the whole process\'s CPU per op (os.wait4: start-up, '
          'imports, connecting included); ok/failed: summed over rounds' % args.rounds)
    for key, label, bar in (('orm_over_asyncio_chunks', 'gloaddriver orm / asyncio chunks of %d'
                             % args.chunk, 1.0),
                            ('orm_over_gevent', 'gloaddriver orm / gevent psycogreen loop', 0.95)):
        if key in crit:
            c = crit[key]
            print('%-42s %.2fx ops/s (per round %s; criterion >= %.2fx: %s)' % (
                label, c['of_medians'], ', '.join('%.2f' % x for x in c['per_round']), bar,
                'met' if c['of_medians'] >= bar else 'NOT met'))
    if 'orm_added_cpu' in crit:
        c = crit['orm_added_cpu']
        print('the ORM\'s added client CPU per op (orm - relational): %+.0f us, %.2fx '
              '(whole process: %+.0f us, %.2fx)' % (c['us_per_op'], c['ratio'],
                                                   c['process_us_per_op'], c['process_ratio']))


def version(python, code):
    try:
        return subprocess.check_output([python, '-c', code], stderr=subprocess.STDOUT,
                                       cwd=PEERS).decode().strip()
    except (OSError, subprocess.CalledProcessError):
        return '?'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable,
                    help='runs gloaddriver, the sync Session and the gevent loop')
    ap.add_argument('--peers311', required=True,
                    help='python with SQLAlchemy[asyncio] and asyncpg (.venv/peers-py311)')
    ap.add_argument('--ops', type=int, default=35000, help='ops per program')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--seed', type=int, default=1, help="round r's seed is SEED + r")
    ap.add_argument('--greenlets', type=int, default=40)
    ap.add_argument('--chunk', type=int, default=40)
    ap.add_argument('--pool-size', type=int, default=3000, help="the async engine's pool_size")
    ap.add_argument('--max-connections', type=int, default=100, help="the server's")
    ap.add_argument('--programs', default=None,
                    help='comma-separated keys (sync, asyncio-all, asyncio-chunks, gevent, '
                    'orm, relational; default all)')
    ap.add_argument('--timeout', type=float, default=1800, help='seconds a program may take')
    ap.add_argument('--pin', action='store_true',
                    help='the server on CPU 0, every program on CPU 1 (needs 2 CPUs and '
                    'taskset): rounds stop trading places between the two sides')
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    if args.pin and os.sysconf('SC_NPROCESSORS_ONLN') < 2:
        ap.error('--pin needs 2 CPUs')
    for k in ('python', 'peers311'):   # the programs run from elsewhere
        setattr(args, k, os.path.abspath(getattr(args, k)))
    out = out_path(args.out, 'orm')
    chosen = programs(args)
    if args.programs:
        keys = args.programs.split(',')
        unknown = set(keys) - set(p[0] for p in chosen)
        if unknown:
            ap.error('no program named %s' % ', '.join(sorted(unknown)))
        chosen = [p for p in chosen if p[0] in keys]
    started = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    load0 = os.getloadavg()

    def say(text):
        sys.stderr.write('bench-orm: %s\n' % text)
        sys.stderr.flush()
    runs = []
    with PostgresServer(max_connections=args.max_connections) as server:
        pin(args, server)    # its backends, forked later, inherit the postmaster's CPU
        peak = Peak(server.dsn)
        peak.cur.execute('SHOW server_version')
        server_version = peak.cur.fetchone()[0]
        try:
            for r in range(args.rounds):
                order = chosen[r % len(chosen):] + chosen[:r % len(chosen)]
                for key, name, how, python, extra in order:
                    say('round %d: %s' % (r + 1, name))
                    peak.reset()
                    seed = args.seed + r
                    if how == 'driver':
                        res = run_driver(args, server, python, extra, seed, peak)
                    else:
                        res = run_peer(args, server, how, python, extra, seed, peak)
                    runs.append({'round': r, 'program': key, 'name': name, 'seed': seed,
                                 'peak': peak.peak, 'result': res})
        finally:
            peak.close()
    load1 = os.getloadavg()
    rows = summarize(args, runs)
    crit = ratios(runs, rows)
    pythons = {
        'gloaddriver, sync, gevent': version(args.python, 'import sys, sqlalchemy, gevent; print('
                                             '"%s, SQLAlchemy %s, gevent %s" % (sys.version.split()'
                                             '[0], sqlalchemy.__version__, gevent.__version__))'),
        'asyncio': version(args.peers311, 'import sys, sqlalchemy, asyncpg; print("%s, SQLAlchemy'
                           ' %s, asyncpg %s" % (sys.version.split()[0], sqlalchemy.__version__, '
                           'asyncpg.__version__))')}
    header = ('bench-orm %s, %d cores, PostgreSQL %s (private, fsync off, max_connections %d); '
              '%s ops per program, %d rounds interleaved, %d greenlets, chunks of %d, async '
              'pool_size %d; CPython %s; asyncio on CPython %s; load average %.1f at the '
              'start, %.1f at the end%s' % (
                  started, os.sysconf('SC_NPROCESSORS_ONLN'), server_version,
                  args.max_connections, '{:,}'.format(args.ops), args.rounds, args.greenlets,
                  args.chunk, args.pool_size, pythons['gloaddriver, sync, gevent'],
                  pythons['asyncio'], load0[0], load1[0],
                  '; --pin: the server on CPU 0, the programs on CPU 1' if args.pin else ''))
    print_table(args, rows, crit, header)
    missing = [r for r in runs if r['result'] is None]
    failed = [r for r in runs if r['result'] and r['result']['failed'] and
              r['program'] != ALL_AT_ONCE]
    for r in runs:
        if r['result'] and r['result']['failed']:
            print('note: %s, round %d: %d ops failed: %s' % (
                r['name'], r['round'] + 1, r['result']['failed'],
                json.dumps(r['result'].get('errors'), sort_keys=True)[:400]))
    if missing:
        print('note: %d runs did not finish; see stderr' % len(missing))
    write_json(out, {'started': started, 'args': vars(args), 'header': header,
                     'server_version': server_version, 'pythons': pythons,
                     'load_average': [load0, load1], 'table': rows, 'criteria': crit,
                     'runs': runs})
    return 1 if missing or failed else 0


if __name__ == '__main__':
    sys.exit(main())
