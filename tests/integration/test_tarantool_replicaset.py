"""A private Tarantool replica set against real servers: rows reach read-only replicas
in a full mesh, no acknowledged row lost across a failover in the sync mode, the quorum
following the members a fault takes out and brings back, and an old leader whose
history left the new leader's back as a rebootstrapped replica."""
from __future__ import absolute_import, division, print_function

import os
import time

import gevent
import pytest

from gloaddriver import errors
from gloaddriver.backends.tarantool.connection import Connection
from gloaddriver.backends.tarantool.replicaset import MEMBERS_UP, TarantoolReplicaSet
from tests.integration.conftest import ReplicaSets
from tests.integration.conftest import wait_for as _wait_for

SPACE = 'gloaddriver'
AFTER = 10 ** 9   # a key no writer makes
_IDS = u"""local ids = {}
for _, t in box.space[...]:pairs() do
    table.insert(ids, t[1])
end
return ids"""


@pytest.fixture
def started():
    """started(replicas, mode, **kw): a set of the test's own, stopped after it."""
    sets = ReplicaSets(TarantoolReplicaSet, 60)
    yield sets
    sets.stop_all()


def connect(rs, member, timeout=10.0):
    return Connection(member.host, member.port, rs.user, rs.password, timeout=timeout,
                      reconnect=False).connect()


def ask(rs, member, lua, *args):
    conn = connect(rs, member)
    try:
        return conn.eval(lua, list(args))
    finally:
        conn.close()


def ids(rs, member):
    return set(ask(rs, member, _IDS, SPACE)[0])


def get(rs, member, key):
    return ask(rs, member, u'local space, key = ... return box.space[space]:get(key)',
               SPACE, key)


def insert(rs, member, row):
    conn = connect(rs, member)
    try:
        conn.insert(SPACE, row)
    finally:
        conn.close()


def wait_mesh(rs, member):
    """Until ``member`` follows every other member."""
    wait_for('%s following the mesh' % member.label, lambda: sorted(
        i for i, u in rs._info(member).upstreams.items() if u[0] == 'follow') ==
        sorted(o.instance_id for o in rs.members if o is not member))


def wait_for(what, check, seconds=30):
    return _wait_for(what, check, seconds, errors.GloadError)


def start_writers(rs, member, count, first=0):
    """``count`` greenlets inserting one row at a time into the leader ``member`` until
    it fails them; returns (greenlets, the ids acknowledged so far: a list)."""
    acked = []

    def writer(g):
        conn = connect(rs, member)
        try:
            for n in range(10 ** 6):
                key = first + g * 10 ** 6 + n
                conn.insert(SPACE, [key, u'v'])
                acked.append(key)
        except errors.GloadError:
            pass    # the kill
        finally:
            conn.close()
    return [gevent.spawn(writer, g) for g in range(count)], acked


def test_async_rows_reach_both_read_only_replicas_in_a_full_mesh(started):
    with pytest.raises(errors.ConfigError) as e:
        TarantoolReplicaSet(2, 'remote_apply')
    assert str(e.value) == ("--replication remote_apply is PostgreSQL's; Tarantool has "
                            "async and sync")
    rs = started(2, 'async', wal_mode='none')
    leader, r1, r2 = rs.members
    assert rs.leader is leader and rs.uris == [m.uri for m in rs.members]
    assert len(set(m.port for m in rs.members)) == 3
    assert all((m.user, m.password, m.host) == (rs.user, rs.password, rs.host)
               for m in rs.members)
    for m in rs.members:
        ro, status, peers, wal_mode = ask(rs, m, u'return box.info.ro, box.info.status, '
                                                 u'#box.cfg.replication, box.cfg.wal_mode')
        assert (ro, status, peers, wal_mode) == (m is not leader, u'running', 3, u'write')
        with open(os.path.join(m.work_dir, 'init.lua')) as f:
            assert rs.password not in f.read()
        # Every member follows the two others.
        wait_mesh(rs, m)
    insert(rs, leader, [1, u'one'])
    for r in (r1, r2):
        wait_for('the row on ' + r.label,
                 lambda r=r: get(rs, r, 1) == [[1, u'one']])
        with pytest.raises(errors.ServerError) as e:
            ask(rs, r, u'box.space[...]:insert{2, "two"}', SPACE)
        assert 'read-only' in str(e.value)
    lag = rs.lag()
    assert sorted(lag) == sorted([r1.uri, r2.uri])
    assert all(isinstance(v['rows'], int) and v['rows'] >= 0 for v in lag.values()), lag
    assert all(isinstance(v['seconds'], float) for v in lag.values()), lag
    wait_for('both replicas caught up',
             lambda: [v['rows'] for v in rs.lag().values()] == [0, 0])
    # A replica that does not answer (stopped behind the set's back) is left out, in time.
    r2.pause()
    try:
        t = time.time()
        assert sorted(rs.lag()) == [r1.uri]
        assert time.time() - t < 10
    finally:
        r2.resume()
    s = rs.settings()
    assert s['replication'] == 'async' and s['wal_mode'] == 'write'
    assert s['wal_mode_asked'] == 'none' and s['members'] == rs.uris
    assert 'replication_synchro_quorum' not in s
    assert rs.password not in str(s)


