"""A private PostgreSQL replica set against real servers: streaming to read-only
standbys, no acknowledged row lost across a failover in the sync mode (and the old
primary back as a replica by pg_rewind), remote_apply."""
from __future__ import absolute_import, division, print_function


import pytest

psycopg2 = pytest.importorskip('psycopg2')
gevent = pytest.importorskip('gevent')

from gloaddriver.backends.postgres import pool   # noqa: E402
from gloaddriver.backends.postgres.replicaset import PostgresReplicaSet   # noqa: E402
from tests.integration.conftest import ReplicaSets   # noqa: E402
from tests.integration.conftest import pg_query as query   # noqa: E402
from tests.integration.conftest import wait_for as _wait_for   # noqa: E402


@pytest.fixture
def started():
    """started(replicas, mode): a set of the test's own, stopped after it."""
    pool.install('cached')   # green psycopg2 (the set bounds its queries with gevent)
    sets = ReplicaSets(PostgresReplicaSet, 90)
    yield sets
    sets.stop_all()


def wait_for(what, check, seconds=30):
    return _wait_for(what, check, seconds, psycopg2.Error)


def test_async_rows_reach_both_read_only_standbys(started):
    rs = started(2, 'async')
    primary, s1, s2 = rs.members
    assert rs.leader is primary and rs.uris == [m.uri for m in rs.members]
    assert len(set(m.port for m in rs.members)) == 3
    assert all((m.user, m.password, m.database) == (rs.user, rs.password, rs.database)
               for m in rs.members)
    assert query(primary.dsn, 'SELECT pg_is_in_recovery()') == [(False,)]
    assert sorted(r[0] for r in query(primary.dsn, 'SELECT application_name FROM '
                                      "pg_stat_replication WHERE state = 'streaming'")) == \
        ['s1', 's2']
    query(primary.dsn, 'CREATE TABLE t (id int PRIMARY KEY, v text)')
    query(primary.dsn, "INSERT INTO t VALUES (1, 'one')")
    for s in (s1, s2):
        assert query(s.dsn, 'SELECT pg_is_in_recovery()') == [(True,)]
        wait_for('the row on ' + s.app_name,
                 lambda: query(s.dsn, 'SELECT v FROM t WHERE id = 1') == [(u'one',)])
        with pytest.raises(psycopg2.Error) as e:
            query(s.dsn, "INSERT INTO t VALUES (2, 'two')")
        assert e.value.pgcode == '25006'   # read_only_sql_transaction
    lag = rs.lag()
    assert sorted(lag) == sorted([s1.uri, s2.uri])
    assert all(isinstance(v['bytes'], int) and v['bytes'] >= 0 for v in lag.values()), lag
    wait_for('both standbys caught up',
             lambda: [v['bytes'] for v in rs.lag().values()] == [0, 0])
    assert query(rs.dsn, 'SELECT inet_server_port()') == [(primary.port,)]
    s = rs.settings()
    assert s['replication'] == 'async' and s['synchronous_standby_names'] == ''
    assert rs.password not in str(s)


