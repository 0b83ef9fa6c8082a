"""What one interpreter says about itself, for ``gloaddriver compat``.

Run as ``python -m gloaddriver.compat_probe '<json>'`` under each interpreter
being compared; prints one JSON line. Modes: ``self`` (fingerprint, wire
bytes of canonical values, typed-field outcomes, deliberate errors) and
``crossread`` (read what the other interpreter wrote). Values cross as hex
where they are bytes, so the comparing side sees exactly what was sent.
"""
from __future__ import absolute_import, division, print_function

import binascii
import json
import os
import sys

from gloaddriver import errors, manifest, workload
from gloaddriver.backends.tarantool import protocol as P
from gloaddriver.backends.tarantool.connection import Connection
from gloaddriver.compat import binary_type, text_type

# (label, value): text, binary, integer boundaries, float, bool, nil, nesting.
CANONICAL = [
    ('ascii text', u'hello'), ('non-ascii text', u'caf\xe9 \u20ac \U0001f600'),
    ('binary 00 ff', b'\x00\xff\x80\x7f'), ('empty text', u''), ('empty binary', b''),
    ('int 0', 0), ('int 127', 127), ('int 128', 128), ('int 255', 255), ('int 256', 256),
    ('int 65535', 65535), ('int 65536', 65536), ('int 2^32-1', 2 ** 32 - 1),
    ('int 2^32', 2 ** 32), ('int 2^63-1', 2 ** 63 - 1), ('int 2^64-1', 2 ** 64 - 1),
    ('int -1', -1), ('int -32', -32), ('int -33', -33), ('int -128', -128), ('int -129', -129),
    ('int -2^63', -2 ** 63), ('float 1.5', 1.5), ('true', True), ('false', False),
    ('nil', None), ('nested list', [1, [u'a', [b'b']]]), ('map', {u'k': 1}),
]

# Rows offered to a space of (unsigned, string, varbinary); the server judges.
TYPED_ROWS = [
    ('text, binary', [1, u'text', b'bin']),
    ('binary into string', [2, b'bin', b'bin']),
    ('text into varbinary', [3, u'text', u'text']),
    ('negative into unsigned', [-1, u't', b'b']),
    ('non-ascii text, 00 ff binary', [5, u'caf\xe9', b'\x00\xff']),
]


def wire_bytes():
    enc = P.Encoder()
    out = []
    for i, (label, value) in enumerate(CANONICAL):
        buf = bytearray()
        enc.insert(buf, 1, 512, [i, value])
        out.append([label, binascii.hexlify(bytes(buf)).decode('ascii')])
    return out


def _connect(a):
    return Connection(a['host'], a['port'], a['user'], os.environ.get('GLOADDRIVER_PASSWORD'),
                      timeout=5.0).connect()


def _outcome(fn):
    try:
        fn()
        return 'ok'
    except errors.OpError as e:
        return e.kind


def typed(conn, space):
    conn.eval(u"""local s = box.schema.space.create(..., {if_not_exists = true, format = {
                      {'id', 'unsigned'}, {'s', 'string'}, {'b', 'varbinary'}}})
                  s:create_index('pk', {if_not_exists = true})
                  s:create_index('by_s', {if_not_exists = true, parts = {2, 'string'}})""", space)
    return [[label, _outcome(lambda: conn.insert(space, row))] for label, row in TYPED_ROWS]


def deliberate_errors(conn, space):
    """Ops that must fail, and how: duplicate keys, wrong types, wrong key types."""
    counts = {}
    key = 10 ** 9
    conn.insert(space, [key, u'x'])
    attempts = ([lambda: conn.insert(space, [key, u'dup'])] * 10 +
                [lambda i=i: conn.insert(space, [key + 1 + i, b'binary into string'])
                 for i in range(10)] +
                [lambda: conn.select(space, [u'not an unsigned key'])] * 5)
    for fn in attempts:
        kind = _outcome(fn)
        counts[kind] = counts.get(kind, 0) + 1
    conn.delete(space, [key])
    return counts


def crossread(conn, a):
    """Read the other side's data and typed spaces; check values and types."""
    values = workload.values(a['value_size'])
    rows = conn.select(a['space'], [], limit=P.MAX_SELECT, iterator=P.ITERATOR_ALL)
    mismatches = [r[0] for r in rows if r != [r[0], values[(r[0] + 1) % 100]]]
    text_ok = all(isinstance(r[1], text_type) for r in rows)
    typed_rows = conn.select(a['typed'], [], limit=100, iterator=P.ITERATOR_ALL)
    first = [r for r in typed_rows if r[0] == 1]
    binary_ok = bool(first) and isinstance(first[0][1], text_type) and \
        isinstance(first[0][2], binary_type) and first[0][2] == b'bin'
    hit = _lookup(conn, a['typed'], [u'text'])       # the model's text type
    native = _lookup(conn, a['typed'], [str('text')])  # the interpreter's native str
    return {'rows': len(rows), 'mismatches': mismatches[:5], 'n_mismatches': len(mismatches),
            'text_ok': text_ok, 'binary_ok': binary_ok, 'text_key': hit, 'native_str_key': native,
            'native_str_is': 'text' if isinstance(str('x'), text_type) else 'binary'}


