"""Faults measured end to end: --fault on a spawned server, and network faults from a
proxy of the tests' own (tests/integration/faultproxy.py) in front of a real server.

Each asserts: no hang (the run ends within a bound), exact accounting, the outage in
the JSON with its duration within 0.5 s of the fault's real length, the reconnect, and
with --verify what survived."""
from __future__ import absolute_import, division, print_function

import os
import subprocess
import sys
import time

import pytest

from tests.integration.conftest import ROOT, assert_accounted, assert_restart_outage, \
    create_space
from tests.integration.faultproxy import FaultProxy
from tests import result_schema


def drive(args, tmpdir, env=None, faults=(), limit=60):
    """Run the driver; ``faults``: (seconds after its first progress line, fn) called
    from this thread. Returns (exit code, stderr, result, seconds it took)."""
    out = str(tmpdir.join('r.json'))
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', '--json', out, '--progress', '1']
                         + args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=ROOT, **(env or {})))
    started = time.time()
    err = []
    if faults:
        # The phase has begun when its first progress line comes.
        while True:
            line = p.stderr.readline().decode('utf-8', 'replace')
            err.append(line)
            if not line or ' ops/s ' in line:
                break
        t0 = time.time() - 1.0
        for at, fn in faults:
            time.sleep(max(t0 + at - time.time(), 0))
            fn()
    deadline = time.time() + limit
    while p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    if p.poll() is None:
        p.kill()
        pytest.fail('the run hung: %s' % ''.join(err))
    _o, rest = p.communicate()
    err = ''.join(err) + rest.decode('utf-8', 'replace')
    if not os.path.exists(out):
        pytest.fail('no result (exit %s): %s' % (p.returncode, err[-2000:]))
    with open(out) as f:
        res = result_schema.read(f)
    return p.returncode, err, res, time.time() - started


def gaps(phase):
    times = [0.0] + [r['t'] for r in phase['timeline']]
    return max(b - a for a, b in zip(times, times[1:]))


def fault_length(res, down, up):
    """Seconds from the ``down`` fault to the server being back after ``up``."""
    ev = dict((f['action'], f) for f in res['faults'])
    return ev[up]['t'] + ev[up]['took'] - ev[down]['t']


# -- --fault on a spawned server ---------------------------------------------------

@pytest.mark.parametrize('wal', ['write', 'none'])
def test_kill_and_start_tarantool_tells_wal_modes_apart(wal, tmpdir):
    rc, err, res, took = drive(['--spawn', '--wal-mode', wal, '--phases', 'insert',
                                '--ops', '0', '--duration', '2.5', '--greenlets', '20',
                                '--fault', 'kill@1.2s,start@2s', '--verify'], tmpdir)
    assert 'Traceback' not in err
    assert_accounted(res)
    insert = res['phases'][0]
    assert gaps(insert) <= 1.1, insert['timeline']
    (o,) = insert['outages']
    assert abs(o['start'] - 1.2) < 0.3, o
    assert abs(o['duration'] - fault_length(res, 'kill', 'start')) <= 0.5, (o, res['faults'])
    assert o['reconnects'] == 1 and not o['open'] and o['recovery'] is not None
    assert o['failed'] + o['timed_out'] == insert['failed'] + insert['timed_out'] > 0
    assert 'outage over after' in err
    # A progress line printed while the outage was open says so. On a loaded machine
    # the outage may fall between two lines: then no line is marked.
    end = o['start'] + o['duration']
    if [r for r in insert['timeline'] if o['start'] + 0.1 < r['t'] < end - 0.1]:
        assert 'OUTAGE' in err, err
    v = res['verify']
    assert v['checked'] == insert['attempted'] and v['corrupt'] == 0 and v['unexpected'] == 0
    if wal == 'write':
        assert v['acknowledged_lost'] == 0, v
        assert rc == 1    # the ops that failed in the outage
    else:
        # Nothing was on disk: every insert acknowledged before the kill is gone; a row
        # of the timeline that ended before the kill holds only such inserts.
        before = sum(r['ok'] for r in insert['timeline'] if r['t'] <= 1.0)
        assert before <= v['acknowledged_lost'] <= insert['ok'], (before, v)
        assert rc == 1 and 'acknowledged writes were lost' in err


