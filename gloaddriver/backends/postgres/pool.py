"""psycopg2 made cooperative under gevent, and a blocking LIFO connection pool.

Two wait callbacks make psycopg2 yield to the hub instead of blocking:

* ``psycogreen``: psycogreen's stock callback, which builds a new io watcher
  for every wait;
* ``cached`` (default): the same loop, but each connection keeps one read and
  one write watcher for its life once connected (while it connects, libpq may change
  its socket). Measured in docs/benchmarks.md ("PostgreSQL").

A psycopg2 connection cannot be shared by greenlets, hence the pool: LIFO (the
most recently used, warmest connection first), created lazily up to ``size``,
closed or broken connections discarded and replaced. libpq's connect_timeout
does not work in green mode, so a gevent timeout bounds connecting; any
exception inside a wait callback makes psycopg2 close that connection, and the
pool notices.
"""
from __future__ import absolute_import, division, print_function

import weakref
from collections import deque

import gevent
import psycopg2
import psycopg2.extensions
from gevent.event import AsyncResult
from gevent.hub import get_hub

from gloaddriver import errors
from gloaddriver.py23 import PY2, clock
from gloaddriver.backends.postgres.sqlstate import pooler_error, server_error

_POLL_OK = psycopg2.extensions.POLL_OK
_POLL_READ = psycopg2.extensions.POLL_READ
_POLL_WRITE = psycopg2.extensions.POLL_WRITE

# fd -> (read watcher, write watcher, weakref to the connection); entries go when the
# pool drops a connection.
_watchers = {}


def _pair(hub, conn, fd):
    """The cached (read, write) watchers of ``conn`` on ``fd``."""
    pair = _watchers.get(fd)
    if pair is None or pair[2]() is not conn:
        # New, or left by a connection closed without forget() whose fd number this one
        # reuses: epoll dropped the old fd at its close, so that watcher would never fire.
        if pair is not None:
            pair[0].close()
            pair[1].close()
        loop = hub.loop
        pair = _watchers[fd] = (loop.io(fd, 1), loop.io(fd, 2), weakref.ref(conn))
    return pair


def _connect_wait(hub, conn):
    """A connection's first wait, its connect: a new watcher for every wait.

    libpq may close a socket and open another meanwhile (a multi-host DSN: a host that
    refused, or that is not the read-write one asked for), often on the same number.
    epoll forgets a socket at its close; a watcher kept across the change would wait on
    the new one unregistered (for ever, when libev sees no change of events on the fd),
    or on a closed one (libev aborts the process: "I/O watcher with invalid fd"). A new
    watcher makes libev register the descriptor afresh."""
    loop = hub.loop
    while True:
        state = conn.poll()
        if state == _POLL_OK:
            return
        if state not in (_POLL_READ, _POLL_WRITE):
            raise psycopg2.OperationalError('bad poll state %r' % (state,))
        watcher = loop.io(conn.fileno(), 1 if state == _POLL_READ else 2)
        try:
            hub.wait(watcher)
        finally:
            watcher.close()


def _cached_wait(conn, timeout=None):
    hub = get_hub()
    pair = _watchers.get(conn.fileno())
    if pair is None or pair[2]() is not conn:
        _connect_wait(hub, conn)
        _pair(hub, conn, conn.fileno())    # its socket is for good now: watched from here
        return
    while True:
        state = conn.poll()
        if state == _POLL_OK:
            return
        if state == _POLL_READ:
            hub.wait(pair[0])
        elif state == _POLL_WRITE:
            hub.wait(pair[1])
        else:
            raise psycopg2.OperationalError('bad poll state %r' % (state,))


def install(kind):
    """Make psycopg2 cooperative; must run before any connection is made.

    Also: on Python 2 psycopg2 returns text columns as byte strings unless
    its UNICODE typecasters are registered; gloaddriver's model is text =
    unicode on both interpreters, so they are.
    """
    if PY2:
        psycopg2.extensions.register_type(psycopg2.extensions.UNICODE)
        psycopg2.extensions.register_type(psycopg2.extensions.UNICODEARRAY)
    if kind == 'psycogreen':
        from psycogreen.gevent import patch_psycopg
        patch_psycopg()
    elif kind == 'cached':
        psycopg2.extensions.set_wait_callback(_cached_wait)
    else:
        raise ValueError('unknown wait callback %r' % (kind,))


def forget(fd):
    """Drop the cached watchers of a connection (by its fd) that is going away."""
    pair = _watchers.pop(fd, None)
    if pair is not None:
        pair[0].close()
        pair[1].close()


class Pooled(object):
    """A connection with its reusable cursor and per-connection state."""
    __slots__ = ('conn', 'cur', 'prepared', 'broken', 'fd')

    def __init__(self, conn):
        self.conn = conn
        self.fd = conn.fileno()   # kept: a closed connection no longer tells it
        self.cur = conn.cursor()
        self.prepared = False
        self.broken = False


def scrub(text, secret):
    """Never let a password reach a message, even inside a quoted DSN."""
    text = str(text).strip().splitlines()[0] if str(text).strip() else str(text)
    return text.replace(secret, '***') if secret else text


