"""--web: the live dashboard of a real run against a spawned Tarantool, watched in
headless Chromium while the run goes and after it ends."""
from __future__ import absolute_import, division, print_function

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

try:
    from urllib.request import urlopen
except ImportError:   # Python 2
    from urllib2 import urlopen

from gloaddriver.backends.spawn import free_port
from tests import result_schema
from tests.integration.conftest import ROOT, assert_accounted, ended, run_cli

STATE = """
var v = window.gloaddriverView ? window.gloaddriverView() : null;
var status = document.getElementById('live-status');
var verdict = document.getElementById('verdict');
var charts = window.gloaddriverCharts ? window.gloaddriverCharts() : [];
var tp = charts.filter(function (c) { return c.id === 'throughput'; })[0];
return {
  status: status ? status.textContent : null,
  exit: verdict ? verdict.getAttribute('data-exit') : null,
  rows: v ? v.phases.map(function (p) { return p.rows.map(function (r) { return r.attempted; }); }) : [],
  points: tp ? tp.points : 0,
  cells: [].map.call(document.querySelectorAll('table.summary tr.phase'), function (tr) {
    return [].map.call(tr.children, function (td) { return td.textContent; });
  }),
  urls: [document.URL].concat(performance.getEntriesByType('resource').map(function (e) {
    return e.name; }))
};
"""


def _until(fn, what, limit=30):
    deadline = time.time() + limit
    while time.time() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail('waited %d s for %s' % (limit, what))


def _listening(port):
    try:
        socket.create_connection(('127.0.0.1', port), timeout=1).close()
        return True
    except socket.error:
        return False


def _driver_with_web(tmpdir, args):
    """The driver on a spawned Tarantool with --web on a free port, started: (Popen, the
    port, its --json path, its stderr file)."""
    port = free_port()
    out = str(tmpdir.join('r.json'))
    errf = open(str(tmpdir.join('stderr')), 'w+')
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', '--spawn', '--greenlets', '4',
                          '--progress', '0', '--json', out, '--web', '127.0.0.1:%d' % port] +
                         args, cwd=ROOT, stdout=subprocess.PIPE, stderr=errf,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    return p, port, out, errf


def test_the_live_page_moves_during_the_run_and_ends_as_the_result(chromium, tmpdir):
    p, port, out, errf = _driver_with_web(tmpdir, [
        '--phases', 'insert,select', '--ops', '0', '--duration', '4', '--interval', '0.25'])
    try:
        _until(lambda: _listening(port), 'the dashboard to listen')
        url = 'http://127.0.0.1:%d/' % port
        chromium.open(url)
        first = _until(lambda: (lambda s: s if s['rows'] and s['rows'][0] else None)(
            chromium.run(STATE)), 'the first interval on the page')
        assert first['exit'] is None   # still running: no verdict yet

        def attempted(state):
            m = re.search(r'attempted so far: (\d+)', state['status'] or '')
            return int(m.group(1)) if m else None
        n1, points1 = attempted(first), first['points']
        assert n1 > 0 and n1 == sum(sum(r) for r in first['rows'])
        time.sleep(1.5)
        second = chromium.run(STATE)
        assert second['exit'] is None
        assert attempted(second) > n1 and second['points'] > points1, (first, second)
        stdout, _e = p.communicate()   # the driver ends by itself after its phases
    finally:
        err = ended(p, errf)
    assert p.returncode == 0, err
    assert 'live dashboard: %s' % url in err.splitlines()[0]
    with open(out) as f:
        res = result_schema.read(f)
    assert_accounted(res)
    end = _until(lambda: (lambda s: s if s['exit'] is not None else None)(chromium.run(STATE)),
                 'the final report on the page', limit=10)
    assert end['exit'] == '0'
    # The page's figures at the end are the result's: the table, the rows over time.
    cells = dict((c[0], c) for c in end['cells'])
    for phase in res['phases']:
        row = cells[phase['name']]
        assert row[1] == '{:,}'.format(phase['attempted'])
        assert row[5] == '{:,}'.format(int(round(phase['ops_per_sec'])))
    assert end['rows'] == [[r['attempted'] for r in ph['timeline']] for ph in res['phases']]
    assert end['points'] == sum(len(ph['timeline']) for ph in res['phases'])
    # Nothing left for another host: the page and its event stream, all on the driver.
    assert len(end['urls']) >= 1
    for u in first['urls'] + second['urls'] + end['urls']:
        assert u.startswith(url) or u.startswith('data:'), u


