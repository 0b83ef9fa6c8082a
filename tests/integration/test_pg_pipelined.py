"""The pipelined PostgreSQL connection (backends/postgres/pipelined.py) and
``--connector pipelined`` against a real private cluster: SCRAM login, prepared
statements, errors confined to their statement, many greenlets' statements in flight
on one socket; timeouts, a terminated backend, an unreachable server and replies cut
into pieces; the CLI's kv run, its refusals and a server killed mid-run."""
from __future__ import absolute_import, division, print_function

import time

import gevent
import pytest

from gloaddriver import errors
from gloaddriver.backends.postgres.pipelined import PipelinedConnection
from gloaddriver.backends.postgres.server import PostgresServer
from gloaddriver.backends.postgres.sqlstate import is_outage
from tests.integration.conftest import assert_accounted, assert_restart_outage, run_cli
from tests.integration.faultproxy import FaultProxy
from tests.integration.test_faults import drive


@pytest.fixture(scope='module')
def pg():
    server = PostgresServer().start()
    yield server
    server.stop()


def connect(pg, password=None, port=None, **kw):
    return PipelinedConnection('127.0.0.1', port or pg.port, pg.user, password or pg.password,
                               pg.database, **kw).connect()


def test_statements_in_flight_together_each_get_their_own_reply(pg):
    conn = connect(pg)
    try:
        conn.prepare('mk', 'CREATE TABLE IF NOT EXISTS pipe (id bigint PRIMARY KEY, '
                           'value text)')
        conn.execute('mk')
        conn.prepare('ins', 'INSERT INTO pipe VALUES ($1, $2)')
        conn.prepare('sel', 'SELECT id, value FROM pipe WHERE id = $1')
        assert conn.execute('ins', (1, u'caf\xe9')) == 1
        assert conn.execute('sel', (1,)) == [[u'1', u'caf\xe9']]
        assert conn.execute('sel', (2,)) == []
        # an error fails its own statement only; the next ones run
        with pytest.raises(errors.ServerError) as e:
            conn.execute('ins', (1, u'again'))
        assert e.value.code == '23505'
        got = {}

        def work(i):
            for k in range(50):
                key = 100 + i * 50 + k
                conn.execute('ins', (key, u'v%d' % key))
                got[key] = conn.execute('sel', (key,))
        sends0 = conn.sends
        gevent.joinall([gevent.spawn(work, i) for i in range(20)], raise_error=True)
        assert len(got) == 1000
        assert all(rows == [[u'%d' % k, u'v%d' % k]] for k, rows in got.items())
        # more than one statement per send: they travel together (the server answers
        # each Sync as it comes, so the batches stay small: 2-20 per send, seen)
        per_send = 2000 / (conn.sends - sends0)
        assert per_send > 1.2, per_send
    finally:
        conn.close()


def test_wrong_password_is_an_auth_error(pg):
    with pytest.raises(errors.AuthError):
        connect(pg, password='wrong')


def test_a_request_past_the_timeout_fails_alone_and_its_late_reply_is_dropped(pg):
    conn = connect(pg, timeout=0.6, statements=[('nap', 'SELECT pg_sleep($1)'),
                                                ('dbl', 'SELECT $1::bigint * 2')])
    try:
        t0 = time.time()
        with pytest.raises(errors.RequestTimeout):
            conn.execute('nap', (1.0,))
        assert 0.55 < time.time() - t0 < 0.9
        # Queued behind the nap on the server: its own reply, not the nap's late one.
        assert conn.execute('dbl', (21,)) == [[u'42']]
        assert (conn.late, conn.reconnects) == (1, 0)
    finally:
        conn.close()


def test_a_terminated_backend_fails_what_is_pending_and_the_connection_comes_back(pg):
    conn = connect(pg, statements=[('nap', 'SELECT pg_sleep($1)'),
                                   ('dbl', 'SELECT $1::bigint * 2')])
    other = connect(pg)
    try:
        pid = conn.query('SELECT pg_backend_pid()')[0][0]
        naps = [gevent.spawn(conn.execute, 'nap', (2,)) for _ in range(5)]
        gevent.sleep(0.2)
        assert other.query('SELECT pg_terminate_backend($1)', (pid,)) == [[u't']]
        gevent.joinall(naps, timeout=1.5)
        # All at once, with the server's own word for it: FATAL 57P01, an outage.
        assert all(isinstance(g.exception, errors.ServerError) for g in naps)
        assert set((g.exception.code, g.exception.outage) for g in naps) == {('57P01', True)}
        deadline = time.time() + 3
        while conn.reconnects == 0 and time.time() < deadline:
            gevent.sleep(0.05)
        # The new backend has the statements prepared again.
        assert conn.execute('dbl', (4,)) == [[u'8']] and conn.reconnects == 1
        assert conn.query('SELECT pg_backend_pid()')[0][0] != pid
    finally:
        conn.close()
        other.close()


