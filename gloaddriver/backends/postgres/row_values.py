"""A query's column values from the bytes of its DataRow messages, as psycopg2 gives them.

Socket-free, as the reply parser is: the pipelined connection asks for each column in
the format cheaper to read (``formats``, chosen per column from the statement's row
description) and ``decode_rows`` turns the rows into tuples of the values psycopg2
returns for the same rows, so one workload means the same on both connectors.

Binary, where the binary form is cheaper than text and decodes to the same value:
integers (int2, int4, int8, oid), float8, bool, bytea (psycopg2's memoryview, a
buffer on 2.7), uuid (a string, as psycopg2 gives it unless told otherwise), date,
timestamp and timestamptz (aware, in UTC: equal to psycopg2's value in the session's
zone), and arrays of those numbers. Text elsewhere, cast by psycopg2's own typecaster
for the type where it has one that needs no cursor, else the text itself; float4 stays
text, as its binary value is not the float psycopg2 reads from the text.

``decode_rows`` is the compiled reader (``_rowdecode.c``) where setup.py could build it,
else (or with GLOADDRIVER_PURE_PYTHON set) this module's own: the same values either way.
The Python reader reads rows of one layout a whole row per struct call; the compiled one
reads every row in one C loop, with no Python call but a column decoder's.
"""
from __future__ import absolute_import, division, print_function

import datetime
import struct
import uuid
from operator import itemgetter

import psycopg2.extensions
import psycopg2.tz

from gloaddriver.backends.compiled import optional
from gloaddriver.py23 import PY2

_h, _i, _q, _I, _d = (struct.Struct(f) for f in ('!h', '!i', '!q', '!I', '!d'))
_IH = struct.Struct('!IH')
_EPOCH = datetime.datetime(2000, 1, 1)
_EPOCH_TZ = datetime.datetime(2000, 1, 1, tzinfo=psycopg2.tz.FixedOffsetTimezone(offset=0))
_EPOCH_DATE = datetime.date(2000, 1, 1)
_INFINITY = (1 << 63) - 1
_MICRO = datetime.timedelta(microseconds=1)
_DAY = datetime.timedelta(days=1)
_bytea = buffer if PY2 else memoryview    # noqa: F821 (2.7's builtin)
# Text from UTF-8 bytes in one C call (2.7's str.decode goes through Python code).
_text_of = unicode if PY2 else str    # noqa: F821 (2.7's builtin)


def _timestamp(epoch):
    # infinity as psycopg2 reads it: the largest and smallest datetime, in epoch's zone
    top = datetime.datetime.max.replace(tzinfo=epoch.tzinfo)
    bottom = datetime.datetime.min.replace(tzinfo=epoch.tzinfo)

    def cast(b):
        us = _q.unpack(b)[0]
        if us == _INFINITY:
            return top
        if us == -_INFINITY - 1:
            return bottom
        return epoch + _MICRO * us
    return cast


def _date(b):
    days = _i.unpack(b)[0]
    if days == 0x7fffffff:
        return datetime.date.max
    if days == -0x80000000:
        return datetime.date.min
    return _EPOCH_DATE + _DAY * days


def _uuid(b):
    return str(uuid.UUID(bytes=bytes(b)))


