"""The benchmark scripts still run end to end (tiny sizes: a smoke test, no speed asserted)."""
from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys


from gloaddriver.backends.spawn import which
from tests.integration.conftest import ROOT


def run(script, args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, 'scripts', script)] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    out, err = p.communicate()
    return p.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


def test_bench_tarantool_table_and_json(tmpdir):
    outdir = str(tmpdir)
    path = os.path.join(outdir, 't.json')
    rc, out, err = run('bench_tarantool.py', ['--ops', '300', '--greenlets', '1,10',
                                              '--out', path])
    assert rc == 0, err
    data = json.load(open(path))
    assert len(data['runs']) == 4 and len(data['table']) == 16
    ratios = [t['buffered_over_sync'] for t in data['table'] if t['connector'] == 'buffered']
    assert all(r is not None and r > 0 for r in ratios)
    assert 'buffered/sync' in out


def test_bench_postgres_table_and_json(tmpdir):
    outdir = str(tmpdir)
    path = os.path.join(outdir, 'p.json')
    rc, out, err = run('bench_postgres.py', ['--rounds', '1', '--kv-ops', '300',
                                             '--relational-ops', '200', '--bulk-rows', '200',
                                             '--pgbench-seconds', '1', '--out', path])
    assert rc == 0, err
    data = json.load(open(path))
    whats = set(t['what'] for t in data['table'])
    assert {'kv select', 'relational mix', 'bulk:copy'} <= whats
    if which('pgbench'):
        assert any(t.get('vs_pgbench') for t in data['table'])


def test_bench_codec_prints_every_measure():
    rc, out, err = run('bench_codec.py', ['64'])
    assert rc == 0, err
    row = json.loads(out.strip().splitlines()[-1])
    for k in ('encode_insert_us', 'encode_select_us', 'decode_reply_us', 'park_wake_us'):
        assert row[k] > 0


def test_bench_open_loop_table_and_json(tmpdir):
    path = str(tmpdir.join('o.json'))
    rc, out, err = run('bench_open_loop.py', ['--rate', '2000', '--seconds', '3',
                                              '--pause', '0.4', '--greenlets', '10',
                                              '--out', path])
    assert rc == 0, err
    steady, paused = json.load(open(path))['table']
    assert steady['achieved'] > 0 and steady['dropped'] == 0
    # the stall is in the corrected tail, not in the service time (where it
    # delays only the few ops in flight when it began)
    assert paused['p99_us'] > 200000 > paused['service_p99_us']
    assert 'svc p99.9 us' in out


def test_bench_processes_table_and_json(tmpdir):
    path = str(tmpdir.join('p.json'))
    rc, out, err = run('bench_processes.py', ['--rounds', '1', '--ops', '2000',
                                              '--greenlets', '10', '--out', path])
    assert rc == 0, err
    data = json.load(open(path))
    assert [r['phase'] for r in data['table']] == ['insert', 'select', 'update', 'delete']
    assert all(r['ratio'] > 0 and r['busy_two_pct'] > 0 for r in data['table'])
    assert [r['processes'] for r in data['runs']] == [1, 2]
