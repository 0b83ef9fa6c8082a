"""gloaddriver against other clients on the same workload, side by side in one run.

Run by scripts/bench-peers (which installs the peers into .venv/peers-*). One private
Tarantool (wal_mode=none) and one private PostgreSQL; every run is its own process.

* Tarantool: the 1.5 KB insert/select/update/delete workload at each concurrency
  (--concurrency, default 1,10,100 greenlets or tasks on one connection) through
  gloaddriver on 3.11 and 2.7 (and on 3.11 with --no-overlap, one send per loop pass),
  the hub-driven style (scripts/peers/hubconn.py),
  asynctnt + uvloop, aiotarantool and gtarantool (2.7), at concurrency 1 a plain
  blocking-socket loop (scripts/peers/tnt_blocking.py): the latency floor, and at 10
  and 100 a raw pipelined loop (scripts/peers/tnt_pipelined.py: batches of N requests,
  one send each, no accounting): the CPython floor of ops/s. Each run
  gets a fresh space. Every client times each op: median and p99 per phase, and the
  latency it adds, "+p50": its median minus the floor's of the same round (the
  blocking loop at concurrency 1; asynctnt + uvloop at 10 and 100, where N blocking
  threads would measure the GIL, not the server).
* PostgreSQL: point selects on a kv table (small values, uniform keys) at
  --pg-conns connections through gloaddriver --prepared, asyncpg + uvloop, psycopg 3,
  a plain gevent + psycopg2 PREPARE/EXECUTE loop, gloaddriver --connector pipelined
  (8 greenlets on 8 connections and on 1, 64 on 8), and pgbench -S -M prepared (-j 1).

Runs are interleaved round-robin (every client once per round, the order rotated
each round), so the machine's noise hits all alike: --rounds rounds (5), and at
concurrency 1, where the clients' medians lie closest, --rounds-1 (9) shorter ones.
The table gives medians with the range over rounds, client CPU per op, network
syscalls per op (send/recv and read/write family, counted by perf_event tracepoints
for the client process) and each client's ratio to gloaddriver (3.11) of the same
round: the median and range of those ratios. JSON goes to bench-results/peers-*.json.

The adapters of the asyncio peers are Python 3 programs (``scripts/peers/*.py3``):
async/await is their clients' only interface, and 2.7 cannot parse it. Everything
else here, the package included, is one source for 2.7 and 3.x.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import re
import subprocess
import sys
import time

from benchlib import ROOT, driver, out_path, pin

sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'scripts', 'peers'))

import peerlib  # noqa: E402
from gloaddriver.backends.postgres.server import PostgresServer  # noqa: E402
from gloaddriver.backends.spawn import which  # noqa: E402
from gloaddriver.backends.tarantool.connection import Connection  # noqa: E402
from gloaddriver.backends.tarantool.server import TarantoolServer  # noqa: E402

PEERS = os.path.join(ROOT, 'scripts', 'peers')
BASE = 'gloaddriver'
NET_EXTRA = ('read', 'write')   # socket I/O outside gloaddriver's send/recv family


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return None if not n else (xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2.0)


def adapter(python, script, args, timeout=900):
    """Run one peer adapter; its phases, or None (said on stderr)."""
    p = subprocess.Popen([python, os.path.join(PEERS, script), json.dumps(args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=PEERS)
    out, err = p.communicate()
    try:
        return json.loads(out.decode().strip().splitlines()[-1])['phases']
    except (ValueError, IndexError, KeyError):
        sys.stderr.write('%s failed (exit %s): %s\n' % (script, p.returncode,
                                                         err.decode('utf-8', 'replace')[-800:]))
        return None


def from_driver(result):
    """gloaddriver's JSON phases in the adapters' shape."""
    if result is None:
        return None
    out = []
    for p in result['phases']:
        sc = p['syscalls'] or {}
        counts = sc.get('counts') or {}
        att = p['attempted'] or 1
        net = sc.get('network_per_op')
        if net is not None:
            net += sum(counts.get(k, 0) for k in NET_EXTRA) / att
        lat = p.get('latency_us') or {}
        out.append({'name': p['name'], 'ops': p['attempted'],
                    'errors': p['failed'] + p['timed_out'],
                    'seconds': p['seconds'], 'ops_per_sec': p['ops_per_sec'],
                    'cpu_us_per_op': p.get('cpu_us_per_op'), 'network_per_op': net,
                    'syscalls_per_op': sc.get('per_op'),
                    'latency_us': dict((k, lat.get(k)) for k in ('p50', 'p95', 'p99'))
                    if lat.get('p50') is not None else None})
    return out


# -- Tarantool -------------------------------------------------------------------------

BLOCKING = 'blocking socket loop'
ASYNCTNT = 'asynctnt+uvloop'
PIPELINED = 'raw pipelined loop'


def latency_base(backend, concurrency):
    """The client whose median latency the others' added latency is measured from."""
    if backend != 'tarantool':
        return None
    return BLOCKING if concurrency == 1 else ASYNCTNT


