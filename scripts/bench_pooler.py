"""What a pooler or a proxy in front of PostgreSQL costs the client: the same kv point
selects straight to the server, through pgbouncer in session and in transaction mode,
and through HAProxy, on psycopg2 and on the pipelined connector.

Run by ``scripts/bench pooler``. One private PostgreSQL holding --keys rows, with a
private pgbouncer of each mode and a private HAProxy in front of it (the driver's own
modules, as ``--pooler`` and ``--proxy`` start them); rounds interleave every path so
the machine's noise hits all alike. The pipelined connector's named statements do not
go through pgbouncer's transaction mode (the driver refuses that), so that pair is not
run. Prints one table (medians over the rounds) and writes JSON.
"""
from __future__ import absolute_import, division, print_function

import argparse
import sys

from benchlib import ROOT, driver, exit_code, median, out_path, write_json

sys.path.insert(0, ROOT)

from gloaddriver.backends.postgres.haproxy import HAProxy  # noqa: E402
from gloaddriver.backends.postgres.pgbouncer import PgBouncer  # noqa: E402
from gloaddriver.backends.postgres.server import PostgresServer  # noqa: E402

CONNECTORS = ('psycopg2', 'pipelined')


def _dsn(front, server):
    return 'host=%s port=%d dbname=%s user=%s sslmode=disable' % (
        front.host, front.port, server.database, server.user)


def _fronts(server, pool_size):
    """[(path name, started front or None for the server itself)]."""
    out = [('direct', None)]
    for mode in ('session', 'transaction'):
        b = PgBouncer(server.host, server.port, server.database, server.user,
                      server.password, mode, pool_size, server._run_as)
        out.append(('pgbouncer ' + mode, b.start()))
    h = HAProxy([server], server.database, server.user, server.password, server.bindir,
                server._run_as)
    out.append(('haproxy', h.start()))
    return out


def _run(args, server, fronts):
    runs = []
    common = ['--backend', 'postgres', '--phases', 'select', '--ops', str(args.ops),
              '--keys', str(args.keys), '--greenlets', str(args.greenlets),
              '--distribution', 'uniform']
    for r in range(args.rounds):
        for name, front in fronts:
            for connector in args.connectors.split(','):
                if connector == 'pipelined' and name == 'pgbouncer transaction':
                    continue    # refused: named statements
                sys.stderr.write('round %d: %s, %s...\n' % (r + 1, name, connector))
                res = driver(args.python, common + ['--connector', connector, '--dsn',
                                                    _dsn(front or server, server)],
                             server.password)
                if res is not None:
                    p = res['phases'][0]
                    runs.append({'round': r, 'path': name, 'connector': connector,
                                 'ops_per_sec': p['ops_per_sec'],
                                 'cpu_us_per_op': p['cpu_us_per_op'],
                                 'p50_us': p['latency_us']['p50'],
                                 'p99_us': p['latency_us']['p99'],
                                 'failed': p['failed'] + p['timed_out'],
                                 'interpreter': res['manifest']['interpreter']})
    return runs


def _table(runs):
    table = []
    for key in sorted(set((x['connector'], x['path']) for x in runs),
                      key=lambda k: (CONNECTORS.index(k[0]), k[1] != 'direct', k[1])):
        mine = [x for x in runs if (x['connector'], x['path']) == key]
        table.append({'connector': key[0], 'path': key[1], 'runs': len(mine),
                      'ops_per_sec': median([x['ops_per_sec'] for x in mine]),
                      'cpu_us_per_op': median([x['cpu_us_per_op'] for x in mine]),
                      'p50_us': median([x['p50_us'] for x in mine]),
                      'p99_us': median([x['p99_us'] for x in mine])})
    for t in table:
        base = [d for d in table if d['connector'] == t['connector'] and
                d['path'] == 'direct']
        t['ratio'] = round(t['ops_per_sec'] / base[0]['ops_per_sec'], 3) \
            if base and base[0]['ops_per_sec'] else None
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable, help='interpreter that runs the driver')
    ap.add_argument('--ops', type=int, default=50000, help='selects per run')
    ap.add_argument('--keys', type=int, default=10000)
    ap.add_argument('--greenlets', type=int, default=16)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--connectors', default=','.join(CONNECTORS))
    ap.add_argument('--out', default=None, help='JSON file (default bench-results/...)')
    args = ap.parse_args()
    out = out_path(args.out, 'pooler')
    with PostgresServer() as server:
        fronts = []
        try:
            fronts = _fronts(server, args.greenlets)
            filled = driver(args.python, ['--backend', 'postgres', '--init', '--dsn',
                                          _dsn(server, server), '--phases', 'insert',
                                          '--ops', str(args.keys)], server.password)
            runs = _run(args, server, fronts) if filled is not None else []
        finally:
            for _name, front in fronts:
                if front is not None:
                    front.stop()
    table = _table(runs)
    print('kv point selects, %d greenlets, %d ops per run, %d rounds interleaved, %s'
          % (args.greenlets, args.ops, args.rounds, runs[0]['interpreter'] if runs else '?'))
    fmt = '%-10s %-22s %5s %10s %10s %8s %8s %8s'
    print(fmt % ('connector', 'path', 'runs', 'ops/s', 'cpu us/op', 'p50 us', 'p99 us',
                 'vs direct'))
    for t in table:
        print(fmt % (t['connector'], t['path'], t['runs'], '{:,}'.format(int(t['ops_per_sec'])),
                     '%.2f' % t['cpu_us_per_op'], '{:,}'.format(int(t['p50_us'])),
                     '{:,}'.format(int(t['p99_us'])),
                     '%.2fx' % t['ratio'] if t['ratio'] is not None else '-'))
    write_json(out, {'table': table, 'runs': runs, 'args': vars(args)})
    per_round = sum(1 for _n, _f in fronts for c in args.connectors.split(',')
                    if not (c == 'pipelined' and _n == 'pgbouncer transaction'))
    return exit_code(runs, per_round * args.rounds)


if __name__ == '__main__':
    sys.exit(main())