class Deadlines(object):
    """Per-op timeouts from one sweeper greenlet instead of a timer per op.

    An op registers the clock's reading at its start for its greenlet and removes it
    when done: a dict store and a pop, where a gevent.Timeout costs an object
    and a timer start/stop. That float object is also the op's ticket. The sweeper
    throws RequestTimeout into greenlets whose op began a timeout ago; the throw
    re-checks the ticket by identity, so an op that finished meanwhile is never hit,
    and never its successor. Precision is the tick (timeout/10, at most 0.1 s).
    """

    def __init__(self, timeout):
        self.timeout = timeout
        self.active = {}
        self._hub = get_hub()
        self._greenlet = None

    def start(self):
        if self._greenlet is None:
            from gloaddriver.py23 import spawn_named
            self._greenlet = spawn_named('pg-deadlines', self._sweep)

    def _sweep(self):
        tick = min(0.1, max(self.timeout / 10.0, 0.005))
        callback = self._hub.loop.run_callback
        while True:
            gevent.sleep(tick)
            began = clock() - self.timeout   # ops that began before this are late
            for g, entry in list(self.active.items()):
                if entry <= began:
                    callback(self._expire, g, entry)

    def _expire(self, g, entry):
        if self.active.get(g) is entry:
            del self.active[g]
            g.throw(errors.RequestTimeout('no reply from PostgreSQL within %.1f s' % self.timeout))

    def stop(self):
        if self._greenlet is not None:
            self._greenlet.kill()
            self._greenlet = None


class Pool(object):
    """Connections lent one op at a time: the warmest free one, a new one up to ``size``,
    or, when all are out, the next one given back (first come, first served).

    The free connections are a deque and the waiting greenlets another, of their
    AsyncResults: lending a free connection, the case of every op while the pool is big
    enough, is a pop and its return an append (a gevent queue costs four times that).
    While a greenlet waits no connection is free, since ``put`` hands a returned one to
    the first waiter."""

    def __init__(self, dsn, size, password=None, connect_timeout=3.0, timeout=5.0,
                 setup=None, autocommit=True):
        self.dsn = dsn
        self.size = size
        self.password = password
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.setup = setup
        self.autocommit = autocommit
        # Free connections, the warmest last. A deque, not a list: with every connection
        # out but one, each op empties the free list and fills it again, and a list
        # would shrink and grow its storage (a realloc) both times.
        self._idle = deque()
        self._waiting = deque()  # an AsyncResult per greenlet waiting for a connection
        self.created = 0        # open connections, in use or free
        self.connects = 0       # connections made over the run
        self.discarded = 0
        self.peak = 0
        self.member = None      # host:port of the server the last connection reached

    def connect(self, setup=True, name=None):
        """One new connection, bounded by connect_timeout; raises NetworkError. ``name``:
        its application_name, sent with the login, so that it is named from its first
        moment on the server (the driver's own sampling connections, MONITOR_NAME: one
        named by a statement after it logged in was seen, unnamed, by a sample)."""
        timer = gevent.Timeout(self.connect_timeout)
        timer.start()
        try:
            conn = psycopg2.connect(self.dsn, application_name=name) if name else \
                psycopg2.connect(self.dsn)
        except gevent.Timeout as t:
            if t is not timer:
                raise
            raise errors.NotConnected('no answer from PostgreSQL within %.1f s'
                                      % self.connect_timeout)
        except psycopg2.Error as e:
            raise errors.NotConnected(scrub(e, self.password))
        finally:
            timer.close()
        conn.autocommit = self.autocommit
        info = getattr(conn, 'info', None)     # psycopg2 2.8 and later
        if info is not None:
            # A multi-host DSN: which of its hosts libpq settled on.
            self.member = '%s:%s' % (info.host, info.port)
        item = Pooled(conn)
        if setup and self.setup is not None:
            try:
                self.setup(item)
            except psycopg2.Error as e:
                forget(item.fd)
                conn.close()
                raise errors.SchemaError('cannot prepare a new connection: %s'
                                         % scrub(e, self.password))
        self.connects += 1
        return item

    def fill(self, n):
        """Open up to ``n`` connections now, together, into the free list. A run's
        connections are made before its first phase, as pgbench makes its clients'
        before it starts the clock: a connect, its authentication and a new server
        process's first query would otherwise be counted in the first ops' time. Best
        effort: a connection that cannot be made now is made, as before, by the first
        op that needs it (and its failure is counted there)."""
        def one():
            try:
                item = self.connect()
            except errors.GloadError:   # down, refused, or its setup failed: left to the op
                self._release()
                return
            self.put(item)
        n = min(n, self.size) - self.created
        if n > 0:
            self.created += n       # reserved first, as _new does
            self.peak = max(self.peak, self.created)
            gevent.joinall([gevent.spawn(one) for _ in range(n)])

    def get(self):
        """A connection: a free one, a new one, or the next one given back."""
        idle = self._idle
        if idle:
            return idle.pop()
        if self.created < self.size:
            return self._new()
        return self._wait()

    def _wait(self):
        """Wait, up to the pool's timeout, for ``put`` to hand over a connection (or, when
        one was dropped, its slot: then this greenlet opens the new one)."""
        slot = AsyncResult()
        self._waiting.append(slot)
        try:
            slot.wait(self.timeout)
        except BaseException:
            # Thrown in (the op's deadline) or killed: what was handed over goes on.
            self._abandon(slot)
            raise
        if not slot.ready():
            self._waiting.remove(slot)
            raise errors.RequestTimeout('no free connection in a pool of %d within %.1f s'
                                        % (self.size, self.timeout))
        item = slot.value
        return self._new(reserved=True) if item is None else item

    def _abandon(self, slot):
        if not slot.ready():
            self._waiting.remove(slot)
        elif slot.value is None:
            self._release()
        else:
            self.put(slot.value)

    def _new(self, reserved=False):
        # Reserve the slot first: connecting yields, and others must not overshoot.
        if not reserved:
            self.created += 1
            if self.created > self.peak:
                self.peak = self.created
        deadline = clock() + self.timeout
        delay = 0.05
        try:
            while True:
                try:
                    return self.connect()
                except errors.NotConnected:
                    # Server down or restarting: retry with backoff until the
                    # op's deadline instead of failing thousands of ops a second.
                    if clock() + delay > deadline:
                        raise
                    gevent.sleep(delay)
                    # Capped low, so a server that comes back is found within 0.25 s.
                    delay = min(delay * 2, 0.25)
        except BaseException:
            self._release()
            raise

    def put(self, item):
        if item.broken or item.conn.closed:
            self._drop(item)
        elif self._waiting:
            self._waiting.popleft().set(item)
        else:
            self._idle.append(item)

    def _release(self):
        """A reserved slot is free again: a waiting greenlet takes it (and connects),
        or the count of open connections goes down."""
        if self._waiting:
            self._waiting.popleft().set(None)
        else:
            self.created -= 1

    def _drop(self, item):
        self.discarded += 1
        forget(item.fd)
        try:
            item.conn.close()
        except psycopg2.Error:
            pass
        self._release()

    def close(self):
        idle = list(self._idle)
        self._idle.clear()      # in place: statement_runner holds the deque
        for item in idle:
            forget(item.fd)
            item.conn.close()
        self.created = 0


