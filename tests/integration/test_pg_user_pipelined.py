"""A workload file's ``db`` on the pipelined connector against a real private server:
a transaction holds its shared connection (the other greenlets' statements wait, up to
the timeout), and statements prepared on the fly with typed parameters are prepared
and described again after a reconnect."""
from __future__ import absolute_import, division, print_function

import time

import gevent
import pytest

from gloaddriver import errors
from gloaddriver.backends.postgres.pipelined import PipelinedConnection
from gloaddriver.backends.postgres.server import PostgresServer
from gloaddriver.backends.postgres.user_pipelined import Client, Shared


@pytest.fixture(scope='module')
def pg():
    server = PostgresServer().start()
    yield server
    server.stop()


def connection(pg, timeout=5.0):
    return PipelinedConnection('127.0.0.1', pg.port, pg.user, pg.password, pg.database,
                               timeout=timeout, lazy_rows=True).connect()


def test_a_transaction_holds_its_shared_connection(pg):
    conn = connection(pg)
    try:
        shared = Shared(conn)
        a, b = Client(shared), Client(shared)
        a.execute('CREATE TABLE IF NOT EXISTS gl_gate (k int)')
        a.execute('TRUNCATE gl_gate')
        order = []

        def tx():
            with a.transaction() as t:
                t.execute('INSERT INTO gl_gate VALUES (%s)', (1,))
                order.append('inserted')
                gevent.sleep(0.3)
                order.append('committing')

        def other():
            gevent.sleep(0.05)      # the transaction is open by then
            order.append(('read', b.fetchone('SELECT count(*) FROM gl_gate')))
        gevent.joinall([gevent.spawn(tx), gevent.spawn(other)], raise_error=True)
        # Not inside the transaction (where it would have read 1 before the commit).
        assert order == ['inserted', 'committing', ('read', (1,))]
    finally:
        conn.close()


def test_a_statement_waits_for_a_transaction_no_longer_than_the_timeout(pg):
    conn = connection(pg, timeout=0.2)
    try:
        shared = Shared(conn)
        a, b = Client(shared), Client(shared)
        caught = []

        def tx():
            with a.transaction():
                gevent.sleep(0.8)

        def other():
            gevent.sleep(0.05)
            try:
                b.execute('SELECT 1')
            except errors.RequestTimeout as e:
                caught.append(str(e))
        gevent.joinall([gevent.spawn(tx), gevent.spawn(other)], raise_error=True)
        assert caught and 'transaction' in caught[0]
        assert b.execute('SELECT 1') == [(1,)]     # and runs once it is over
    finally:
        conn.close()


def test_statements_prepared_on_the_fly_survive_a_reconnect(pg):
    conn = connection(pg)
    other = PipelinedConnection('127.0.0.1', pg.port, pg.user, pg.password,
                                pg.database).connect()
    try:
        db = Client(Shared(conn))
        assert db.fetchone('SELECT %s, %s::float8 / 2', (7, 3)) == (7, 1.5)
        pid = db.fetchone('SELECT pg_backend_pid()')[0]
        other.query('SELECT pg_terminate_backend($1)', (pid,))
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                got = db.fetchone('SELECT %s, %s::float8 / 2', (8, 5))
                break
            except errors.OpError:
                gevent.sleep(0.05)
        assert conn.reconnects == 1
        assert got == (8, 2.5)      # prepared again with its types, read as before
    finally:
        other.close()
        conn.close()
