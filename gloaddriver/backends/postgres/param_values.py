"""A Bind message's parameters: each in the format cheaper to send.

Socket-free, as row_values is for results. A statement's parameter types come from its
description (ParameterDescription, read when the pipelined connection prepares it);
``plan`` chooses binary for the numbers whose binary form is one struct call (int2, int4,
int8, float8) and text for the rest, and ``encode`` writes the values. A value that does
not fit its parameter's binary form (a string for a bigint, an int beyond its range) is
sent as text in that call, so the server says what it says of it, as it would had every
parameter been text. Text is the value's ``%s`` in UTF-8, bytes as they are, None NULL.
"""
from __future__ import absolute_import, division, print_function

import struct

from gloaddriver.py23 import PY2

_I = struct.Struct('!I')
_H = struct.Struct('!H')
_NULL = b'\xff\xff\xff\xff'
_TEXT = type(u'')
TEXT_FORMATS = b'\x00\x00'          # no parameter format codes: all text
_INTS = (int, long) if PY2 else (int,)     # noqa: F821 (2.7's builtin)
# type oid -> (its binary form with the int32 length before it, the classes it takes)
_BINARY = {
    21: (struct.Struct('!ih'), 2, _INTS),
    23: (struct.Struct('!ii'), 4, _INTS),
    20: (struct.Struct('!iq'), 8, _INTS),
    701: (struct.Struct('!id'), 8, _INTS + (float,)),
}


def text(value):
    """One parameter as text: its length and bytes, or NULL."""
    if value is None:
        return _NULL
    cls = value.__class__
    if cls is not bytes:
        value = (value if cls is _TEXT else u'%s' % (value,)).encode('utf-8')
    return _I.pack(len(value)) + value


def plan(oids):
    """How a statement with parameters of types ``oids`` binds them: None when every one
    goes as text, else (Bind's format codes, a (struct, size, classes) or None per
    parameter)."""
    packers = tuple(_BINARY.get(oid) for oid in oids)
    if not any(packers):
        return None
    codes = _H.pack(len(packers)) + b''.join(
        _H.pack(0 if p is None else 1) for p in packers)
    return codes, packers


def encode(params, how):
    """(Bind's format codes, the encoded parameters) for ``params`` bound as ``how``
    (a ``plan``, or None: all text)."""
    if how is None:
        return TEXT_FORMATS, [text(v) for v in params]
    codes, packers = how
    out = []
    for value, p in zip(params, packers):
        if p is None or value is None:      # (NULL is the same in either format)
            out.append(text(value))
        elif value.__class__ in p[2]:      # (bool is a class of its own: text)
            try:
                out.append(p[0].pack(p[1], value))
            except struct.error:        # beyond the type's range: the server says so
                return TEXT_FORMATS, [text(v) for v in params]
        else:
            return TEXT_FORMATS, [text(v) for v in params]
    return codes, out
