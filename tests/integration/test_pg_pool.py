"""The psycopg2 connection pool and the op deadlines (backends/postgres/pool.py) against a
real private cluster: the warmest connection first, a greenlet that waits for one given
back, a wait that times out, a broken connection replaced for the greenlet waiting, a
waiter thrown out of its wait that loses nothing, and the sweeper that throws
RequestTimeout only into an op that is late."""
from __future__ import absolute_import, division, print_function

import gevent
import pytest

from gloaddriver import errors
from gloaddriver.backends.postgres import pool as pgpool
from gloaddriver.backends.postgres.server import PostgresServer
from gloaddriver.py23 import clock

psycopg2 = pytest.importorskip('psycopg2')


@pytest.fixture(scope='module')
def pg():
    pgpool.install('cached')
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def make_pool(pg):
    pools = []

    def make(size, timeout=5.0):
        p = pgpool.Pool(pg.dsn, size, timeout=timeout)
        pools.append(p)
        return p
    yield make
    for p in pools:
        p.close()


def backend_pid(item):
    item.cur.execute('SELECT pg_backend_pid()')
    return item.cur.fetchone()[0]


def test_the_last_connection_given_back_is_lent_first(make_pool):
    pool = make_pool(3)
    a, b = pool.get(), pool.get()
    assert pool.created == 2 and pool.connects == 2
    pool.put(a)
    pool.put(b)
    assert pool.get() is b
    assert pool.get() is a
    c = pool.get()                       # none free: a new one, up to the size
    assert c not in (a, b) and pool.created == pool.peak == 3


def test_a_greenlet_waits_for_a_connection_given_back(make_pool):
    pool = make_pool(1)
    held = pool.get()
    waiter = gevent.spawn(pool.get)
    gevent.sleep(0.05)
    assert not waiter.ready()            # the pool is out: it waits
    pool.put(held)
    assert waiter.get(timeout=5) is held
    assert pool.created == 1 and pool.connects == 1 and not pool._idle


def test_waiters_are_served_first_come_first_served(make_pool):
    pool = make_pool(1)
    held = pool.get()
    order = []

    def take(name):
        item = pool.get()
        order.append(name)
        gevent.sleep(0.01)
        pool.put(item)
    gs = [gevent.spawn(take, n) for n in 'abc']
    gevent.sleep(0.05)
    pool.put(held)
    gevent.joinall(gs, timeout=5, raise_error=True)
    assert order == ['a', 'b', 'c']
    assert pool.get() is held and pool.created == 1


def test_a_wait_that_lasts_the_timeout_fails_and_leaves_nothing_behind(make_pool):
    pool = make_pool(1, timeout=0.2)
    held = pool.get()
    t0 = clock()
    with pytest.raises(errors.RequestTimeout) as e:
        pool.get()
    assert clock() - t0 >= 0.19
    assert 'no free connection in a pool of 1' in str(e.value)
    assert not pool._waiting
    pool.put(held)                       # no waiter left to hand it to: back in the list
    assert pool.get() is held


def test_a_broken_connection_given_back_makes_room_for_the_waiter(make_pool):
    pool = make_pool(1)
    held = pool.get()
    pid = backend_pid(held)
    waiter = gevent.spawn(pool.get)
    gevent.sleep(0.05)
    held.broken = True
    pool.put(held)
    item = waiter.get(timeout=5)
    assert item is not held and held.conn.closed
    assert backend_pid(item) != pid
    assert (pool.created, pool.connects, pool.discarded) == (1, 2, 1)


@pytest.mark.parametrize('handed_over', [False, True])
def test_a_waiter_thrown_out_of_its_wait_loses_no_connection(make_pool, handed_over):
    pool = make_pool(1)
    held = pool.get()
    waiter = gevent.spawn(pool.get)
    gevent.sleep(0.05)
    # Thrown from the hub, as the deadline sweeper throws; when handed over, the
    # connection was given to the waiter before the throw, which comes first.
    gevent.get_hub().loop.run_callback(waiter.throw, errors.RequestTimeout('the op is late'))
    if handed_over:
        pool.put(held)
    waiter.join(timeout=5)
    assert isinstance(waiter.exception, errors.RequestTimeout)
    assert not pool._waiting
    if not handed_over:
        pool.put(held)
    assert pool.get() is held and pool.created == 1


def test_the_deadline_sweeper_throws_only_into_a_late_op():
    # A second's timeout: the quick op (10 ms) is not late even on a busy machine.
    deadlines = pgpool.Deadlines(1.0)
    deadlines.start()
    hits = []

    def op(seconds):
        g = gevent.getcurrent()
        deadlines.active[g] = clock()
        try:
            gevent.sleep(seconds)
        except errors.RequestTimeout as e:
            hits.append(str(e))
            raise
        finally:
            deadlines.active.pop(g, None)
        return 'done'
    try:
        late, quick = gevent.spawn(op, 60), gevent.spawn(op, 0.01)
        gevent.joinall([late, quick], timeout=30)
        assert quick.value == 'done'
        assert isinstance(late.exception, errors.RequestTimeout)
        assert hits == ['no reply from PostgreSQL within 1.0 s']
        assert not deadlines.active
    finally:
        deadlines.stop()
