"""What --flamegraph costs a run: the same select load without it and with py-spy
sampling the driver, rounds interleaved.

Run by ``scripts/bench flamegraph``. One private Tarantool holding --keys rows; each
run is ``--phases select --ops 0 --duration S`` at --greenlets (100 by default),
uniform keys; the variants alternate round by round, first one then the other first
(ABBA), so the machine's noise and its drift hit both alike. Prints one table (medians
over the rounds, the ratio of the medians to no flame graph, the median of each round's
own ratio, the share of a core py-spy used) and writes JSON under bench-results/. The
round's ratio pairs two runs a few seconds apart: a slow drift of a shared machine
(minutes) moves both, and it is the figure to judge the cost by.
"""
from __future__ import absolute_import, division, print_function

import argparse
import shutil
import sys
import tempfile

from benchlib import (ROOT, driver, exit_code, fill_tarantool, median, out_path,
                      write_json)

sys.path.insert(0, ROOT)

from gloaddriver.backends.tarantool.server import TarantoolServer  # noqa: E402

KINDS = ('no flame graph', '--flamegraph')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable, help='interpreter that runs the driver')
    ap.add_argument('--seconds', type=float, default=5.0, help='length of each run')
    ap.add_argument('--keys', type=int, default=100000)
    ap.add_argument('--greenlets', type=int, default=100)
    ap.add_argument('--rounds', type=int, default=7)
    ap.add_argument('--rate', type=int, default=None, help='--flamegraph-rate (default 99)')
    ap.add_argument('--out', default=None, help='JSON file (default bench-results/...)')
    args = ap.parse_args()
    out = out_path(args.out, 'flamegraph')
    common = ['--phases', 'select', '--ops', '0', '--duration', str(args.seconds),
              '--keys', str(args.keys), '--distribution', 'uniform',
              '--greenlets', str(args.greenlets)]
    runs = []
    tmp = tempfile.mkdtemp(prefix='gloaddriver-bench-flamegraph-')
    try:
        with TarantoolServer() as server:
            fill_tarantool(server, args.keys)
            target = ['--uri', server.uri, '--user', server.user]
            for r in range(args.rounds):
                for name in (KINDS if r % 2 == 0 else KINDS[::-1]):
                    sys.stderr.write('round %d: %s...\n' % (r + 1, name))
                    extra = []
                    if name != KINDS[0]:
                        extra = ['--flamegraph', tmp]
                        if args.rate:
                            extra += ['--flamegraph-rate', str(args.rate)]
                    res = driver(args.python, target + common + extra, server.password)
                    if res is None:
                        continue
                    p = res['phases'][0]
                    fg = p.get('flamegraph') or {}
                    runs.append({'round': r, 'kind': name, 'ops_per_sec': p['ops_per_sec'],
                                 'cpu_us_per_op': p['cpu_us_per_op'],
                                 'p99_us': p['latency_us']['p99'],
                                 'failed': p['failed'] + p['timed_out'],
                                 'samples': fg.get('samples'),
                                 'sampler_cpu_share': fg.get('sampler_cpu_share'),
                                 'interpreter': res['manifest']['interpreter']})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table = []
    for name in KINDS:
        mine = [x for x in runs if x['kind'] == name]
        if mine:
            shares = [x['sampler_cpu_share'] for x in mine if x['sampler_cpu_share'] is not None]
            table.append({'kind': name, 'runs': len(mine),
                          'ops_per_sec': median([x['ops_per_sec'] for x in mine]),
                          'ops_per_sec_each': [x['ops_per_sec'] for x in mine],
                          'cpu_us_per_op': median([x['cpu_us_per_op'] for x in mine]),
                          'p99_us': median([x['p99_us'] for x in mine]),
                          'samples': median([x['samples'] or 0 for x in mine]),
                          'sampler_cpu_share': median(shares) if shares else None})
    base = table[0]['ops_per_sec'] if table and table[0]['kind'] == KINDS[0] else None
    by_round = dict(((x['round'], x['kind']), x['ops_per_sec']) for x in runs)
    paired = [by_round[(r, KINDS[1])] / by_round[(r, KINDS[0])] for r in range(args.rounds)
              if (r, KINDS[0]) in by_round and (r, KINDS[1]) in by_round]
    print('select, %d greenlets, %g s per run, %d rounds interleaved, %s' % (
        args.greenlets, args.seconds, args.rounds, runs[0]['interpreter'] if runs else '?'))
    fmt = '%-16s %5s %10s %8s %11s %10s %8s %8s %9s  %s'
    print(fmt % ('client', 'runs', 'ops/s', 'ratio', 'round ratio', 'cpu us/op', 'p99 us',
                 'samples', 'py-spy', 'ops/s of each round'))
    for t in table:
        t['ratio'] = round(t['ops_per_sec'] / base, 4) if base else None
        t['round_ratio'] = 1.0 if t['kind'] == KINDS[0] else \
            round(median(paired), 4) if paired else None
        share = t['sampler_cpu_share']
        print(fmt % (t['kind'], t['runs'], '{:,}'.format(int(t['ops_per_sec'])),
                     '%.3fx' % t['ratio'] if t['ratio'] else '-',
                     '%.3fx' % t['round_ratio'] if t['round_ratio'] else '-',
                     '%.2f' % t['cpu_us_per_op'],
                     '{:,}'.format(int(t['p99_us'])), int(t['samples']),
                     '-' if share is None else '%.1f%% core' % (100 * share),
                     ' / '.join('{:,}'.format(int(v)) for v in t['ops_per_sec_each'])))
    write_json(out, {'table': table, 'runs': runs, 'args': vars(args)})
    return exit_code(runs, len(KINDS) * args.rounds)


if __name__ == '__main__':
    sys.exit(main())
