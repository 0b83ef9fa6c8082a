"""What a CI job gates on, against a real Tarantool: --percentiles of the user's choice,
a --fail-if condition marked @abort that stops the run (exit 4, what ran kept), --junit,
--repeat's rounds and their summary, and the names, values and output paths judged
before the first op (exit 2, nothing written to the server)."""
from __future__ import absolute_import, division, print_function

import time
import xml.etree.ElementTree as ET

import pytest

from tests.integration.conftest import assert_accounted, connect, run_cli


def _rows(server, space):
    conn = connect(server)
    try:
        return conn.eval(u'return box.space[...]:len()', space)[0]
    finally:
        conn.close()


def test_an_abort_threshold_stops_a_long_run_and_junit_says_which(tarantool, space, tmpdir):
    junit = str(tmpdir.join('junit.xml'))
    t0 = time.time()
    # No server answers in under a microsecond: the condition breaks in its first window.
    rc, _out, err, res = run_cli(
        ['--space', space, '--ops', '0', '--duration', '60', '--phases', 'insert,select',
         '--greenlets', '8', '--progress', '0.25', '--abort-window', '1',
         '--fail-if', 'p99<1us@abort,errors<1%', '--junit', junit], tarantool)
    assert rc == 4, err
    assert time.time() - t0 < 40          # far from the 2 x 60 s asked for
    assert_accounted(res)
    (p,) = res['phases']
    assert p['name'] == 'insert' and p['ok'] > 0
    assert p['threshold_abort']['condition'] == 'p99<1us@abort'
    assert 'p99<1us@abort broke' in res['aborted'] and 'stopped the run' in err
    suite = ET.parse(junit).getroot().find('testsuite')
    failed = [c.get('name') for c in suite.findall('testcase') if c.find('failure') is not None]
    assert 'p99<1us@abort' in failed and 'errors<1%' not in failed


def test_percentiles_and_repeat_on_a_real_server(tarantool, space):
    rc, out, err, res = run_cli(
        ['--space', space, '--ops', '2000', '--phases', 'insert,select,delete',
         '--repeat', '2', '--percentiles', '50,99,99.99', '--fail-if', 'p99.99<10s'],
        tarantool)
    assert rc == 0, err
    assert_accounted(res)
    assert [(p['name'], p['repeat']) for p in res['phases']] == [
        ('insert', 1), ('select', 1), ('delete', 1), ('insert', 2), ('select', 2),
        ('delete', 2)]
    # Round 2 inserted again what round 1 deleted: no duplicate-key errors.
    assert all(p['failed'] == 0 and p['misses'] == 0 for p in res['phases'])
    for p in res['phases']:
        lat = p['latency_us']
        assert lat['p99'] <= lat['p9999'] <= lat['max']
    figs = dict((p['name'], p['figures']) for p in res['repeat']['phases'])
    sel = [p['latency_us']['p9999'] for p in res['phases'] if p['name'] == 'select']
    assert figs['select']['p9999']['values'] == sel
    assert 'p99.99us' in out and 'repeat: 2 of 2 rounds ran' in out
    assert len(res['thresholds']) == 6


@pytest.mark.parametrize('flags,words', [
    (['--fail-if', 'selct:p99<2ms'], "no phase 'selct'"),
    (['--fail-if', 'p99<0'], 'can never hold'),
    (['--html', '/proc/x.html'], '--html /proc/x.html: cannot be written'),
    (['--fail-if', 'p99<1s', '--junit', '/proc/j.xml'], '--junit /proc/j.xml'),
])
def test_what_cannot_be_judged_or_written_is_refused_before_the_first_op(
        tarantool, space, flags, words):
    rc, _out, err, res = run_cli(['--space', space, '--ops', '500', '--phases', 'insert'] +
                                 flags, tarantool)
    assert rc == 2 and words in err and res is None
    assert len(err.strip().splitlines()) == 1
    assert _rows(tarantool, space) == 0        # not one insert reached the server
