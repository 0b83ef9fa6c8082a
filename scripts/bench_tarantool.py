"""The 1.5 KB key-value workload (1.5 KB values; insert, select, update,
delete) through both connectors at several concurrencies, side by side.

Run by scripts/bench-tarantool. One private Tarantool for the whole run, a
fresh space for every (connector, greenlets) pair, each pair in its own
``python -m gloaddriver`` process; runs are interleaved so the machine's noise
hits both connectors alike. Prints one table and writes every raw result,
plus the table, to a JSON file.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import sys

from benchlib import ROOT, driver, out_path

sys.path.insert(0, ROOT)

from gloaddriver.backends.tarantool.connection import Connection  # noqa: E402
from gloaddriver.backends.tarantool.server import TarantoolServer  # noqa: E402


def fresh_space(server, name):
    conn = Connection(server.host, server.port, server.user, server.password).connect()
    try:
        conn.eval(u"""local s = box.schema.space.create(..., {format = {{'id', 'unsigned'},
                      {'value', 'string'}}}) s:create_index('primary', {parts = {1, 'unsigned'}})""",
                  name)
    finally:
        conn.close()


def drop_space(server, name):
    conn = Connection(server.host, server.port, server.user, server.password).connect()
    try:
        conn.eval(u"box.space[...]:drop()", name)
    finally:
        conn.close()


def run_one(python, server, connector, greenlets, ops, space, extra):
    return driver(python, ['--uri', server.uri, '--user', server.user, '--space', space,
                           '--connector', connector, '--greenlets', str(greenlets),
                           '--ops', str(ops)] + extra, server.password)


def row(result, phase_name):
    for p in result['phases']:
        if p['name'] == phase_name:
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable, help='interpreter that runs the driver')
    ap.add_argument('--ops', type=int, default=50000, help='ops per phase')
    ap.add_argument('--greenlets', default='1,10,100')
    ap.add_argument('--connectors', default='buffered,sync')
    ap.add_argument('--out', default=None, help='JSON file (default bench-results/...)')
    ap.add_argument('--wal-mode', default='none')
    args, extra = ap.parse_known_args()
    greenlets = [int(g) for g in args.greenlets.split(',')]
    connectors = args.connectors.split(',')
    out = out_path(args.out, 'tarantool')

    runs = []
    with TarantoolServer(wal_mode=args.wal_mode) as server:
        n = 0
        for g in greenlets:
            for connector in connectors:
                n += 1
                space = 'bench_%d' % n
                fresh_space(server, space)
                sys.stderr.write('%s, %d greenlets...\n' % (connector, g))
                res = run_one(args.python, server, connector, g, args.ops, space, extra)
                drop_space(server, space)
                if res is not None:
                    runs.append({'connector': connector, 'greenlets': g, 'result': res})

    table = []
    header = ('phase', 'greenlets', 'connector', 'ops/s', 'p99 us', 'sys/op', 'net/op',
              'req/send', 'cpu us/op', 'buffered/sync')
    for g in greenlets:
        by = dict((r['connector'], r['result']) for r in runs if r['greenlets'] == g)
        for phase in ('insert', 'select', 'update', 'delete'):
            for connector in connectors:
                if connector not in by:
                    continue
                p = row(by[connector], phase)
                ratio = None
                if connector == 'buffered' and 'sync' in by:
                    s = row(by['sync'], phase)
                    if s and s['ops_per_sec']:
                        ratio = round(p['ops_per_sec'] / s['ops_per_sec'], 2)
                table.append({
                    'phase': phase, 'greenlets': g, 'connector': connector,
                    'ops_per_sec': p['ops_per_sec'], 'p99_us': p['latency_us']['p99'],
                    'syscalls_per_op': p['syscalls'].get('per_op'),
                    'network_syscalls_per_op': p['syscalls'].get('network_per_op'),
                    'requests_per_send': p['batching'].get('requests_per_send'),
                    'cpu_us_per_op': p.get('cpu_us_per_op'),
                    'failed': p['failed'] + p['timed_out'],
                    'buffered_over_sync': ratio})

    manifest = runs[0]['result']['manifest'] if runs else {}
    print('insert/select/update/delete (%d ops per phase, value %s bytes), %s, Tarantool %s, '
          'wal_mode=%s, syscalls from %s'
          % (args.ops, manifest.get('value_size'), manifest.get('interpreter'),
             (manifest.get('server') or {}).get('version'), args.wal_mode,
             manifest.get('syscall_source')))
    fmt = '%-7s %9s %-9s %10s %8s %7s %7s %8s %9s %13s'
    print(fmt % header)
    for t in table:
        print(fmt % (t['phase'], t['greenlets'], t['connector'], '{:,}'.format(int(t['ops_per_sec'])),
                     '{:,}'.format(t['p99_us'] or 0), _f(t['syscalls_per_op']),
                     _f(t['network_syscalls_per_op']), _f(t['requests_per_send'], 1),
                     _f(t['cpu_us_per_op'], 1),
                     '' if t['buffered_over_sync'] is None else '%.1fx' % t['buffered_over_sync']))
    failed = sum(t['failed'] for t in table)
    if failed:
        print('note: %d ops failed or timed out; see the JSON' % failed)
    with open(out, 'w') as f:
        json.dump({'table': table, 'runs': runs, 'ops_per_phase': args.ops,
                   'python': args.python}, f, indent=1, sort_keys=True)
    print('JSON: %s' % out)
    return 1 if failed or len(runs) != len(greenlets) * len(connectors) else 0


def _f(v, digits=3):
    return '-' if v is None else '%.*f' % (digits, v)


if __name__ == '__main__':
    sys.exit(main())
