"""Shards, merge and compare on real runs."""
from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys
import tempfile
import time


from gloaddriver.measure import stats
from gloaddriver.report import results
from tests import result_schema
from tests.integration.conftest import ROOT, assert_accounted, connect, page_view, run_cli


def run_together(argvs, server):
    """run_cli of each argv at the same time (shards of one run); their results."""
    import threading
    out = [None] * len(argvs)

    def one(i):
        out[i] = run_cli(argvs[i], server)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(argvs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_two_shards_share_a_key_space_and_merge_exactly(tarantool, space):
    parts = []
    runs = run_together([['--space', space, '--shard', '%d/2' % i, '--keys', '2000',
                          '--ops', '1000', '--phases', 'insert,select', '--greenlets', '10',
                          '--start-at', '%.3f' % (time.time() + 2)] for i in range(2)],
                        tarantool)
    for i, (rc, out, err, res) in enumerate(runs):
        assert rc == 0, err      # disjoint keys: no duplicate inserts
        assert res['manifest']['shard'] == '%d/2' % i
        parts.append(res)
    conn = connect(tarantool)
    try:
        assert conn.eval(u'return box.space[...]:len()', space) == [2000]
    finally:
        conn.close()
    merged = results.merge(parts)
    assert_accounted(merged)
    for name in ('insert', 'select'):
        m = [p for p in merged['phases'] if p['name'] == name][0]
        ps = [[p for p in r['phases'] if p['name'] == name][0] for r in parts]
        assert m['attempted'] == m['ok'] == 2000 and m['misses'] == 0
        h = stats.decode_histogram(m['histogram'])
        assert h.get_total_count() == 2000
        # exact: the merged histogram is the sum of the parts, bucket for bucket
        expect = stats.new_histogram()
        for p in ps:
            expect.add(stats.decode_histogram(p['histogram']))
        for pct in (50, 90, 99, 99.9, 100):
            assert h.get_value_at_percentile(pct) == expect.get_value_at_percentile(pct)
        assert m['latency_us']['max'] == max(p['latency_us']['max'] for p in ps)
        # the rate over the span the shards ran, first start to last end
        starts = [p['started_unix'] for p in ps]
        span = max(a + p['seconds'] for a, p in zip(starts, ps)) - min(starts)
        assert m['seconds'] == round(span, 4) and m['started_unix'] == min(starts)
        assert m['ops_per_sec'] == round(2000 / m['seconds'], 1)


def test_merge_and_compare_commands(tarantool, space):
    tmp = tempfile.mkdtemp(prefix='gloaddriver-results-')
    files = []
    # A second each, from one start: windows that overlap however busy the machine is.
    runs = run_together([['--space', space, '--shard', '%d/2' % i, '--keys', '600',
                          '--ops', '0', '--duration', '1', '--phases', 'insert', '--start-at',
                          '%.3f' % (time.time() + 2)] for i in range(2)], tarantool)
    for i, (rc, out, err, res) in enumerate(runs):
        path = os.path.join(tmp, '%d.json' % i)
        assert rc == 0, err
        with open(path, 'w') as f:
            json.dump(res, f)
        files.append(path)
    env = dict(os.environ, PYTHONPATH=ROOT)
    merged_path = os.path.join(tmp, 'merged.json')
    out = subprocess.check_output([sys.executable, '-m', 'gloaddriver', 'merge'] + files +
                                  ['--json', merged_path], env=env, cwd=ROOT).decode()
    merged = result_schema.load(merged_path)['phases'][0]
    assert 'insert' in out and merged['ok'] == sum(r[3]['phases'][0]['ok'] for r in runs)
    out = subprocess.check_output([sys.executable, '-m', 'gloaddriver', 'compare'] + files,
                                  env=env, cwd=ROOT).decode()
    assert 'vs first' in out and 'shard' in out   # manifests differ in shard
    # compare writes ops/s as the run's table does (rounded, not cut)
    rate = runs[0][3]['phases'][0]['ops_per_sec']
    assert '{:,}'.format(int(round(rate))) in out
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', 'compare', '/nonexistent.json'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    _out, err = p.communicate()
    assert p.returncode != 0 and b'cannot read' in err and b'Traceback' not in err


def test_merge_refuses_runs_that_are_not_shards_of_one_run(tarantool, space):
    # One after the other, and with other greenlets: the sum of their rates would be a
    # rate nobody measured.
    tmp = tempfile.mkdtemp(prefix='gloaddriver-results-')
    files = []
    for i, greenlets in ((0, '10'), (1, '4')):
        rc, out, err, res = run_cli(['--space', space, '--shard', '%d/2' % i, '--keys', '600',
                                     '--ops', '300', '--phases', 'insert', '--greenlets',
                                     greenlets], tarantool)
        assert rc == 0, err
        files.append(os.path.join(tmp, '%d.json' % i))
        with open(files[-1], 'w') as f:
            json.dump(res, f)
    merged_path = os.path.join(tmp, 'merged.json')
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', 'merge'] + files +
                         ['--json', merged_path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    _out, err = p.communicate()
    err = err.decode()
    assert p.returncode == 2 and len(err.strip().splitlines()) == 1, err
    assert 'not shards of one run' in err and 'greenlets differs (A: 10, B: 4)' in err
    assert 'phase insert did not run at the same time' in err, err
    assert not os.path.exists(merged_path)


def test_bad_shard_flag():
    rc, out, err, res = run_cli(['--shard', '2/2', '--ops', '10'])
    assert rc == 2 and 'I/N' in err


def test_processes_run_together_and_merge_exactly(tmpdir):
    html = str(tmpdir.join('merged.html'))
    rc, out, err, res = run_cli(['--spawn', '--processes', '2', '--greenlets', '20',
                                 '--ops', '3000', '--phases', 'insert,select',
                                 '--html', html])
    assert rc == 0, err
    assert_accounted(res)   # the merged timeline adds up too
    view = page_view(html)
    assert [p['name'] for p in view['phases']] == ['insert', 'select'] and \
        view['merged_from'] == 2
    assert [len(p['rows']) for p in view['phases']] == [len(p['timeline']) for p in res['phases']]
    assert res['manifest']['processes'] == 2 and len(res['processes']) == 2
    assert sorted(p['manifest']['shard'] for p in res['processes']) == ['0/2', '1/2']
    for name in ('insert', 'select'):
        merged = [p for p in res['phases'] if p['name'] == name][0]
        parts = [[p for p in r['phases'] if p['name'] == name][0] for r in res['processes']]
        assert merged['attempted'] == merged['ok'] == 3000 and merged['misses'] == 0
        assert [p['attempted'] for p in parts] == [1500, 1500]
        h = stats.decode_histogram(merged['histogram'])
        expect = stats.new_histogram()
        for p in parts:
            expect.add(stats.decode_histogram(p['histogram']))
        assert h.get_total_count() == expect.get_total_count() == 3000
        for pct in (50, 90, 99, 99.9, 100):
            assert h.get_value_at_percentile(pct) == expect.get_value_at_percentile(pct)
        if merged['syscalls'].get('counts'):
            total = sum(p['syscalls']['counts']['total'] for p in parts)
            assert merged['syscalls']['counts']['total'] == total
    assert '2 processes, merged' in out


def test_processes_share_the_rate_and_merge_the_schedule():
    rc, out, err, res = run_cli(['--spawn', '--processes', '2', '--greenlets', '10',
                                 '--ops', '4000', '--phases', 'insert', '--rate', '4000'])
    assert rc == 0, err
    assert_accounted(res)
    (phase,) = res['phases']
    parts = [r['phases'][0] for r in res['processes']]
    assert [p['rate']['target'] for p in parts] == [2000.0, 2000.0]
    assert phase['rate']['target'] == 4000.0
    assert 3600 < phase['rate']['achieved'] < 4400, phase['rate']
    assert phase['rate']['scheduled'] == sum(p['rate']['scheduled'] for p in parts)
    assert phase['rate']['late'] == sum(p['rate']['late'] for p in parts)
    service = stats.decode_histogram(phase['service_histogram'])
    assert service.get_total_count() == phase['ok'] == 4000


def test_processes_refuse_what_they_cannot_do():
    rc, out, err, res = run_cli(['--processes', '2', '--shard', '0/2', '--ops', '10'])
    assert rc == 2 and 'not supported' in err and 'Traceback' not in err


def test_server_metrics_count_what_the_client_sent(tarantool, space):
    rc, out, err, res = run_cli(['--space', space, '--ops', '0', '--duration', '0.5',
                                 '--keys', '100000000', '--phases', 'insert,select',
                                 '--greenlets', '20', '--progress', '0.1'], tarantool)
    assert rc == 0, err
    for p in res['phases']:
        sm = p['server_metrics']
        assert sm['error'] is None
        # box.stat on the server counted exactly the requests of this phase
        assert sm['phase']['counts'][p['name']] == p['attempted'], sm['phase']['counts']
        assert sm['phase']['lsn'] >= res['phases'][0]['attempted']
        assert len(sm['intervals']) >= 3
    assert 'server' in err   # joined into the progress lines
