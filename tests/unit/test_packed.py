"""The built-in ops' pre-packed bodies (backends/tarantool/packed.py) against the
encoder: the same requests, whatever the space's layout, on 2.7 and 3.x."""
from __future__ import absolute_import, division, print_function

import msgpack

from gloaddriver import workload
from gloaddriver.backends.tarantool import packed
from gloaddriver.backends.tarantool import protocol as P
from gloaddriver.backends.tarantool.layout import Layout


def decode(data):
    kw = {'strict_map_key': False} if msgpack.version >= (1, 0) else {}
    return msgpack.unpackb(bytes(data), raw=False, **kw)


class Recorder(object):
    """Stands in for the connection: keeps each frame's code and body."""

    def __init__(self):
        self.encoder = P.Encoder()
        self.frames = []

    def rows_frame(self, code, parts):
        assert parts.__class__ is tuple and all(p.__class__ is bytes for p in parts)
        self.frames.append((code, b''.join(parts)))
        return []

    def rows_request(self, encode, *args):
        return []


def encoded(method, *args):
    buf = bytearray()
    getattr(P.Encoder(), method)(buf, 1, *args)
    return buf[5 + P._HEAD_AFTER_LEN:]   # the body after the fixed head


def test_classic_layout_bodies_match_the_encoder():
    values = workload.values(1536)
    conn = Recorder()
    ops = packed.make_ops(conn, Layout.classic(512), values)
    for key in (0, 1, 127, 128, 70000, 2 ** 40):
        del conn.frames[:]
        for op in ('insert', 'select', 'update', 'delete'):
            ops[op](key)
        (ci, ins), (cs, sel), (cu, upd), (cd, dele) = conn.frames
        assert (ci, cs, cu, cd) == (P.INSERT, P.SELECT, P.UPDATE, P.DELETE)
        # insert: byte for byte (a two-key map packs in the same order everywhere)
        assert ins == bytes(encoded('insert', 512, [key, values[key % 100]]))
        assert decode(sel) == decode(encoded('select', 512, 0, [key]))
        assert decode(upd) == decode(encoded('update', 512, 0, [key],
                                             [[u'=', 1, values[(key + 1) % 100]]]))
        assert decode(dele) == decode(encoded('delete', 512, 0, [key]))
        # the value is text on the wire (msgpack str: 0xda + 16-bit length), never bin
        assert b'\xda\x06\x00' + values[key % 100].encode('ascii') in ins


def test_other_layouts_write_what_the_generic_ops_write():
    # (id unsigned, code string indexed, note string, blob varbinary, n integer)
    layout = Layout(600, [('id', 'unsigned'), ('code', 'string'), ('note', 'string'),
                          ('blob', 'varbinary'), ('n', 'integer')], [(0, 'unsigned')],
                    index_id=1, index_parts=[(1, 'string')], covered=[0, 1])
    values = workload.values(20)
    conn = Recorder()
    ops = packed.make_ops(conn, layout, values)
    key = 4321
    for op in ('insert', 'select', 'update', 'delete'):
        ops[op](key)
    (_c, ins), (_c, sel), (_c, upd), (_c, dele) = conn.frames
    assert decode(ins) == {P.SPACE_ID: 600, P.TUPLE: [key, u'%d' % key, values[key % 100],
                                                      values[key % 100].encode('utf-8'), key]}
    assert decode(sel)[P.KEY] == [u'%d' % key] and decode(sel)[P.INDEX_ID] == 1
    assert decode(upd)[P.TUPLE] == [[u'=', 2, values[(key + 1) % 100]]]
    assert decode(dele) == {P.SPACE_ID: 600, P.INDEX_ID: 0, P.KEY: [key]}


def test_rows_decode_only_when_read():
    body = msgpack.packb({P.DATA: [[1, u'caf\xe9']]}, use_bin_type=True)
    rows = P.Rows(body)
    assert rows and list(rows) == [[1, u'caf\xe9']] and isinstance(list(rows)[0][1], type(u''))
    assert rows.data() == [[1, u'caf\xe9']]
    for empty in P.EMPTY_BODIES:
        assert decode(empty) == {P.DATA: []} and len(empty) <= P.EMPTY_BODY_MAX
