"""The user's own SQL on the pool: ``--script`` ops, and the ``db`` of a --workload-file.

Both hold one pooled connection for a whole op (a script's statements, a
transaction) within the op timeout, as the built-in ops hold one for a
statement: the same deadline sweeper, the same error translation, and a
transaction left open by a failure is rolled back before the connection goes
back to the pool.
"""
from __future__ import absolute_import, division, print_function

import contextlib
import re

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
    timeout = deadlines.timeout
    getcurrent = gevent.getcurrent

    @contextlib.contextmanager
    def held():
        g = getcurrent()
        if g in active:
            # One op holds one connection: a statement on db inside db.transaction()
            # would run outside the transaction and drop its deadline.
            raise RuntimeError('db.execute() inside db.transaction(): use tx.execute()')
        active[g] = (clock() + timeout,)
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


# What a PREPARE without values may refuse of a statement that runs with them: a
# parameter whose type only its value tells ($1 + $2). Not a fault of the script.
_TYPE_UNKNOWN = ('42P18', '42725', '42883', '42804')
# What PREPARE takes; any other statement (SET, CREATE, LOCK...) runs unproven.
_PREPARABLE = re.compile(r'^\s*(SELECT|INSERT|UPDATE|DELETE|VALUES|WITH|TABLE|MERGE)\b', re.I)


def prepare_scripts(cur, scripts, keep=True):
    """PREPARE every statement of every script on this connection (--prepared); a
    statement the server refuses is a SchemaError naming its script, line and
    statement. ``keep=False`` only proves them (each deallocated at once, and a
    parameter type the server cannot infer without a value let pass): the check
    before a run without --prepared."""
    for i, script in enumerate(scripts):
        for j, s in enumerate(script.statements):
            if s.control or (not keep and not _PREPARABLE.match(s.prepared_sql)):
                continue
            name = statement_name(i, j)
            try:
                cur.execute('PREPARE %s AS %s' % (name, s.prepared_sql))
            except psycopg2.Error as e:
                if not keep and e.pgcode in _TYPE_UNKNOWN:
                    continue
                raise errors.SchemaError('script %s, line %d (%s): %s' % (
                    script.path, s.line, _first_words(s.prepared_sql),
                    ' '.join(str(e).split())))
            if not keep:
                cur.execute('DEALLOCATE %s' % name)


def _first_words(sql, most=60):
    text = ' '.join(sql.split())
    return text if len(text) <= most else text[:most - 3] + '...'


def statement_name(script_index, statement_index):
    return 'gl_script_%d_%d' % (script_index, statement_index)


def script_op(index, script, prepared, held, rnd, worker):
    """fn(key): one run of ``script`` on one connection; it returns nothing to judge."""
    variables = script.variables
    steps = []
    for j, s in enumerate(script.statements):
        if s.control:
            steps.append((s.sql, None))
        elif prepared:
            steps.append(('EXECUTE %s (%s)' % (statement_name(index, j),
                                               ', '.join(['%s'] * len(s.names)))
                          if s.names else 'EXECUTE %s' % statement_name(index, j), s.names))
        else:
            steps.append((s.sql, True))

    def op(key):
        v = variables(key, worker, rnd)
        with held() as item:
            execute = item.cur.execute
            for sql, names in steps:
                if names is None:
                    execute(sql)
                elif names is True:
                    execute(sql, v)
                else:
                    execute(sql, [v[n] for n in names])
    return op


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
    """

    def __init__(self, held):
        self._held = held

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