def test_sync_failover_loses_no_acknowledged_row(started):
    rs = started(2, 'sync')
    leader = rs.members[0]
    assert ask(rs, leader, u'return box.space[...].is_sync, box.cfg.replication_synchro_quorum',
               SPACE) == [True, rs._quorum()]
    s = rs.settings()
    assert s['replication_synchro_quorum'] == rs._quorum() >= 2
    assert 'majority (2)' in s['replication_synchro_quorum_rule']
    assert s['replication_synchro_timeout'] >= 30
    writers, acked = start_writers(rs, leader, 6)
    wait_for('300 acknowledged inserts', lambda: len(acked) >= 300)
    assert not any(w.dead for w in writers)   # the kill hits them in full flight
    assert rs.kill('leader') is leader
    gevent.joinall(writers, timeout=30)
    assert all(w.dead for w in writers)
    old, new = rs.promote()
    assert old is leader and new in rs.members[1:] and rs.leader is new
    (other,) = [m for m in rs.members[1:] if m is not new]
    rows = ids(rs, new)
    assert set(acked) <= rows, sorted(set(acked) - rows)[:10]
    assert ask(rs, new, u'return box.info.ro') == [False]
    assert ask(rs, other, u'return box.info.ro') == [True]
    # A synchronous commit on the new leader: the remaining replica is in its quorum.
    conn = connect(rs, new)
    try:
        assert conn.insert(SPACE, [AFTER, u'after']) == [[AFTER, u'after']]
    finally:
        conn.close()
    wait_for('the new row on the remaining replica',
             lambda: get(rs, other, AFTER) == [[AFTER, u'after']])
    assert set(ids(rs, other)) == rows | set([AFTER])
    assert sorted(rs.lag()) == [other.uri]
    # The old leader back: a read-only replica of the new one, with what it has.
    assert rs.start_again('leader') is leader
    assert ask(rs, leader, u'return box.info.ro') == [True]
    assert ids(rs, leader) == rows | set([AFTER])
    writers, acked = start_writers(rs, new, 3, first=10 ** 8)
    wait_for('100 more acknowledged inserts', lambda: len(acked) >= 100)
    gevent.killall(writers)
    wait_for('the old leader caught up',
             lambda: set(acked) <= ids(rs, leader) and rs.lag()[leader.uri]['rows'] == 0)
    assert sorted(rs.lag()) == sorted([leader.uri, other.uri])


def test_sync_quorum_follows_the_replicas_a_fault_takes_out(started):
    rs = started(2, 'sync')
    leader, r1, r2 = rs.members
    if rs.quorum_rule != MEMBERS_UP:
        pytest.skip('Tarantool %s keeps a majority quorum' % rs.version)

    def quorum(m):
        return ask(rs, m, u'return box.cfg.replication_synchro_quorum')[0]
    keys = iter(range(1, 10 ** 6))
    conn = connect(rs, leader, timeout=10.0)
    try:
        def write():   # one commit, and its quorum of now
            k = next(keys)
            assert conn.insert(SPACE, [k, u'v']) == [[k, u'v']]
            return quorum(leader)
        assert [quorum(m) for m in rs.members] == [3, 3, 3]
        assert rs.kill('replica') is r1 and write() == 2
        assert rs.start_again('replica') is r1
        assert [quorum(m) for m in rs.members] == [3, 3, 3]
        assert [write() for _ in range(50)] == [3] * 50
        assert rs.lag()[r1.uri]['rows'] == 0   # it acknowledged them all
        assert rs.pause('replica') is r1 and write() == 2
        assert rs.resume('replica') is r1 and write() == 3
        # Never below a majority: with one member up, a commit waits for another.
        assert rs.kill('replica') is r1 and rs.pause('replica') is r2
        assert quorum(leader) == 2
        short = connect(rs, leader, timeout=2.0)
        try:
            with pytest.raises(errors.RequestTimeout):
                short.insert(SPACE, [0, u'no quorum'])
        finally:
            short.close()
        assert rs.resume('replica') is r2
        assert write() == 2   # committed after the waiting one, which has its quorum too
        wait_for('the waiting row on r2', lambda: get(rs, r2, 0) == [[0, u'no quorum']])
    finally:
        conn.close()
    # The leader killed and started again as the leader: r2 is its quorum.
    assert rs.kill('leader') is leader and rs.start_again('leader') is leader
    assert rs.leader is leader and ask(rs, leader, u'return box.info.ro') == [False]
    conn = connect(rs, leader, timeout=10.0)
    try:
        assert [write() for _ in range(20)] == [2] * 20
    finally:
        conn.close()


