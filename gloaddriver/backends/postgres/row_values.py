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
"""
from __future__ import absolute_import, division, print_function

import datetime
import struct
import uuid

import psycopg2.extensions
import psycopg2.tz

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


def _timestamp(epoch):
    def cast(b):
        us = _q.unpack(b)[0]
        if us == _INFINITY:
            return datetime.datetime.max
        if us == -_INFINITY - 1:
            return datetime.datetime.min
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
# Columns whose binary value is one struct code: a row of only these, none NULL, is read
# by one struct call (every row of such a result has the same length).
FIXED = {16: '?', 20: 'q', 21: 'h', 23: 'i', 26: 'I', 701: 'd'}
# Arrays of numbers: the array's oid -> (element oid, struct code of an element).
ARRAYS = {1005: (21, 'h'), 1007: (23, 'i'), 1016: (20, 'q'), 1028: (26, 'I'), 1022: (701, 'd')}
# psycopg2's casters that read the cursor (its time zone): left as text here.
_NEEDS_CURSOR = (1184, 1185, 1266, 1270, 1001)
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
    """How a statement's rows decode: a decoder per column (None: UTF-8 text), and for
    rows of FIXED columns only, the struct of a whole DataRow message."""
    __slots__ = ('decoders', 'fixed')

    def __init__(self, decoders, fixed=None):
        self.decoders = decoders
        self.fixed = fixed


def formats(oids):
    """(result format codes as Bind's tail, Columns) for columns of type ``oids``:
    binary (1) where BINARY reads the type, else text (0)."""
    codes = [1 if oid in BINARY else 0 for oid in oids]
    decoders = tuple(BINARY[oid] if code else _text(oid) for oid, code in zip(oids, codes))
    fixed = None
    if oids and all(oid in FIXED for oid in oids):
        # type byte, length, column count, then each column's length and value
        fixed = struct.Struct('!7x' + ''.join('4x' + FIXED[oid] for oid in oids))
    return (struct.pack('!H%dH' % len(codes), len(codes), *codes),
            Columns(decoders, fixed))


def _fixed_rows(data, fixed):
    """Rows of one length, each read by the struct ``fixed``."""
    if hasattr(fixed, 'iter_unpack'):
        return list(fixed.iter_unpack(data))
    unpack = fixed.unpack_from
    return [unpack(data, at) for at in range(0, len(data), fixed.size)]


def decode_rows(data, columns=None, count=None):
    """The rows of ``data`` (``count`` whole DataRow messages, nothing else) as tuples,
    each column through its decoder (``columns`` None: all text), NULL as None."""
    decoders = None
    if columns is not None:
        decoders = columns.decoders
        fixed = columns.fixed
        if fixed is not None and count is not None and len(data) == count * fixed.size:
            return _fixed_rows(data, fixed)     # no NULL: a NULL would shorten its row
    unpack_IH = _IH.unpack_from
    unpack_i = _i.unpack_from
    rows = []
    append = rows.append
    pos, end = 0, len(data)
    decs = decoders
    while pos < end:
        length, ncols = unpack_IH(data, pos + 1)
        at = pos + 7
        pos += 1 + length
        if decs is None or len(decs) != ncols:
            decs = (None,) * ncols
        row = []
        add = row.append
        for dec in decs:
            size = unpack_i(data, at)[0]
            at += 4
            if size < 0:
                add(None)
            elif dec is None:
                add(data[at:at + size].decode('utf-8'))
                at += size
            else:
                add(dec(data[at:at + size]))
                at += size
        if at != pos:
            raise ValueError('a data row is %d bytes longer than its message' % (at - pos))
        append(tuple(row))
    return rows