# type oid -> the value of its binary form
BINARY = {
    16: lambda b: b == b'\x01',
    17: _bytea,
    20: lambda b: _q.unpack(b)[0],
    21: lambda b: _h.unpack(b)[0],
    23: lambda b: _i.unpack(b)[0],
    26: lambda b: _I.unpack(b)[0],
    701: lambda b: _d.unpack(b)[0],
    1082: _date,
    1114: _timestamp(_EPOCH),
    1184: _timestamp(_EPOCH_TZ),
    2950: _uuid,
}
# Columns whose binary value is one struct code (read in place, whole rows at a time).
FIXED = {16: '?', 20: 'q', 21: 'h', 23: 'i', 26: 'I', 701: 'd'}
# Arrays of numbers: the array's oid -> (element oid, struct code of an element).
ARRAYS = {1005: (21, 'h'), 1007: (23, 'i'), 1016: (20, 'q'), 1028: (26, 'I'), 1022: (701, 'd')}
# psycopg2's casters that read the cursor (its time zone): left as text here.
_NEEDS_CURSOR = (1184, 1185, 1266, 1270, 1001)
# The compiled reader's kind of each column read binary (x: through its decoder).
_KINDS = {16: b'B', 17: b'y', 20: b'q', 21: b'h', 23: b'i', 26: b'I', 701: b'd',
          1005: b'H', 1007: b'J', 1016: b'Q', 1028: b'O', 1022: b'D'}
_STRUCTS = {}


def _elements(code, n):
    """The Struct that reads n elements of ``code``, each after its int32 length."""
    key = (code, n)
    s = _STRUCTS.get(key)
    if s is None:
        if len(_STRUCTS) > 256:
            _STRUCTS.clear()
        s = _STRUCTS[key] = struct.Struct('!' + ('4x' + code) * n)
    return s


def _array(element_oid, code):
    one = BINARY[element_oid]

    def cast(b):
        ndim, has_null = _i.unpack_from(b, 0)[0], _i.unpack_from(b, 4)[0]
        if ndim == 0:
            return []
        dims = [_i.unpack_from(b, 12 + 8 * k)[0] for k in range(ndim)]
        at = 12 + 8 * ndim
        n = 1
        for d in dims:
            n *= d
        if not has_null:
            flat = list(_elements(code, n).unpack_from(b, at))
        else:
            flat = []
            for _e in range(n):
                size = _i.unpack_from(b, at)[0]
                at += 4
                if size < 0:
                    flat.append(None)
                else:
                    flat.append(one(b[at:at + size]))
                    at += size
        for d in reversed(dims[1:]):     # nested lists, innermost first, as psycopg2's
            flat = [flat[k:k + d] for k in range(0, len(flat), d)]
        return flat
    return cast


for _oid, (_elem, _code) in ARRAYS.items():
    BINARY[_oid] = _array(_elem, _code)


def _text(oid):
    caster = None if oid in _NEEDS_CURSOR else psycopg2.extensions.string_types.get(oid)
    if caster is None or caster.name in ('STRING', 'UNICODE'):
        return None      # the text itself
    return lambda b: caster(b.decode('utf-8'), None)


class Columns(object):
    """How a statement's rows decode: their types, a decoder per column (None: UTF-8
    text) and ``kinds``, the same for the compiled reader (a byte a column)."""
    __slots__ = ('oids', 'decoders', 'kinds')

    def __init__(self, oids, decoders, kinds):
        self.oids = oids
        self.decoders = decoders
        self.kinds = kinds


def formats(oids):
    """(result format codes as Bind's tail, Columns) for columns of type ``oids``:
    binary (1) where BINARY reads the type, else text (0)."""
    oids = tuple(oids)
    codes = [1 if oid in BINARY else 0 for oid in oids]
    decoders = tuple(BINARY[oid] if code else _text(oid) for oid, code in zip(oids, codes))
    kinds = b''.join(_KINDS.get(oid, b'x') if code else b'T' if dec is None else b'x'
                     for oid, code, dec in zip(oids, codes, decoders))
    return (struct.pack('!H%dH' % len(codes), len(codes), *codes),
            Columns(oids, decoders, kinds))


def _struct(fmt):
    s = _STRUCTS.get(fmt)
    if s is None:
        if len(_STRUCTS) > 256:
            _STRUCTS.clear()
        s = _STRUCTS[fmt] = struct.Struct(fmt)
    return s