def test_an_unreachable_server_fails_requests_then_gives_up(pg):
    proxy = FaultProxy(pg.port)
    try:
        conn = connect(pg, port=proxy.port, timeout=0.3, outage_limit=1.0,
                       statements=[('dbl', 'SELECT $1::bigint * 2')])
        assert conn.execute('dbl', (1,)) == [[u'2']]
        proxy.mode = 'down'
        with pytest.raises(errors.NetworkError):
            conn.execute('dbl', (2,))
        t0 = time.time()
        with pytest.raises(errors.NotConnected):
            conn.execute('dbl', (3,))
        assert 0.25 < time.time() - t0 < 0.6      # waited for it, up to the timeout
        gevent.sleep(1.2)
        proxy.mode = 'pass'
        t0 = time.time()
        with pytest.raises(errors.GaveUp):
            conn.execute('dbl', (4,))
        assert time.time() - t0 < 0.1             # at once: the run can stop
        conn.close()
    finally:
        proxy.close()


def test_replies_cut_into_three_byte_pieces_lose_nothing(pg):
    proxy = FaultProxy(pg.port)
    try:
        conn = connect(pg, port=proxy.port, statements=[('echo', 'SELECT $1::text, $2')])
        proxy.mode = 'trickle'
        got = {}

        def work(i):
            for k in range(10):
                got[i, k] = conn.execute('echo', (u'%d-%d' % (i, k), u'x' * (k * 50)))
        gevent.joinall([gevent.spawn(work, i) for i in range(10)], raise_error=True)
        assert got == dict(((i, k), [[u'%d-%d' % (i, k), u'x' * (k * 50)]])
                           for i in range(10) for k in range(10))
        # The replies went out in 3-byte segments (the proxy's count); how many of them
        # one recv gets depends on when the client reads, so it is not counted on.
        assert proxy.trickled * 3 > sum(len(v[0][0]) + len(v[0][1]) for v in got.values())
        assert conn.recvs >= 10 and conn.reconnects == 0
        conn.close()
    finally:
        proxy.close()


# -- --connector pipelined -------------------------------------------------------------

def dsn(pg, password=None, dbname=None):
    return 'host=127.0.0.1 port=%d dbname=%s user=%s password=%s sslmode=disable' % (
        pg.port, dbname or pg.database, pg.user, password or pg.password)


def test_the_kv_workload_on_a_spawned_server_pipelines_and_reads_back():
    rc, out, err, res = run_cli(['--backend', 'postgres', '--spawn', '--connector', 'pipelined',
                                 '--greenlets', '16', '--ops', '2000', '--verify'])
    assert rc == 0, err
    assert_accounted(res)
    assert [p['name'] for p in res['phases']] == ['insert', 'select', 'update', 'delete']
    for p in res['phases']:
        assert (p['attempted'], p['ok'], p['misses']) == (2000, 2000, 0), p['name']
        assert p['syscalls']['per_op'] is not None and p['syscalls']['network_per_op'] < 2
        assert p['batching']['source'] == 'connector'
        assert p['batching']['requests_per_send'] > 1, p['batching']
        assert p['connection']['reconnects'] == 0
    m = res['manifest']
    assert (m['connector'], m['connections'], m['prepared']) == ('pipelined', 2, True)
    assert res['verify']['intact'] == 2000 and res['verify']['acknowledged_lost'] == 0
    assert 'pipelined connector' in out and '16 greenlets on 2 connections' in out


def test_kv_mix_gives_the_psycopg2_results(pg):
    """scan and rmw too; the checksums of both connectors' results agree."""
    sums = []
    for i, connector in enumerate(['psycopg2', 'pipelined']):
        args = ['--backend', 'postgres', '--dsn', dsn(pg), '--init', '--table',
                'pipe_mix_%d' % i, '--connector', connector, '--ops', '600', '--keys', '300',
                '--load', '--mix', 'scan=1,select=1,rmw=1', '--distribution', 'uniform',
                '--greenlets', '1', '--value-size', '30', '--checksum']
        rc, out, err, res = run_cli(args)
        assert rc == 0, err
        assert_accounted(res)
        sums.append([p['checksum'] for p in res['phases']])
        assert res['phases'][1]['misses'] == 0
    assert sums[0] == sums[1]


