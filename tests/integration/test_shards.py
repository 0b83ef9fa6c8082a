"""Many hosts on one machine: a Kubernetes Indexed Job simulated by N shard processes
(--shard auto from JOB_COMPLETION_INDEX and GLOADDRIVER_SHARDS, --start-at), merged,
against one --processes N run of the same load."""
from __future__ import absolute_import, division, print_function

import os
import subprocess
import sys
import time

from gloaddriver.backends.tarantool.server import TarantoolServer
from gloaddriver.measure import stats
from gloaddriver.report import results
from tests.integration.conftest import ROOT, assert_accounted, connect, run_cli
from tests import result_schema

N, OPS, KEYS = 2, 1000, 2000


def test_an_indexed_job_merges_like_processes(tmpdir):
    with TarantoolServer() as server:
        start_at = time.time() + 3
        shards = []
        for i in range(N):
            path = str(tmpdir.join('shard-%d.json' % i))
            env = dict(os.environ, PYTHONPATH=ROOT, GLOADDRIVER_PASSWORD=server.password,
                       JOB_COMPLETION_INDEX=str(i), GLOADDRIVER_SHARDS=str(N))
            p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', '--uri', server.uri,
                                  '--user', server.user, '--shard', 'auto', '--ops', str(OPS),
                                  '--keys', str(KEYS), '--start-at', repr(start_at),
                                  '--progress', '0', '--json', path],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                 cwd=ROOT)
            shards.append((p, path))
        parts = []
        for p, path in shards:
            _out, err = p.communicate()
            assert p.returncode == 0, err
            with open(path) as f:
                parts.append(result_schema.read(f))
    assert [x['manifest']['shard'] for x in parts] == ['0/2', '1/2']
    merged = results.merge(parts)
    assert_accounted(merged)
    with TarantoolServer() as server:
        rc, out, err, together = run_cli(['--processes', str(N), '--ops', str(N * OPS)],
                                         server=server)
        assert rc == 0, err
    assert [p['name'] for p in merged['phases']] == [p['name'] for p in together['phases']]
    for a, b in zip(merged['phases'], together['phases']):
        for k in ('attempted', 'ok', 'failed', 'timed_out', 'misses'):
            assert a[k] == b[k], (a['name'], k)
        for phase in (a, b):
            assert stats.decode_histogram(phase['histogram']).get_total_count() == phase['ok']


def test_shard_auto_without_its_environment_is_one_line():
    rc, out, err, res = run_cli(['--shard', 'auto', '--ops', '10'],
                                env={'JOB_COMPLETION_INDEX': '', 'GLOADDRIVER_SHARDS': ''})
    assert rc == 2 and err.count('\n') == 1 and 'JOB_COMPLETION_INDEX' in err


def test_a_shard_alone_owns_as_many_keys_as_it_runs_ops():
    # --shard I/N with --ops and no --keys: --keys was --ops, so a shard owned --ops/N
    # keys and ran --ops inserts into them, half failing as duplicates (exit 1). Now the
    # key space defaults to N x --ops: each shard's part holds its --ops, as under
    # --processes, and N shards on one server fill N x --ops keys with no collision.
    with TarantoolServer() as server:
        got = []
        for i in range(N):
            rc, out, err, res = run_cli(['--shard', '%d/%d' % (i, N), '--ops', str(OPS),
                                         '--phases', 'insert,select'], server=server)
            assert rc == 0, err
            got.append(res)
        conn = connect(server)
        try:
            count = conn.eval(u'return box.space[...]:count()', server.space)[0]
        finally:
            conn.close()
    assert count == N * OPS
    for i, res in enumerate(got):
        assert res['manifest']['keys'] == N * OPS
        insert, select = res['phases']
        assert (insert['attempted'], insert['ok'], insert['failed']) == (OPS, OPS, 0)
        assert (select['ok'], select['misses']) == (OPS, 0)
        assert insert['keys'] == {'first': i * OPS, 'count': OPS}
