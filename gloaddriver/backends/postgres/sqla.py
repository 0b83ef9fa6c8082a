"""SQLAlchemy on the cooperative pool: an Engine whose connections are the pool's own.

A gevent service runs its ORM on psycopg2 made cooperative; so does this Engine. Its
SQLAlchemy pool (``Bridge``) lends the connections of the run's one ``pool.Pool``:
one pool, sized by --pool-size, whose waits, connects and discards are counted once
for every kind of op (a workload file may mix ``db.execute`` and ``db.session()``).

What the bridge does at each checkout, and why:

* The op's deadline starts when its greenlet takes its first connection and ends when
  it gives the last back (``pool.Deadlines``): a Session's transaction is held within
  the op timeout, as ``db.transaction()`` is.
* The pool keeps its connections in autocommit (the other ops need no BEGIN). A
  connection lent to SQLAlchemy leaves it, so SQLAlchemy's transactions are real
  ones; psycopg2 sends nothing for that, it only changes the BEGIN it will send. Given
  back, SQLAlchemy has already rolled back what was open (reset on return).
* One SQLAlchemy record per pooled connection, made the first time that connection is
  lent: the dialect's connect events (its setup queries) run once per connection, as
  with SQLAlchemy's own pool. ``warm`` makes them for the open connections before the
  first phase, outside its figures.
* A connection SQLAlchemy invalidates (a disconnect) is the pool's to drop. Invalidating
  one never recycles every other (SQLAlchemy's own pools do): the pool finds a dead
  connection as an op uses it, as it does for every other op.

Errors stay SQLAlchemy's inside the user's code (so their ``except IntegrityError``
works); the run counts them by what they wrap (``op_error``): a server error by its
SQLSTATE, a lost connection as a network error, anything else as the user's own.
"""
from __future__ import absolute_import, division, print_function

import gevent
import psycopg2

from gloaddriver import errors
from gloaddriver.py23 import PY2, clock
from gloaddriver.backends.postgres import pool as pgpool

INSTALL = ("pip install 'gloaddriver[sqlalchemy]' (SQLAlchemy %s)"
           % ('1.4, its last series on Python 2.7' if PY2 else '2.x'))


def need(what):
    """Import SQLAlchemy, or say in one line (ConfigError, exit 2) how to get it."""
    try:
        import sqlalchemy
    except ImportError:
        raise errors.ConfigError('%s needs SQLAlchemy, which is not installed: %s'
                                 % (what, INSTALL))
    return sqlalchemy


def uses_sqlalchemy(module):
    """True when a workload file's code reads ``db.engine`` or calls ``db.session``: the
    names its functions' code objects look up (nested ones too), checked before the run
    so that a missing SQLAlchemy is one line, not a failure in every op."""
    import types
    seen = []
    stack = [v.__code__ for v in vars(module).values()
             if isinstance(v, types.FunctionType) and v.__module__ == module.__name__]
    while stack:
        code = stack.pop()
        seen.extend(code.co_names)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return 'engine' in seen or 'session' in seen


def engine(pool, deadlines, **options):
    """An Engine on ``pool`` (a ``pool.Pool``), its ops within ``deadlines``."""
    sqlalchemy = need('db.engine')
    bridge = _bridge_class()(pool, deadlines)
    return sqlalchemy.create_engine('postgresql+psycopg2://', pool=bridge, **options)


def warm(engine_):
    """The dialect's setup of every open connection of the pool, now (before the first
    phase): its first connection's inspection of the server and each one's own queries."""
    engine_.pool.warm()


_BRIDGE = []


def _bridge_class():
    """The Bridge class, made once SQLAlchemy is imported (it subclasses its Pool)."""
    if not _BRIDGE:
        _BRIDGE.append(_make_bridge())
    return _BRIDGE[0]


def _make_bridge():
    from sqlalchemy import pool as sapool
    getcurrent = gevent.getcurrent

    class Bridge(sapool.Pool):
        """SQLAlchemy's pool interface over gloaddriver's pool (see the module's text)."""

        def __init__(self, ours, deadlines):
            sapool.Pool.__init__(self, self._lend)
            self._ours = ours
            self._active = deadlines.active
            self._records = {}     # Pooled -> its SQLAlchemy record
            self._next = None      # the connection _lend hands to a record being made

        def _lend(self, record):
            # Called by the record being made, before anything can yield: no other
            # greenlet can have changed _next meanwhile.
            item, self._next = self._next, None
            if item is None:
                raise psycopg2.OperationalError('no pooled connection to lend')
            return item.conn

        def _record(self, item):
            rec = self._records.get(item)
            if rec is None:
                self._next = item
                rec = self._records[item] = self._create_connection()
                rec.gloaddriver_item = item
            return rec

        def _do_get(self):
            g = getcurrent()
            ticket = None
            if g not in self._active:      # the op's first connection: its deadline
                ticket = self._active[g] = clock()
            try:
                item = self._ours.get()
            except BaseException:
                self._end_deadline(g, ticket)
                raise
            try:
                item.conn.autocommit = False
                rec = self._record(item)
            except BaseException:
                item.broken = True
                self._records.pop(item, None)
                self._ours.put(item)
                self._end_deadline(g, ticket)
                raise
            rec.gloaddriver_op = (g, ticket)
            return rec

        def _end_deadline(self, g, ticket):
            if ticket is not None and self._active.get(g) is ticket:
                del self._active[g]

        def _do_return_conn(self, rec):
            item = rec.gloaddriver_item
            g, ticket = rec.gloaddriver_op
            rec.gloaddriver_op = (None, None)
            try:
                if rec.dbapi_connection is None or item.conn.closed:
                    item.broken = True     # SQLAlchemy invalidated it, or psycopg2 closed it
                else:
                    item.conn.autocommit = True
            except psycopg2.Error:
                item.broken = True
            finally:
                if item.broken:
                    self._records.pop(item, None)
                self._ours.put(item)
                self._end_deadline(g, ticket)

        def _invalidate(self, connection, exception=None, _checkin=True):
            # This connection only: see the module's text.
            if _checkin and getattr(connection, 'is_valid', False):
                connection.invalidate(exception)

        def warm(self):
            for item in list(self._ours._idle):
                item.conn.autocommit = False
                try:
                    self._record(item)
                finally:
                    if not item.conn.closed:
                        item.conn.autocommit = True

        def recreate(self):
            # engine.dispose() makes a new pool; the run's pool stays the one pool.
            return self

        def dispose(self):
            pass

        def status(self):
            ours = self._ours
            return 'gloaddriver pool: size %d, open %d, free %d' % (
                ours.size, ours.created, len(ours._idle))

    return Bridge


def op_error(exc, password=None):
    """What a failed op's exception means to the run: a SQLAlchemy error (or psycopg2's)
    as the OpError it wraps, so the report counts it as the built-in ops' failures are
    (``server:SQLSTATE``, ``network``, ``timeout``) and an outage opens on a lost server;
    anything else as it is."""
    orig = exc
    for _depth in range(3):     # SQLAlchemy wraps the driver's error in ``orig``
        inner = getattr(orig, 'orig', None)
        if inner is None or inner is orig:
            break
        orig = inner
    if isinstance(orig, errors.OpError):
        return orig
    if isinstance(orig, psycopg2.Error):
        return pgpool.as_op_error(orig, password)
    return exc