@pytest.mark.parametrize('which,words', [
    ('password', 'password authentication failed'),
    ('dbname', 'does not exist'),
    ('port', '127.0.0.1:1'),
])
def test_bad_logins_are_one_clear_line_without_the_password(pg, which, words):
    text = {'password': dsn(pg, password='wrong-pw'), 'dbname': dsn(pg, dbname='nodb'),
            'port': 'host=127.0.0.1 port=1 dbname=x user=y password=%s' % pg.password}[which]
    rc, out, err, res = run_cli(['--backend', 'postgres', '--connector', 'pipelined',
                                 '--ops', '10', '--dsn', text])
    assert rc == 3 and words in err, err
    assert 'Traceback' not in err and len(err.strip().splitlines()) == 1
    assert pg.password not in out + err


def test_a_missing_table_names_the_fix(pg):
    rc, out, err, res = run_cli(['--backend', 'postgres', '--connector', 'pipelined', '--dsn',
                                 dsn(pg), '--table', 'no_such_table', '--ops', '10'])
    assert rc == 3 and '--init' in err and 'CREATE TABLE' in err, err
    assert 'Traceback' not in err and len(err.strip().splitlines()) == 1


def test_a_workload_it_does_not_run_is_refused_before_the_run(pg):
    rc, out, err, res = run_cli(['--backend', 'postgres', '--connector', 'pipelined', '--dsn',
                                 dsn(pg), '--workload', 'bulk', '--ops', '10'])
    assert rc == 2 and 'runs --workload kv, relational, toolbench, --script and --workload-file' in err, err
    assert len(err.strip().splitlines()) == 1 and res is None


def test_a_server_killed_and_started_mid_run(tmpdir):
    rc, err, res, took = drive(['--backend', 'postgres', '--spawn', '--init', '--connector',
                                'pipelined', '--wal-mode', 'fsync', '--greenlets', '16',
                                '--phases', 'insert', '--ops', '0', '--duration', '4',
                                '--fault', 'kill@1.2s,start@1.8s', '--verify'], tmpdir)
    assert 'Traceback' not in err and rc == 1, err
    assert_accounted(res)
    (insert,) = res['phases']
    (o,) = insert['outages']
    assert o['failed'] + o['timed_out'] > 0, o
    # A lost socket is 'network'; a backend that saw its postmaster die first may say
    # 57P01 (SIGKILL reaches the server's processes one by one). Both are the outage.
    assert insert['errors'] and all(
        k in ('network', 'timeout') or (k.startswith('server:') and is_outage(k[7:]))
        for k in insert['errors']), insert['errors']
    # A start with crash recovery takes about a second here; on a loaded machine it
    # took over 4, and the outage then lasts to the phase's end.
    if assert_restart_outage(o, res['faults'], 4):
        ev = dict((f['action'], f) for f in res['faults'])
        if ev['start']['t'] + ev['start']['took'] < 4 - 0.5:   # back with time to spare:
            assert insert['connection']['reconnects'] >= 2      # both connections came back
            assert insert['timeline'][-1]['ok'] > 0             # and served again
    v = res['verify']
    assert v['acknowledged_lost'] == 0 and v['corrupt'] == 0 and v['checked'] > 0, v


def test_a_paused_server_times_requests_out_and_the_connections_go_on(tmpdir):
    rc, err, res, took = drive(['--backend', 'postgres', '--spawn', '--init', '--connector',
                                'pipelined', '--greenlets', '16', '--phases', 'insert',
                                '--ops', '0', '--duration', '3', '--timeout', '0.5',
                                '--fault', 'stop@1s:1s', '--verify'], tmpdir)
    assert 'Traceback' not in err and took < 30, err
    assert_accounted(res)
    (insert,) = res['phases']
    (o,) = insert['outages']
    assert abs(o['duration'] - 1.0) <= 0.5 and o['timed_out'] > 0, o
    # The same sockets throughout: the replies to what timed out came late and were dropped.
    assert insert['connection']['reconnects'] == 0 and insert['connection']['late'] > 0
    assert insert['timeline'][-1]['ok'] > 0
    assert res['verify']['acknowledged_lost'] == 0 and res['verify']['corrupt'] == 0
