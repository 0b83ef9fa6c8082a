"""The compiled single-waiter call (``_replycut.alone``, replies.ALONE), as the connection's
single-waiter path calls it: on a real socket pair, the reply already waiting or not,
whole or cut, of the usual form or another. Only the usual case (one whole OK reply to
the request, alone in the read) is decoded here; every other read is handed back as its
byte count, for the parser, and its bytes must be the stream's, unchanged."""
from __future__ import absolute_import, division, print_function

import errno
import os
import signal
import socket
import time

import msgpack
import pytest

from gloaddriver.backends.tarantool import protocol as P
from gloaddriver.backends.tarantool import replies
from gloaddriver.backends.tarantool.replies import ReplyParser
from tests.unit.test_replies import frame, reply     # frames built apart from the code

ALONE = replies.ALONE
WAIT_MS = 50

pytestmark = pytest.mark.skipif(
    ALONE is None and bool(os.environ.get('GLOADDRIVER_PURE_PYTHON')),
    reason='GLOADDRIVER_PURE_PYTHON is set: no compiled reader to test')


@pytest.fixture
def pair():
    """(client, server): the client non-blocking, as the connection's socket is."""
    if ALONE is None:
        pytest.fail('the compiled reply cutter is not built in this environment (setup.py '
                    'builds it)')
    client, server = socket.socketpair()
    client.setblocking(False)
    yield client, server
    client.close()
    server.close()


def call(client, out, sync, buf, wait_ms=WAIT_MS):
    return ALONE(client.fileno(), out, sync, buf, wait_ms, P.Rows)


def test_the_usual_reply_is_its_body_and_the_request_is_sent(pair):
    client, server = pair
    body = {P.DATA: [[7, u'seven']]}
    server.sendall(reply(7, body))
    out, buf = bytearray(b'request-bytes'), bytearray(4096)
    got = call(client, out, 7, buf)
    assert got.__class__ is P.Rows and got.data() == [[7, u'seven']]
    # The same body the parser gives for the same bytes.
    (_s, _c, parsed), = ReplyParser().feed(reply(7, body))
    assert bytes(got) == bytes(parsed)
    assert out == bytearray() and server.recv(100) == b'request-bytes'


def test_an_empty_result_is_an_empty_list(pair):
    client, server = pair
    server.sendall(reply(3, {P.DATA: []}))
    assert call(client, bytearray(b'x'), 3, bytearray(4096)) == []


@pytest.mark.parametrize('stream', [
    lambda: reply(8, {P.DATA: [[1]]}),                               # another request's
    lambda: reply(7, {P.ERROR_24: u'Duplicate key'}, code=P.ERROR_FLAG | 3),   # an error
    lambda: reply(7, {P.DATA: [[1]]}, code=P.CHUNK),                 # a push
    lambda: reply(6, {P.DATA: []}) + reply(7, {P.DATA: [[1]]}),      # two replies
    lambda: reply(7, {P.DATA: [[1, u'x' * 300]]})[:100],             # half a reply
    lambda: reply(7, {P.DATA: [[1]]}) + b'\xce\x00',                 # and a next one's start
    lambda: frame([7, 0], msgpack.packb({P.DATA: []})),              # a header of another form
], ids=['other sync', 'error', 'push', 'two', 'half', 'and more', 'other form'])
def test_any_other_read_is_handed_back_as_its_bytes(pair, stream):
    client, server = pair
    data = stream()
    server.sendall(data)
    out, buf = bytearray(b'req'), bytearray(4096)
    n = call(client, out, 7, buf)
    assert n == len(data) and bytes(buf[:n]) == data
    assert out == bytearray() and server.recv(10) == b'req'


def test_no_reply_within_the_wait_is_zero_after_the_send(pair):
    client, server = pair
    out = bytearray(b'req')
    assert call(client, out, 7, bytearray(4096), wait_ms=1) == 0
    assert out == bytearray() and server.recv(10) == b'req'


def test_the_end_of_the_stream_is_zero(pair):
    client, server = pair
    server.shutdown(socket.SHUT_WR)
    assert call(client, bytearray(b'req'), 7, bytearray(4096)) == 0


def test_a_full_socket_keeps_what_it_did_not_send_in_order(pair):
    client, server = pair
    chunk = bytes(bytearray(range(256))) * 1024
    sent = 0
    out = bytearray(chunk)
    # Fill the socket's buffers: what goes is taken off the front, the rest stays.
    while True:
        before = len(out)
        n = call(client, out, 7, bytearray(16), wait_ms=0)
        if n == -errno.EAGAIN:
            assert len(out) == before           # nothing sent: all of it kept
            break
        assert n == 0 and len(out) < before
        sent += before - len(out)
        if not out:
            out = bytearray(chunk)
    # The stream is the chunks in order, from the first byte on.
    total = sent
    received = bytearray()
    server.settimeout(5)
    while len(received) < total:
        received += server.recv(total - len(received))
    assert bytes(received) == (chunk * (total // len(chunk) + 1))[:total]


def test_a_send_to_a_closed_peer_is_its_errno(pair):
    client, server = pair
    server.close()
    n = call(client, bytearray(b'req'), 7, bytearray(16))
    if n == 0:      # the first send may still be taken; the next one is refused
        n = call(client, bytearray(b'req'), 7, bytearray(16))
    assert n in (-errno.EPIPE, -errno.ECONNRESET)


def test_a_buffer_exported_elsewhere_is_left_to_the_flush_unsent(pair):
    client, server = pair
    out = bytearray(b'req')
    held = memoryview(out)      # it could not be shortened after a send
    assert call(client, out, 7, bytearray(16)) == -errno.EAGAIN
    assert out == bytearray(b'req')
    del held
    server.setblocking(False)
    with pytest.raises(socket.error):
        server.recv(10)         # nothing went


class Interrupted(Exception):
    pass


def test_a_signal_in_the_wait_runs_its_handler_and_raises_what_it_raises(pair):
    client, server = pair

    def handler(_signum, _frame):
        raise Interrupted()
    old = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        out = bytearray(b'req')
        t0 = time.time()
        with pytest.raises(Interrupted):
            call(client, out, 7, bytearray(16), wait_ms=20000)  # no reply comes
        # At the signal, not at the wait's end (a wait that went on after it would be).
        assert time.time() - t0 < 15
        assert out == bytearray() and server.recv(10) == b'req'
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