def test_a_pause_past_the_timeout_is_one_outage_of_its_length(tmpdir):
    rc, err, res, took = drive(['--spawn', '--phases', 'select', '--ops', '0', '--duration',
                                '4', '--timeout', '0.5', '--fault', 'stop@1s:2s'], tmpdir)
    assert 'Traceback' not in err
    assert_accounted(res)
    (phase,) = res['phases']
    assert gaps(phase) <= 1.1
    (o,) = phase['outages']
    assert abs(o['duration'] - 2.0) <= 0.5, o
    assert o['timed_out'] > 0 and o['reconnects'] == 0
    assert [f['action'] for f in res['faults']] == ['stop', 'cont']


@pytest.mark.parametrize('loop', [[], ['--rate', '2000']], ids=['closed', 'open'])
def test_a_pause_within_the_timeout_is_a_stall_of_its_length(loop, tmpdir):
    rc, err, res, took = drive(['--spawn', '--phases', 'select', '--ops', '0', '--duration',
                                '4', '--fault', 'stop@1s:2s'] + loop, tmpdir)
    assert rc == 0 and 'Traceback' not in err, err
    (phase,) = res['phases']
    assert gaps(phase) <= 1.1
    (o,) = phase['outages']
    assert o['first_error'].startswith('stall') and o['failed'] == o['timed_out'] == 0
    assert abs(o['duration'] - 2.0) <= 0.5 and abs(o['start'] - 1.0) <= 0.3, o


def test_the_sync_connector_reports_its_outage_too(tmpdir):
    rc, err, res, took = drive(['--spawn', '--wal-mode', 'write', '--connector', 'sync',
                                '--phases', 'insert', '--ops', '0', '--duration', '3',
                                '--fault', 'restart@1.5s:0.5s', '--verify'], tmpdir)
    assert 'Traceback' not in err
    assert_accounted(res)
    (phase,) = res['phases']
    (o,) = phase['outages']
    ev = res['faults'][0]
    # It opens at the restart and lasts at least while the server was down. It may last
    # longer: a restarted server answers errors (ER_LOADING, access denied) while it
    # recovers, which on a loaded machine outlasts the restart itself (seen: 0.7 s; with
    # one core kept busy and a load of 7, 0.0-0.07 s), but not by more than 1.5 s: then
    # the connector would not be finding the server back.
    assert abs(o['start'] - ev['at']) <= 0.5, (o, ev)
    assert ev['took'] - 0.5 <= o['duration'] <= ev['took'] + 1.5, (o, ev)
    assert o['reconnects'] is None      # tarantool-python reconnects out of sight
    assert res['verify']['acknowledged_lost'] == 0


def test_kill_and_start_postgres_loses_nothing_with_synchronous_commit(tmpdir):
    rc, err, res, took = drive(['--backend', 'postgres', '--spawn', '--init', '--wal-mode',
                                'fsync', '--phases', 'insert', '--ops', '0',
                                '--duration', '4', '--fault', 'kill@1.2s,start@1.8s',
                                '--verify'], tmpdir)
    assert 'Traceback' not in err
    assert_accounted(res)
    insert = res['phases'][0]
    (o,) = insert['outages']
    # A start with crash recovery takes about a second here; on a loaded machine one
    # took over 4, and the outage then lasts to the phase's end.
    assert_restart_outage(o, res['faults'], 4)
    v = res['verify']
    assert v['acknowledged_lost'] == 0 and v['corrupt'] == 0 and v['checked'] > 0, v


def test_a_run_that_ends_while_the_server_is_down_reports_the_open_outage(tmpdir):
    rc, err, res, took = drive(['--spawn', '--phases', 'select', '--ops', '0', '--duration',
                                '2.5', '--timeout', '1', '--fault', 'kill@1s'], tmpdir)
    assert 'Traceback' not in err and rc == 1
    # said before the first op, not found out after --outage-limit of failures
    note = err.index('--fault kill@1s leaves the server killed: nothing in the schedule')
    assert note < err.index('ops/s') and 'add start@TIME' in err
    (phase,) = res['phases']
    (o,) = phase['outages']
    # Open until the phase's end: its time was up at 2.5 s, and the ops waiting for the
    # connection to come back gave up one --timeout after the kill.
    assert o['open'] and o['end'] is None and abs(o['start'] - 1.0) < 0.3, o
    assert abs(o['start'] + o['duration'] - phase['seconds']) <= 0.1, (o, phase['seconds'])


# -- network faults from a proxy ---------------------------------------------------

