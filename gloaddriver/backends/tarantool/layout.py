"""What the built-in ops write and read in a space, from the space's own schema.

A user's space need not be gloaddriver's ``(id unsigned, value string)``: keys may be
strings or composite, tuples may have many fields, a select may go through a
secondary index. ``Layout.read`` takes the space's format (``_vspace``) and its
indexes (``_vindex``), and the ops follow them:

* a field that an index covers holds a value derived from the op's key (the key
  itself for a number, its decimal text for a string, ...), so every index stays
  unique per key and a select by any index finds the row that insert wrote;
* every other field holds the workload's value (text) or, for a number, the key;
* update sets the first field no index covers (the text value, or key + 1 for a
  number); a space whose every field is indexed gets an update that changes
  nothing;
* select and scan go through ``--index`` (the primary key by default), delete and
  read-modify-write through the primary key.

A space without a format is taken as gloaddriver's own: the key parts, then a
text value. The op functions are generated once from this description for each
connector's way of calling (``make_ops``), so gloaddriver's own layout costs
exactly what hand-written ops cost: one call into the connector per request.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors, workload
from gloaddriver.backends.tarantool import protocol as P

# Python source of a key-derived value, by field type.
_KEY_VALUE = {'unsigned': 'key', 'integer': 'key', 'number': 'key', 'scalar': 'key',
              'any': 'key', 'string': "(u'%d' % key)", 'double': 'float(key)',
              'boolean': '(key % 2 == 0)', 'varbinary': "(b'%d' % key)"}
# Python source of a written value, by field type, from k: the key shifted by 0 (insert),
# 1 (update) or 2 (read-modify-write), so a read can tell which write it sees.
_VALUE = {'string': 'values[%(k)s %% nv]', 'any': 'values[%(k)s %% nv]',
          'scalar': 'values[%(k)s %% nv]', 'varbinary': 'binary[%(k)s %% nv]',
          'unsigned': '%(k)s', 'integer': '%(k)s', 'number': '%(k)s', 'double': 'float(%(k)s)',
          'boolean': '(%(k)s %% 2 == 0)', 'array': '[%(k)s]', 'map': "{u'k': %(k)s}"}


def _value(ftype, shift):
    return _VALUE[ftype] % {'k': 'key' if not shift else '(key + %d)' % shift}


class Layout(object):
    """A space's fields and indexes as the built-in ops use them."""

    def __init__(self, space_id, fields, primary, index_id=0, index_parts=None, covered=None):
        self.space_id = space_id
        self.fields = fields              # [(name, type)], 0-based field numbers
        self.primary = primary            # [(field, type)] of the primary key
        self.index_id = index_id          # --index: the index of select and scan
        self.index_parts = index_parts or primary
        self.covered = set(covered if covered is not None else [f for f, _t in primary])

    @classmethod
    def classic(cls, space_id):
        """gloaddriver's own space: (id unsigned, value string), primary key on id."""
        return cls(space_id, [('id', 'unsigned'), ('value', 'string')], [(0, 'unsigned')])

    @classmethod
    def read(cls, conn, space, index=None):
        """The layout of ``space`` (name or id) on the buffered connection ``conn``, with
        select and scan through ``index`` (name, number, or None for the primary key)."""
        sid = conn.space_id(space) if not isinstance(space, int) else space
        rows = conn.select(P.VSPACE_ID, [sid])
        if not rows:
            raise errors.SchemaError('Tarantool at %s has no space %r' % (conn.address, space))
        fmt = rows[0][6] if len(rows[0]) > 6 else []
        indexes = {}
        for row in conn.select(P.VINDEX_ID, [sid]):
            indexes[row[1]] = (row[2], _parts(row[5]))
        if 0 not in indexes:
            raise errors.SchemaError('space %r on %s has no primary index; create one'
                                     % (space, conn.address))
        primary = indexes[0][1]
        index_id = _index_id(indexes, index, space)
        covered = set(f for _name, parts in indexes.values() for f, _t in parts)
        width = max([len(fmt)] + [f + 1 for f in covered])
        fields = []
        for i in range(width):
            f = fmt[i] if i < len(fmt) else {}
            name = f.get('name') or 'field %d' % (i + 1)
            ftype = (f.get('type') or '').lower()
            if ftype in ('', 'any', 'scalar') and i in covered:
                # An index is stricter than the format: its key must be of its part's type.
                ftype = _part_type(indexes, i) or ftype
            ftype = ftype or 'any'
            fields.append((name, ftype))
        if not fmt:
            # No format: gloaddriver's own shape, the key parts then a text value.
            fields.append(('value', 'string'))
        for i, (name, ftype) in enumerate(fields):
            if ftype not in _KEY_VALUE and ftype not in _VALUE:
                raise errors.SchemaError('space %r field %r is of type %s, which the built-in '
                                         'ops cannot fill; use --call/--sql or a '
                                         '--workload-file' % (space, name, ftype))
            if i in covered and ftype not in _KEY_VALUE:
                raise errors.SchemaError('space %r: an index covers field %r of type %s, '
                                         'which the built-in ops cannot derive from a key'
                                         % (space, name, ftype))
        return cls(sid, fields, primary, index_id, indexes[index_id][1], covered)

    # -- Python source of the ops' arguments ------------------------------------------

    def key(self, parts):
        return '[%s]' % ', '.join(_KEY_VALUE[t] for _f, t in parts)

    def tuple(self):
        return '[%s]' % ', '.join(
            _KEY_VALUE[t] if i in self.covered else _value(t, 0)
            for i, (_name, t) in enumerate(self.fields))

    def _target(self):
        """(field, type) that update writes: the first text field no index covers, else
        the first field no index covers, else None."""
        free = [(i, t) for i, (_n, t) in enumerate(self.fields) if i not in self.covered]
        text = [(i, t) for i, t in free if t in ('string', 'any', 'scalar')]
        return (text or free or [None])[0]

    def update(self, shift):
        target = self._target()
        if target is None:
            return '[]'
        i, t = target
        return "[[u'=', %d, %s]]" % (i, _value(t, shift))

    def written(self, shift):
        """The whole tuple as the write with ``shift`` leaves it (0 insert, 1 update,
        2 read-modify-write)."""
        target = self._target()
        at = target[0] if target is not None else None
        return '[%s]' % ', '.join(
            _KEY_VALUE[t] if i in self.covered else _value(t, shift if i == at else 0)
            for i, (_name, t) in enumerate(self.fields))

    def reader(self, values):
        """(pk(key), state(key, rows)) for --verify: the primary key of a key, and the
        ledger state a select by it found (which write's tuple is there, if any)."""
        from gloaddriver.measure import ledger
        lines = ['def make(values, binary, nv):',
                 '    def pk(key):',
                 '        return %s' % self.key(self.primary),
                 '    def state(key, rows):',
                 '        if not rows:',
                 '            return %d' % ledger.GONE,
                 '        row = list(rows[0])']
        for shift, code in ((0, ledger.INSERTED), (1, ledger.UPDATED), (2, ledger.RMW)):
            lines.append('        if row == %s:' % self.written(shift))
            lines.append('            return %d' % code)
        lines.append('        return %d' % ledger.CORRUPT)
        lines.append('    return pk, state')
        namespace = {}
        exec(compile('\n'.join(lines) + '\n', '<reader of space %s>' % self.space_id, 'exec'),
             namespace)
        return namespace['make'](values, [v.encode('utf-8') for v in values], len(values))


