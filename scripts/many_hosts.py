"""The host side of scripts/many-hosts: a private Tarantool on 127.0.0.1, the Swarm job
of shards against it (deploy/swarm/shards.sh), the merge step (deploy/swarm/merge.sh,
which prints the merged table), then the checks that make the merge honest: the merged
counts are the sums of the shards' counts, every shard's index is there once, and each
histogram's total is its phase's ok count. The host side needs only the
standard library (no venv); the checks run in the image."""
from __future__ import absolute_import, division, print_function

import argparse
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTS = ('attempted', 'ok', 'failed', 'timed_out')


def histogram_total(encoded):
    """Total count of an encoded HdrHistogram (needs the hdrhistogram package: the
    check runs in the image, where gloaddriver is installed)."""
    from gloaddriver.measure import stats
    return stats.decode_histogram(encoded).get_total_count()


def check(shards, merged, n):
    """Problems found (empty when the merge adds up)."""
    problems = []
    want = ['%d/%d' % (i, n) for i in range(n)]
    got = sorted(s['manifest'].get('shard') for s in shards)
    if got != want:
        problems.append('shards %s, expected %s' % (got, want))
    for phase in merged['phases']:
        parts = [p for s in shards for p in s['phases'] if p['name'] == phase['name']]
        for k in COUNTS:
            if phase[k] != sum(p[k] for p in parts):
                problems.append('%s %s: merged %s, shards %s' % (
                    phase['name'], k, phase[k], [p[k] for p in parts]))
        totals = [histogram_total(p['histogram']) for p in parts]
        if histogram_total(phase['histogram']) != sum(totals) or totals != [p['ok'] for p in parts]:
            problems.append('%s histogram totals: merged %d, shards %s, ok %s' % (
                phase['name'], histogram_total(phase['histogram']), totals,
                [p['ok'] for p in parts]))
        if phase['ok'] + phase['failed'] + phase['timed_out'] != phase['attempted']:
            problems.append('%s: ok + failed + timed out != attempted' % phase['name'])
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(prog='scripts/many-hosts')
    ap.add_argument('mode', nargs='?', choices=['run', 'check'], default='run')
    ap.add_argument('--job', required=True)
    ap.add_argument('--shards', type=int, default=3)
    ap.add_argument('--ops', type=int, default=5000)
    ap.add_argument('--keys', type=int, default=5000)
    ap.add_argument('--results', required=True)
    args = ap.parse_args(argv)
    if args.mode == 'check':
        return check_files(args)
    n = args.shards
    from gloaddriver.backends.tarantool.server import TarantoolServer
    with TarantoolServer() as server:
        env = dict(os.environ, GLOADDRIVER_PASSWORD=server.password)
        t0 = time.time()
        rc = subprocess.call([os.path.join(ROOT, 'deploy', 'swarm', 'shards.sh'), args.job,
                              str(n), args.results, '--', '--uri', server.uri, '--user',
                              server.user, '--ops', str(args.ops), '--keys', str(n * args.keys),
                              '--greenlets', '10'], env=env)
        if rc:
            print('many-hosts: the swarm job failed (exit %d)' % rc, file=sys.stderr)
            return 1
        print('many-hosts: %d shards ran as a swarm job in %.0f s (start lead included)'
              % (n, time.time() - t0), file=sys.stderr)
    rc = subprocess.call([os.path.join(ROOT, 'deploy', 'swarm', 'merge.sh'), args.results,
                          args.job])
    if rc:
        print('many-hosts: the merge step failed (exit %d)' % rc, file=sys.stderr)
        return 1
    # The checks decode histograms: in the image, which has gloaddriver and its
    # dependencies, reading this file and the results from read-only mounts.
    return subprocess.call(['docker', 'run', '--rm', '--network', 'none', '-v',
                            '%s:/results:ro' % os.path.abspath(args.results), '-v',
                            '%s:/check.py:ro' % os.path.abspath(__file__), '--entrypoint',
                            'python', os.environ.get('IMAGE', 'gloaddriver:local'), '/check.py',
                            'check', '--job', args.job, '--shards', str(n), '--results',
                            '/results'])


def check_files(args):
    n = args.shards
    paths = sorted(p for p in glob.glob(os.path.join(args.results, args.job + '-*.json'))
                   if not p.endswith('-merged.json'))
    shards = []
    for p in paths:
        with open(p) as f:
            shards.append(json.load(f))
    with open(os.path.join(args.results, args.job + '-merged.json')) as f:
        merged = json.load(f)
    problems = check(shards, merged, n)
    for p in problems:
        print('many-hosts: MISMATCH %s' % p, file=sys.stderr)
    if problems:
        return 1
    print('many-hosts: merged counts and histogram totals are the sums of the %d shards'
          % n)
    return 0


if __name__ == '__main__':
    sys.exit(main())
