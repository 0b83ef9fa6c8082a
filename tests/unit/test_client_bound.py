"""The client-bound warning: a run whose driver was the bottleneck says so in the JSON,
the table, the HTML and the live metrics; a light run says nothing.

The in-memory backend makes both ends certain on any machine: its ops never wait, so
a closed loop keeps the driver runnable all the time (busy is CPU plus time waiting
for a CPU: a busy machine does not hide it), and with --op-sleep the driver sleeps."""
from __future__ import absolute_import, division, print_function

import io

import pytest

from gloaddriver import cli
from gloaddriver.measure import client_bound, procfs
from gloaddriver.report import live
from tests import result_schema

pytestmark = pytest.mark.skipif(procfs.run_delay() is None,
                                reason='no /proc/self/schedstat: busy would be CPU alone, '
                                       'which a loaded machine lowers')


def _run(tmpdir, *argv):
    path = str(tmpdir.join('r.json'))
    html = str(tmpdir.join('r.html'))
    code = cli.main(['--backend', 'memory', '--progress', '0', '--no-syscalls', '--phases',
                     'insert', '--json', path, '--html', html] + list(argv))
    with io.open(path, encoding='utf-8') as f:
        result = result_schema.read(f)
    with io.open(html, encoding='utf-8') as f:
        page = f.read()
    return code, result, page


def test_a_saturated_driver_warns_in_the_json_the_table_and_the_html(tmpdir, capsys):
    code, result, page = _run(tmpdir, '--greenlets', '8', '--ops', '0', '--duration', '1.5')
    out = capsys.readouterr().out
    assert code == 0   # a warning is not a failure
    (phase,) = result['phases']
    assert phase['client']['busy'] > client_bound.CPU_LIMIT, phase['client']
    (w,) = [w for w in phase['warnings'] if w['kind'] == 'client_cpu']
    assert w['phase'] == 'insert' and w['value'] == phase['client']['busy']
    assert w['limit'] == client_bound.CPU_LIMIT
    assert result['warnings'] == phase['warnings']
    assert 'WARNING insert: the driver was busy' in out
    assert w['message'] in page   # the page's verdict banner lists the run's warnings


def test_a_light_run_does_not_warn(tmpdir, capsys):
    code, result, page = _run(tmpdir, '--greenlets', '2', '--op-sleep', '0.02', '--ops', '0',
                              '--duration', '1.5')
    out = capsys.readouterr().out
    (phase,) = result['phases']
    assert phase['client']['busy'] < client_bound.CPU_LIMIT, phase['client']
    assert phase['warnings'] == [] and result['warnings'] == []
    assert 'WARNING' not in out and 'the driver was busy' not in page


def test_an_open_loop_that_cannot_keep_its_schedule_warns(tmpdir, capsys):
    code, result, _page = _run(tmpdir, '--greenlets', '2', '--op-sleep', '0.01', '--rate', '2000',
                               '--ops', '0', '--duration', '1.5')
    (phase,) = result['phases']
    # 2 greenlets of 10 ms ops can do 200 ops/s at most, a tenth of the schedule.
    (w,) = [w for w in phase['warnings'] if w['kind'] == 'schedule_lag']
    assert w['value'] < 0.2 and w['limit'] == client_bound.LAG_LIMIT
    assert 'fell behind its schedule' in capsys.readouterr().out


def test_an_open_loop_that_keeps_its_schedule_does_not_warn(tmpdir):
    _code, result, _page = _run(tmpdir, '--greenlets', '8', '--op-sleep', '0.001', '--rate',
                                '100', '--ops', '0', '--duration', '1.5')
    (phase,) = result['phases']
    assert [w for w in phase['warnings'] if w['kind'] == 'schedule_lag'] == [], phase['rate']


def test_the_live_figures_carry_the_driver_load():
    fig = {'phase': 'insert', 't': 1.0, 'seconds': 1.0, 'server': None, 'blocks': [
        {'op': 'insert', 'attempted': 1, 'ok': 1, 'errors': 0, 'ops_per_sec': 1.0,
         'ok_per_sec': 1.0, 'errors_per_sec': 0.0, 'latency_us': {'p50': 10},
         'syscalls_per_op': None, 'errors_by_kind': {}}],
        'driver': {'busy': 0.95, 'cpu': 0.9, 'waiting': 0.05, 'client_bound': 1}}
    paths = dict((p, v) for p, v, _c in live._metrics(fig))
    assert paths['driver.client_bound'] == 1 and paths['driver.busy'] == 0.95
    fams = dict((f.name, f) for f in live.prometheus_families(fig, 'gloaddriver', None))
    assert fams['gloaddriver_driver_client_bound'].samples[0].value == 1
    assert fams['gloaddriver_driver_busy_cores'].samples[0].value == 0.95
