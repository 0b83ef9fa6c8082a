"""The optional pipelined PostgreSQL connection (backends/postgres/pipelined.py) against
a real private cluster: SCRAM login, prepared statements, errors confined to their
statement, many greenlets' statements in flight on one socket."""
from __future__ import absolute_import, division, print_function

import gevent
import pytest

from gloaddriver import errors
from gloaddriver.backends.postgres.pipelined import PipelinedConnection
from gloaddriver.backends.postgres.server import PostgresServer


@pytest.fixture(scope='module')
def pg():
    server = PostgresServer().start()
    yield server
    server.stop()


def connect(pg, password=None):
    return PipelinedConnection('127.0.0.1', pg.port, pg.user, password or pg.password,
                               pg.database).connect()


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
        # each Sync as it comes, so the batches stay small)
        assert 2000 / (conn.sends - sends0) > 1.5
    finally:
        conn.close()


def test_wrong_password_is_an_auth_error(pg):
    with pytest.raises(errors.AuthError):
        connect(pg, password='wrong')