def statement_runner(pool, deadlines, password):
    """run(sql, params, fetch) on a pooled connection within the op timeout.

    fetch: 'one' -> the first row or () (a miss), 'all' -> rows, 'count' -> rowcount,
    'result' -> rows of a query, else rowcount.

    It lends a free connection and takes it back itself, as ``Pool.get`` and ``Pool.put``
    would (a pop from the free list, and an append when the connection is sound and no
    greenlet waits), and calls them for everything else: two Python calls fewer for
    every op (``scripts/bench pg-path`` counts what each layer of the path costs).
    """
    active = deadlines.active
    getcurrent = gevent.getcurrent
    idle, waiting = pool._idle, pool._waiting
    get, put = pool.get, pool.put

    def run(sql, params, fetch):
        g = getcurrent()
        active[g] = clock()   # the op's start, and its ticket (Deadlines)
        try:
            item = idle.pop() if idle else get()
            try:
                cur = item.cur
                cur.execute(sql, params)
                if fetch == 'one':
                    return cur.fetchone() or ()
                if fetch == 'all' or fetch == 'result' and cur.description is not None:
                    return cur.fetchall()
                return cur.rowcount
            except errors.RequestTimeout:
                # Thrown through the wait callback: psycopg2 has closed the
                # connection, and the pool must not hand it out again.
                item.broken = True
                raise
            except psycopg2.Error as e:
                raise translate(e, item, password)
            finally:
                if item.broken or waiting or item.conn.closed:
                    put(item)
                else:
                    idle.append(item)
        finally:
            active.pop(g, None)
    return run


# The driver's own sampling connections say so, and are not counted as load.
MONITOR_NAME = 'gloaddriver-monitor'


def translate(exc, item, password):
    """A psycopg2 error as our exception; marks the connection broken when it is."""
    if getattr(exc, 'pgcode', None) is None or item.conn.closed:
        item.broken = True
        # A pooler's FATAL before it closed the connection (server conn crashed?) is
        # named by what it says, not as a network error.
        text = str(exc).strip().splitlines()
        lost = pooler_error(getattr(exc, 'pgcode', None) or '08006', text[0] if text else '')
        return lost or errors.NetworkError(scrub(exc, password) or exc.__class__.__name__)
    return as_op_error(exc, password)


def as_op_error(exc, password):
    """A psycopg2 error as the OpError it means: a server error by its SQLSTATE, or,
    without one, the connection lost."""
    pgcode = getattr(exc, 'pgcode', None)
    if pgcode is None:
        return errors.NetworkError(scrub(exc, password) or exc.__class__.__name__)
    message = (getattr(exc, 'pgerror', None) or str(exc)).strip().splitlines()
    return server_error(pgcode, message[0] if message else pgcode)
