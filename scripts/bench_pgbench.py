"""gloaddriver next to pgbench on pgbench's own scripts, one private server, rounds
interleaved.

Run by ``scripts/bench pgbench``. The tables are pgbench's own (``pgbench -i -s
SCALE``); each round runs, for each built-in script (tpcb-like, select-only), pgbench
and then gloaddriver on the psycopg2 and on the pipelined connector, the same clients
(greenlets), seconds and protocol (-M / --protocol). Before every run the tables are
put back as pgbench puts them before its own (history emptied, branches and tellers
vacuumed), and pgbench runs with -n, so every run starts from the same state. Prints
tps per run, the median of the rounds and each connector's ratio to pgbench; writes
all of it to a JSON file.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import re
import subprocess
import sys

from benchlib import ROOT, median, out_path
from benchlib import driver as run_driver

sys.path.insert(0, ROOT)

from gloaddriver.backends.postgres.server import PostgresServer  # noqa: E402
from gloaddriver.backends.spawn import which  # noqa: E402

SCRIPTS = ('tpcb-like', 'select-only')
CONNECTORS = ('psycopg2', 'pipelined')


def pg_env(server):
    return dict(os.environ, PGPASSWORD=server.password)


def pg_args(server):
    return ['-h', '127.0.0.1', '-p', str(server.port), '-U', server.user]


def psql(server, sql):
    subprocess.check_call([which('psql'), '-q', '-X', '-v', 'ON_ERROR_STOP=1', '-c', sql] +
                          pg_args(server) + [server.database], env=pg_env(server),
                          stdout=subprocess.PIPE)


def reset(server):
    """What pgbench does before a run unless -n: an empty history, vacuumed small tables."""
    psql(server, 'TRUNCATE pgbench_history')
    psql(server, 'VACUUM pgbench_branches')
    psql(server, 'VACUUM pgbench_tellers')


def pgbench(server, script, clients, seconds, protocol):
    out = subprocess.check_output(
        [which('pgbench'), '-n', '-b', script, '-M', protocol, '-c', str(clients), '-j', '1',
         '-T', str(seconds)] + pg_args(server) + [server.database],
        env=pg_env(server), stderr=subprocess.STDOUT).decode('utf-8', 'replace')
    m = re.search(r'tps = ([0-9.]+) \(without initial connection time\)', out)
    if not m:
        sys.stderr.write('pgbench failed: %s\n' % out[-500:])
        return None
    return float(m.group(1))


def gloaddriver(python, server, script, connector, clients, seconds, protocol):
    dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
        server.port, server.database, server.user)
    args = ['--backend', 'postgres', '--dsn', dsn, '--builtin', script, '--connector',
            connector, '--protocol', protocol, '--greenlets', str(clients), '--duration',
            str(seconds), '--ops', '0', '--no-syscalls']
    res = run_driver(python, args, server.password)
    if res is None:
        return None, None
    (phase,) = res['phases']
    if phase['failed'] or phase['timed_out']:
        sys.stderr.write('gloaddriver %s %s: %d failed, %d timed out\n'
                         % (script, connector, phase['failed'], phase['timed_out']))
    return phase['ok_per_sec'], (phase.get('client') or {}).get('busy')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--python', default=sys.executable, help='the interpreter of gloaddriver')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--seconds', type=int, default=10)
    ap.add_argument('--clients', type=int, default=8, help='pgbench -c, --greenlets')
    ap.add_argument('--scale', type=int, default=10, help='pgbench -i -s')
    ap.add_argument('--protocol', default='prepared', choices=('simple', 'extended', 'prepared'))
    ap.add_argument('--scripts', default=','.join(SCRIPTS))
    ap.add_argument('--out', help='JSON file (default bench-results/pgbench-DATE.json)')
    a = ap.parse_args(argv)
    scripts = [s for s in a.scripts.split(',') if s]
    server = PostgresServer().start()
    runs = []
    try:
        subprocess.check_output([which('pgbench'), '-i', '-q', '-s', str(a.scale)] +
                                pg_args(server) + [server.database], env=pg_env(server),
                                stderr=subprocess.STDOUT)
        for r in range(a.rounds):
            for script in scripts:
                reset(server)
                tps = pgbench(server, script, a.clients, a.seconds, a.protocol)
                runs.append({'round': r, 'script': script, 'client': 'pgbench', 'tps': tps})
                for connector in CONNECTORS:
                    reset(server)
                    tps, busy = gloaddriver(a.python, server, script, connector, a.clients,
                                            a.seconds, a.protocol)
                    runs.append({'round': r, 'script': script, 'client': connector,
                                 'tps': tps, 'client_busy': busy})
                for run in runs[-3:]:
                    print('round %d  %-12s %-10s %10s tps' % (
                        r + 1, script, run['client'],
                        '%.0f' % run['tps'] if run['tps'] else 'failed'))
                sys.stdout.flush()
    finally:
        server.stop()
    summary = []
    print('\n%d clients, -M %s, scale %d, %d s runs, %d rounds (median; ratio to pgbench, '
          'worst round in brackets)' % (a.clients, a.protocol, a.scale, a.seconds, a.rounds))
    for script in scripts:
        base = [x['tps'] for x in runs if x['script'] == script and x['client'] == 'pgbench']
        print('%-12s pgbench     %10.0f tps' % (script, median([b or 0 for b in base])))
        for connector in CONNECTORS:
            got = [x['tps'] for x in runs if x['script'] == script and x['client'] == connector]
            ratios = [g / b for g, b in zip(got, base) if g and b]
            row = {'script': script, 'client': connector, 'tps_median': median(
                [g or 0 for g in got]), 'pgbench_median': median([b or 0 for b in base]),
                'ratios': ratios}
            summary.append(row)
            print('%-12s %-10s  %10.0f tps  %.2fx pgbench (%.2fx)' % (
                script, connector, row['tps_median'], median(ratios) if ratios else 0,
                min(ratios) if ratios else 0))
    path = out_path(a.out, 'pgbench')
    with open(path, 'w') as f:
        json.dump({'args': vars(a), 'runs': runs, 'summary': summary}, f, indent=1)
    print('\nwritten to %s' % path)


if __name__ == '__main__':
    main()
