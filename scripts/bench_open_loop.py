"""Open loop (--rate) against a private Tarantool: is the rate held, and does a stall show?

Run by scripts/bench-open-loop. Two runs, one after the other, on one server:
a steady one, and one where the server is stopped (SIGSTOP) for --pause
seconds in the middle. For each: target and achieved rate, and p99/p99.9 both
from the intended start (coordinated omission corrected) and as service time.
Prints one table and writes the results to a JSON file.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import sys
import time

from benchlib import ROOT, driver, out_path

sys.path.insert(0, ROOT)

from gloaddriver.backends.tarantool.connection import Connection  # noqa: E402
from gloaddriver.backends.tarantool.server import TarantoolServer  # noqa: E402


def run(python, server, args, pause_at=None, pause=0):
    def stall():
        # pause_at is counted from the phase's first insert, not from the process's start:
        # on a busy machine the driver can take longer to start than pause_at, and the
        # stall would then fall before the phase it is meant to be in.
        first_insert(server)
        time.sleep(pause_at)
        server.pause()
        time.sleep(pause)
        server.resume()
    return driver(python, ['--uri', server.uri, '--user', server.user] + args, server.password,
                  stall if pause_at is not None else None)


def first_insert(server, timeout=60.0):
    """Return once the space has a row (the driver's phase has begun), or after
    ``timeout`` seconds."""
    conn = Connection(server.host, server.port, server.user, server.password).connect()
    try:
        deadline = time.time() + timeout
        while not conn.eval(u'return box.space.gloaddriver:len()')[0] and \
                time.time() < deadline:
            time.sleep(0.01)
    finally:
        conn.close()


def truncate(server):
    conn = Connection(server.host, server.port, server.user, server.password).connect()
    try:
        conn.eval(u'box.space.gloaddriver:truncate()')
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--rate', type=float, default=20000)
    ap.add_argument('--seconds', type=float, default=8)
    ap.add_argument('--pause', type=float, default=1.0)
    ap.add_argument('--greenlets', type=int, default=100)
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    out = out_path(args.out, 'open-loop')
    common = ['--phases', 'insert', '--ops', '0', '--duration', str(args.seconds),
              '--keys', '1000000000', '--rate', str(args.rate), '--greenlets',
              str(args.greenlets), '--space', 'gloaddriver']
    rows, raw = [], []
    with TarantoolServer() as server:
        for label, pause_at in (('steady', None), ('server paused %.1f s' % args.pause,
                                                   args.seconds / 2 - args.pause / 2)):
            sys.stderr.write('%s\n' % label)
            truncate(server)   # both runs insert the same keys
            res = run(args.python, server, common, pause_at, args.pause)
            if res is None:
                continue
            p = res['phases'][0]
            raw.append({'label': label, 'result': res})
            rows.append({'run': label, 'target': p['rate']['target'],
                         'achieved': p['rate']['achieved'],
                         'off_target_pct': round(100.0 * (p['rate']['achieved'] - args.rate)
                                                 / args.rate, 2),
                         'late': p['rate']['late'], 'dropped': p['rate']['dropped'],
                         'p99_us': p['latency_us']['p99'], 'p999_us': p['latency_us']['p999'],
                         'service_p99_us': p['service_time_us']['p99'],
                         'service_p999_us': p['service_time_us']['p999'],
                         'failed': p['failed'] + p['timed_out'],
                         'interpreter': res['manifest']['interpreter']})
    fmt = '%-22s %9s %10s %7s %7s %11s %12s %12s %12s'
    print('open loop, %d greenlets, %.0f s per run, %s' % (
        args.greenlets, args.seconds, rows[0]['interpreter'] if rows else '?'))
    print(fmt % ('run', 'target', 'achieved', 'off %', 'late', 'p99 us', 'p99.9 us',
                 'svc p99 us', 'svc p99.9 us'))
    n = lambda v: '{:,}'.format(int(v))  # noqa: E731
    for r in rows:
        print(fmt % (r['run'], n(r['target']), n(r['achieved']), '%+.2f' % r['off_target_pct'],
                     n(r['late']), n(r['p99_us']), n(r['p999_us']), n(r['service_p99_us']),
                     n(r['service_p999_us'])))
    print('p99/p99.9: from the intended start (corrected); svc: service time (uncorrected)')
    with open(out, 'w') as f:
        json.dump({'table': rows, 'runs': raw}, f, indent=1, sort_keys=True)
    print('JSON: %s' % out)
    return 1 if len(rows) < 2 or any(r['failed'] for r in rows) else 0


if __name__ == '__main__':
    sys.exit(main())
