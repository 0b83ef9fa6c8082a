"""The host side of scripts/many-hosts: a private Tarantool, the Swarm job of shards
against it (deploy/swarm/shards.sh), the merge step (deploy/swarm/merge.sh, which prints
the merged table), then the checks that make the merge honest: the merged counts are the
sums of the shards' counts, every shard's index is there once, and each histogram's
total is its phase's ok count.

One node (the default): a swarm on 127.0.0.1, results in a shared folder. With
``--nodes N``: N engines (the host's and N-1 in network namespaces, scripts/swarm_nodes.py),
one shard per node, the results read back from the service's logs
(deploy/swarm/collect.py: no shared disk), the Tarantool listening where every node
reaches it (10.213.1.1, the host end of node 1's veth), and everything the run made
removed at the end whatever happened. ``--fail-shard I`` makes shard I's first inserts
fail (their keys are inserted before the job): a shard that exits 1 runs once and its
failures are merged. The host side needs only the standard library (no venv); the
checks run in the image."""
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


def parse_args(argv):
    ap = argparse.ArgumentParser(prog='scripts/many-hosts')
    ap.add_argument('mode', nargs='?', choices=['run', 'check'], default='run')
    ap.add_argument('--job', required=True)
    ap.add_argument('--shards', type=int, default=3)
    ap.add_argument('--nodes', type=int, default=0,
                    help='N engines, one shard each, results through the logs (N >= 2)')
    ap.add_argument('--fail-shard', type=int, default=None,
                    help="make this shard's first --fail-ops inserts fail")
    ap.add_argument('--fail-ops', type=int, default=100)
    ap.add_argument('--ops', type=int, default=5000)
    ap.add_argument('--keys', type=int, default=5000)
    ap.add_argument('--rate', type=int, default=None,
                    help='each shard open loop at this many ops/s (default with --nodes: 1000)')
    ap.add_argument('--results', required=True)
    args = ap.parse_args(argv)
    if args.nodes:
        if args.nodes < 2 or args.nodes > 50:
            ap.error('--nodes must be 2..50 (one node: leave --nodes out)')
        args.shards = args.nodes
        # Open loop by default: merge wants each phase's shards side by side, and closed-
        # loop shards on nodes of unequal speed drift apart phase by phase (by the
        # delete phase, a third faster shard ran ahead of the others' window).
        if args.rate is None:
            args.rate = 1000
    if args.shards < 1:
        ap.error('--shards must be at least 1')
    if args.fail_shard is not None and not 0 <= args.fail_shard < args.shards:
        ap.error('--fail-shard must be 0..%d' % (args.shards - 1))
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.mode == 'check':
        return check_files(args)
    if args.nodes:
        return run_nodes(args)
    from gloaddriver.backends.tarantool.server import TarantoolServer
    with TarantoolServer() as server:
        fail_some(args, server, server.uri)
        rc = run_job(args, server, server.uri, args.results, {})
        if rc:
            return rc
    return merge_and_check(args, args.results)


def image():
    return os.environ.get('IMAGE', 'gloaddriver:local')


def run_job(args, server, uri, results, env_extra):
    """deploy/swarm/shards.sh against the server; 0 when every shard ran once."""
    n = args.shards
    env = dict(os.environ, GLOADDRIVER_PASSWORD=server.password, **env_extra)
    t0 = time.time()
    rc = subprocess.call([os.path.join(ROOT, 'deploy', 'swarm', 'shards.sh'), args.job,
                          str(n), results, '--', '--uri', uri, '--user',
                          server.user, '--ops', str(args.ops), '--keys', str(n * args.keys),
                          '--greenlets', '10'] +
                         (['--rate', str(args.rate)] if args.rate else []), env=env)
    if rc:
        print('many-hosts: the swarm job failed (exit %d)' % rc, file=sys.stderr)
        return 1
    print('many-hosts: %d shards ran as a swarm job in %.0f s (start lead included)'
          % (n, time.time() - t0), file=sys.stderr)
    return 0


