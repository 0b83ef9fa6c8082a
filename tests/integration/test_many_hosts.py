"""The many-host path for real: the image built from the repository's Dockerfile (on a
local Debian base when no registry is reachable) runs --help and a load against a
Tarantool on the host; scripts/many-hosts runs 3 shards as a Docker Swarm replicated
job on one node, merges them, and the merge adds up (counts, histogram totals) and
matches the shape of one --processes 3 run of the same load; and
``scripts/many-hosts --nodes 3`` runs them on three real Swarm nodes (the host's engine
and two dockerd in network namespaces), with one shard made to fail some ops: each
shard ran once on a node of its own, the results came back through the service's logs,
the failures are in the merged result, and nothing the script made is left behind.

They need root and Docker's engine (Debian's docker.io; scripts/test installs it) and
are skipped, by name, where either is missing. They run on Python 3 only: the
containers do not depend on the interpreter of the test, and scripts/test runs 2.7 and
3.11 side by side."""
from __future__ import absolute_import, division, print_function

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from gloaddriver.backends.spawn import which
from gloaddriver.backends.tarantool.server import TarantoolServer
from gloaddriver.measure import stats
from tests import result_schema
from tests.integration.conftest import ROOT, assert_accounted, run_cli

COUNTS = ('attempted', 'ok', 'failed', 'timed_out', 'misses')


def _why_not():
    if sys.version_info[0] < 3:
        return 'runs once per suite, on Python 3 (the containers do not depend on it)'
    if os.geteuid() != 0:
        return 'needs root to start dockerd and to debootstrap the base image'
    for tool in ('docker', 'dockerd', 'debootstrap'):
        try:
            which(tool)
        except Exception:
            return 'needs %s (apt-get install docker.io debootstrap)' % tool
    return None


# The first run on a clean machine debootstraps the base image and builds on it:
# minutes before any load, so more than the watchdog's default deadline.
pytestmark = [pytest.mark.skipif(_why_not() is not None, reason=str(_why_not())),
              pytest.mark.deadline(1800)]


def _script(name, env=None, args=()):
    p = subprocess.Popen([os.path.join(ROOT, 'scripts', name)] + list(args), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ, **(env or {})))
    out, err = p.communicate()
    return p.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


def _stop_started(path):
    """Stop the dockerd that build-image started for this test (none when one ran)."""
    with open(path) as f:
        pids = [int(l.split()[1]) for l in f if l.startswith('dockerd ')]
    os.unlink(path)
    for pid in pids:
        os.kill(pid, 15)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.2)


def _shards_and_merge(paths):
    """(the shards' results, the merged one) of a job's JSON files, read through the
    strict schema: the merge is the one named ...-merged.json."""
    (merged_path,) = [p for p in paths if p.endswith('-merged.json')]
    shards = []
    for p in sorted(set(paths) - {merged_path}):
        with open(p) as f:
            shards.append(result_schema.read(f))
    with open(merged_path) as f:
        return shards, result_schema.read(f)


def assert_the_sum_of(shards, merged):
    """Shards 0/3, 1/3 and 2/3 once each, and the merge's counts and histogram totals,
    phase by phase, the sums of theirs."""
    assert sorted(s['manifest']['shard'] for s in shards) == ['0/3', '1/3', '2/3']
    assert_accounted(merged)
    for phase in merged['phases']:
        parts = [p for s in shards for p in s['phases'] if p['name'] == phase['name']]
        assert len(parts) == 3
        for k in COUNTS:
            assert phase[k] == sum(p[k] for p in parts), (phase['name'], k)
        totals = [stats.decode_histogram(p['histogram']).get_total_count() for p in parts]
        assert totals == [p['ok'] for p in parts]
        assert stats.decode_histogram(phase['histogram']).get_total_count() == sum(totals)