def _lookup(conn, space, key):
    try:
        return 'hit' if conn.select(space, key, index='by_s') else 'miss'
    except errors.OpError as e:
        return e.kind


# -- PostgreSQL ---------------------------------------------------------------------

def _pg(a):
    import psycopg2
    from gloaddriver.backends.postgres import pool
    pool.install('cached')       # the driver's own setup (text as unicode on 2.7)
    psycopg2.extensions.set_wait_callback(None)   # the probe itself needs no greenlets
    conn = psycopg2.connect(a['dsn'], password=os.environ.get('GLOADDRIVER_PASSWORD'))
    conn.autocommit = True
    return conn


def _pg_canonical():
    from psycopg2 import Binary
    skip = ('map', 'nested list')   # no plain SQL literal for these
    out = []
    for label, value in CANONICAL:
        if label in skip:
            continue
        if isinstance(value, binary_type):
            value = Binary(value)   # the model: binary goes as bytea, explicitly
        out.append((label, value))
    out.append(('int array', [1, 2, 3]))
    out.append(('text array', [u'a', u'caf\xe9']))
    return out


def pg_wire(conn):
    cur = conn.cursor()
    return [[label, binascii.hexlify(cur.mogrify('SELECT %s', (value,))).decode('ascii')]
            for label, value in _pg_canonical()]


def _pg_outcome(cur, sql, params):
    import psycopg2
    try:
        cur.execute(sql, params)
        return 'ok'
    except psycopg2.Error as e:
        return 'server:%s' % e.pgcode


def pg_typed(conn, table):
    from psycopg2 import Binary
    cur = conn.cursor()
    cur.execute('CREATE TABLE IF NOT EXISTS %s (id int PRIMARY KEY, t text, b bytea, n integer)'
                % table)
    sql = 'INSERT INTO %s (id, t, b, n) VALUES (%%s, %%s, %%s, %%s)' % table
    rows = [('text, binary, int', (1, u'text', Binary(b'bin'), 1)),
            ('binary into text', (2, Binary(b'bin'), Binary(b'bin'), 1)),
            ('integer out of range', (3, u't', Binary(b'b'), 2 ** 40)),
            ('text into integer', (4, u't', Binary(b'b'), u'x')),
            ('non-ascii text, 00 ff binary', (5, u'caf\xe9', Binary(b'\x00\xff'), 5))]
    return [[label, _pg_outcome(cur, sql, params)] for label, params in rows]


def pg_errors(conn, table):
    cur = conn.cursor()
    key = 10 ** 12
    cur.execute('INSERT INTO %s (id, value) VALUES (%%s, %%s)' % table, (key, u'x'))
    attempts = ([('INSERT INTO %s (id, value) VALUES (%%s, %%s)' % table, (key, u'dup'))] * 10 +
                [('INSERT INTO %s (id, value) VALUES (%%s, %%s)' % table, (u'not a number', u'x'))]
                * 10 +
                [('SELECT value FROM %s WHERE id = %%s' % table, (u'x',))] * 5)
    counts = {}
    for sql, params in attempts:
        kind = _pg_outcome(cur, sql, params)
        counts[kind] = counts.get(kind, 0) + 1
    cur.execute('DELETE FROM %s WHERE id = %%s' % table, (key,))
    return counts


def pg_crossread(conn, a):
    values = workload.values(a['value_size'])
    cur = conn.cursor()
    cur.execute('SELECT id, value FROM %s ORDER BY id' % a['space'])
    rows = cur.fetchall()
    mismatches = [r[0] for r in rows if r[1] != values[(r[0] + 1) % 100]]
    cur.execute('SELECT t, b FROM %s WHERE id = 1' % a['typed'])
    first = cur.fetchone()
    binary_ok = first is not None and isinstance(first[0], text_type) and \
        bytes(first[1]) == b'bin'

    def lookup(key):
        cur.execute('SELECT 1 FROM %s WHERE t = %%s' % a['typed'], (key,))
        return 'hit' if cur.fetchone() else 'miss'
    return {'rows': len(rows), 'mismatches': mismatches[:5], 'n_mismatches': len(mismatches),
            'text_ok': all(isinstance(r[1], text_type) for r in rows), 'binary_ok': binary_ok,
            'binary_type': type(first[1]).__name__ if first else None,
            'text_key': lookup(u'text'), 'native_str_key': lookup(str('text')),
            'native_str_is': 'text' if isinstance(str('x'), text_type) else 'binary'}


def _tarantool_probe():
    return {'connect': _connect, 'wire': lambda conn: wire_bytes(), 'typed': typed,
            'errors': deliberate_errors, 'crossread': crossread}


def _postgres_probe():
    return {'connect': _pg, 'wire': pg_wire, 'typed': pg_typed, 'errors': pg_errors,
            'crossread': pg_crossread}


def main(argv):
    a = json.loads(argv[0])
    probe = _postgres_probe() if a.get('backend') == 'postgres' else _tarantool_probe()
    out = {}
    conn = probe['connect'](a)
    try:
        if a['mode'] == 'self':
            out['fingerprint'] = manifest.fingerprint()
            out['wire'] = probe['wire'](conn)
            out['typed'] = probe['typed'](conn, a['typed'])
            out['errors'] = probe['errors'](conn, a['space'])
        else:
            out['crossread'] = probe['crossread'](conn, a)
    finally:
        conn.close()
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
