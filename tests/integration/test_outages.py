"""What the report says while the server is killed, paused or restarted mid-run: the
ticker never waits on the server, and a restart is a reset, never a negative rate.

The fault comes from the test's own thread: a private server is started with
PR_SET_PDEATHSIG, so one restarted from a short-lived thread would die with it."""
from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys
import time

import pytest

from gloaddriver.backends.tarantool.server import TarantoolServer
from tests.integration.conftest import ROOT, assert_accounted


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
        time.sleep(1.7)
        if fault == 'restart':
            server.restart()
        elif fault == 'pause':
            server.pause()
            time.sleep(3)
            server.resume()
        else:
            server.kill()
        _out, err = p.communicate()
        with open(out) as f:
            return json.load(f), err.decode('utf-8', 'replace')
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
