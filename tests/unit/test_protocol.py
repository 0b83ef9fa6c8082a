"""IPROTO requests without a server: frames, types on the wire, greeting, auth (the
reply stream's parser: test_replies.py)."""
from __future__ import absolute_import, division, print_function

import hashlib
import struct

import msgpack
import pytest

from gloaddriver.backends.tarantool import protocol as P


def unpack_all(data):
    up = msgpack.Unpacker(raw=False, **({'strict_map_key': False}
                                        if msgpack.version >= (1, 0) else {}))
    up.feed(bytes(data))
    return list(up)


def test_request_frame_has_length_header_and_body():
    buf = bytearray()
    P.Encoder().insert(buf, 7, 512, [1, u'caf\xe9', b'\x00\xff'])
    assert buf[0] == 0xce
    (length,) = struct.unpack('>I', bytes(buf[1:5]))
    assert length == len(buf) - 5
    length_obj, header, body = unpack_all(buf)
    assert length_obj == length
    assert header == {P.REQUEST_TYPE: P.INSERT, P.SYNC: 7}
    assert body == {P.SPACE_ID: 512, P.TUPLE: [1, u'caf\xe9', b'\x00\xff']}


def test_text_is_str_and_bytes_is_bin_on_the_wire():
    buf = bytearray()
    P.Encoder().insert(buf, 1, 512, [u'a', b'a'])
    # fixstr 'a' = a1 61, bin8 len 1 'a' = c4 01 61
    assert bytes(buf).endswith(b'\x92\xa1a\xc4\x01a')


def test_every_request_type_round_trips():
    enc = P.Encoder()
    cases = [
        (lambda b: enc.select(b, 1, 512, 0, [5], 10, 2, P.ITERATOR_ALL), P.SELECT,
         {P.SPACE_ID: 512, P.INDEX_ID: 0, P.LIMIT: 10, P.OFFSET: 2,
          P.ITERATOR: P.ITERATOR_ALL, P.KEY: [5]}),
        (lambda b: enc.replace(b, 2, 512, [1]), P.REPLACE, {P.SPACE_ID: 512, P.TUPLE: [1]}),
        (lambda b: enc.update(b, 3, 512, 1, [1], [[u'=', 1, 2]]), P.UPDATE,
         {P.SPACE_ID: 512, P.INDEX_ID: 1, P.KEY: [1], P.TUPLE: [[u'=', 1, 2]]}),
        (lambda b: enc.upsert(b, 4, 512, [1], [[u'+', 1, 1]]), P.UPSERT,
         {P.SPACE_ID: 512, P.TUPLE: [1], P.OPS: [[u'+', 1, 1]]}),
        (lambda b: enc.delete(b, 5, 512, 0, [1]), P.DELETE,
         {P.SPACE_ID: 512, P.INDEX_ID: 0, P.KEY: [1]}),
        (lambda b: enc.call(b, 6, u'f', (1, 2)), P.CALL, {P.FUNCTION_NAME: u'f', P.TUPLE: [1, 2]}),
        (lambda b: enc.eval(b, 7, u'return 1', ()), P.EVAL, {P.EXPR: u'return 1', P.TUPLE: []}),
        (lambda b: enc.ping(b, 2 ** 40), P.PING, {}),
    ]
    for build, code, body in cases:
        buf = bytearray()
        build(buf)
        _len, header, got = unpack_all(buf)
        assert header[P.REQUEST_TYPE] == code
        assert got == body


def test_greeting():
    salt = b'0123456789abcdefghij0123456789ab'
    import base64
    first = b'Tarantool 2.6.0 (Binary) 0d4a1e2b-0000-0000-0000-000000000000'
    data = first.ljust(63) + b'\n' + base64.b64encode(salt).ljust(63) + b'\n'
    version, got = P.parse_greeting(data)
    assert version.startswith('Tarantool 2.6.0') and got == salt
    with pytest.raises(P.ProtocolError):
        P.parse_greeting(b'HTTP/1.1 400'.ljust(128))


def test_scramble_passes_the_servers_check():
    # What the server does: it stores sha1(sha1(password)), XORs the scramble
    # with sha1(salt[:20] + that) and checks the sha1 of the result.
    salt = bytes(bytearray(range(32)))
    stored = hashlib.sha1(hashlib.sha1(b'secret').digest()).digest()
    s = P.scramble(salt, u'secret')
    mask = hashlib.sha1(salt[:20] + stored).digest()
    candidate = bytes(bytearray(a ^ b for a, b in zip(bytearray(s), bytearray(mask))))
    assert hashlib.sha1(candidate).digest() == stored
    assert P.scramble(salt, u'other') != s


def test_auth_frame_sends_scramble_as_str():
    buf = bytearray()
    P.Encoder().auth(buf, 1, u'u', b'\x01' * 32, u'pw')
    assert bytes(buf[5:13]) == b'\x82\x00\x07\x01\xcf\x00\x00\x00'   # AUTH, sync 1
    # the scramble is not UTF-8, so it cannot be decoded as text: look at its type byte
    idx = bytes(buf).index(b'chap-sha1') + len(b'chap-sha1')
    assert bytes(buf)[idx:idx + 1] == b'\xb4'   # fixstr of length 20