def _layout(data, columns):
    """How every row of ``data`` reads if it is laid out as its first one: (the struct of
    a whole DataRow, what each column is in the struct's values, the byte ranges that
    must be the same in every row), or None (a NULL, another column count, a length
    that does not add up: the rows are read one by one).

    A column is ('v', i) a value of FIXED, ('a', i, n) a one-dimensional array of n
    numbers without NULL (its header and so its length and element type checked in
    every row), ('s', i, decoder) bytes of one length to decode."""
    length, ncols = _IH.unpack_from(data, 1)
    if ncols != len(columns.oids):
        return None
    fmt = ['!7x']
    same = [(1, 6)]           # the message's length and column count
    plan = []
    at, idx = 7, 0
    for oid, dec in zip(columns.oids, columns.decoders):
        size = _i.unpack_from(data, at)[0]
        if size < 0:
            return None
        same.append((at, 4))
        at += 4
        if oid in FIXED:
            fmt.append('4x' + FIXED[oid])
            plan.append(('v', idx))
            idx += 1
        elif oid in ARRAYS and size >= 20 and _i.unpack_from(data, at)[0] == 1 and \
                _i.unpack_from(data, at + 4)[0] == 0:
            n = _i.unpack_from(data, at + 12)[0]
            code = ARRAYS[oid][1]
            fmt.append('4x20x' + ('4x' + code) * n)
            same.append((at, 20))
            plan.append(('a', idx, n))
            idx += n
        else:
            fmt.append('4x%ds' % size)
            plan.append(('s', idx, dec))
            idx += 1
        at += size
    if at != 1 + length:
        return None
    return _struct(''.join(fmt)), plan, same


def _same_everywhere(data, step, same):
    """Whether each byte of the ranges ``same`` is the same in every ``step``-byte row."""
    for start, size in same:
        for b in range(start, start + size):
            column = data[b::step]
            if column.lstrip(column[:1]):
                return False
    return True


def _uniform_rows(data, columns):
    """The rows when they are all laid out as the first one (_layout), read by one struct
    each; None when they are not."""
    step = 1 + _I.unpack_from(data, 1)[0]
    if len(data) % step:
        return None
    layout = _layout(data, columns)
    if layout is None or layout[0].size != step or not _same_everywhere(data, step, layout[2]):
        return None
    rowstruct, plan, _same = layout
    if hasattr(rowstruct, 'iter_unpack'):
        flat = list(rowstruct.iter_unpack(data))
    else:
        unpack = rowstruct.unpack_from
        flat = [unpack(data, at) for at in range(0, len(data), step)]
    if all(kind[0] == 'v' for kind in plan):
        return flat
    out = []
    for kind in plan:
        if kind[0] == 'a':
            out.append(map(list, map(itemgetter(slice(kind[1], kind[1] + kind[2])), flat)))
            continue
        values = map(itemgetter(kind[1]), flat)
        if kind[0] == 's':
            dec = kind[2]
            values = [_text_of(v, 'utf-8') for v in values] if dec is None else map(dec, values)
        out.append(values)
    return list(zip(*out))


def decode_rows_python(data, columns=None, start=0, end=None, whole=True):
    """The rows of ``data[start:end]`` (whole DataRow messages, nothing else) as tuples,
    each column through its decoder (``columns`` None: all text), NULL as None. Rows all
    of one layout (one length, no NULL, the same lengths in each column) are read a
    whole row at a time (unless ``whole`` is false: the tests' way to compare); else
    each row by the layout last seen at its length, checked by its own length fields,
    or column by column."""
    if start or end is not None:
        data = data[start:end]
    if columns is None:
        return [_one_row(data, pos, None) for pos in _row_starts(data)]
    if whole and len(data) > 5:
        rows = _uniform_rows(data, columns)
        if rows is not None:
            return rows
    return _rows_by_length(data, columns)


def _row_starts(data):
    unpack_I = _I.unpack_from
    pos, end = 0, len(data)
    while pos < end:
        yield pos
        pos += 1 + unpack_I(data, pos + 1)[0]


