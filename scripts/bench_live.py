"""What live metrics out costs a run: the same select load with no live output, with
--graphite to a port nobody listens on, with --prometheus-port scraped every second, and
with --web watched by two event streams (as two open dashboards).

Run by ``scripts/bench live``. One private Tarantool holding --keys rows; rounds
interleave the variants round-robin so the machine's noise hits all alike. Each run
is ``--phases select --ops 0 --duration S`` at --greenlets, uniform keys, one
interval a second (so one Graphite send and about one scrape a second). Prints
one table (medians over the rounds, and each variant's ratio to no live output)
and writes JSON; the drops each run reported are kept there too.
"""
from __future__ import absolute_import, division, print_function

import argparse
import sys
import threading

from benchlib import (ROOT, driver, exit_code, fill_tarantool, median, out_path,
                      write_json)

sys.path.insert(0, ROOT)

from gloaddriver.backends.spawn import free_port  # noqa: E402
from gloaddriver.backends.tarantool.server import TarantoolServer  # noqa: E402

try:
    from urllib.request import urlopen
except ImportError:  # pragma: no cover - Python 2
    from urllib2 import urlopen


class Scraper(threading.Thread):
    """GET http://127.0.0.1:PORT/metrics every ``every`` seconds until stopped."""

    def __init__(self, port, every=1.0):
        threading.Thread.__init__(self)
        self.daemon = True
        self.port, self.every = port, every
        self.done = threading.Event()
        self.ok = self.failed = 0
        self.start()

    def run(self):
        while not self.done.wait(self.every):
            try:
                urlopen('http://127.0.0.1:%d/metrics' % self.port, timeout=2).read()
                self.ok += 1
            except Exception:   # before the endpoint is up, or after it is gone
                self.failed += 1


class Watcher(threading.Thread):
    """Holds http://127.0.0.1:PORT/events open as a browser's dashboard does, counting
    the interval events until the driver ends the stream."""

    def __init__(self, port):
        threading.Thread.__init__(self)
        self.daemon = True
        self.port = port
        self.done = threading.Event()
        self.rows = 0
        self.start()

    def run(self):
        while not self.done.is_set():
            try:
                stream = urlopen('http://127.0.0.1:%d/events' % self.port, timeout=30)
            except Exception:   # not up yet
                self.done.wait(0.05)
                continue
            try:
                for line in stream:
                    if line.startswith(b'event: row'):
                        self.rows += 1
            except Exception:   # the driver stopped serving
                pass
            return


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable, help='interpreter that runs the driver')
    ap.add_argument('--seconds', type=float, default=5.0, help='length of each run')
    ap.add_argument('--keys', type=int, default=100000)
    ap.add_argument('--greenlets', type=int, default=100)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--out', default=None, help='JSON file (default bench-results/...)')
    args = ap.parse_args()
    out = out_path(args.out, 'live')
    common = ['--phases', 'select', '--ops', '0', '--duration', str(args.seconds),
              '--keys', str(args.keys), '--distribution', 'uniform',
              '--greenlets', str(args.greenlets)]
    dead = free_port()   # nobody listens there: every connect is refused
    kinds = ('no live output', 'graphite, dead port', 'prometheus, scraped 1/s',
             'web, 2 streams watching')
    runs = []
    with TarantoolServer() as server:
        fill_tarantool(server, args.keys)
        target = ['--uri', server.uri, '--user', server.user]
        for r in range(args.rounds):
            for name in kinds:
                sys.stderr.write('round %d: %s...\n' % (r + 1, name))
                extra, scraper, watchers = [], None, []
                if name.startswith('graphite'):
                    extra = ['--graphite', '127.0.0.1:%d' % dead]
                elif name.startswith('prometheus'):
                    port = free_port()
                    extra = ['--prometheus-port', '127.0.0.1:%d' % port]
                    scraper = Scraper(port)
                elif name.startswith('web'):
                    port = free_port()
                    extra = ['--web', '127.0.0.1:%d' % port]
                    watchers = [Watcher(port), Watcher(port)]
                res, err = driver(args.python, target + common + extra, server.password,
                                  stderr_lines=True)
                if scraper is not None:
                    scraper.done.set()
                    scraper.join(3)
                for w in watchers:
                    w.done.set()
                    w.join(5)
                if res is None:
                    continue
                p = res['phases'][0]
                runs.append({'round': r, 'kind': name, 'ops_per_sec': p['ops_per_sec'],
                             'cpu_us_per_op': p['cpu_us_per_op'],
                             'p99_us': p['latency_us']['p99'],
                             'syscalls_per_op': p['syscalls'].get('per_op'),
                             'failed': p['failed'] + p['timed_out'],
                             'notes': [l for l in err if 'note:' in l],
                             'scrapes': scraper.ok if scraper is not None else None,
                             'web_rows_seen': [w.rows for w in watchers] or None,
                             'interpreter': res['manifest']['interpreter']})
    table = []
    for name in kinds:
        mine = [x for x in runs if x['kind'] == name]
        if mine:
            table.append({'kind': name, 'runs': len(mine),
                          'ops_per_sec': median([x['ops_per_sec'] for x in mine]),
                          'ops_per_sec_each': [x['ops_per_sec'] for x in mine],
                          'cpu_us_per_op': median([x['cpu_us_per_op'] for x in mine]),
                          'p99_us': median([x['p99_us'] for x in mine]),
                          'syscalls_per_op': median([x['syscalls_per_op'] or 0 for x in mine])})
    base = table[0]['ops_per_sec'] if table and table[0]['kind'] == kinds[0] else None
    print('select, %d greenlets, %g s per run, one interval a second, %d rounds '
          'interleaved, %s' % (args.greenlets, args.seconds, args.rounds,
                               runs[0]['interpreter'] if runs else '?'))
    fmt = '%-26s %5s %10s %8s %10s %8s %7s  %s'
    print(fmt % ('live output', 'runs', 'ops/s', 'ratio', 'cpu us/op', 'p99 us', 'sys/op',
                 'ops/s of each round'))
    for t in table:
        t['ratio'] = round(t['ops_per_sec'] / base, 4) if base else None
        print(fmt % (t['kind'], t['runs'], '{:,}'.format(int(t['ops_per_sec'])),
                     '%.3fx' % t['ratio'] if t['ratio'] else '-', '%.2f' % t['cpu_us_per_op'],
                     '{:,}'.format(int(t['p99_us'])), '%.3f' % t['syscalls_per_op'],
                     ' / '.join('{:,}'.format(int(v)) for v in t['ops_per_sec_each'])))
    for x in runs:
        for n in x['notes']:
            print('round %d, %s: %s' % (x['round'] + 1, x['kind'], n.split('note: ', 1)[1]))
    scrapes = [x['scrapes'] for x in runs if x['scrapes'] is not None]
    if scrapes:
        print('prometheus scrapes answered per run: %s' % ', '.join(str(s) for s in scrapes))
    seen = [x['web_rows_seen'] for x in runs if x['web_rows_seen'] is not None]
    if seen:
        print('web: interval events each stream got per run: %s' % ', '.join(
            '/'.join(str(n) for n in s) for s in seen))
    write_json(out, {'table': table, 'runs': runs, 'args': vars(args)})
    return exit_code(runs, len(kinds) * args.rounds)


if __name__ == '__main__':
    sys.exit(main())
