"""Tarantool's side of ``gloaddriver compat``: the server both interpreters load, the
flags that point a run at it, the digest of what they stored, and the probe each
interpreter runs (wire bytes, typed fields, deliberate errors, reading the other
side's data)."""
from __future__ import absolute_import, division, print_function

import binascii
import os

from gloaddriver import errors, workload
from gloaddriver.py23 import binary_type, text_type
from gloaddriver.backends.tarantool import protocol as P
from gloaddriver.backends.crosscheck_values import CANONICAL

GREENLETS = 100
NOT_APPLICABLE = {}


class Target(object):
    """A private server with one space per side; ``close()`` removes it."""

    def __init__(self, names):
        from gloaddriver.backends.tarantool.connection import Connection
        from gloaddriver.backends.tarantool.server import TarantoolServer
        self.server = TarantoolServer().start()
        try:
            self.conn = Connection(self.server.host, self.server.port, self.server.user,
                                   self.server.password).connect()
            for name in names:
                self.conn.eval(u"""local s = box.schema.space.create(..., {format = {
                                      {'id', 'unsigned'}, {'value', 'string'}}})
                                  s:create_index('primary')""", name)
        except BaseException:
            self.server.stop()
            raise
        self.password = self.server.password

    def target_argv(self, name):
        s = self.server
        return ['--backend', 'tarantool', '--uri', s.uri, '--user', s.user, '--space', name,
                '--by-name']

    def probe_args(self):
        s = self.server
        return {'backend': 'tarantool', 'host': s.host, 'port': s.port, 'user': s.user}

    def digest(self, name):
        """(tuples, sha1 of their msgpack) of what a side stored."""
        return tuple(self.conn.eval(
            u"""local parts = {} for _, x in box.space[...]:pairs() do
                parts[#parts + 1] = require('msgpack').encode(x) end
                return #parts, require('digest').sha1_hex(table.concat(parts))""", name))

    def close(self):
        self.conn.close()
        self.server.stop()


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


def connect(a):
    from gloaddriver.backends.tarantool.connection import Connection
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


def probe():
    return {'connect': connect, 'wire': lambda conn: wire_bytes(), 'typed': typed,
            'errors': deliberate_errors, 'crossread': crossread}
