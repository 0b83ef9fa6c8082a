"""The kv workload's statements on the psycopg2 path, their parameters written in by the
driver.

``cursor.execute(sql, params)`` makes psycopg2 adapt every parameter to an object, ask
it for its quoted bytes, merge those into the text and encode the result, at every
execute: about 0.9 us of client CPU for one integer key on 3.11, where writing the key
in costs 0.1. A kv statement's parameters are a key (an int), a length (an int) and a
value from the run's fixed table of values. So each value is quoted once, before the
first op, by psycopg2's own ``mogrify`` on a connection of the run (its encoding, and
its session's string settings); an int is written with ``%d``, as psycopg2 writes one
that is not negative (keys are in [0, --keys); a negative one psycopg2 writes after a
space); and psycopg2 gets finished bytes and no parameters, which it sends as they are.
The server receives the text ``execute(sql, params)`` would have sent it (a test
compares the two with ``mogrify``, statement by statement).
"""
from __future__ import absolute_import, division, print_function

# name (with its parameter types) -> statement, prepared on each pooled connection.
PREPARED = (
    ('gl_insert (bigint, text)', 'INSERT INTO {t} (id, value) VALUES ($1, $2)'),
    ('gl_select (bigint)', 'SELECT value FROM {t} WHERE id = $1'),
    ('gl_update (text, bigint)', 'UPDATE {t} SET value = $1 WHERE id = $2'),
    ('gl_delete (bigint)', 'DELETE FROM {t} WHERE id = $1'),
    ('gl_scan (bigint, int)', 'SELECT id, value FROM {t} WHERE id >= $1 ORDER BY id LIMIT $2'),
)

# op -> its statement with the parameters' places: %d an int, %s a quoted value.
_EXECUTE = {
    'insert': 'EXECUTE gl_insert (%d, %s)',
    'select': 'EXECUTE gl_select (%d)',
    'update': 'EXECUTE gl_update (%s, %d)',
    'delete': 'EXECUTE gl_delete (%d)',
    'scan': 'EXECUTE gl_scan (%d, %d)',
}
_PLAIN = {
    'insert': 'INSERT INTO {t} (id, value) VALUES (%d, %s)',
    'select': 'SELECT value FROM {t} WHERE id = %d',
    'update': 'UPDATE {t} SET value = %s WHERE id = %d',
    'delete': 'DELETE FROM {t} WHERE id = %d',
    'scan': 'SELECT id, value FROM {t} WHERE id >= %d ORDER BY id LIMIT %d',
}


def prepare(cur, table):
    """PREPARE the kv statements on ``cur``'s connection (``--prepared``)."""
    for name, sql in PREPARED:
        cur.execute('PREPARE %s AS %s' % (name, sql.format(t=table)))


def templates(table, prepared):
    """op -> the bytes its statement is formatted into (``template % params``)."""
    forms = _EXECUTE if prepared else _PLAIN
    return dict((op, sql.format(t=table).encode('utf-8')) for op, sql in forms.items())


def quoted(cur, values):
    """Each value as psycopg2 writes it into a statement on ``cur``'s connection."""
    return [cur.mogrify('%s', (v,)) for v in values]


def ops(run, reads, forms, quoted_values, scan_length):
    """The kv ops on statement runners (``pool.statement_runner``): writes on ``run``,
    reads on ``reads`` (the same runner, or the read pool's); ``forms`` from
    ``templates``, ``quoted_values`` from ``quoted``."""
    ins, sel, upd = forms['insert'], forms['select'], forms['update']
    dele, scan = forms['delete'], forms['scan']
    values = quoted_values
    nv = len(values)

    def op_insert(key):
        return run(ins % (key, values[key % nv]), None, 'count')

    def op_select(key):
        return reads(sel % key, None, 'one')

    def op_update(key):
        return run(upd % (values[(key + 1) % nv], key), None, 'count')

    def op_delete(key):
        return run(dele % key, None, 'count')

    def op_scan(key):
        return reads(scan % (key, scan_length(key)), None, 'all')

    def op_rmw(key):
        # Two statements in autocommit, as YCSB's read-modify-write: not atomic.
        if not run(sel % key, None, 'one'):
            return 0
        return run(upd % (values[(key + 2) % nv], key), None, 'count')
    return {'insert': op_insert, 'select': op_select, 'update': op_update,
            'delete': op_delete, 'scan': op_scan, 'rmw': op_rmw}