def test_a_bad_web_flag_is_one_line_before_the_run():
    rc, out, err, res = run_cli(['--spawn', '--web', 'localhost:99999'])
    assert rc == 2 and res is None
    assert err.strip().count('\n') == 0 and 'port 99999 is out of range' in err, err
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    s.listen(1)
    try:
        rc, out, err, res = run_cli(['--spawn', '--web', str(s.getsockname()[1])])
    finally:
        s.close()
    assert rc == 3 and res is None
    assert err.strip().count('\n') == 0 and 'cannot listen' in err, err
    rc, out, err, res = run_cli(['--spawn', '--web-keep'])
    assert rc == 2 and '--web-keep goes with --web' in err


def test_web_keep_serves_the_final_report_until_ctrl_c(tmpdir):
    port = free_port()
    errf = open(str(tmpdir.join('stderr')), 'w+')
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', '--spawn', '--greenlets', '4',
                          '--phases', 'insert', '--ops', '2000', '--progress', '0',
                          '--web', str(port), '--web-keep'],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=errf,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        def kept():
            errf.seek(0)
            return 'until Ctrl-C' in errf.read()
        _until(kept, 'the run to end and the page to stay', limit=60)
        assert p.poll() is None
        page = urlopen('http://127.0.0.1:%d/' % port, timeout=10).read().decode('utf-8')
        assert '"final":true' in page and 'connect-src' not in page   # the report, static
        p.send_signal(signal.SIGINT)
        p.communicate()
    finally:
        err = ended(p, errf)
    assert p.returncode == 0, err
    assert 'Traceback' not in err and 'KeyboardInterrupt' not in err, err


CURVE = """
var f = document.querySelector('figure[data-chart=find-max]');
var u = f && f.querySelector('.uplot');
var verdict = document.getElementById('verdict');
return {points: u ? +u.getAttribute('data-points') : 0,
        exit: verdict ? verdict.getAttribute('data-exit') : null,
        knee: f ? f.getAttribute('data-knee') : null};
"""


def test_the_live_page_draws_the_find_max_curve_as_the_search_goes(chromium, tmpdir):
    # Four steps of 2 s at 20, 40, 80 and 160 selects/s: far below any server's knee, so
    # all hold and the search ends at its step limit; the page has a point per step
    # judged, while the search goes on.
    p, port, out, errf = _driver_with_web(tmpdir, [
        '--phases', 'select', '--find-max', 'p99<2s', '--find-max-start', '20',
        '--find-max-step', '2s', '--find-max-warmup', '0', '--find-max-steps', '4'])
    try:
        _until(lambda: _listening(port), 'the dashboard to listen')
        chromium.open('http://127.0.0.1:%d/' % port)
        during = _until(lambda: (lambda s: s if s['points'] and s['exit'] is None else None)(
            chromium.run(CURVE)), 'a first step on the live curve', limit=60)
        p.communicate()
    finally:
        err = ended(p, errf)
    assert p.returncode == 0, err
    with open(out) as f:
        res = result_schema.read(f)
    fm = res['find_max']
    assert fm['outcome'] == 'no_knee' and len(fm['steps']) == 4, fm
    # Seen while the search went on: some steps, not yet all, no knee marked.
    assert 1 <= during['points'] < 4 and during['knee'] is None, during
    end = _until(lambda: (lambda s: s if s['exit'] is not None else None)(chromium.run(CURVE)),
                 'the final report on the page', limit=10)
    assert end['points'] == 4, end
