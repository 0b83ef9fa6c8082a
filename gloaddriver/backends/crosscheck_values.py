"""The canonical values both interpreters encode in the cross-check of ``gloaddriver
compat`` (each kind's ``crosscheck`` module): text, binary, integer boundaries, float,
bool, nil, nesting."""
from __future__ import absolute_import, division, print_function

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
