"""asyncpg's driver benchmark queries (toolbench) through asyncpg + uvloop, a plain gevent +
psycopg2 loop and gloaddriver on both PostgreSQL connectors, rounds interleaved.

Run by ``scripts/bench toolbench`` (which installs the peers into .venv/peers-*). One
private server; each client runs each query for --seconds on --conns connections
(gloaddriver: --greenlets of that many, the pipelined connector with as many
connections; its pipelined --decode full once more with the pure-Python row reader,
GLOADDRIVER_PURE_PYTHON set), the clients' order rotated each round. Prints queries/s per client and
round, each one's median and its ratio to asyncpg's, gloaddriver's psycopg2 path over the
plain loop round by round, and writes the runs as JSON
(--out, default bench-results/toolbench-DATE-TIME.json).

    scripts/bench toolbench --rounds 2 --seconds 3
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import subprocess
import sys

from benchlib import ROOT, driver, median, out_path, write_json

sys.path.insert(0, ROOT)
from gloaddriver.backends.postgres.server import PostgresServer  # noqa: E402
from gloaddriver.backends.postgres.workloads import TOOLBENCH_QUERIES  # noqa: E402
from gloaddriver.backends.postgres.rows_pipelined import numbered  # noqa: E402

PEERS = os.path.join(ROOT, 'scripts', 'peers')
QUERIES = ('pg_type', 'series', 'bytea', 'arrays')
BASE = 'asyncpg+uvloop'
PURE = 'gloaddriver pipelined --decode full, pure Python'
LOOP = 'gevent+psycopg2 loop'


def clients(args):
    return [(BASE, 'peer', 'pg_toolbench_asyncpg.py3', args.peers311),
            (LOOP, 'peer', 'pg_toolbench_psycopg2.py', args.python),
            ('gloaddriver psycopg2', 'driver', ['--connector', 'psycopg2'], None),
            ('gloaddriver pipelined', 'driver',
             ['--connector', 'pipelined', '--pool-size', str(args.conns)], None),
            ('gloaddriver pipelined --decode full', 'driver',
             ['--connector', 'pipelined', '--pool-size', str(args.conns), '--decode', 'full'],
             None),
            (PURE, 'driver',
             ['--connector', 'pipelined', '--pool-size', str(args.conns), '--decode', 'full'],
             None)]


def paired(runs, name, base):
    """Print ``name``'s queries/s over ``base``'s of the same round, per query: each
    round's ratio and their median. Rounds are interleaved, so a pair shares the
    machine's moment; its ratio is steadier than the ratio of two medians."""
    got = dict(((x['client'], x['query'], x['round']), x['qps']) for x in runs)
    rounds = sorted(set(x['round'] for x in runs))
    cells = []
    for q in QUERIES:
        ratios = [got[name, q, r] / got[base, q, r] for r in rounds
                  if got.get((name, q, r)) and got.get((base, q, r))]
        if ratios:
            cells.append('%s %s' % (q, '%.2fx (%s)' % (median(ratios), ' '.join(
                '%.2f' % v for v in ratios))))
    if cells:
        print('%s / %s, round by round: %s' % (name, base, '; '.join(cells)))


def chosen(args):
    only = set(args.clients.split(',')) if args.clients else None
    return [c for c in clients(args) if only is None or c[0] in only]


def peer(python, script, a):
    p = subprocess.Popen([python, os.path.join(PEERS, script), json.dumps(a)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=PEERS)
    out, err = p.communicate()
    if p.returncode:
        sys.stderr.write('%s failed (%d): %s\n' % (script, p.returncode,
                                                   err.decode('utf-8', 'replace')[-400:]))
        return None
    r = json.loads(out.decode('utf-8').strip().splitlines()[-1])
    return r['queries'] / r['seconds']


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--peers311', required=True)
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--seconds', type=float, default=3.0)
    ap.add_argument('--conns', type=int, default=8)
    ap.add_argument('--clients', help='comma-separated client names to run (default: all; '
                                      'the ratios need %s among them)' % BASE)
    ap.add_argument('--queries', default=','.join(QUERIES),
                    help='comma-separated queries (default: all four)')
    ap.add_argument('--out')
    args = ap.parse_args()
    say = lambda line: sys.stderr.write(line + '\n')    # noqa: E731
    runs = []
    with PostgresServer() as server:
        dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
            server.port, server.database, server.user)
        common = ['--backend', 'postgres', '--dsn', dsn, '--workload', 'toolbench']
        if driver(args.python, common + ['--init', '--ops', '8', '--greenlets', '1'],
                  server.password) is None:
            return 1
        a = dict(host='127.0.0.1', port=server.port, user=server.user,
                 password=server.password, database=server.database,
                 concurrency=args.conns, seconds=args.seconds, syscalls=False)
        cs = chosen(args)
        queries = [q for q in args.queries.split(',') if q in QUERIES]
        for r in range(args.rounds):
            for name, how, what, python in cs[r % len(cs):] + cs[:r % len(cs)]:
                say('round %d: %s' % (r + 1, name))
                for q in queries:
                    sql, params = TOOLBENCH_QUERIES[q]
                    if how == 'peer':
                        qps = peer(python, what, dict(a, sql=numbered(sql),
                                                      params=list(params or ())))
                    else:
                        res = driver(args.python, common + what + [
                            '--phases', q, '--duration', str(args.seconds),
                            '--greenlets', str(args.conns), '--no-syscalls'], server.password,
                            env={'GLOADDRIVER_PURE_PYTHON': '1'} if name == PURE else None)
                        qps = res and res['phases'][0]['ops_per_sec']
                    runs.append(dict(round=r + 1, client=name, query=q, qps=qps))
    print('toolbench, %d connections, %.0f s per query, %d rounds (queries/s; x: median '
          'against %s)' % (args.conns, args.seconds, args.rounds, BASE))
    print('%-50s %s' % ('client', ''.join('%22s' % q for q in QUERIES)))
    base = {}
    for q in QUERIES:
        got = [x['qps'] for x in runs if x['client'] == BASE and x['query'] == q and x['qps']]
        base[q] = median(got) if got else None
    for name, _how, _what, _py in chosen(args):
        cells = []
        for q in QUERIES:
            got = [x['qps'] for x in runs if x['client'] == name and x['query'] == q]
            ok = [v for v in got if v]
            m = median(ok) if ok else None
            cells.append('%22s' % ('%s %s' % ('/'.join('%d' % v for v in ok) or '-',
                                              '(%.2fx)' % (m / base[q]) if m and base[q]
                                              else '')))
        print('%-50s %s' % (name, ''.join(cells)))
    paired(runs, 'gloaddriver psycopg2', LOOP)
    write_json(out_path(args.out, 'toolbench'), {'runs': runs, 'conns': args.conns,
                                                 'seconds': args.seconds})
    return 0 if all(x['qps'] for x in runs) else 1


if __name__ == '__main__':
    sys.exit(main())