def test_sync_failover_loses_no_acknowledged_row(started):
    rs = started(2, 'sync')
    primary = rs.members[0]
    assert query(primary.dsn, 'SHOW synchronous_commit') == [(u'on',)]
    assert query(primary.dsn, 'SHOW synchronous_standby_names') == [(u'ANY 1 (s0, s1, s2)',)]
    assert sorted(query(primary.dsn, 'SELECT sync_state FROM pg_stat_replication')) == \
        [(u'quorum',), (u'quorum',)]
    query(primary.dsn, 'CREATE TABLE t (id bigint PRIMARY KEY, g int)')
    acked = []

    def writer(g):
        conn = psycopg2.connect(primary.dsn)
        conn.autocommit = True
        cur = conn.cursor()
        try:
            for n in range(10 ** 6):
                cur.execute('INSERT INTO t VALUES (%s, %s)', (g * 10 ** 6 + n, g))
                acked.append(g * 10 ** 6 + n)
        except psycopg2.Error:
            pass    # the kill
        finally:
            conn.close()
    writers = [gevent.spawn(writer, g) for g in range(6)]
    wait_for('300 acknowledged inserts', lambda: len(acked) >= 300)
    assert not any(w.dead for w in writers)   # the kill hits them in full flight
    assert rs.kill('leader') is primary
    gevent.joinall(writers, timeout=30)
    assert all(w.dead for w in writers)
    old, new = rs.promote()
    assert old is primary and new in rs.members[1:] and rs.leader is new
    (other,) = [m for m in rs.members[1:] if m is not new]
    rows = set(r[0] for r in query(new.dsn, 'SELECT id FROM t'))
    assert set(acked) <= rows, len(set(acked) - rows)
    assert query(new.dsn, 'SELECT pg_is_in_recovery()') == [(False,)]
    # A synchronous commit on the new primary: the remaining standby is in its quorum.
    assert query(new.dsn, 'SELECT application_name, sync_state FROM pg_stat_replication') == \
        [(other.app_name, u'quorum')]
    query(new.dsn, 'INSERT INTO t VALUES (-1, -1)')
    wait_for('the new row on the remaining standby',
             lambda: query(other.dsn, 'SELECT count(*) FROM t WHERE id = -1') == [(1,)])
    assert query(other.dsn, 'SELECT pg_is_in_recovery()') == [(True,)]
    # The multi-host DSN skips the dead member and the standby, through the driver's own
    # wait callback (libpq opens the next host's socket on the number of the one it
    # closed: a watcher kept across that waited for ever).
    assert query(rs.dsn, 'SELECT inet_server_port()') == [(new.port,)]
    assert sorted(rs.lag()) == [other.uri]
    # The old primary back, rewound, as a replica of the new one.
    assert rs.start_again('leader') is primary
    assert query(primary.dsn, 'SELECT pg_is_in_recovery()') == [(True,)]
    query(new.dsn, 'INSERT INTO t VALUES (-2, -2)')
    wait_for('the new row on the old primary',
             lambda: query(primary.dsn, 'SELECT count(*) FROM t WHERE id = -2') == [(1,)])
    assert set(r[0] for r in query(primary.dsn, 'SELECT id FROM t')) == rows | set([-1, -2])
    assert sorted(rs.lag()) == sorted([primary.uri, other.uri])


def test_remote_apply_commit_is_visible_on_the_standby_at_once(started):
    rs = started(1, 'remote_apply')
    primary, standby = rs.members
    assert query(primary.dsn, 'SHOW synchronous_commit') == [(u'remote_apply',)]
    assert query(primary.dsn, 'SELECT application_name, sync_state FROM pg_stat_replication') \
        == [(u's1', u'quorum')]
    assert rs.settings()['synchronous_commit'] == 'remote_apply'
    query(primary.dsn, 'CREATE TABLE t (id int PRIMARY KEY)')
    w = psycopg2.connect(primary.dsn)
    r = psycopg2.connect(standby.dsn)
    try:
        w.autocommit = r.autocommit = True
        wc, rc = w.cursor(), r.cursor()
        for i in range(100):
            wc.execute('INSERT INTO t VALUES (%s)', (i,))
            rc.execute('SELECT count(*) FROM t')
            assert rc.fetchone() == (i + 1,)
    finally:
        w.close()
        r.close()


def test_members_whose_data_left_the_leaders_history_are_rewound(started):
    rs = started(2, 'async')
    s0, s1, s2 = rs.members
    query(s0.dsn, 'CREATE TABLE t (id int)')
    wait_for('the table on both standbys', lambda: all(
        query(s.dsn, 'SELECT count(*) FROM t') == [(0,)] for s in (s1, s2)))
    # The primary gets ahead of both standbys (more WAL than the sockets hold), then dies.
    s1.pause()
    s2.pause()
    query(s0.dsn, 'INSERT INTO t SELECT generate_series(1, 300000)')
    rs.kill('leader')
    s1.resume()
    s2.resume()
    old, new = rs.promote()
    (other,) = [m for m in (s1, s2) if m is not new]
    kept = query(new.dsn, 'SELECT count(*) FROM t')[0][0]
    assert kept < 300000
    # The old primary comes back on the new leader's history: its extra rows are gone.
    assert rs.start_again('leader') is s0
    assert query(s0.dsn, 'SELECT pg_is_in_recovery(), count(*) FROM t') == [(True, kept)]
    query(new.dsn, 'INSERT INTO t VALUES (-1)')
    wait_for('the new row on the old primary',
             lambda: query(s0.dsn, 'SELECT count(*) FROM t WHERE id = -1') == [(1,)])
    # A replica down across a promotion follows the newest leader when it is back.
    assert rs.kill('replica') is s0     # the first live replica in start order
    rs.kill('leader')
    assert rs.promote() == (new, other)
    query(other.dsn, 'INSERT INTO t VALUES (-2)')
    assert rs.start_again('replica') is s0
    wait_for('the row of the newest leader on the replica back',
             lambda: query(s0.dsn, 'SELECT count(*) FROM t WHERE id < 0') == [(2,)])
    assert sorted(rs.lag()) == [s0.uri]
    assert query(s0.dsn, 'SELECT pg_is_in_recovery()') == [(True,)]
