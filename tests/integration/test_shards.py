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
from tests.integration.conftest import ROOT, assert_accounted, run_cli
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
