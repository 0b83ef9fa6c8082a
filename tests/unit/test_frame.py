"""The request's framing (``_replycut.frame``, protocol.FRAME), as rows_frame calls it:
the head and the body's parts appended to the connection's outgoing bytearray. Checked
byte for byte against a frame built apart from the code (msgpack and struct), read
back by msgpack, and against the pure-Python twin's (protocol.frame); and its refusals."""
from __future__ import absolute_import, division, print_function

import os
import struct

import msgpack
import pytest

from gloaddriver.backends.tarantool import protocol as P

FRAME = P.FRAME
BUILT = FRAME is not P.frame

pytestmark = pytest.mark.skipif(
    not BUILT and bool(os.environ.get('GLOADDRIVER_PURE_PYTHON')),
    reason='GLOADDRIVER_PURE_PYTHON is set: no compiled framing to test')


@pytest.fixture(autouse=True)
def built():
    if not BUILT:
        pytest.fail('the compiled module is not built in this environment (setup.py builds it)')


def expected(code, sync, body):
    """A request frame built independently: a uint32 length, a two-key header map whose
    sync is a uint64, the body."""
    head = b'\x82' + msgpack.packb(P.REQUEST_TYPE) + msgpack.packb(code) + \
        msgpack.packb(P.SYNC) + b'\xcf' + struct.pack('>Q', sync)
    return b'\xce' + struct.pack('>I', len(head) + len(body)) + head + body


def python_twin(code, sync, parts):
    """What rows_frame appends where the compiled call is not built."""
    out = bytearray()
    P.frame(out, code, sync, parts)
    return bytes(out)


@pytest.mark.parametrize('sync', [0, 1, 255, 2 ** 32 - 1, 2 ** 32, 2 ** 64 - 1])
@pytest.mark.parametrize('parts', [(), (b'',), (b'\x80',), (b'\x82\x10\xcd', b'', b'x' * 1536),
                                   (msgpack.packb({P.SPACE_ID: 512, P.KEY: [7]}),)])
def test_the_frame_is_the_one_built_apart(sync, parts):
    out = bytearray()
    assert FRAME(out, P.INSERT, sync, parts) is None
    body = b''.join(parts)
    assert bytes(out) == expected(P.INSERT, sync, body) == python_twin(P.INSERT, sync, parts)
    unpacker = P.new_unpacker()
    unpacker.feed(bytes(out))
    assert unpacker.unpack() == len(out) - 5
    assert unpacker.unpack() == {P.REQUEST_TYPE: P.INSERT, P.SYNC: sync}


def test_frames_append_after_what_the_buffer_holds():
    out = bytearray(b'earlier')
    FRAME(out, P.SELECT, 9, (b'\x81', b'\x10\xcd\x02\x00'))
    FRAME(out, 0, 10, ())
    assert bytes(out) == b'earlier' + expected(P.SELECT, 9, b'\x81\x10\xcd\x02\x00') + \
        expected(0, 10, b'')


def test_every_fixint_code():
    for code in range(128):
        out = bytearray()
        FRAME(out, code, 3, (b'\x80',))
        assert bytes(out) == expected(code, 3, b'\x80')


@pytest.mark.parametrize('args, error', [
    ((b'not a bytearray', 2, 1, ()), TypeError),
    ((bytearray(), 2, 1, [b'a list']), TypeError),
    ((bytearray(), 2, 1, (u'text',)), TypeError),
    ((bytearray(), 2, 1, (bytearray(b'x'),)), TypeError),
    ((bytearray(), 128, 1, ()), ValueError),
    ((bytearray(), -1, 1, ()), ValueError),
    ((bytearray(), 'x', 1, ()), TypeError),
    ((bytearray(), 2, 'x', ()), TypeError),
    ((bytearray(), 2, 1), TypeError),
])
def test_refusals_leave_the_buffer_as_it_was(args, error):
    out = args[0]
    before = bytes(out) if isinstance(out, bytearray) else None
    with pytest.raises(error):
        FRAME(*args)
    if before is not None:
        assert bytes(out) == before


def test_a_buffer_held_elsewhere_is_refused_unchanged():
    out = bytearray(b'held')
    view = memoryview(out)
    with pytest.raises(BufferError):
        FRAME(out, P.INSERT, 1, (b'x',))
    del view
    assert bytes(out) == b'held'
