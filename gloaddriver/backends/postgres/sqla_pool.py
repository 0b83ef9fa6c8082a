"""The SQLAlchemy pool of the Engine over gloaddriver's pool (``sqla`` says what it does
and why). Imported only where SQLAlchemy is installed: it subclasses SQLAlchemy's Pool.
"""
from __future__ import absolute_import, division, print_function

import gevent
import psycopg2
from sqlalchemy import pool as sapool

from gloaddriver.py23 import clock

getcurrent = gevent.getcurrent


class _ResetOpenOnly(object):
    """The engine's dialect as the pool uses it, whose reset on return (a rollback, or a
    commit) skips a connection psycopg2 has already closed: an op whose deadline closed
    its connection under it. SQLAlchemy's own pool would log that reset's error with a
    traceback, once per timed-out op; the op has failed already and counts once."""

    def __init__(self, dialect):
        self._wrapped = dialect

    def __getattr__(self, name):
        return getattr(self._wrapped, name)

    def do_rollback(self, fairy):
        if not _closed(fairy):
            self._wrapped.do_rollback(fairy)

    def do_commit(self, fairy):
        if not _closed(fairy):
            self._wrapped.do_commit(fairy)


def _closed(fairy):
    conn = getattr(fairy, 'dbapi_connection', fairy)
    return conn is None or conn.closed


class Bridge(sapool.Pool):
    """SQLAlchemy's pool interface over gloaddriver's ``pool.Pool``."""

    def __init__(self, ours, deadlines):
        sapool.Pool.__init__(self, self._lend)
        self._ours = ours
        self._active = deadlines.active
        self._records = {}     # Pooled -> its SQLAlchemy record
        self._next = None      # the connection _lend hands to a record being made
        # Greenlets whose op's deadline was thrown in while they held a connection. The
        # timeout that psycopg2 raised is gone by the time the op fails: SQLAlchemy's
        # rollback on the connection psycopg2 closed raises its own error in its place.
        self.expired = set()

    @property
    def _dialect(self):
        return self._reset_dialect

    @_dialect.setter
    def _dialect(self, dialect):
        # Set by SQLAlchemy's Pool and again by create_engine: see _ResetOpenOnly.
        self._reset_dialect = _ResetOpenOnly(dialect)

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
            self.expired.discard(g)
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
        if ticket is None:
            return
        if self._active.get(g) is ticket:
            del self._active[g]
        else:                          # the sweeper took it: the timeout was thrown in
            self.expired.add(g)

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
        # This connection only: see sqla's text.
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