def _parts(raw):
    """Index parts as [(0-based field, type)], from either _vindex encoding."""
    out = []
    for p in raw:
        if isinstance(p, dict):
            out.append((p.get('field'), (p.get('type') or 'any').lower()))
        else:
            out.append((p[0], (p[1] if len(p) > 1 else 'any').lower()))
    return out


def _part_type(indexes, field):
    for _name, parts in indexes.values():
        for f, t in parts:
            if f == field:
                return t
    return None


def _index_id(indexes, index, space):
    if index is None:
        return 0
    for iid, (name, _parts) in indexes.items():
        if str(iid) == str(index) or name == index:
            return iid
    raise errors.SchemaError('space %r has no index %r; its indexes: %s' % (
        space, index, ', '.join('%s (%d)' % (n, i) for i, (n, _p) in sorted(indexes.items()))))


# -- the op functions ------------------------------------------------------------------

# How each connector is called. request: the buffered connection's request with a bound
# encoder (one call per op); method: the public select/insert/update/delete of the
# buffered connection (--by-name) or of tarantool-python (the sync baseline).
STYLES = {
    'request': {
        'select': 'request(enc_select, space, %(index)s, %(key)s, %(limit)s, 0, %(iterator)s)',
        'insert': 'request(enc_insert, space, %(tuple)s)',
        'update': 'request(enc_update, space, 0, %(key)s, %(ops)s)',
        'delete': 'request(enc_delete, space, 0, %(key)s)',
    },
    'method': {
        'select': 'select(space, %(key)s%(kwargs)s)',
        'insert': 'insert(space, %(tuple)s)',
        'update': 'update(space, %(key)s, %(ops)s)',
        'delete': 'delete(space, %(key)s)',
    },
}


