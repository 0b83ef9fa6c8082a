"""The ``db`` of a --workload-file on the pipelined connector: the calls of the psycopg2
pool's (``user.Client``), on the shared connection of the worker's greenlet.

``db.execute(sql, params)`` returns a query's rows (tuples of the values psycopg2 gives:
the connection reads them as ``row_values`` does) or the rows a statement changed;
``db.fetchone`` the first row or None; ``with db.transaction() as tx:`` runs
``tx.execute`` and ``tx.fetchone`` between BEGIN and COMMIT (ROLLBACK if the block
raises). Parameters in psycopg2's ``%s`` / ``%(name)s`` style, ``%%`` a percent sign.

How, on a socket several greenlets share:

* Each distinct statement is prepared (and described) on the connection the first time
  it runs, with its parameters' types taken from the Python values (int as bigint,
  float as float8, bool, Decimal as numeric, bytes as bytea, dates and times; text and
  None left to the server), as psycopg2's literals would type them; then it is a Bind
  and Execute like any prepared op. A connection keeps at most MAX_STATEMENTS of them.
* A transaction holds the connection: while one is open, the other greenlets' statements
  on that connection wait (up to the op timeout) rather than run inside it.
"""
from __future__ import absolute_import, division, print_function

import binascii
import contextlib
import datetime
import decimal
import re

import gevent
from gevent.event import Event
from gevent.lock import Semaphore

from gloaddriver import errors
from gloaddriver.backends.postgres.kv_pipelined import PipelinedBackend
from gloaddriver.backends.postgres.replies import Rows
from gloaddriver.py23 import PY2

MAX_STATEMENTS = 1000
_PLACEHOLDER = re.compile(r'%\(([^)]*)\)s|%s|%%')
_TEXT = (type(u''), bytes) if PY2 else (str,)
_INTS = (int, long) if PY2 else (int,)     # noqa: F821 (2.7's builtin)
_BYTES = (bytearray, memoryview, buffer) if PY2 else (   # noqa: F821 (2.7's builtin)
    bytes, bytearray, memoryview)


def numbered(sql, params):
    """(``sql`` with psycopg2's placeholders as $1, $2..., the names of ``%(name)s``
    placeholders in their order, or None for positional ones). ``params`` None: the SQL
    as it is, as psycopg2 leaves it."""
    if params is None:
        return sql, None
    names = [] if isinstance(params, dict) else None
    counter = [0]

    def number(m):
        if m.group(0) == '%%':
            return '%'
        if m.group(1) is not None:
            if names is None:
                raise TypeError('%(name)s placeholders need a dict of parameters')
            if m.group(1) not in names:
                names.append(m.group(1))
            return '$%d' % (1 + names.index(m.group(1)))
        if names is not None:
            raise TypeError('%s placeholders need a sequence of parameters')
        counter[0] += 1
        return '$%d' % counter[0]
    return _PLACEHOLDER.sub(number, sql), names


def _array(values):
    """A Python list as a PostgreSQL array literal (its element types left to the
    server)."""
    items = []
    for v in values:
        if v is None:
            items.append(u'NULL')
        elif isinstance(v, (list, tuple)):
            items.append(_array(v))
        else:
            text = adapt(v)[1]
            items.append(u'"%s"' % text.replace(u'\\', u'\\\\').replace(u'"', u'\\"'))
    return u'{%s}' % u','.join(items)


def adapt(value):
    """(the parameter's type oid, 0 for the server to infer; its text, or None)."""
    if value is None:
        return 0, None
    if value is True or value is False:
        return 16, u'true' if value else u'false'
    if isinstance(value, _INTS):
        return 20, u'%d' % value
    if isinstance(value, float):
        return 701, repr(value)
    if isinstance(value, _TEXT):
        return 0, value
    if isinstance(value, decimal.Decimal):
        return 1700, u'%s' % value
    if isinstance(value, _BYTES):
        raw = value.tobytes() if isinstance(value, memoryview) else bytes(value)
        return 17, u'\\x' + binascii.hexlify(raw).decode('ascii')
    if isinstance(value, datetime.datetime):
        return (1114 if value.tzinfo is None else 1184), value.isoformat(' ')
    if isinstance(value, datetime.date):
        return 1082, value.isoformat()
    if isinstance(value, datetime.time):
        return 1083, value.isoformat()
    if isinstance(value, datetime.timedelta):
        return 1186, u'%d days %d seconds %d microseconds' % (
            value.days, value.seconds, value.microseconds)
    if isinstance(value, (list, tuple)):
        return 0, _array(value)
    return 0, u'%s' % (value,)