@pytest.fixture
def tarantool_proxy(tarantool):
    proxy = FaultProxy(tarantool.port)
    yield tarantool, proxy
    proxy.close()


def tarantool_args(server, proxy, *extra):
    """Flags for the driver through the proxy, on a fresh space of the shared server."""
    return (['--uri', proxy.uri, '--user', server.user, '--space', create_space(server)]
            + list(extra)), {'GLOADDRIVER_PASSWORD': server.password}


def the_outage_of(phase, faults):
    """The one outage that overlaps the injected fault's window. A loaded machine can
    add a short stall of its own elsewhere in the phase; the fault must be one outage,
    not two."""
    t0 = faults[0]['t']
    t1 = faults[-1]['t'] + (faults[-1].get('took') or 0)
    hit = [o for o in phase['outages']
           if o['start'] <= t1 and (o['end'] is None or o['end'] >= t0)]
    assert len(hit) == 1, (faults, phase['outages'])
    return hit[0]


def _set(proxy, mode, applied=None):
    """fn() putting the proxy in ``mode``; with ``applied``, it notes when it did (the
    test's own thread may run late on a busy machine: what counts is when it happened)."""
    def fn():
        if applied is not None:
            applied[mode] = time.time()
        proxy.mode = mode
    return fn


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_a_server_unreachable_for_a_while_is_one_outage(connector, tarantool_proxy, tmpdir):
    server, proxy = tarantool_proxy
    args, env = tarantool_args(server, proxy, '--connector', connector, '--phases', 'select',
                               '--ops', '0', '--duration', '4', '--timeout', '1')
    applied = {}
    rc, err, res, took = drive(args, tmpdir, env,
                               faults=[(1.5, _set(proxy, 'down', applied)),
                                       (3.0, _set(proxy, 'pass', applied))])
    assert 'Traceback' not in err and took < 15
    assert_accounted(res)
    (phase,) = res['phases']
    assert gaps(phase) <= 1.1
    (o,) = phase['outages']
    # As long as the server was unreachable, starting when it went away; after it, a
    # reconnect's backoff (0.25 s at most) and the first reply, which a busy machine can
    # delay by up to the request timeout (1 s): more than that would be a second outage.
    down = applied['pass'] - applied['down']
    assert down - 0.5 <= o['duration'] <= down + 1.0 and abs(o['start'] - 1.5) <= 0.3, \
        (o, down)
    assert o['failed'] + o['timed_out'] > 0
    if connector == 'buffered':
        assert o['reconnects'] >= 1


def test_a_silent_connection_times_requests_out_and_recovers(tarantool_proxy, tmpdir):
    server, proxy = tarantool_proxy
    args, env = tarantool_args(server, proxy, '--phases', 'select', '--ops', '0',
                               '--duration', '4', '--timeout', '0.5')
    applied = {}
    rc, err, res, took = drive(args, tmpdir, env,
                               faults=[(1.5, _set(proxy, 'blackhole', applied)),
                                       (3.0, _set(proxy, 'pass', applied))])
    assert 'Traceback' not in err and took < 15
    assert_accounted(res)
    (phase,) = res['phases']
    (o,) = phase['outages']
    down = applied['pass'] - applied['blackhole']
    assert abs(o['duration'] - down) <= 0.5, (o, down)
    assert o['timed_out'] > 0 and o['reconnects'] == 0
    assert phase['connection']['late'] > 0       # the replies that came after the timeout
    assert phase['timeline'][-1]['ok'] > 0       # and it goes on


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_a_connection_closed_mid_frame_fails_its_requests_and_reconnects(
        connector, tarantool_proxy, tmpdir):
    server, proxy = tarantool_proxy
    args, env = tarantool_args(server, proxy, '--connector', connector, '--phases', 'select',
                               '--ops', '0', '--duration', '3')
    rc, err, res, took = drive(args, tmpdir, env, faults=[(1.5, _set(proxy, 'cut'))])
    assert 'Traceback' not in err and took < 15
    assert_accounted(res)
    (phase,) = res['phases']
    assert phase['errors'].get('network', 0) >= 1, phase['errors']
    assert phase['timeline'][-1]['ok'] > 0
    assert proxy.accepted >= 2        # a new connection after the cut
    if connector == 'buffered':
        assert phase['connection']['reconnects'] >= 1