def tarantool_clients(args, concurrency):
    c = [(BASE, 'driver', args.python), ('gloaddriver 2.7', 'driver', args.python27),
         # one send per loop pass, no early half-batch flush: the fewest syscalls
         ('gloaddriver --no-overlap', 'driver:--no-overlap', args.python),
         ('hub-driven style', 'tnt_hub.py', args.python),
         (ASYNCTNT, 'tnt_asynctnt.py3', args.peers311),
         ('aiotarantool', 'tnt_aiotarantool.py3', args.peers311),
         ('gtarantool 2.7', 'tnt_gtarantool.py', args.peers27)]
    if concurrency == 1:
        # The latency floor, only at 1: see tnt_blocking.py for why not at 10 or 100.
        c.append((BLOCKING, 'tnt_blocking.py', args.python))
    else:
        # The CPython floor at N: batches of N, no accounting (tnt_pipelined.py).
        c.append((PIPELINED, 'tnt_pipelined.py', args.python))
    only = set(args.clients.split(',')) if args.clients else None
    return [x for x in c if only is None or x[0] in only or x[0] in (BASE, BLOCKING, PIPELINED)]


def run_tarantool(args, say):
    runs = []
    phases = ['insert', 'select', 'update', 'delete']
    conc = [int(x) for x in args.concurrency.split(',')]
    with TarantoolServer(wal_mode='none') as server:
        pin(args, server)
        admin = Connection(server.host, server.port, server.user, server.password).connect()
        n = 0
        rounds = dict((c, args.rounds_1 if c == 1 else args.rounds) for c in conc)
        for r in range(max(rounds.values())):
            for c in conc:
                if r >= rounds[c]:
                    continue
                ops = args.ops_1 if c == 1 else args.ops
                clients = tarantool_clients(args, c)
                order = clients[r % len(clients):] + clients[:r % len(clients)]
                for name, how, python in order:
                    n += 1
                    space = 'peers_%d' % n
                    sid = admin.eval(u"""local s = box.schema.space.create(..., {format = {
                        {'id', 'unsigned'}, {'value', 'string'}}})
                        s:create_index('primary', {parts = {1, 'unsigned'}}) return s.id""",
                                     space)[0]
                    say('round %d, %d concurrent: %s' % (r + 1, c, name))
                    if how.startswith('driver'):
                        res = from_driver(driver(python, [
                            '--uri', server.uri, '--user', server.user, '--space', space,
                            '--greenlets', str(c), '--ops', str(ops),
                            '--value-size', str(args.value_size),
                            '--phases', ','.join(phases)] + how.split(':')[1:] + args.extra,
                            server.password))
                    else:
                        res = adapter(python, how, {
                            'host': server.host, 'port': server.port, 'user': server.user,
                            'password': server.password, 'space_id': sid, 'concurrency': c,
                            'ops': ops, 'value_size': args.value_size, 'phases': phases,
                            'syscalls': peerlib.COUNT_SYSCALLS})
                    admin.eval(u'box.space[...]:drop()', space)
                    runs.append({'backend': 'tarantool', 'client': name, 'round': r,
                                 'concurrency': c, 'phases': res})
        admin.close()
    return runs


# -- PostgreSQL ------------------------------------------------------------------------