def _select(style, index, key, limit='limit', iterator='eq'):
    kwargs = ''.join(', %s=%s' % (k, v) for k, v, default in (
        ('index', index, '0'), ('limit', limit, 'limit'), ('iterator', iterator, 'eq'))
        if v != default)
    return STYLES[style]['select'] % {'index': index, 'key': key, 'limit': limit,
                                      'iterator': iterator, 'kwargs': kwargs}


def source(layout, style, translate=False):
    """Python source of ``make(...)``, returning the six ops for ``style``; with
    ``translate``, each op turns the connector's exceptions into ours."""
    s = STYLES[style]
    pk = layout.key(layout.primary)
    by_index = layout.key(layout.index_parts)
    index = '%d' % int(layout.index_id)   # a number, whatever the server sent
    bodies = {
        'insert': 'return ' + s['insert'] % {'tuple': layout.tuple()},
        'select': 'return ' + _select(style, index, by_index),
        'update': 'return ' + s['update'] % {'key': pk, 'ops': layout.update(1)},
        'delete': 'return ' + s['delete'] % {'key': pk},
        'scan': 'return ' + _select(style, index, by_index, 'scan_length(key)', 'ge'),
        'rmw': 'if not %s:\n        return []   # a miss\n    return %s' % (
            _select(style, '0', pk), s['update'] % {'key': pk, 'ops': layout.update(2)}),
    }
    lines = ['def make(%s):' % ', '.join(NAMES)]
    for op in workload.OPS:
        lines.append('    def op_%s(key):' % op)
        if translate:
            lines.append('        try:')
            lines.append('            ' + bodies[op].replace('\n', '\n        '))
            lines.append('        except Exception as e:')
            lines.append('            raise translate(e)')
        else:
            lines.append('        ' + bodies[op].replace('\n', '\n    '))
    lines.append('    return {%s}' % ', '.join("'%s': op_%s" % (op, op) for op in workload.OPS))
    return '\n'.join(lines) + '\n'


NAMES = ('request', 'enc_select', 'enc_insert', 'enc_update', 'enc_delete', 'select',
         'insert', 'update', 'delete', 'space', 'values', 'binary', 'nv', 'scan_length',
         'limit', 'eq', 'ge', 'translate')


def make_ops(layout, style, values, space, request=None, encoder=None, methods=None,
             translate=None):
    """{op name: fn(key)} for ``layout`` called in ``style``.

    ``space`` is the space's id, or its name (--by-name); ``request`` and ``encoder``
    the buffered connection's (style request); ``methods`` an object with select,
    insert, update and delete (style method); ``translate`` maps the connector's
    exceptions to gloaddriver's (the sync baseline)."""
    namespace = {}
    code = source(layout, style, translate is not None)
    exec(compile(code, '<ops of space %s>' % (space,), 'exec'), namespace)
    enc = encoder
    return namespace['make'](
        request, enc and enc.select, enc and enc.insert, enc and enc.update, enc and enc.delete,
        methods and methods.select, methods and methods.insert, methods and methods.update,
        methods and methods.delete, space, values,
        [v.encode('utf-8') for v in values], len(values), workload.scan_length,
        P.MAX_SELECT, P.ITERATOR_EQ, P.ITERATOR_GE, translate)
