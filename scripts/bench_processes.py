"""--processes 1 against --processes 2 on one private Tarantool, rounds interleaved.

Run by scripts/bench-processes. Each run inserts, selects, updates and
deletes --ops keys (so the space is empty again for the next run). For each
phase: ops/s with one and with two driver processes in the same round, their
ratio, and how busy the machine's cores were (from /proc/stat, the server
included: it shares the cores). Prints one table and writes JSON.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import sys

from benchlib import ROOT, driver, out_path

sys.path.insert(0, ROOT)

from gloaddriver.backends.tarantool.server import TarantoolServer  # noqa: E402

PHASES = ('insert', 'select', 'update', 'delete')


def cpu_times():
    """(busy, total) jiffies of all cores, and the core count."""
    with open('/proc/stat') as f:
        lines = f.read().splitlines()
    v = [int(x) for x in lines[0].split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v), sum(1 for l in lines if l.startswith('cpu') and l[3:4].isdigit())


def client_cores(parts, name):
    """Cores the driver processes kept busy in one phase: their CPU seconds over its wall time."""
    cpu = seconds = 0.0
    for r in parts:
        p = [x for x in r['phases'] if x['name'] == name][0]
        cpu += (p.get('cpu_us_per_op') or 0) * p['attempted'] / 1e6
        seconds = max(seconds, p['seconds'])
    return round(cpu / seconds, 2) if seconds else None


def run(python, server, processes, args):
    """(result, (busy % of all cores over the run, cores))"""
    busy0, total0, cores = cpu_times()
    res = driver(python, ['--uri', server.uri, '--user', server.user,
                          '--processes', str(processes)] + args, server.password)
    busy1, total1, _ = cpu_times()
    busy = 100.0 * (busy1 - busy0) / max(1, total1 - total0)
    return res, (round(busy, 1), cores)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--ops', type=int, default=200000)
    ap.add_argument('--greenlets', type=int, default=100)
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    out = out_path(args.out, 'processes')
    common = ['--greenlets', str(args.greenlets), '--ops', str(args.ops), '--phases',
              ','.join(PHASES), '--space', 'gloaddriver']
    rows, raw, failed = [], [], 0
    with TarantoolServer() as server:
        for r in range(args.rounds):
            rates = {}
            for n in (1, 2):
                sys.stderr.write('round %d, %d process%s\n' % (r + 1, n, 'es' if n > 1 else ''))
                res, cpu = run(args.python, server, n, common)
                if res is None:
                    failed += 1
                    continue
                raw.append({'round': r, 'processes': n, 'cpu_busy_pct': cpu[0], 'result': res})
                parts = res.get('processes') or [res]
                for p in res['phases']:
                    failed += p['failed'] + p['timed_out']
                    rates[(n, p['name'])] = p['ops_per_sec']
                    rates[(n, p['name'], 'cores')] = client_cores(parts, p['name'])
                rates[(n, 'cpu')] = cpu
            for name in PHASES:
                one, two = rates.get((1, name)), rates.get((2, name))
                rows.append({'round': r, 'phase': name, 'one': one, 'two': two,
                             'ratio': round(two / one, 2) if one and two else None,
                             'client_cores_one': rates.get((1, name, 'cores')),
                             'client_cores_two': rates.get((2, name, 'cores')),
                             'busy_one_pct': (rates.get((1, 'cpu')) or (None,))[0],
                             'busy_two_pct': (rates.get((2, 'cpu')) or (None,))[0]})
    interp = raw[0]['result']['manifest']['interpreter'] if raw else '?'
    cores = cpu_times()[2]
    print('--processes 1 vs 2, %d greenlets each, %d ops per phase, %s, %d cores shared '
          'with the server' % (args.greenlets, args.ops, interp, cores))
    fmt = '%5s %-7s %12s %12s %7s %9s %9s %12s %12s'
    print(fmt % ('round', 'phase', '1 proc ops/s', '2 proc ops/s', 'ratio', 'cores 1', 'cores 2',
                 'busy 1 proc', 'busy 2 proc'))
    for row in rows:
        print(fmt % (row['round'] + 1, row['phase'],
                     '{:,}'.format(int(row['one'] or 0)), '{:,}'.format(int(row['two'] or 0)),
                     '%.2fx' % row['ratio'] if row['ratio'] else '-',
                     row['client_cores_one'], row['client_cores_two'],
                     '%s%%' % row['busy_one_pct'], '%s%%' % row['busy_two_pct']))
    ratios = [row['ratio'] for row in rows if row['ratio']]
    if ratios:
        geo = 1.0
        for x in ratios:
            geo *= x
        print('ratio over all rounds and phases: geometric mean %.2fx, min %.2fx, max %.2fx'
              % (geo ** (1.0 / len(ratios)), min(ratios), max(ratios)))
    print('cores: CPU the driver process(es) used in the phase over its wall time; busy: all '
          'cores over the whole run (driver startup and server included), from /proc/stat')
    with open(out, 'w') as f:
        json.dump({'table': rows, 'runs': raw}, f, indent=1, sort_keys=True)
    print('JSON: %s' % out)
    return 1 if failed or not rows else 0


if __name__ == '__main__':
    sys.exit(main())
