"""The built-in ops' request bodies from pre-packed parts, for the buffered connector.

An op's body is mostly the same bytes every time: the map keys, the space and index
ids, the limit, and one of the 100 values. Those are packed once, when the ops are
made; per op only what comes from the key is packed (``pack(key)``) and the pieces
are joined. So a 1.5 KB text value is encoded to UTF-8 once per distinct value
instead of on every write: on a UCS4 Python 2.7 that encoding walks a 6 KB unicode
object, and it was the larger half of what 2.7 paid over 3.x per write. The bytes
on the wire are the ones ``protocol.Encoder`` makes for the same request (map keys
in one fixed order on both interpreters), which tests/unit/test_packed.py checks.

Each op is one call into the connection (``rows_frame(code, parts)``), which adds
the frame's head and copies the parts into its buffer: one Python call per request less
than encoder + request, and no joined body to build and copy again.
"""
from __future__ import absolute_import, division, print_function

import msgpack

from gloaddriver.backends.tarantool import layout as L
from gloaddriver.backends.tarantool import protocol as P

# Field types whose written value is one of the 100 values (text), or its bytes.
_TEXT = ('string', 'any', 'scalar')


class _Body(object):
    """A body as a list of parts: constant bytes (merged as they come) or the Python
    source of an expression, packed per op (``pack(...)``) or already packed bytes."""

    def __init__(self, packer):
        self.packer = packer
        self.parts = []

    def const(self, data):
        if self.parts and self.parts[-1][0] == 'const':
            self.parts[-1] = ('const', self.parts[-1][1] + data)
        else:
            self.parts.append(('const', data))
        return self

    def obj(self, value):
        return self.const(self.packer.pack(value))

    def map(self, n):
        return self.const(self.packer.pack_map_header(n))

    def array(self, n):
        return self.const(self.packer.pack_array_header(n))

    def expr(self, source):
        self.parts.append(('expr', 'pack(%s)' % source))
        return self

    def packed(self, source):
        self.parts.append(('expr', source))
        return self

    def value(self, ftype, source_key):
        """A written field: pre-packed text or binary, else packed per op."""
        if ftype in _TEXT:
            return self.packed('pv[%s %% nv]' % source_key)
        if ftype == 'varbinary':
            return self.packed('pb[%s %% nv]' % source_key)
        return self.expr(L._VALUE[ftype] % {'k': source_key})

    def source(self, consts):
        """Python source of the body as a tuple of its parts (the connection joins them
        into its buffer); its constants go into ``consts`` (C0, C1, ...)."""
        out = []
        for kind, x in self.parts:
            if kind == 'const':
                consts.append(x)
                out.append('C%d' % (len(consts) - 1))
            else:
                out.append(x)
        return '(%s,)' % ', '.join(out)


def _key(body, parts):
    body.array(len(parts))
    for _f, t in parts:
        body.expr(L._KEY_VALUE[t])
    return body


def bodies(layout, packer):
    """{op: _Body} for insert, select, update and delete on ``layout``."""
    sid = layout.space_id
    ins = _Body(packer).map(2).obj(P.SPACE_ID).obj(sid).obj(P.TUPLE).array(len(layout.fields))
    for i, (_name, t) in enumerate(layout.fields):
        if i in layout.covered:
            ins.expr(L._KEY_VALUE[t])
        else:
            ins.value(t, 'key')
    sel = _Body(packer).map(6).obj(P.SPACE_ID).obj(sid).obj(P.INDEX_ID).obj(
        int(layout.index_id)).obj(P.LIMIT).obj(P.MAX_SELECT).obj(P.OFFSET).obj(0).obj(
        P.ITERATOR).obj(P.ITERATOR_EQ).obj(P.KEY)
    _key(sel, layout.index_parts)
    upd = _Body(packer).map(4).obj(P.SPACE_ID).obj(sid).obj(P.INDEX_ID).obj(0).obj(P.KEY)
    _key(upd, layout.primary).obj(P.TUPLE)
    # What update writes, as layout.update chooses it: the first text field no index
    # covers, else the first field no index covers, else nothing.
    free = [(i, t) for i, (_n, t) in enumerate(layout.fields) if i not in layout.covered]
    target = ([(i, t) for i, t in free if t in _TEXT] or free or [None])[0]
    if target is None:
        upd.array(0)
    else:
        i, t = target
        upd.array(1).array(3).obj(u'=').obj(i).value(t, '(key + 1)')
    dele = _Body(packer).map(3).obj(P.SPACE_ID).obj(sid).obj(P.INDEX_ID).obj(0).obj(P.KEY)
    _key(dele, layout.primary)
    return {'insert': (P.INSERT, ins), 'select': (P.SELECT, sel), 'update': (P.UPDATE, upd),
            'delete': (P.DELETE, dele)}


def make_ops(conn, layout, values):
    """{op: fn(key)} on the buffered connection ``conn``: insert, select, update and
    delete from pre-packed bodies; scan and rmw as ``layout.make_ops`` makes them."""
    packer = msgpack.Packer(use_bin_type=True)
    consts = []
    lines = ['def make(frame, pack, pv, pb, nv, %s):' % '%s']
    for op, (code, body) in sorted(bodies(layout, packer).items()):
        lines.append('    def op_%s(key):' % op)
        lines.append('        return frame(%d, %s)' % (code, body.source(consts)))
    lines.append('    return {%s}' % ', '.join("'%s': op_%s" % (op, op) for op in
                                               ('insert', 'select', 'update', 'delete')))
    lines[0] = lines[0] % ', '.join('C%d' % i for i in range(len(consts)))
    namespace = {}
    exec(compile('\n'.join(lines) + '\n', '<packed ops of space %s>' % (layout.space_id,),
                 'exec'), namespace)
    ops = L.make_ops(layout, 'request', values, layout.space_id, request=conn.rows_request,
                     encoder=conn.encoder)
    ops.update(namespace['make'](conn.rows_frame, packer.pack, [packer.pack(v) for v in values],
                                 [packer.pack(v.encode('utf-8')) for v in values], len(values),
                                 *consts))
    return ops