def test_replies_a_few_bytes_at_a_time_lose_nothing(tarantool_proxy, tmpdir):
    server, proxy = tarantool_proxy
    args, env = tarantool_args(server, proxy, '--phases', 'insert,select', '--ops', '0',
                               '--duration', '2', '--rate', '1000', '--value-size', '100',
                               '--verify')
    # From the middle of the insert phase on, through the select phase and the read-back.
    rc, err, res, took = drive(args, tmpdir, env, faults=[(1.2, _set(proxy, 'trickle'))])
    assert rc == 0 and 'Traceback' not in err, err
    assert_accounted(res)
    insert, sel = res['phases']
    assert insert['failed'] == sel['failed'] == 0 and sel['misses'] == 0
    assert res['verify']['intact'] == insert['ok'] > 1000


@pytest.fixture
def pg_proxy():
    from gloaddriver.backends.postgres.server import PostgresServer
    server = PostgresServer().start()
    proxy = FaultProxy(server.port)
    yield server, proxy
    proxy.close()
    server.stop()


@pytest.mark.parametrize('mode', ['down', 'blackhole'])
def test_the_postgres_pool_rides_out_a_network_fault(mode, pg_proxy, tmpdir):
    server, proxy = pg_proxy
    dsn = server.dsn.replace('port=%d' % server.port, 'port=%d' % proxy.port)
    applied = {}
    rc, err, res, took = drive(['--backend', 'postgres', '--dsn', dsn, '--init', '--phases',
                                'insert', '--ops', '0', '--duration', '4', '--timeout', '1',
                                '--verify'], tmpdir,
                               faults=[(1.5, _set(proxy, mode, applied)),
                                       (3.0, _set(proxy, 'pass', applied))])
    assert 'Traceback' not in err and took < 20
    assert_accounted(res)
    (phase,) = res['phases']
    (o,) = phase['outages']
    # Each edge judged by when the proxy acted (seconds into the phase). It starts with
    # the fault; a timed-out request opens it at its own start, so one whose reply was
    # late (a loaded machine) when the fault swallowed it dates it back, by the 1 s
    # request timeout at most. It ends with the first success after the network is
    # back: a reconnect's backoff (0.25 s at most) and the first reply, which a busy
    # machine can delay by up to the request timeout. (Seen on a machine with a load
    # of 7: the start 0.02-0.05 s after the fault, the end 0.02-0.34 s after it ended.)
    fault, back = (applied[mode] - phase['started_unix'],
                   applied['pass'] - phase['started_unix'])
    assert fault - 1.0 - 0.1 <= o['start'] <= fault + 0.5, (o, fault)
    assert back - 0.1 <= o['start'] + o['duration'] <= back + 1.0, (o, back)
    assert o['failed'] + o['timed_out'] > 0
    assert phase['timeline'][-1]['ok'] > 0
    assert res['verify']['acknowledged_lost'] == 0 and res['verify']['corrupt'] == 0


# -- the rest of the matrix: the sync baseline and the pool under the same faults --------

def test_the_sync_connector_times_out_through_a_pause_and_goes_on(tmpdir):
    rc, err, res, took = drive(['--spawn', '--connector', 'sync', '--phases', 'select',
                                '--ops', '0', '--duration', '4', '--timeout', '0.5',
                                '--fault', 'stop@1s:1.5s'], tmpdir)
    assert 'Traceback' not in err and took < 20
    assert_accounted(res)
    (phase,) = res['phases']
    (o,) = phase['outages']
    # tarantool-python turns its socket timeout into a lost connection (and reconnects):
    # network errors, not timeouts, and the outage dates from the requests that waited.
    assert abs(o['duration'] - 1.5) <= 0.5 and o['failed'] + o['timed_out'] > 0, o
    assert phase['timeline'][-1]['ok'] > 0