class Shared(object):
    """What the clients on one connection share: its statements, prepared one at a
    time, and which greenlet's transaction holds it (None: nobody's)."""

    def __init__(self, conn):
        self.conn = conn
        self.shapes = {}            # (sql, dict params?) -> (numbered sql, names)
        self.statements = {}        # (numbered sql, parameter types) -> statement name
        self.preparing = Semaphore()
        self.owner = None
        self.free = Event()
        self.free.set()

    def wait_turn(self, me):
        """Until no other greenlet's transaction holds the connection (op timeout)."""
        while self.owner is not None and self.owner is not me:
            if not self.free.wait(self.conn.timeout):
                raise errors.RequestTimeout('waited %.1f s for a transaction on the shared '
                                            'connection to end' % self.conn.timeout)

    def statement(self, sql, params):
        """(the prepared statement's name for ``sql`` with ``params``, the values as
        text in its parameters' order), preparing it on the first call."""
        shape = self.shapes.get((sql, params.__class__ is dict))
        if shape is None:
            if len(self.shapes) >= MAX_STATEMENTS:
                raise ValueError('more than %d distinct statements on one connection: pass '
                                 'values as parameters, not in the SQL' % MAX_STATEMENTS)
            shape = self.shapes[(sql, params.__class__ is dict)] = numbered(sql, params)
        text, names = shape
        if params is None:
            params = ()
        elif names is not None:
            params = [params[n] for n in names]
        typed = [adapt(v) for v in params]
        key = (text, tuple(t for t, _v in typed))
        name = self.statements.get(key)
        if name is None:
            with self.preparing:
                name = self.statements.get(key)
                if name is None:
                    if len(self.statements) >= MAX_STATEMENTS:
                        raise ValueError('more than %d distinct statements on one connection'
                                         % MAX_STATEMENTS)
                    name = 'u%d' % len(self.statements)
                    self.conn.prepare_described(name, text, key[1])
                    self.statements[key] = name
        return name.encode('ascii'), [v for _t, v in typed]


class Client(object):
    """The ``db`` of one worker on the pipelined connector (see the module's doc)."""

    def __init__(self, shared):
        self._shared = shared

    def _run(self, sql, params, me):
        shared = self._shared
        while True:
            shared.wait_turn(me)
            name, values = shared.statement(sql, params)    # may wait for a round trip
            if shared.owner is None or shared.owner is me:
                # Sent before any other greenlet runs: no transaction can open in between.
                r = shared.conn.rows(name, values)
                return r.decoded() if r.__class__ is Rows else r

    def _outside(self):
        me = gevent.getcurrent()
        if self._shared.owner is me:
            # As on the psycopg2 pool: db inside db.transaction() is a mistake there
            # (another connection, outside the transaction).
            raise RuntimeError('db.execute() inside db.transaction(): use tx.execute()')
        return me

    def execute(self, sql, params=None):
        return self._run(sql, params, self._outside())

    def fetchone(self, sql, params=None):
        rows = self._run(sql, params, self._outside())
        return rows[0] if rows else None

    @contextlib.contextmanager
    def transaction(self):
        me = self._outside()
        shared = self._shared
        shared.wait_turn(me)
        shared.owner = me
        shared.free.clear()
        try:
            shared.conn.simple('BEGIN')
            try:
                yield Transaction(self, me)
            except BaseException:
                try:
                    shared.conn.simple('ROLLBACK')
                except errors.OpError:
                    pass    # a lost connection's server rolled it back
                raise
            shared.conn.simple('COMMIT')
        finally:
            shared.owner = None
            shared.free.set()


class Transaction(object):
    """``tx`` of ``db.transaction()``: statements inside the transaction."""

    __slots__ = ('_client', '_me')

    def __init__(self, client, me):
        self._client = client
        self._me = me

    def execute(self, sql, params=None):
        return self._client._run(sql, params, self._me)

    def fetchone(self, sql, params=None):
        rows = self._client._run(sql, params, self._me)
        return rows[0] if rows else None


class FilePipelinedBackend(PipelinedBackend):
    """--workload-file on --pool-size lazy pipelined connections: each worker's ``db`` on
    the connection its greenlet shares with others (worker modulo the pool)."""

    lazy_rows = True

    def describe(self):
        return PipelinedBackend.describe(self).replace(
            'prepared statements', "the workload file's statements prepared on first use")

    def open(self):
        self._open_connections(lambda _conn: None, [])
        self._shared = [Shared(conn) for conn in self.conns]

    def worker_ops(self, worker):
        return None

    def client(self, worker):
        return Client(self._shared[worker % len(self._shared)])
