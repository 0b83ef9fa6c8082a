"""The user's own SQL on the pool: the connection a ``--script`` op holds (its runs are
``script_run``'s), and the ``db`` of a --workload-file.

Both hold one pooled connection for a whole op (a script's commands, a
transaction) within the op timeout, as the built-in ops hold one for a
statement: the same deadline sweeper, the same error translation, and a
transaction left open by a failure is rolled back before the connection goes
back to the pool.
"""
from __future__ import absolute_import, division, print_function

import contextlib

import gevent
import psycopg2
import psycopg2.extensions

from gloaddriver import errors
from gloaddriver.py23 import clock
from gloaddriver.backends.postgres import pool as pgpool

_IDLE = psycopg2.extensions.TRANSACTION_STATUS_IDLE


def holder(pool, deadlines, password):
    """held() -> a context manager lending one pooled connection within the op timeout."""
    active = deadlines.active
    getcurrent = gevent.getcurrent

    @contextlib.contextmanager
    def held():
        g = getcurrent()
        if g in active:
            # One op holds one connection: a statement on db inside db.transaction()
            # would run outside the transaction and drop its deadline.
            raise RuntimeError('db.execute() inside db.transaction(): use tx.execute()')
        active[g] = clock()   # the op's start, and its ticket (Deadlines)
        item = None
        try:
            item = pool.get()
            yield item
        except errors.RequestTimeout:
            if item is not None:
                item.broken = True   # psycopg2 closed it when the timeout was thrown in
            raise
        except psycopg2.Error as e:
            raise pgpool.translate(e, item, password)
        finally:
            active.pop(g, None)      # the rollback below runs outside the op's deadline
            if item is not None:
                try:
                    _end_transaction(item)
                finally:
                    pool.put(item)
    return held


def _end_transaction(item):
    """Roll back what a failed op left open, so the next op starts clean."""
    conn = item.conn
    if item.broken or conn.closed or conn.get_transaction_status() == _IDLE:
        return
    try:
        item.cur.execute('ROLLBACK')
    except Exception:
        item.broken = True


def _result(cur):
    """Rows of a query, or the number of rows a statement changed."""
    return cur.fetchall() if cur.description is not None else cur.rowcount


class Transaction(object):
    """The cursor of one transaction: ``execute(sql, params)`` -> rows or rowcount."""

    __slots__ = ('_cur',)

    def __init__(self, cur):
        self._cur = cur

    def execute(self, sql, params=None):
        self._cur.execute(sql, params)
        return _result(self._cur)

    def fetchone(self, sql, params=None):
        self._cur.execute(sql, params)
        return self._cur.fetchone()


class Client(object):
    """The ``db`` a --workload-file gets on PostgreSQL: statements on the pool.

    ``db.execute(sql, params)`` runs one statement (autocommit) and returns its
    rows, or the number of rows it changed; ``db.fetchone(sql, params)`` the first
    row or None. ``with db.transaction() as tx:`` holds one connection for
    ``tx.execute(...)`` calls between BEGIN and COMMIT (rolled back if the block
    raises). Parameters use psycopg2's ``%s`` / ``%(name)s`` style.

    SQLAlchemy on the same pool (``sqla``): ``db.engine`` is the run's Engine, and
    ``db.session(**options)`` a new ``Session`` on it (use it as ``with db.session()
    as session:``; the options go to ``Session``).
    """

    def __init__(self, held, engine=None):
        self._held = held
        self._engine = engine     # () -> the run's Engine, made at the first call

    @property
    def engine(self):
        return self._engine()     # without SQLAlchemy: a ConfigError saying what to install

    def session(self, **options):
        engine = self._engine()
        from sqlalchemy.orm import Session
        return Session(engine, **options)

    def execute(self, sql, params=None):
        with self._held() as item:
            item.cur.execute(sql, params)
            return _result(item.cur)

    def fetchone(self, sql, params=None):
        with self._held() as item:
            item.cur.execute(sql, params)
            return item.cur.fetchone()

    @contextlib.contextmanager
    def transaction(self):
        with self._held() as item:
            item.cur.execute('BEGIN')
            yield Transaction(item.cur)
            item.cur.execute('COMMIT')
