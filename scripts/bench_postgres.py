"""PostgreSQL benchmarks, side by side in one run against one private server.

Run by scripts/bench-postgres. kv point selects and inserts at 8 connections
(plain and --prepared, with both wait callbacks) next to ``pgbench -S -M
prepared`` (when installed) on the same server; the relational mix at 10, 40
and 90 greenlets; the bulk methods at 1k and 100k rows. Each gloaddriver run
is its own process; kv and pgbench runs are interleaved over --rounds. Prints
one table and writes everything to a JSON file.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import re
import subprocess
import sys

from benchlib import ROOT, out_path
from benchlib import driver as run_driver

sys.path.insert(0, ROOT)

from gloaddriver.backends.postgres.server import PostgresServer
from gloaddriver.backends.spawn import which  # noqa: E402


def driver(python, server, args):
    dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
        server.port, server.database, server.user)
    return run_driver(python, ['--backend', 'postgres', '--dsn', dsn, '--init'] + args,
                      server.password)


def pgbench(server, clients, seconds):
    exe = which('pgbench')
    env = dict(os.environ, PGPASSWORD=server.password)
    # -j 1 (pgbench's default): one client thread, like the driver's one process.
    p = subprocess.Popen([exe, '-S', '-M', 'prepared', '-c', str(clients), '-j', '1', '-T',
                          str(seconds), '-h', '127.0.0.1', '-p', str(server.port), '-U',
                          server.user, server.database],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = p.communicate()
    m = re.search(r'tps = ([0-9.]+) \(without initial connection time\)', out.decode())
    if not m:
        sys.stderr.write('pgbench failed: %s\n' % (out + err).decode()[-500:])
        return None
    return float(m.group(1))


def phase(res, name):
    for p in res['phases']:
        if p['name'] == name:
            return p
    return None


def row(what, config, p, unit='ops/s'):
    return {'what': what, 'config': config, 'rate': p['ok_per_sec'], 'unit': unit,
            'p99_us': p['latency_us']['p99'], 'syscalls_per_op': p['syscalls'].get('per_op'),
            'cpu_us_per_op': p.get('cpu_us_per_op'), 'failed': p['failed'] + p['timed_out'],
            'server_connections_peak': p.get('server_connections_peak')}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--kv-ops', type=int, default=50000)
    ap.add_argument('--relational-ops', type=int, default=35000)
    ap.add_argument('--bulk-rows', default='1000,100000')
    ap.add_argument('--pgbench-seconds', type=int, default=8)
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    out = out_path(args.out, 'postgres')
    rows, raw = [], []
    with PostgresServer() as server:
        have_pgbench = which('pgbench') is not None
        if have_pgbench:
            env = dict(os.environ, PGPASSWORD=server.password)
            subprocess.check_call([which('pgbench'), '-i', '-q', '-s', '5', '-h', '127.0.0.1',
                                   '-p', str(server.port), '-U', server.user, server.database],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        n = 0
        for r in range(args.rounds):
            for prepared in (True, False):
                for callback in ('cached', 'psycogreen'):
                    n += 1
                    label = '%s, %s callback' % ('prepared' if prepared else 'simple', callback)
                    sys.stderr.write('kv %s (round %d)\n' % (label, r + 1))
                    res = driver(args.python, server, [
                        '--table', 'kv_%d' % n, '--greenlets', '8', '--ops', str(args.kv_ops),
                        '--phases', 'insert,select', '--wait-callback', callback] +
                        (['--prepared'] if prepared else []))
                    if res:
                        raw.append({'kind': 'kv', 'label': label, 'result': res})
                        rows.append(row('kv insert', '8 conns, ' + label, phase(res, 'insert')))
                        rows.append(dict(row('kv select', '8 conns, ' + label,
                                             phase(res, 'select')), round=r))
            if have_pgbench:
                sys.stderr.write('pgbench -S -M prepared (round %d)\n' % (r + 1))
                tps = pgbench(server, 8, args.pgbench_seconds)
                if tps:
                    rows.append({'round': r, 'what': 'pgbench -S -M prepared', 'config': '8 clients, -j 1',
                                 'rate': tps, 'unit': 'tps', 'p99_us': None,
                                 'syscalls_per_op': None, 'cpu_us_per_op': None, 'failed': 0,
                                 'server_connections_peak': None})
        for g in (10, 40, 90):
            sys.stderr.write('relational, %d greenlets\n' % g)
            res = driver(args.python, server, ['--workload', 'relational', '--greenlets', str(g),
                                               '--ops', str(args.relational_ops),
                                               '--distribution', 'uniform'])
            if res:
                raw.append({'kind': 'relational', 'greenlets': g, 'result': res})
                rows.append(row('relational mix', '%d greenlets, pool %d' % (g, g),
                                res['phases'][0]))
        for n_rows in [int(x) for x in args.bulk_rows.split(',')]:
            sys.stderr.write('bulk, %d rows\n' % n_rows)
            res = driver(args.python, server, ['--workload', 'bulk', '--rows', str(n_rows)])
            if res:
                raw.append({'kind': 'bulk', 'rows': n_rows, 'result': res})
                for p in res['phases']:
                    rows.append(row(p['name'], '%d rows%s' % (p['attempted'],
                                    '' if p['green'] else ', outside green mode'), p, 'rows/s'))

    # Each kv select against the pgbench run of its own round (same minutes).
    pgbench_by_round = dict((r['round'], r['rate']) for r in rows
                            if r['what'].startswith('pgbench'))
    for r in rows:
        if r['what'] == 'kv select' and r.get('round') in pgbench_by_round:
            r['vs_pgbench'] = round(r['rate'] / pgbench_by_round[r['round']], 2)
    manifest = raw[0]['result']['manifest'] if raw else {}
    print('PostgreSQL %s (spawned, fsync off, ssl off), %s, psycopg2 %s' % (
        (manifest.get('server') or {}).get('version'), manifest.get('interpreter'),
        (manifest.get('dependencies') or {}).get('psycopg2-binary')))
    fmt = '%-22s %-42s %12s %-6s %9s %8s %9s %6s %10s'
    print(fmt % ('what', 'config', 'rate', '', 'p99 us', 'sys/op', 'cpu us/op', 'peak',
                 'vs pgbench'))
    for r in rows:
        print(fmt % (r['what'], r['config'], '{:,}'.format(int(r['rate'])), r['unit'],
                     '-' if r['p99_us'] is None else '{:,}'.format(r['p99_us']),
                     '-' if r['syscalls_per_op'] is None else '%.2f' % r['syscalls_per_op'],
                     '-' if r['cpu_us_per_op'] is None else '%.1f' % r['cpu_us_per_op'],
                     '-' if r['server_connections_peak'] is None else r['server_connections_peak'],
                     '%.2fx' % r['vs_pgbench'] if r.get('vs_pgbench') else ''))
    with open(out, 'w') as f:
        json.dump({'table': rows, 'runs': raw}, f, indent=1, sort_keys=True)
    print('JSON: %s' % out)
    return 1 if any(r['failed'] for r in rows) else 0


if __name__ == '__main__':
    sys.exit(main())