def pgbench(server, conns, ops):
    """pgbench -S -M prepared, one thread; its phase in the adapters' shape."""
    exe = which('pgbench')
    env = dict(os.environ, PGPASSWORD=server.password)
    per_client = max(1, ops // conns)
    p = subprocess.Popen([exe, '-S', '-M', 'prepared', '-c', str(conns), '-j', '1', '-t',
                          str(per_client), '-h', '127.0.0.1', '-p', str(server.port), '-U',
                          server.user, server.database],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    counter = peerlib.Syscalls(p.pid)   # from its start: connecting is in it (8 of 50,000)
    s0 = counter.snapshot()
    out = p.stdout.read()
    err = p.stderr.read()
    s1 = counter.snapshot()
    _pid, status, usage = os.wait4(p.pid, 0)
    m = re.search(r'tps = ([0-9.]+) \(without initial connection time\)', out.decode())
    if not m or status:
        sys.stderr.write('pgbench failed: %s\n' % (out + err).decode()[-500:])
        return None
    n = per_client * conns
    counts = counter.delta(s0, s1)
    if counts is not None:
        counts['read'] += len(counter.fds)   # its reads of our counters are not its own
        counts['total'] += len(counter.fds)
    return [{'name': 'select', 'ops': n, 'errors': 0, 'ops_per_sec': float(m.group(1)),
             'cpu_us_per_op': (usage.ru_utime + usage.ru_stime) * 1e6 / n,
             'network_per_op': None if counts is None else
             sum(counts.get(k, 0) for k in peerlib.NETWORK) / n,
             'syscalls_per_op': None if counts is None else counts['total'] / n,
             'note': 'CPU and syscalls of the whole pgbench process, connecting included'}]


def postgres_clients(args):
    n = args.pg_conns
    c = [(BASE, 'driver', args.python), ('asyncpg+uvloop', 'pg_asyncpg.py3', args.peers311),
         ('psycopg 3', 'pg_psycopg3.py3', args.peers311),
         ('gevent+psycopg2 loop', 'pg_gevent_psycopg2.py', args.python),
         # gloaddriver --connector pipelined (driver:pipelined:GREENLETS:CONNECTIONS): the
         # others' 8 statements in flight on their 8 connections, or on one connection
         # (the default for 8 greenlets); and 8 greenlets on each of 8 connections
         ('pipelined %d on %d conns' % (n, n), 'driver:pipelined:%d:%d' % (n, n), args.python),
         ('pipelined %d on 1 conn' % n, 'driver:pipelined:%d:1' % n, args.python),
         ('pipelined %d on %d conns' % (8 * n, n), 'driver:pipelined:%d:%d' % (8 * n, n),
          args.python),
         ('pgbench -S -M prepared', 'pgbench', None)]
    only = set(args.clients.split(',')) if args.clients else None
    return [x for x in c if only is None or x[0] in only or x[0] == BASE]


def run_postgres(args, say):
    runs = []
    n = args.pg_conns
    with PostgresServer() as server:
        pin(args, server)    # its backends, forked later, inherit the postmaster's CPU
        dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
            server.port, server.database, server.user)
        common = ['--backend', 'postgres', '--dsn', dsn, '--table', 'kv', '--value-size', '16']
        say('postgres: loading %d rows' % args.pg_keys)
        if driver(args.python, common + ['--init', '--phases', 'insert', '--ops',
                                         str(args.pg_keys), '--greenlets', '8'],
                  server.password) is None:
            return runs
        if which('pgbench'):
            subprocess.check_call([which('pgbench'), '-i', '-q', '-s', '5', '-h', '127.0.0.1',
                                   '-p', str(server.port), '-U', server.user, server.database],
                                  env=dict(os.environ, PGPASSWORD=server.password),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        clients = postgres_clients(args)
        for r in range(args.rounds):
            order = clients[r % len(clients):] + clients[:r % len(clients)]
            for name, how, python in order:
                say('round %d, postgres %d connections: %s' % (r + 1, n, name))
                if how.startswith('driver'):
                    if ':pipelined:' in how:
                        greenlets, pool = how.split(':')[2:]
                        connector = ['--connector', 'pipelined', '--pool-size', pool]
                    else:
                        greenlets, connector = str(n), ['--prepared']
                    res = from_driver(driver(python, common + connector + [
                        '--phases', 'select', '--ops', str(args.pg_ops),
                        '--keys', str(args.pg_keys), '--distribution', 'uniform',
                        '--seed', str(r + 1), '--greenlets', greenlets] + args.pg_extra,
                        server.password))
                elif how == 'pgbench':
                    res = pgbench(server, n, args.pg_ops) if which('pgbench') else None
                else:
                    how, _sep, per = how.partition(':')
                    res = adapter(python, how, {
                        'per_conn': int(per or 1),
                        'host': '127.0.0.1', 'port': server.port, 'user': server.user,
                        'password': server.password, 'database': server.database,
                        'table': 'kv', 'keys': args.pg_keys, 'concurrency': n,
                        'ops': args.pg_ops, 'seed': r + 1, 'syscalls': peerlib.COUNT_SYSCALLS})
                runs.append({'backend': 'postgres', 'client': name, 'round': r,
                             'concurrency': n, 'phases': res})
    return runs


# -- the table -------------------------------------------------------------------------

def summarize(runs):
    """One row per (backend, concurrency, phase, client): medians, ranges, ratios."""
    rows = []
    keys = []
    for run in runs:
        for p in run['phases'] or []:
            k = (run['backend'], run['concurrency'], p['name'], run['client'])
            if k not in keys:
                keys.append(k)

    def phase(run, name):
        for p in run['phases'] or []:
            if p['name'] == name:
                return p
        return None

    for backend, conc, name, client in keys:
        mine = [(r['round'], phase(r, name)) for r in runs if r['backend'] == backend and
                r['concurrency'] == conc and r['client'] == client and phase(r, name)]
        base = dict((r['round'], phase(r, name)) for r in runs if r['backend'] == backend and
                    r['concurrency'] == conc and r['client'] == BASE and phase(r, name))
        rates = [p['ops_per_sec'] for _r, p in mine]
        lat = dict((r, p['latency_us']) for r, p in mine if p.get('latency_us'))
        floor_client = latency_base(backend, conc)
        floor = dict((r['round'], phase(r, name)) for r in runs if r['backend'] == backend and
                     r['concurrency'] == conc and r['client'] == floor_client and
                     phase(r, name) and phase(r, name).get('latency_us'))
        added = [lat[r]['p50'] - floor[r]['latency_us']['p50'] for r in lat if r in floor]
        ratios = [p['ops_per_sec'] / base[r]['ops_per_sec'] for r, p in mine
                  if r in base and base[r]['ops_per_sec']]
        cpu = [p['cpu_us_per_op'] for _r, p in mine if p['cpu_us_per_op'] is not None]
        net = [p['network_per_op'] for _r, p in mine if p['network_per_op'] is not None]
        rows.append({'backend': backend, 'concurrency': conc, 'phase': name, 'client': client,
                     'rounds': len(mine), 'ops_per_sec': _median(rates),
                     'ops_per_sec_range': [min(rates), max(rates)],
                     'cpu_us_per_op': _median(cpu), 'network_per_op': _median(net),
                     'p50_us': _median([x['p50'] for x in lat.values()]),
                     'p99_us': _median([x['p99'] for x in lat.values()]),
                     'added_p50_us': _median(added),
                     'added_p50_range': [min(added), max(added)] if added else None,
                     'added_vs': floor_client if added else None,
                     'ratio': _median(ratios),
                     'ratio_range': [min(ratios), max(ratios)] if ratios else None,
                     'errors': sum(p['errors'] for _r, p in mine)})
    order = dict((k, i) for i, k in enumerate(('insert', 'select', 'update', 'delete')))
    rows.sort(key=lambda x: (x['backend'] != 'tarantool', x['concurrency'],
                             order.get(x['phase'], 9)))
    return rows


def _us(x):
    return '-' if x is None else '%.0f' % x


def print_table(rows):
    fmt = '%-9s %4s %-7s %-24s %9s %-19s %6s %6s %6s %8s %7s %17s'
    print(fmt % ('backend', 'conc', 'phase', 'client', 'ops/s', '(range)', 'p50us', 'p99us',
                 '+p50us', 'cpu us', 'net/op', 'x gloaddriver'))
    for x in rows:
        lo, hi = x['ops_per_sec_range']
        ratio = '' if x['ratio'] is None else '%.2fx' % x['ratio']
        if x['ratio_range'] and x['client'] != BASE:
            ratio += ' (%.2f-%.2f)' % tuple(x['ratio_range'])
        print(fmt % (x['backend'], x['concurrency'], x['phase'], x['client'],
                     '{:,}'.format(int(x['ops_per_sec'])),
                     '%s-%s' % ('{:,}'.format(int(lo)), '{:,}'.format(int(hi))),
                     _us(x.get('p50_us')), _us(x.get('p99_us')),
                     '' if x['client'] == x.get('added_vs') else
                     ('%+.0f' % x['added_p50_us'] if x.get('added_p50_us') is not None else '-'),
                     '-' if x['cpu_us_per_op'] is None else '%.1f' % x['cpu_us_per_op'],
                     '-' if x['network_per_op'] is None else '%.3f' % x['network_per_op'],
                     ratio))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable, help='gloaddriver on 3.x (the base)')
    ap.add_argument('--python27', required=True, help='gloaddriver on 2.7')
    ap.add_argument('--peers311', required=True, help='python of the 3.x peers')
    ap.add_argument('--peers27', required=True, help='python of the 2.7 peers')
    # A phase at 10 or 100 lasts under a second and a round's ops/s move by up to 2x
    # with where the scheduler puts the processes (this machine, 2026-11-27 afternoon):
    # the median of five such rounds, not three.
    ap.add_argument('--rounds', type=int, default=5)
    # At 1 two clients' medians lie a few us apart, and a round's median moves by 10 or
    # more from round to round (where the scheduler puts client and server): three
    # rounds gave medians a microsecond or two apart from run to run. Nine rounds of
    # half the ops (1.5 s a phase) cost the ops of four and a half long ones
    # (docs/benchmarks.md).
    ap.add_argument('--rounds-1', type=int, default=9, help='rounds at concurrency 1')
    ap.add_argument('--ops', type=int, default=50000, help='ops per phase (Tarantool)')
    ap.add_argument('--ops-1', type=int, default=15000, help='ops per phase at concurrency 1')
    ap.add_argument('--concurrency', default='1,10,100')
    ap.add_argument('--value-size', type=int, default=1536)
    # A phase of the old default (50,000 ops) lasted about a second, and the criterion
    # here is a few per cent: 3 s a phase.
    ap.add_argument('--pg-ops', type=int, default=150000)
    ap.add_argument('--pg-keys', type=int, default=100000)
    ap.add_argument('--pg-conns', type=int, default=8)
    ap.add_argument('--backends', default='tarantool,postgres')
    ap.add_argument('--clients', default=None, help='comma-separated client names (default all)')
    ap.add_argument('--extra', default='', help='more gloaddriver flags for Tarantool runs')
    ap.add_argument('--pg-extra', default='', help='more gloaddriver flags for PostgreSQL runs')
    ap.add_argument('--no-syscalls', action='store_true',
                    help='count no syscalls (net/op shows -): the tracepoint counters cost '
                    'each syscall something, which weighs on the clients that make more')
    ap.add_argument('--pin', action='store_true',
                    help='the server on CPU 0, every client on CPU 1, so that no process '
                    'moves between CPUs (needs 2 CPUs and taskset; docs/benchmarks.md has '
                    'what it changed here)')
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    if args.pin and os.sysconf('SC_NPROCESSORS_ONLN') < 2:
        ap.error('--pin needs 2 CPUs')
    for k in ('python', 'python27', 'peers311', 'peers27'):   # adapters run elsewhere
        setattr(args, k, os.path.abspath(getattr(args, k)))
    args.extra = args.extra.split()
    args.pg_extra = args.pg_extra.split()
    if args.no_syscalls:
        peerlib.COUNT_SYSCALLS = False
        args.extra.append('--no-syscalls')
        args.pg_extra.append('--no-syscalls')
    out = out_path(args.out, 'peers')
    started = time.strftime('%Y-%m-%d %H:%M')

    def say(text):
        sys.stderr.write('bench-peers: %s\n' % text)
        sys.stderr.flush()
    runs = []
    backends = args.backends.split(',')
    if 'tarantool' in backends:
        runs += run_tarantool(args, say)
    if 'postgres' in backends:
        runs += run_postgres(args, say)
    rows = summarize(runs)
    print('bench-peers %s, %d cores, %d rounds interleaved (%d at concurrency 1); Tarantool: '
          '%s ops per phase (%s at concurrency 1), %d-byte values, wal_mode=none, one '
          'connection; PostgreSQL: kv point selects, %d connections, %s ops%s' % (
              started, os.sysconf('SC_NPROCESSORS_ONLN'), args.rounds, args.rounds_1,
              '{:,}'.format(args.ops), '{:,}'.format(args.ops_1), args.value_size, args.pg_conns,
              '{:,}'.format(args.pg_ops),
              '; --pin: each server on CPU 0, the clients on CPU 1' if args.pin else ''))
    print_table(rows)
    print('ops/s: median over rounds (range); p50us, p99us: median over rounds of each '
          "phase's median and p99 op latency (each client times its own ops); +p50us: the "
          'latency the client adds, median over rounds of its p50 minus that of the %s '
          '(concurrency 1) or of %s (10, 100) in the same round; cpu us: client CPU per op; '
          'net/op: send/recv/read/write syscalls per op of the client process; x gloaddriver: '
          'median (range) of the ratio to gloaddriver on 3.11 in the same round'
          % (BLOCKING, ASYNCTNT))
    failed = [r for r in runs if r['phases'] is None]
    errors = sum(x['errors'] for x in rows)
    if failed or errors:
        print('note: %d runs failed, %d ops failed; see stderr and the JSON' % (len(failed), errors))
    with open(out, 'w') as f:
        json.dump({'started': started, 'args': vars(args), 'table': rows, 'runs': runs}, f,
                  indent=1, sort_keys=True)
    print('JSON: %s' % out)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
