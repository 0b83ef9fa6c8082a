"""What a user's own op costs against the built-in one: the same point select, as the
built-in select phase and as a --workload-file function calling db.select, side by side.

Run by ``scripts/bench user``. One private Tarantool holding --keys rows; rounds
interleave the two runs so the machine's noise hits both alike. The figure that
matters is the client CPU per op (user+sys of the driver process): the workload
file's function, its partial and the connection's public select path are the
difference. Prints one table (medians over the rounds) and writes JSON.
"""
from __future__ import absolute_import, division, print_function

import argparse
import os
import sys
import tempfile

from benchlib import (ROOT, driver, exit_code, fill_tarantool, median, out_path,
                      write_json)

sys.path.insert(0, ROOT)

from gloaddriver.backends.tarantool.server import TarantoolServer  # noqa: E402

WORKLOAD = u'''
def op_select(db, key):
    return db.select('gloaddriver', [key])
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable, help='interpreter that runs the driver')
    ap.add_argument('--ops', type=int, default=200000, help='selects per run')
    ap.add_argument('--keys', type=int, default=100000)
    ap.add_argument('--greenlets', type=int, default=100)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--out', default=None, help='JSON file (default bench-results/...)')
    args = ap.parse_args()
    out = out_path(args.out, 'user')
    fd, workload = tempfile.mkstemp(suffix='.py')
    with os.fdopen(fd, 'w') as f:
        f.write(WORKLOAD)
    common = ['--greenlets', str(args.greenlets), '--ops', str(args.ops), '--keys',
              str(args.keys), '--distribution', 'uniform']
    kinds = (('built-in select', ['--phases', 'select']),
             ('workload file', ['--workload-file', workload]))
    runs = []
    try:
        with TarantoolServer() as server:
            fill_tarantool(server, args.keys)
            target = ['--uri', server.uri, '--user', server.user]
            for r in range(args.rounds):
                for name, extra in kinds:
                    sys.stderr.write('round %d: %s...\n' % (r + 1, name))
                    res = driver(args.python, target + common + extra, server.password)
                    if res is not None:
                        p = res['phases'][0]
                        runs.append({'round': r, 'kind': name, 'ops_per_sec': p['ops_per_sec'],
                                     'cpu_us_per_op': p['cpu_us_per_op'],
                                     'p99_us': p['latency_us']['p99'],
                                     'syscalls_per_op': p['syscalls'].get('per_op'),
                                     'failed': p['failed'] + p['timed_out'],
                                     'misses': p['misses'],
                                     'interpreter': res['manifest']['interpreter']})
    finally:
        os.unlink(workload)
    table = []
    for name, _extra in kinds:
        mine = [x for x in runs if x['kind'] == name]
        if mine:
            table.append({'kind': name, 'runs': len(mine),
                          'ops_per_sec': median([x['ops_per_sec'] for x in mine]),
                          'cpu_us_per_op': median([x['cpu_us_per_op'] for x in mine]),
                          'p99_us': median([x['p99_us'] for x in mine]),
                          'syscalls_per_op': median([x['syscalls_per_op'] or 0 for x in mine])})
    base = table[0]['cpu_us_per_op'] if table else None
    print('one point select per op, %d greenlets, %d ops per run, %d rounds interleaved, %s'
          % (args.greenlets, args.ops, args.rounds, runs[0]['interpreter'] if runs else '?'))
    fmt = '%-16s %5s %10s %10s %8s %7s %9s'
    print(fmt % ('op', 'runs', 'ops/s', 'cpu us/op', 'p99 us', 'sys/op', 'cpu ratio'))
    for t in table:
        t['cpu_ratio'] = round(t['cpu_us_per_op'] / base, 3) if base else None
        print(fmt % (t['kind'], t['runs'], '{:,}'.format(int(t['ops_per_sec'])),
                     '%.2f' % t['cpu_us_per_op'], '{:,}'.format(int(t['p99_us'])),
                     '%.3f' % t['syscalls_per_op'], '%.2fx' % t['cpu_ratio']))
    write_json(out, {'table': table, 'runs': runs, 'args': vars(args)})
    return exit_code(runs, 2 * args.rounds, lambda run: run['failed'] + run['misses'])


if __name__ == '__main__':
    sys.exit(main())