def fail_some(args, server, uri):
    """Inserts the first --fail-ops keys of shard --fail-shard before the job (the same
    load, one phase, from this host): that shard's own inserts of them then fail with a
    duplicate key, a real failure of some of its ops and of no other shard's."""
    if args.fail_shard is None:
        return
    n = args.shards
    rc = subprocess.call(['docker', 'run', '--rm', '--network', 'host', '-e',
                          'GLOADDRIVER_PASSWORD', image(), '--uri', uri, '--user', server.user,
                          '--shard', '%d/%d' % (args.fail_shard, n), '--keys', str(n * args.keys),
                          '--ops', str(args.fail_ops), '--phases', 'insert', '--progress', '0'],
                         env=dict(os.environ, GLOADDRIVER_PASSWORD=server.password),
                         stdout=open(os.devnull, 'w'))
    if rc:
        raise SystemExit('many-hosts: inserting the keys for --fail-shard failed (exit %d)' % rc)
    print('many-hosts: %d keys of shard %d/%d inserted first: its first inserts will fail'
          % (args.fail_ops, args.fail_shard, n), file=sys.stderr)


# Lua run by the private Tarantool after its own setup: it listens on every address of
# this host, so the shards in the namespaces reach it on 10.213.1.1 (the host end of
# node 1's veth) while the readiness check still finds it on 127.0.0.1.
LISTEN_ALL = """
local port = string.match(box.cfg.listen, ':(%d+)$')
box.cfg{listen = '0.0.0.0:' .. port}
"""


def run_nodes(args):
    """--nodes N: the namespaced engines, the job, its results from the logs, the merge;
    everything made removed in the end."""
    sys.path.insert(0, os.path.join(ROOT, 'scripts'))
    import swarm_nodes
    from gloaddriver.backends.tarantool.server import TarantoolServer
    n = args.nodes
    state = subprocess.check_output(['docker', 'info', '--format',
                                     '{{.Swarm.LocalNodeState}} {{.Swarm.NodeAddr}}'])
    state = state.decode('utf-8').split()
    if state and state[0] != 'inactive' and not (
            len(state) == 2 and state[1].startswith(swarm_nodes.NET + '.')):
        print('many-hosts: this engine is already in a swarm (%s); --nodes makes its own: '
              'leave that one first' % ' '.join(state), file=sys.stderr)
        return 2
    swarm_nodes.cleanup()          # whatever a crashed earlier run left
    lua = os.path.join(args.results, 'listen-all.lua')
    with open(lua, 'w') as f:
        f.write(LISTEN_ALL)
    try:
        t0 = time.time()
        times = swarm_nodes.up(n, image())
        print('many-hosts: %d nodes up in %.1f s (engines %.1f s, swarm %.1f s, image on '
              'every node %.1f s)' % (n, time.time() - t0, times['engines'], times['swarm'],
                                      times['image']), file=sys.stderr)
        with TarantoolServer(init_file=lua) as server:
            uri = '%s:%d' % (swarm_nodes.host_addr(1), server.port)
            fail_some(args, server, uri)
            rc = run_job(args, server, uri, 'logs',
                         {'PER_NODE': '1', 'CONSTRAINT': 'node.labels.gloaddriver==load'})
            rc = collect(args) or rc
        if rc:
            return rc
    finally:
        t0 = time.time()
        swarm_nodes.cleanup(service=args.job)
        print('many-hosts: nodes removed in %.1f s' % (time.time() - t0), file=sys.stderr)
        os.unlink(lua)
    return merge_and_check(args, args.results)


def collect(args):
    """deploy/swarm/collect.py: the shards' JSON from the service's logs."""
    rc = subprocess.call([sys.executable, os.path.join(ROOT, 'deploy', 'swarm', 'collect.py'),
                          args.job, str(args.shards), args.results])
    if rc:
        print('many-hosts: not every shard left a result (see above)', file=sys.stderr)
        return 1
    return 0


def merge_and_check(args, results):
    n = args.shards
    rc = subprocess.call([os.path.join(ROOT, 'deploy', 'swarm', 'merge.sh'), results,
                          args.job])
    if rc:
        print('many-hosts: the merge step failed (exit %d)' % rc, file=sys.stderr)
        return 1
    # The checks decode histograms: in the image, which has gloaddriver and its
    # dependencies, reading this file and the results from read-only mounts.
    return subprocess.call(['docker', 'run', '--rm', '--network', 'none', '-v',
                            '%s:/results:ro' % os.path.abspath(results), '-v',
                            '%s:/check.py:ro' % os.path.abspath(__file__), '--entrypoint',
                            'python', image(), '/check.py',
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
