"""A Bind's parameters: numbers binary where the statement's types take them, text
otherwise, and the whole Bind in text when a value does not fit (the server judges it)."""
from __future__ import absolute_import, division, print_function

import struct

from gloaddriver.backends.postgres import param_values as pv


def test_only_numbers_are_planned_binary():
    assert pv.plan([25, 1043]) is None           # text, varchar: all text
    assert pv.plan([]) is None
    codes, packers = pv.plan([20, 25, 23, 21, 701])
    assert codes == struct.pack('!6H', 5, 1, 0, 1, 1, 1)
    assert packers[1] is None


def test_numbers_go_binary_and_the_rest_as_text():
    how = pv.plan([20, 25, 23, 21, 701, 701])
    codes, values = pv.encode([-2 ** 63, u'caf\xe9', 7, -1, 0.5, 3], how)
    assert codes == how[0]
    assert values == [struct.pack('!iq', 8, -2 ** 63), struct.pack('!i', 5) + b'caf\xc3\xa9',
                      struct.pack('!ii', 4, 7), struct.pack('!ih', 2, -1),
                      struct.pack('!id', 8, 0.5), struct.pack('!id', 8, 3.0)]


def test_a_value_that_does_not_fit_sends_every_parameter_as_text():
    how = pv.plan([20, 23])
    for params in ([u'12', 1], [1, 2 ** 31], [True, 1], [1.5, 1]):
        codes, values = pv.encode(params, how)
        assert codes == pv.TEXT_FORMATS
        assert values == [pv.text(v) for v in params]
    assert pv.encode([None, 1], how) == (how[0], [b'\xff\xff\xff\xff',
                                                 struct.pack('!ii', 4, 1)])
    assert pv.text(None) == b'\xff\xff\xff\xff'
    assert pv.text(b'\x00') == b'\x00\x00\x00\x01\x00'
    assert pv.text(2 ** 31) == b'\x00\x00\x00\x0a2147483648'
