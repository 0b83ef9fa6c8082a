"""The user's own request as the op: ``--call FUNC``, ``--eval EXPR`` or ``--sql STATEMENT``,
with ``--args`` filled per op (gloaddriver.workload.template).

One op is one request. A call or eval succeeds whatever it returns (its result
is not judged: None is success); an SQL query that returns no rows, or DML that
changes none, is a miss. SQL goes as a prepared statement where the server has
them (Tarantool 2.3 and later: one PREPARE per connection at open), else as text.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors
from gloaddriver._compat import PY2
from gloaddriver.backends.tarantool import protocol as P

ER_WRONG_QUERY_ID = 211   # "Prepared statement with id N does not exist"


def prepare(conn, sql):
    """The statement id on this connection, or the text when the server cannot prepare."""
    try:
        return conn.prepare(sql)
    except errors.ServerError as e:
        if e.code in (48, 0):   # ER_UNKNOWN_REQUEST_TYPE: a server older than 2.3
            return sql
        raise errors.SetupError('Tarantool at %s cannot prepare --sql %r: %s'
                                % (conn.address, sql, e.message))


def buffered_op(conn, kind, target, fill, rnd, worker, sql=None):
    """fn(key) sending the request on the buffered connection ``conn``.

    ``target`` is the function name, the Lua expression, or the SQL statement (its
    prepared id, or ``sql`` itself)."""
    request = conn.request
    if kind == 'sql':
        enc = conn.encoder.execute
        info, count = P.SQL_INFO, P.SQL_INFO_ROW_COUNT
        current = [target]

        def op_sql(key):
            args = fill(key, rnd, worker)
            try:
                r = request(enc, current[0], args)
            except errors.ServerError as e:
                # A prepared statement belongs to its session: after a reconnect the
                # server no longer knows the id. Prepare again, once, and go on.
                if e.code != ER_WRONG_QUERY_ID:
                    raise
                current[0] = prepare(conn, sql)
                r = request(enc, current[0], args)
            return r if r.__class__ is list else r[info][count]
        return op_sql
    enc = conn.encoder.call if kind == 'call' else conn.encoder.eval

    def op_request(key):
        request(enc, target, fill(key, rnd, worker))
    return op_request


def sync_op(conn, kind, target, fill, rnd, worker, translate):
    """The same through tarantool-python (the sync baseline)."""
    method = {'call': conn.call, 'eval': conn.eval, 'sql': conn.execute}[kind]
    if PY2:
        target = target.encode('utf-8')   # tarantool-python 0.7 asserts a native str

    def op_sync(key):
        try:
            r = method(target, fill(key, rnd, worker))
        except Exception as e:
            raise translate(e)
        if kind == 'sql':
            return r.data if r.data is not None else r.affected_row_count
        return None
    return op_sync
