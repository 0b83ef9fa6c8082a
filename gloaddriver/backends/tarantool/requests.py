"""The user's own request as the op: ``--call FUNC``, ``--eval EXPR`` or ``--sql STATEMENT``,
with ``--args`` filled per op (gloaddriver.workload.template).

One op is one request. A call or eval succeeds whatever it returns (its result
is not judged: None is success); an SQL query that returns no rows, or DML that
changes none, is a miss. SQL goes as a prepared statement where the server has
them (Tarantool 2.3 and later: one PREPARE per connection at open), else as text.

Before the first op the request is proven on the server (``check``): a --call
function exists, an --eval expression compiles, an --sql statement prepares (or,
on a server that cannot prepare, explains). A typo is then one line and exit 3,
as a missing space is, not a failed op per key. The number of ``?`` / ``$n``
placeholders of --sql is matched against --args before connecting
(``placeholders``).
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors
from gloaddriver.py23 import PY2
from gloaddriver.backends.tarantool import protocol as P

ER_WRONG_QUERY_ID = 211   # "Prepared statement with id N does not exist"

# What IPROTO_CALL would find for a name: a persistent function (box.func, 2.2 and
# later; _func on older servers), else a Lua global reached through "." and ":" (as
# the server resolves "a.b:c"). Returns the type found, or nil.
_FIND_FUNCTION = u"""local name = ...
if box.func ~= nil and box.func[name] ~= nil then return 'function' end
if box.space._func.index.name:get(name) ~= nil then return 'function' end
local ok, v = pcall(function()
    local v = _G
    for part in name:gmatch('[^.:]+') do
        if type(v) ~= 'table' and type(v) ~= 'userdata' and type(v) ~= 'cdata' then
            return nil
        end
        v = v[part]
    end
    return v
end)
if not ok or v == nil then return nil end
return type(v)"""
_COMPILES = u"local f, err = loadstring(...) return err"
_CALLABLE = ('function', 'table', 'userdata', 'cdata')   # a table or cdata may have __call


def placeholders(sql):
    """How many values an SQL statement binds: each ``?`` one, each distinct ``$n``,
    ``:name`` or ``@name`` one; quoted text, quoted names and comments skipped."""
    import re
    plain = re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", ' ', sql,
                   flags=re.S)
    named = set(re.findall(r'(?<![\w:])[$:@][A-Za-z0-9_]+', plain))
    return plain.count('?') + len(named)


def explain(conn, sql):
    """Prove an SQL statement on a server that cannot prepare: EXPLAIN parses and plans
    it without running it."""
    try:
        conn.execute(u'EXPLAIN ' + sql)
    except errors.ServerError as e:
        raise errors.SchemaError('Tarantool at %s refuses --sql \'%s\': %s' % (conn.address, sql,
                                                                          e.message))


def check(conn, kind, target):
    """Prove --call/--eval/--sql on the server before the first op; SchemaError (exit 3)
    naming what is wrong. A check the server will not run is no proof either way:
    skipped."""
    where = 'Tarantool at %s' % conn.address
    try:
        if kind == 'call':
            found = conn.eval(_FIND_FUNCTION, target)
            found = found[0] if found else None
            if found is None:
                raise errors.SchemaError('%s has no function \'%s\' (--call): define it (in '
                                         '--spawn-init, or box.schema.func.create) or check '
                                         'the name' % (where, target))
            if found not in _CALLABLE:
                raise errors.SchemaError('%s: --call %s names a %s, not a function'
                                         % (where, target, found))
        elif kind == 'eval':
            err = conn.eval(_COMPILES, target)
            if err and err[0] is not None:
                raise errors.SchemaError('%s cannot compile --eval \'%s\': %s' % (where, target,
                                                                              err[0]))
        elif prepare(conn, target) == target:
            explain(conn, target)
    except errors.ServerError:
        # The server would not run the check itself (no eval right for this user, a Lua
        # older than the check): no proof either way, so the run goes on and counts ops.
        return
    except errors.OpError as e:
        raise errors.SetupError('%s cannot check --%s \'%s\': %s' % (where, kind, target, e))


def prepare(conn, sql):
    """The statement id on this connection, or the text when the server cannot prepare."""
    try:
        return conn.prepare(sql)
    except errors.ServerError as e:
        if e.code in (48, 0):   # ER_UNKNOWN_REQUEST_TYPE: a server older than 2.3
            return sql
        raise errors.SchemaError('Tarantool at %s cannot prepare --sql \'%s\': %s'
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