def _row_layout(data, pos, columns):
    """(the struct of the row at ``pos``: each column's length then its value; those
    lengths; [(column, decoder)] of the columns read as bytes), or None: a NULL or a
    column count the statement does not have."""
    length, ncols = _IH.unpack_from(data, pos + 1)
    if ncols != len(columns.oids):
        return None
    fmt, sizes, post = ['!7x'], [], []
    at = pos + 7
    for c, (oid, dec) in enumerate(zip(columns.oids, columns.decoders)):
        size = _i.unpack_from(data, at)[0]
        if size < 0:
            return None
        if oid in FIXED:
            fmt.append('i' + FIXED[oid])
        else:
            fmt.append('i%ds' % size)
            post.append((c, dec))
        sizes.append(size)
        at += 4 + size
    if at != pos + 1 + length:
        return None
    return _struct(''.join(fmt)), tuple(sizes), tuple(post)


def _rows_by_length(data, columns):
    """Each row read by one struct call when its length fields say it is laid out as
    the last row of its length was (rows of a few layouts: names of a few lengths); the
    others column by column."""
    unpack_I = _I.unpack_from
    decoders = columns.decoders
    layouts = {}
    rows = []
    append = rows.append
    pos, end = 0, len(data)
    while pos < end:
        length = unpack_I(data, pos + 1)[0]
        layout = layouts.get(length)
        if layout is False:     # rows of this length have NULLs (the first of them had)
            append(_one_row(data, pos, decoders))
            pos += 1 + length
            continue
        if layout is not None:
            values = layout[0].unpack_from(data, pos)
            if values[0::2] == layout[1]:
                row = values[1::2]
                if layout[2]:
                    row = list(row)
                    for c, dec in layout[2]:
                        row[c] = _text_of(row[c], 'utf-8') if dec is None else dec(row[c])
                    row = tuple(row)
                append(row)
                pos += 1 + length
                continue
        layouts[length] = _row_layout(data, pos, columns) or False
        append(_one_row(data, pos, decoders))
        pos += 1 + length
    return rows


def _one_row(data, pos, decoders):
    """The row at ``pos``, column by column (``decoders`` None: all text)."""
    unpack_i = _i.unpack_from
    length, ncols = _IH.unpack_from(data, pos + 1)
    at = pos + 7
    row = []
    add = row.append
    for c in range(ncols):
        size = unpack_i(data, at)[0]
        at += 4
        if size < 0:
            add(None)
            continue
        dec = decoders[c] if decoders is not None else None
        add(_text_of(data[at:at + size], 'utf-8') if dec is None else dec(data[at:at + size]))
        at += size
    if at != pos + 1 + length:
        raise ValueError('a data row is %d bytes longer than its message'
                         % (at - pos - 1 - length))
    return tuple(row)


def _compiled_reader():
    """The compiled reader's decode_rows, or None (not built here, or not wanted)."""
    decode = optional('gloaddriver.backends.postgres._rowdecode', 'decode')
    if decode is None:
        return None

    def decode_rows_compiled(data, columns=None, start=0, end=None):
        """decode_rows_python's rows, read in C, without a copy of ``data``."""
        if end is None:
            end = len(data)
        if columns is None:
            return decode(data, None, None, start, end)
        return decode(data, columns.kinds, columns.decoders, start, end)
    return decode_rows_compiled


decode_rows_compiled = _compiled_reader()
# The reader the connections use: the compiled one where there is one.
decode_rows = decode_rows_compiled or decode_rows_python
READER = 'compiled' if decode_rows_compiled else 'python'     # for the manifest


def decode_parts(parts, columns=None):
    """The rows of ``parts``: runs of whole DataRow messages, each (bytes, start, end), as
    the lazy reply parser keeps them; each run read where it lies, no bytes joined."""
    if len(parts) == 1:
        data, start, end = parts[0]
        return decode_rows(data, columns, start, end)
    rows = []
    for data, start, end in parts:
        rows += decode_rows(data, columns, start, end)
    return rows
