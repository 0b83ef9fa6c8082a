"""gloaddriver next to pgbench on pgbench's own scripts, one private server, rounds
interleaved.

Run by ``scripts/bench pgbench``. The tables are pgbench's own (``pgbench -i -s
SCALE``); each round runs, for each built-in script (tpcb-like, select-only), pgbench,
gloaddriver on the psycopg2 and on the pipelined connector, and a plain gevent +
psycopg2 loop of the same statements (PREPAREd, psycogreen's wait callback, no
accounting: what psycopg2 allows), the same clients (greenlets), seconds and protocol
(-M / --protocol; the plain loop is always prepared); beside select-only, gloaddriver's
own kv select on the pipelined connector, on a table of as many rows (what the
pipelined script is judged against). gloaddriver runs with a connection per client
(--pipelined-conns: the pipelined connector's).
Before every run the tables are put back as pgbench puts them before its own (history
emptied, branches and tellers vacuumed), and pgbench runs with -n, so every run starts
from the same state. Prints
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

from benchlib import PGBENCH_PREPARED as PLAIN
from benchlib import ROOT, median, out_path
from benchlib import driver as run_driver

sys.path.insert(0, ROOT)

from gloaddriver.backends.postgres.server import PostgresServer  # noqa: E402
from gloaddriver.backends.spawn import which  # noqa: E402

SCRIPTS = ('tpcb-like', 'select-only')
CONNECTORS = ('psycopg2', 'pipelined')
CLIENTS = ('pgbench',) + CONNECTORS + ('psycopg2-loop', 'kv-pipelined')
# gloaddriver's own kv select beside select-only: the same rows (100,000 x scale), keyed
# the same, a value of abalance's text ('0'), prepared, on the pipelined connector with
# one connection per client; what its script must match there.
KV_TABLE = 'kv_accounts'

PLAIN_LOOP = r"""
from gevent import monkey; monkey.patch_all()
import json, random, sys, time
import gevent, psycogreen.gevent, psycopg2
psycogreen.gevent.patch_psycopg()
dsn, script, clients, seconds, scale, prepares = sys.argv[1], sys.argv[2], int(sys.argv[3]),     float(sys.argv[4]), int(sys.argv[5]), json.loads(sys.argv[6])
done = [0]
def client(i):
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    cur = conn.cursor()
    for sql in prepares:
        cur.execute(sql)
    rnd = random.Random(i)
    naccounts = 100000 * scale
    end = time.time() + seconds
    while time.time() < end:
        aid = int(rnd.random() * naccounts) + 1
        if script == 'select-only':
            cur.execute('EXECUTE s (%s)', (aid,))
            cur.fetchall()
        else:
            bid = int(rnd.random() * scale) + 1
            tid = int(rnd.random() * 10 * scale) + 1
            delta = int(rnd.random() * 10001) - 5000
            cur.execute('BEGIN')
            cur.execute('EXECUTE a (%s, %s)', (delta, aid))
            cur.execute('EXECUTE s (%s)', (aid,))
            cur.fetchall()
            cur.execute('EXECUTE t (%s, %s)', (delta, tid))
            cur.execute('EXECUTE b (%s, %s)', (delta, bid))
            cur.execute('EXECUTE h (%s, %s, %s, %s)', (tid, bid, aid, delta))
            cur.execute('END')
        done[0] += 1
    conn.close()
start = time.time()
gevent.joinall([gevent.spawn(client, i) for i in range(clients)])
print(done[0] / (time.time() - start))
"""


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


def gloaddriver(python, server, script, connector, clients, seconds, protocol, conns=None):
    dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
        server.port, server.database, server.user)
    args = ['--backend', 'postgres', '--dsn', dsn, '--builtin', script, '--connector',
            connector, '--protocol', protocol, '--greenlets', str(clients), '--pool-size',
            str(conns or clients), '--duration', str(seconds), '--ops', '0', '--no-syscalls']
    return _driver_run(python, server, args, '%s %s' % (script, connector))


def kv_select(python, server, clients, seconds, scale, conns=None):
    """gloaddriver's kv select on the pipelined connector (KV_TABLE): ops per second."""
    dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
        server.port, server.database, server.user)
    args = ['--backend', 'postgres', '--dsn', dsn, '--table', KV_TABLE, '--prepared',
            '--connector', 'pipelined', '--pool-size', str(conns or clients), '--greenlets',
            str(clients), '--phases', 'select', '--keys', str(100000 * scale), '--duration',
            str(seconds), '--ops', '0', '--no-syscalls']
    return _driver_run(python, server, args, 'kv select pipelined')


def kv_table(server, scale):
    psql(server, 'DROP TABLE IF EXISTS %s; CREATE TABLE %s (id bigint PRIMARY KEY, value text);'
                 "INSERT INTO %s SELECT i, '0' FROM generate_series(0, %d) i"
         % (KV_TABLE, KV_TABLE, KV_TABLE, 100000 * scale - 1))
    psql(server, 'VACUUM ANALYZE %s' % KV_TABLE)