@pytest.mark.parametrize('mode', ['blackhole', 'trickle'])
def test_the_sync_connector_through_a_silent_or_slow_network(mode, tarantool_proxy, tmpdir):
    server, proxy = tarantool_proxy
    args, env = tarantool_args(server, proxy, '--connector', 'sync', '--phases',
                               'insert,select', '--ops', '0', '--duration', '2', '--rate',
                               '1000', '--value-size', '100', '--timeout', '0.5', '--verify')
    faults = [(1.2, _set(proxy, mode))]
    if mode == 'blackhole':
        faults.append((2.2, _set(proxy, 'pass')))
    rc, err, res, took = drive(args, tmpdir, env, faults=faults)
    assert 'Traceback' not in err and took < 30
    assert_accounted(res)
    insert, sel = res['phases']
    v = res['verify']
    assert v['acknowledged_lost'] == 0 and v['corrupt'] == 0 and v['unexpected'] == 0, v
    if mode == 'trickle':
        assert rc == 0 and insert['failed'] == sel['failed'] == 0 and sel['misses'] == 0
    else:
        (o,) = insert['outages']
        assert abs(o['duration'] - 1.0) <= 0.5 and o['failed'] + o['timed_out'] > 0, o
        assert sel['timeline'][-1]['ok'] > 0


def test_the_postgres_pool_times_out_through_a_pause_and_goes_on(tmpdir):
    rc, err, res, took = drive(['--backend', 'postgres', '--spawn', '--init', '--phases',
                                'insert', '--ops', '0', '--duration', '4', '--timeout', '0.5',
                                '--fault', 'stop@1s:1.5s', '--verify'], tmpdir)
    assert 'Traceback' not in err and took < 30
    assert_accounted(res)
    (phase,) = res['phases']
    o = the_outage_of(phase, res['faults'])
    # The 1.5 s pause, give or take a request timeout (0.5 s: the replies that were
    # waiting when it began, and those held past its end) and a busy machine's lag.
    assert 1.0 <= o['duration'] <= 1.5 + 0.5 + 0.5 and o['timed_out'] > 0, o
    assert phase['timeline'][-1]['ok'] > 0
    assert res['verify']['acknowledged_lost'] == 0


def test_a_postgres_server_unreachable_as_the_next_phase_starts(pg_proxy, tmpdir):
    """The select phase begins while the network is down (its sampler's connection is
    made then): the run goes on, and the insert phase that ran is written."""
    server, proxy = pg_proxy
    dsn = server.dsn.replace('port=%d' % server.port, 'port=%d' % proxy.port)
    rc, err, res, took = drive(['--backend', 'postgres', '--dsn', dsn, '--init', '--phases',
                                'insert,select', '--ops', '0', '--duration', '2', '--rate',
                                '500', '--timeout', '0.5'], tmpdir,
                               # Down from 1 s to 2.8 s into the run: the phases change at
                               # 2 s, with 1 s of slack before and 0.8 s after.
                               faults=[(1.0, _set(proxy, 'down')), (2.8, _set(proxy, 'pass'))])
    assert 'Traceback' not in err and took < 30, err
    assert rc in (0, 1) and not res['aborted'], (rc, res['aborted'], err[-2000:])
    assert_accounted(res)
    insert, sel = res['phases']
    assert insert['ok'] > 0 and sel['timeline'][-1]['ok'] > 0


@pytest.mark.parametrize('mode', ['cut', 'trickle'])
def test_the_postgres_pool_through_a_cut_or_a_trickle(mode, pg_proxy, tmpdir):
    server, proxy = pg_proxy
    dsn = server.dsn.replace('port=%d' % server.port, 'port=%d' % proxy.port)
    rc, err, res, took = drive(['--backend', 'postgres', '--dsn', dsn, '--init', '--phases',
                                'insert,select', '--ops', '0', '--duration', '1.5', '--rate',
                                '1000', '--verify'], tmpdir,
                               # Two cuts, both inside the insert phase (it ends at 1.5 s):
                               # a cut takes the next chunk from the server on any
                               # connection through the proxy, the server-metrics poller's
                               # included, whose errors are not the load's.
                               faults=[(1.1, _set(proxy, mode))] + (
                                   [(1.3, _set(proxy, mode))] if mode == 'cut' else []))
    assert 'Traceback' not in err and took < 30
    assert_accounted(res)
    insert, sel = res['phases']
    v = res['verify']
    assert v['acknowledged_lost'] == 0 and v['corrupt'] == 0 and v['unexpected'] == 0, v
    if mode == 'cut':
        # The cut comes 1.1 s after the first progress line: on a loaded machine that
        # may be in the select phase already.
        cut = insert['errors'].get('network', 0) + sel['errors'].get('network', 0)
        assert cut >= 1 and proxy.accepted > 10, (insert['errors'], sel['errors'])
    else:
        assert rc == 0 and insert['failed'] == 0 and sel['misses'] == 0
    assert sel['timeline'][-1]['ok'] > 0