def test_old_leader_with_rows_nobody_else_has_comes_back_rebootstrapped(started):
    rs = started(2, 'async')
    leader, r1, r2 = rs.members
    conn = connect(rs, leader)
    try:
        for k in range(1, 101):
            conn.insert(SPACE, [k, u'both'])
        wait_for('the rows on the replicas',
                 lambda: all(len(ids(rs, r)) == 100 for r in (r1, r2)))
        # The replicas stop replicating: the next rows stay on the leader alone.
        for r in (r1, r2):
            ask(rs, r, u'box.cfg{replication = {}}')
        for k in range(101, 111):
            conn.insert(SPACE, [k, u'leader only'])
    finally:
        conn.close()
    rs.kill('leader')
    positions = [rs._position(r) for r in (r1, r2)]     # said if the next line fails
    old, new = rs.promote()
    # equal positions: the first in start order
    assert old is leader and new is r1, (positions, [r.label for r in (old, new)])
    wait_for('r2 follows the new leader',
             lambda: rs._info(r2).follows(new.instance_id))
    conn = connect(rs, new)
    try:
        conn.insert(SPACE, [105, u'new leader'])   # a key the old leader has too
    finally:
        conn.close()
    assert rs.start_again('leader') is leader
    assert leader.rebootstraps == 1
    assert ask(rs, leader, u'return box.info.ro, box.info.id') == [True, 1]
    expect = set(range(1, 101)) | set([105])
    assert ids(rs, leader) == ids(rs, new) == expect
    assert get(rs, leader, 105) == [[105, u'new leader']]
    # Back in the mesh: it follows both others, and they follow it.
    for m in rs.members:
        wait_mesh(rs, m)
    insert(rs, new, [200, u'later'])
    wait_for('a later row on the old leader', lambda: 200 in ids(rs, leader))
    assert sorted(rs.lag()) == sorted([leader.uri, r2.uri])


def test_promotion_confirms_the_whole_queue_of_the_new_leader(started):
    """A transaction only the promoted replica has: 2.6.0's clear_synchro_queue() with
    the set's quorum would roll it back (not a quorum of members acknowledged it to the
    new leader); an acknowledged write can be in that state with a majority quorum."""
    rs = started(2, 'sync')
    leader, r1, r2 = rs.members
    ask(rs, r2, u'box.cfg{replication = {}}')   # r2 hears nothing more
    ask(rs, leader, u"local space = ... require('fiber').create(function() "
                    u"box.space[space]:insert{7, 'queued'} end)", SPACE)
    wait_for('the queued row on r1', lambda: get(rs, r1, 7) == [[7, u'queued']])
    assert get(rs, r2, 7) == []   # nil
    rs.kill('leader')
    old, new = rs.promote()
    assert new is r1   # the most advanced
    assert get(rs, r1, 7) == [[7, u'queued']]   # confirmed, not rolled back
    wait_for('the queued row on r2', lambda: get(rs, r2, 7) == [[7, u'queued']])
    conn = connect(rs, r1)
    try:   # r2's queue was emptied by the CONFIRM: it acknowledges r1's commits
        assert conn.insert(SPACE, [8, u'new leader']) == [[8, u'new leader']]
    finally:
        conn.close()
    assert get(rs, r1, 7) == get(rs, r2, 7) == [[7, u'queued']]
