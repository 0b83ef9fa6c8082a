"""What the report says while the server is killed, paused or restarted mid-run: the
ticker never waits on the server, and a restart is a reset, never a negative rate.

The fault comes from the test's own thread: a private server is started with
PR_SET_PDEATHSIG, so one restarted from a short-lived thread would die with it."""
from __future__ import absolute_import, division, print_function

import signal
import os
import subprocess
import sys
import threading
import time

import pytest

from gloaddriver.backends.tarantool.server import TarantoolServer
from tests.integration.conftest import ROOT, assert_accounted
from tests import result_schema


def run_with_fault(fault, tmpdir, seconds=6):
    server = TarantoolServer().start()
    out = str(tmpdir.join('r.json'))
    try:
        env = dict(os.environ, GLOADDRIVER_PASSWORD=server.password, PYTHONPATH=ROOT)
        p = subprocess.Popen(
            [sys.executable, '-m', 'gloaddriver', '--uri', server.uri, '--user', server.user,
             '--ops', '0', '--duration', str(seconds), '--greenlets', '10', '--phases',
             'select', '--progress', '1', '--json', out, '--outage-limit', '30'],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
        # The fault comes 1.7 s into the run, counted from its first progress line (1 s
        # in): on a loaded machine the start alone can take longer than that.
        first = []
        while not first or (first[-1] and b' ops/s' not in first[-1]):
            first.append(p.stderr.readline())
        time.sleep(0.7)
        if fault == 'restart':
            server.restart()
        elif fault == 'pause':
            server.pause()
            time.sleep(3)
            server.resume()
        else:
            server.kill()
        _out, err = p.communicate()
        err = b''.join(first) + err
        with open(out) as f:
            return result_schema.read(f), err.decode('utf-8', 'replace')
    finally:
        server.stop()


@pytest.mark.parametrize('fault', ['kill', 'pause', 'restart'])
def test_rows_come_on_time_whatever_the_server_does(fault, tmpdir):
    res, err = run_with_fault(fault, tmpdir)
    (phase,) = res['phases']
    assert_accounted(res)
    times = [0.0] + [r['t'] for r in phase['timeline']]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) <= 1.1, times
    lines = [l for l in err.splitlines() if ' select ' in l]
    assert len(lines) >= 5, err          # a progress line every second, outage or not
    intervals = phase['server_metrics']['intervals']
    for i in intervals:
        assert all(v >= 0 for v in i['rps'].values()), i   # never a negative rate
    if fault == 'restart':
        assert any(i.get('server_restarted') for i in intervals), intervals
        assert 'server restarted' in err
    else:
        assert any(i.get('late') for i in intervals), intervals
        assert 'no sample (late)' in err


def _interrupted(args, sig, after, tmpdir):
    out, html = str(tmpdir.join('r.json')), str(tmpdir.join('r.html'))
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', '--json', out, '--html', html,
                          '--progress', '1'] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    # The signal comes ``after`` seconds into the run, counted from its first progress
    # line: on a loaded machine the spawn and imports alone can take seconds.
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(iter(p.stderr.readline, b'')))
    reader.daemon = True
    reader.start()
    deadline = time.time() + 60
    while not any(b' ops/s' in l for l in lines) and p.poll() is None and \
            time.time() < deadline:
        time.sleep(0.05)
    time.sleep(after)
    p.send_signal(sig)
    t = time.time()
    stdout = p.stdout.read()
    p.wait()
    reader.join(10)
    err = b''.join(lines)
    with open(out) as f:
        res = result_schema.read(f)
    return p.returncode, time.time() - t, stdout.decode('utf-8', 'replace'), \
        err.decode('utf-8', 'replace'), res, os.path.getsize(html)


@pytest.mark.parametrize('sig, greenlets', [(signal.SIGINT, '10'), (signal.SIGTERM, '10'),
                                            (signal.SIGINT, '1')])
def test_an_interrupt_reports_what_ran_and_exits_130(sig, greenlets, tmpdir):
    # At 1 greenlet the signal comes while the worker waits on its socket itself (the
    # single-waiter path): the hub's turn each millisecond still sees to it.
    rc, took, out, err, res, html = _interrupted(
        ['--spawn', '--ops', '0', '--duration', '20', '--greenlets', greenlets], sig, 1.5,
        tmpdir)
    assert rc == 130 and took < 5, (rc, took, err)
    assert 'Traceback' not in err and 'interrupted' in err
    assert res['aborted'] == 'interrupted'
    (phase,) = res['phases']          # the insert phase in progress, ended early
    assert phase['name'] == 'insert' and phase['attempted'] > 0
    assert_accounted(res)
    # Ended at the signal (about 2.5 s in), not at its 20 s.
    assert 1 < phase['seconds'] < 10 and html > 1000 and 'insert' in out


def test_an_interrupt_with_processes_merges_what_ran(tmpdir):
    rc, took, out, err, res, html = _interrupted(
        ['--spawn', '--ops', '0', '--duration', '20', '--processes', '2'],
        signal.SIGINT, 2, tmpdir)
    assert rc == 130 and took < 8, (rc, took, err)
    assert 'Traceback' not in err
    assert res['aborted'] == 'interrupted' and len(res['processes']) == 2
    assert_accounted(res)
    assert res['phases'][0]['attempted'] == sum(p['phases'][0]['attempted']
                                                for p in res['processes'])


def test_a_time_bounded_run_grows_its_keys_and_later_phases_use_them(tmpdir):
    out = str(tmpdir.join('r.json'))
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', '--spawn', '--ops', '0',
                          '--duration', '1.5', '--keys', '1000', '--progress', '0',
                          '--json', out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    _o, err = p.communicate()
    assert p.returncode == 0, err
    with open(out) as f:
        res = result_schema.read(f)
    assert_accounted(res)
    by = dict((ph['name'], ph) for ph in res['phases'])
    made = by['insert']['keys']['count']
    # far more inserts than --keys 1000, none a duplicate key
    assert made == by['insert']['attempted'] > 1000 and by['insert']['failed'] == 0
    for name in ('select', 'update'):
        assert by[name]['keys'] == {'first': 0, 'count': made}
        assert by[name]['misses'] == 0 and by[name]['failed'] == 0
    # delete ends when every key is gone (or its time is up): never a miss
    assert by['delete']['misses'] == 0 and by['delete']['attempted'] <= made


@pytest.mark.parametrize('processes', ['1', '2'])
def test_fail_if_gates_a_real_run(processes):
    from tests.integration.conftest import run_cli
    rc, out, err, res = run_cli(['--spawn', '--ops', '2000', '--processes', processes,
                                 '--fail-if', 'errors<1%,p99.9<30s'])
    assert rc == 0, err
    assert res['thresholds'] and all(v['held'] for v in res['thresholds'])
    rc, out, err, res = run_cli(['--spawn', '--ops', '2000', '--processes', processes,
                                 '--fail-if', 'select:p50<1us'])
    assert rc == 4, err
    (v,) = res['thresholds']
    assert v['phase'] == 'select' and not v['held'] and v['value'] >= 1
    assert 'FAILED' in out and 'thresholds failed' in err