def test_the_image_runs_help_and_a_load_against_a_tarantool_on_the_host(tmpdir):
    # The build itself (and dockerd, when it is not running) goes through the same
    # lock as scripts/many-hosts, which may stop a dockerd it started.
    import fcntl
    lock = open('/tmp/gloaddriver-many-hosts.lock', 'w')
    fcntl.flock(lock, fcntl.LOCK_EX)
    started = tempfile.NamedTemporaryFile(suffix='.started', delete=False)
    started.close()
    try:
        rc, image, err = _script('build-image', env={'STARTED_FILE': started.name})
        assert rc == 0, err
        image = image.strip().splitlines()[-1]
        out = subprocess.check_output(['docker', 'run', '--rm', '--network', 'none', image,
                                       '--help']).decode('utf-8')
        assert out.startswith('usage: gloaddriver') and '--shard I/N|auto' in out
        results = str(tmpdir)
        with TarantoolServer() as server:
            env = dict(os.environ, GLOADDRIVER_PASSWORD=server.password)
            p = subprocess.Popen(
                ['docker', 'run', '--rm', '--network', 'host', '-e', 'GLOADDRIVER_PASSWORD',
                 '-v', '%s:/results' % results, image, '--uri', server.uri, '--user',
                 server.user, '--ops', '2000', '--progress', '0', '--json', '/results/r.json'],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            out, err = p.communicate()
        assert p.returncode == 0, err
    finally:
        _stop_started(started.name)
        lock.close()
    with open(os.path.join(results, 'r.json')) as f:
        res = result_schema.read(f)
    assert_accounted(res)
    assert [p['name'] for p in res['phases']] == ['insert', 'select', 'update', 'delete']
    assert all(p['ok'] == 2000 for p in res['phases'])
    assert res['manifest']['interpreter'].startswith('CPython 3.')   # the image's, not ours
    # The Dockerfile's build stage has a compiler: the replies are cut in C in there too.
    assert res['manifest']['reply_reader'] == 'compiled'


def test_many_hosts_merges_a_swarm_job_of_3_shards_like_3_processes():
    keep = tempfile.mkdtemp(prefix='gloaddriver-many-hosts-')
    ops, keys = 3000, 3000
    try:
        rc, out, err = _script('many-hosts', env={'KEEP': keep, 'SHARDS': '3',
                                                  'OPS': str(ops), 'KEYS': str(keys)})
        assert rc == 0, out + err
        assert 'merged counts and histogram totals are the sums of the 3 shards' in out
        assert 'insert' in out and 'delete' in out   # the merged table
        paths = glob.glob(os.path.join(keep, '*.json'))
        shards, merged = _shards_and_merge(paths)
    finally:
        shutil.rmtree(keep, ignore_errors=True)
    # Each slot of the job became one shard index, once.
    assert_the_sum_of(shards, merged)
    # The same load as one --processes 3 run: the same counts, phase by phase.
    with TarantoolServer() as server:
        rc, _out, err, together = run_cli(['--processes', '3', '--ops', str(3 * ops),
                                           '--keys', str(3 * keys)], server=server)
    assert rc == 0, err
    assert [p['name'] for p in merged['phases']] == [p['name'] for p in together['phases']]
    for a, b in zip(merged['phases'], together['phases']):
        for k in COUNTS:
            assert a[k] == b[k], (a['name'], k, a[k], b[k])


def _leftovers():
    """What of scripts/swarm_nodes.py's marks is on the machine (namespaces, links,
    engines, data and exec roots, a swarm on 10.213.*), as it lists it."""
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, 'scripts', 'swarm_nodes.py'),
                          'leftovers'], stdout=subprocess.PIPE)
    out, _ = p.communicate()
    return json.loads(out.decode('utf-8'))


def test_many_hosts_nodes_rejects_a_bad_count_in_one_line():
    rc, out, err = _script('many-hosts', args=['--nodes', '1'])
    assert rc == 2 and out == ''
    assert err.strip().splitlines() == [
        "many-hosts: --nodes must be a number from 2 to 50, got '1'"]


def test_many_hosts_on_3_nodes_runs_each_shard_once_and_merges_the_failures():
    keep = tempfile.mkdtemp(prefix='gloaddriver-many-hosts-')
    ops, keys, fail_ops = 2000, 2000, 100
    t0 = time.time()
    try:
        rc, out, err = _script('many-hosts', args=['--nodes', '3'],
                               env={'KEEP': keep, 'OPS': str(ops), 'KEYS': str(keys),
                                    'FAIL_SHARD': '1', 'FAIL_OPS': str(fail_ops)})
        took = time.time() - t0
        left = _leftovers()
        assert rc == 0, out + err
        (tasks_path,) = glob.glob(os.path.join(keep, '*.tasks.json'))
        with open(tasks_path) as f:
            tasks = json.load(f)
        paths = glob.glob(os.path.join(keep, '*.json'))
        shards, merged = _shards_and_merge(set(paths) - {tasks_path})
    finally:
        shutil.rmtree(keep, ignore_errors=True)
    print('many-hosts --nodes 3: %.0f s; %s' % (took, [l for l in err.splitlines()
                                                       if 'nodes' in l or 'job in' in l]))
    assert left == [], left                       # nothing of the run is left behind
    assert 'merged counts and histogram totals are the sums of the 3 shards' in out
    # Three tasks in all (no shard ran twice), each complete, each on a node of its own.
    assert tasks['problems'] == []
    rows = tasks['tasks']
    assert len(rows) == 3 and all(r['state'] == 'complete' for r in rows), rows
    by_shard = dict((r['shard'], r) for r in rows)
    assert sorted(by_shard) == ['0/3', '1/3', '2/3']
    nodes = [by_shard['%d/3' % i]['node'].split()[0] for i in range(3)]
    assert sorted(nodes) == ['gldmh1', 'gldmh2', 'host'], nodes
    assert len(set(r['node_id'] for r in rows)) == 3
    # The failing shard's real exit code (1: some ops failed), kept though it ran once.
    assert [by_shard['%d/3' % i]['exit'] for i in range(3)] == [0, 1, 0]
    for i in range(3):   # the report names each shard's node
        assert 'shard %d/3: node %s (' % (i, nodes[i]) in out, out
    assert_the_sum_of(shards, merged)
    assert all(phase['attempted'] == 3 * ops for phase in merged['phases'])
    insert = [p for p in merged['phases'] if p['name'] == 'insert'][0]
    # Exactly the failing shard's pre-inserted keys failed, and they are in the merge.
    failing = [s for s in shards if s['manifest']['shard'] == '1/3'][0]
    assert [p['failed'] for p in failing['phases'] if p['name'] == 'insert'] == [fail_ops]
    assert insert['failed'] == fail_ops and insert['ok'] == 3 * ops - fail_ops
    assert sum(p['failed'] for p in merged['phases']) == fail_ops
