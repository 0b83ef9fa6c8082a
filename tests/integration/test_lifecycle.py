"""Per-connection and per-worker set-up: PostgreSQL's --session-init on every new
connection (reconnects included, both connectors) and a workload file's on_start and
on_stop (Locust's), against real servers."""
from __future__ import absolute_import, division, print_function

import os
import time

import pytest

from gloaddriver.backends.postgres.server import PostgresServer
from tests.integration.conftest import (assert_accounted, connect, create_space, pg_query,
                                        run_cli, started_driver)
from tests import result_schema

pytest.importorskip('psycopg2')


@pytest.fixture(scope='module')
def pg():
    server = PostgresServer().start()
    yield server
    server.stop()


def _run_killing_backends(pg, args):
    """A 3 s insert run whose backends are all terminated after 0.8 s; (rc, err, result)."""
    import tempfile
    path = tempfile.mktemp(suffix='.json')
    dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
        pg.port, pg.database, pg.user)
    p = started_driver(['--backend', 'postgres', '--dsn', dsn, '--json', path, '--phases',
                        'insert', '--ops', '0', '--duration', '3', '--keys', '100000000',
                        '--greenlets', '4'] + args, {'GLOADDRIVER_PASSWORD': pg.password})
    time.sleep(0.8)
    killed = pg_query(pg.dsn, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                              "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                              "AND backend_type = 'client backend'")[0][0]
    _out, err = p.communicate()
    err = p.stderr_before + err.decode('utf-8', 'replace')
    assert killed >= 1 and os.path.exists(path), err[-2000:]
    with open(path) as f:
        res = result_schema.read(f)
    os.unlink(path)
    return p.returncode, err, res


@pytest.mark.parametrize('connector', ['psycopg2', 'pipelined'])
def test_session_init_runs_on_every_connection_reconnects_included(pg, connector):
    # The same table name in public and in a schema of its own: only a session whose
    # search_path --session-init set writes to the schema's.
    schema = 'sess_%s_%d' % (connector, os.getpid())
    for sql in ('CREATE SCHEMA %s' % schema,
                'CREATE TABLE %s.kv_init (id bigint PRIMARY KEY, value text)' % schema,
                'CREATE TABLE IF NOT EXISTS public.kv_init (id bigint PRIMARY KEY, value text)'):
        pg_query(pg.dsn, sql)
    rc, err, res = _run_killing_backends(pg, [
        '--table', 'kv_init', '--connector', connector,
        '--session-init', 'SET search_path = %s' % schema])
    (phase,) = res['phases']
    assert_accounted(res)
    # the kill failed what was in flight (network, or 57P01 on the pipelined connector)
    assert sum(phase['errors'].values()) >= 1 and rc == 1, err
    assert phase['ok'] > 0 and 'setup' not in err
    in_schema = pg_query(pg.dsn, 'SELECT count(*) FROM %s.kv_init' % schema)[0][0]
    in_public = pg_query(pg.dsn, 'SELECT count(*) FROM public.kv_init')[0][0]
    # what was acknowledged, before the kill and after the reconnects, is in the schema
    assert in_public == 0 and in_schema >= phase['ok'], (in_public, in_schema, phase['ok'])


@pytest.mark.parametrize('connector', ['psycopg2', 'pipelined'])
def test_a_session_init_the_server_refuses_stops_the_run_before_the_first_op(pg, connector):
    rc, _out, err, res = run_cli(['--backend', 'postgres', '--dsn', pg.dsn, '--init',
                                  '--connector', connector, '--ops', '10',
                                  '--session-init', 'SET no_such_setting_at_all = 1'])
    assert rc == 3 and 'no_such_setting_at_all' in err and 'Traceback' not in err, err
    assert res is None or not res.get('phases')


LIFECYCLE = u'''
def on_start(db, worker):
    db.insert(SPACE, [worker, u'started'])

def op_touch(db, key):
    db.replace(SPACE, [1000 + key, u'op'])

def on_stop(db, worker):
    db.replace(SPACE, [worker, u'stopped'])
'''


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_on_start_and_on_stop_run_once_per_worker_around_the_phases(tarantool, connector,
                                                                     tmpdir):
    space = create_space(tarantool)
    path = tmpdir.join('lifecycle.py')
    path.write(u'SPACE = %r\n' % space + LIFECYCLE)
    rc, _out, err, res = run_cli(['--workload-file', str(path), '--greenlets', '5',
                                  '--ops', '200', '--phases', 'touch,touch',
                                  '--connector', connector], tarantool)
    assert rc == 0, err
    assert_accounted(res)
    # inserted once each (a second on_start would fail on the duplicate key), replaced once
    # each at the end; not counted as ops
    assert [p['ok'] for p in res['phases']] == [200, 200]
    conn = connect(tarantool)
    try:
        rows = conn.select(space, [], iterator='GT', limit=10 ** 6)
    finally:
        conn.close()
    workers = sorted(tuple(r) for r in rows if r[0] < 1000)
    assert workers == [(w, u'stopped') for w in range(5)]


def test_an_on_start_that_raises_stops_the_run_before_the_first_op(tarantool, tmpdir):
    space = create_space(tarantool)
    path = tmpdir.join('fails.py')
    path.write(u'SPACE = %r\n' % space + u'''
def on_start(db, worker):
    if worker == 3:
        raise RuntimeError('no session for worker 3')

def op_touch(db, key):
    db.replace(SPACE, [key, u'op'])
''')
    rc, _out, err, _res = run_cli(['--workload-file', str(path), '--greenlets', '5',
                                   '--ops', '50'], tarantool)
    assert rc == 3 and 'on_start(db, 3) failed: RuntimeError: no session for worker 3' in err
    assert 'Traceback' not in err, err
    conn = connect(tarantool)
    try:
        assert conn.select(space, [], iterator='GT', limit=10) == []
    finally:
        conn.close()