def _driver_run(python, server, args, what):
    res = run_driver(python, args, server.password)
    if res is None:
        return None, None
    (phase,) = res['phases']
    if phase['failed'] or phase['timed_out']:
        sys.stderr.write('gloaddriver %s: %d failed, %d timed out\n'
                         % (what, phase['failed'], phase['timed_out']))
    return phase['ok_per_sec'], (phase.get('client') or {}).get('busy')


def plain_loop(python, server, script, clients, seconds, scale):
    """The same statements in a plain gevent + psycopg2 loop: transactions per second."""
    dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s password=%s sslmode=disable' % (
        server.port, server.database, server.user, server.password)
    try:
        out = subprocess.check_output([python, '-c', PLAIN_LOOP, dsn, script, str(clients),
                                       str(seconds), str(scale), json.dumps(PLAIN[script])])
    except subprocess.CalledProcessError as e:
        sys.stderr.write('the plain loop failed: exit %s\n' % e.returncode)
        return None
    return float(out.decode().strip())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--python', default=sys.executable, help='the interpreter of gloaddriver')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--seconds', type=int, default=10)
    ap.add_argument('--clients', type=int, default=8, help='pgbench -c, --greenlets')
    ap.add_argument('--scale', type=int, default=10, help='pgbench -i -s')
    ap.add_argument('--pipelined-conns', type=int, default=None, metavar='N',
                    help="the pipelined connector's connections (default: one per client, "
                         "as pgbench's sessions; 1: the clients' statements share one socket)")
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
        if 'select-only' in scripts:
            kv_table(server, a.scale)
        for r in range(a.rounds):
            for script in scripts:
                reset(server)
                tps = pgbench(server, script, a.clients, a.seconds, a.protocol)
                runs.append({'round': r, 'script': script, 'client': 'pgbench', 'tps': tps})
                for connector in CONNECTORS:
                    reset(server)
                    tps, busy = gloaddriver(a.python, server, script, connector, a.clients,
                                            a.seconds, a.protocol,
                                            a.pipelined_conns if connector == 'pipelined'
                                            else None)
                    runs.append({'round': r, 'script': script, 'client': connector,
                                 'tps': tps, 'client_busy': busy})
                reset(server)
                runs.append({'round': r, 'script': script, 'client': 'psycopg2-loop',
                             'tps': plain_loop(a.python, server, script, a.clients, a.seconds,
                                               a.scale)})
                clients = CLIENTS[:-1]
                if script == 'select-only':
                    tps, busy = kv_select(a.python, server, a.clients, a.seconds, a.scale,
                                          a.pipelined_conns)
                    runs.append({'round': r, 'script': script, 'client': 'kv-pipelined',
                                 'tps': tps, 'client_busy': busy})
                    clients = CLIENTS
                for run in runs[-len(clients):]:
                    print('round %d  %-12s %-13s %10s tps' % (
                        r + 1, script, run['client'],
                        '%.0f' % run['tps'] if run['tps'] else 'failed'))
                sys.stdout.flush()
    finally:
        server.stop()
    summary = []
    print('\n%d clients, -M %s, scale %d, %d s runs, %d rounds, %d pipelined connections '
          '(median; ratio to pgbench, worst round in brackets)'
          % (a.clients, a.protocol, a.scale, a.seconds, a.rounds, a.pipelined_conns or a.clients))
    for script in scripts:
        base = [x['tps'] for x in runs if x['script'] == script and x['client'] == 'pgbench']
        print('%-12s pgbench       %10.0f tps' % (script, median([b or 0 for b in base])))
        for connector in CLIENTS[1:]:
            got = [x['tps'] for x in runs if x['script'] == script and x['client'] == connector]
            if not got:
                continue
            ratios = [g / b for g, b in zip(got, base) if g and b]
            row = {'script': script, 'client': connector, 'tps_median': median(
                [g or 0 for g in got]), 'pgbench_median': median([b or 0 for b in base]),
                'ratios': ratios}
            summary.append(row)
            line = '%-12s %-13s %10.0f tps  %.2fx pgbench (%.2fx)' % (
                script, connector, row['tps_median'], median(ratios) if ratios else 0,
                min(ratios) if ratios else 0)
            # what each connector allows: the plain psycopg2 loop, the kv select
            peer = {'psycopg2': ('psycopg2-loop', 'ratios_to_plain_loop',
                                 'the plain psycopg2 loop'),
                    'pipelined': ('kv-pipelined', 'ratios_to_kv_select',
                                  'the kv select')}.get(connector)
            if peer is not None:
                theirs = [x['tps'] for x in runs if x['script'] == script and
                          x['client'] == peer[0]]
                row[peer[1]] = [g / p for g, p in zip(got, theirs) if g and p]
                if row[peer[1]]:
                    line += ', %.2fx %s (%.2fx)' % (median(row[peer[1]]), peer[2],
                                                    min(row[peer[1]]))
            print(line)
    path = out_path(a.out, 'pgbench')
    with open(path, 'w') as f:
        json.dump({'args': vars(a), 'runs': runs, 'summary': summary}, f, indent=1)
    print('\nwritten to %s' % path)


if __name__ == '__main__':
    main()
