"""The IPROTO reply parser (backends/tarantool/replies.py), the one the connection's
reader and its login both use, fed byte streams split everywhere, through both of its
readers: the compiled one (_replycut.c) and msgpack's."""
from __future__ import absolute_import, division, print_function

import os
import struct

import msgpack
import pytest

from gloaddriver import errors
from gloaddriver.backends.tarantool import protocol as P
from gloaddriver.backends.tarantool import replies
from gloaddriver.backends.tarantool.replies import ReplyParser

COMPILED = replies.CUT


@pytest.fixture(autouse=True, params=['compiled', 'msgpack'])
def reader(request, monkeypatch):
    """Every test here runs through both readers, as the connection's parser holds them."""
    if request.param == 'compiled' and COMPILED is None:
        pytest.fail('the compiled reply cutter is not built in this environment (setup.py '
                    'builds it; GLOADDRIVER_PURE_PYTHON turns it off)'
                    if not os.environ.get('GLOADDRIVER_PURE_PYTHON') else
                    'GLOADDRIVER_PURE_PYTHON is set: no compiled reader to test')
    monkeypatch.setattr(replies, 'CUT', COMPILED if request.param == 'compiled' else None)
    return request.param


def frame(header, body_bytes):
    """A reply frame from its parts, built independently of the code under test."""
    payload = msgpack.packb(header, use_bin_type=True) + body_bytes
    return b'\xce' + struct.pack('>I', len(payload)) + payload


def reply(sync, body, code=P.OK):
    return frame({P.REQUEST_TYPE: code, P.SYNC: sync, P.SCHEMA_VERSION: 80},
                 msgpack.packb(body, use_bin_type=True))


def seen(replies):
    """Replies as comparable values: decoded bodies, errors by class, code, message."""
    out = []
    for sync, code, body in replies:
        if isinstance(body, errors.ServerError):
            body = ('ServerError', body.code, body.message)
        elif isinstance(body, Exception):
            body = (body.__class__.__name__, None, str(body).split(':')[0])
        elif body.__class__ is not list:
            assert isinstance(body, P.Rows)
            body = ('rows', body.data())
        out.append((sync, code, body))
    return out


def parse(pieces):
    """Feed ``pieces`` to one parser, through one bound ``feed`` held as the
    connection's reader holds it; every reply that came out, in order."""
    feed = ReplyParser('test').feed
    out = []
    for piece in pieces:
        out += feed(piece)
    return seen(out)


# One stream with every kind of reply: rows (text, bytes, a body that is larger than
# a read), both wire forms of an empty result, an error with its message, an error
# whose body is not msgpack, a push, an SQL body with no DATA, a reply after them all.
STREAM = b''.join([
    reply(1, {P.DATA: [[1, u'caf\xe9', b'\x00\xff']]}),
    frame({P.REQUEST_TYPE: P.OK, P.SYNC: 2}, b'\x81\x30\xdd\x00\x00\x00\x00'),
    frame({P.REQUEST_TYPE: P.OK, P.SYNC: 3}, b'\x81\x30\x90'),
    reply(4, {P.ERROR_24: u'Duplicate key exists'}, code=P.ERROR_FLAG | 3),
    frame({P.REQUEST_TYPE: P.ERROR_FLAG | 3, P.SYNC: 5}, b'\xc1\xc1'),
    reply(6, {P.DATA: [u'pushed']}, code=P.CHUNK),
    reply(6, {P.DATA: [[u'x' * 300]]}),
    reply(7, {P.SQL_INFO: {P.SQL_INFO_ROW_COUNT: 1}}),
    reply(2 ** 40, {P.DATA: [[2]]}),
    # Forms no server writes, yet msgpack: a uint16 length prefix, a header with a text
    # value (the compiled reader hands the stream to msgpack's from the first of them).
    b'\xcd' + struct.pack('>H', 6) + msgpack.packb({P.REQUEST_TYPE: P.OK, P.SYNC: 8}) +
    b'\x80',
    frame({P.REQUEST_TYPE: P.OK, P.SYNC: 9, 0x7f: u'x'}, msgpack.packb({P.DATA: [[9]]})),
    reply(10, {P.DATA: [[10]]}),
])
EXPECTED = [
    (1, P.OK, ('rows', [[1, u'caf\xe9', b'\x00\xff']])),
    (2, P.OK, []),
    (3, P.OK, []),
    (4, P.ERROR_FLAG | 3, ('ServerError', 3, u'Duplicate key exists')),
    (5, P.ERROR_FLAG | 3, ('ProtocolError', None, 'cannot read an error reply (code 32771) from test')),
    (6, P.CHUNK, ('rows', [u'pushed'])),
    (6, P.OK, ('rows', [[u'x' * 300]])),
    (7, P.OK, ('rows', {P.SQL_INFO: {P.SQL_INFO_ROW_COUNT: 1}})),
    (2 ** 40, P.OK, ('rows', [[2]])),
    (8, P.OK, ('rows', {})),
    (9, P.OK, ('rows', [[9]])),
    (10, P.OK, ('rows', [[10]])),
]


def test_a_stream_in_one_piece_gives_every_reply():
    assert parse([STREAM]) == EXPECTED


def test_a_stream_split_at_every_offset_gives_the_same_replies():
    for cut in range(len(STREAM) + 1):
        assert parse([STREAM[:cut], STREAM[cut:]]) == EXPECTED, cut


def test_a_stream_split_at_every_two_offsets_gives_the_same_replies():
    data = STREAM[:STREAM.index(reply(6, {P.DATA: [[u'x' * 300]]}))]   # the short replies
    expected = EXPECTED[:6]
    for a in range(len(data) + 1):
        for b in range(a, len(data) + 1):
            assert parse([data[:a], data[a:b], data[b:]]) == expected, (a, b)


def test_a_stream_one_byte_at_a_time_gives_the_same_replies():
    assert parse([STREAM[i:i + 1] for i in range(len(STREAM))]) == EXPECTED


def test_a_reply_comes_out_with_the_feed_that_completes_it():
    parser = ReplyParser()
    first = reply(1, {P.DATA: [[1]]})
    assert parser.feed(first[:-1]) == []
    assert seen(parser.feed(first[-1:] + reply(2, {P.DATA: [[2]]})[:3])) == \
        [(1, P.OK, ('rows', [[1]]))]


def test_the_compiled_reader_keeps_the_stream_a_server_writes(reader):
    parser = ReplyParser('test')
    data = STREAM[:STREAM.index(b'\xcd')]
    for cut in (5, 40, 41, 42, len(data)):      # partial prefixes, headers and bodies
        got = parser.feed(data[:cut])
        data = data[cut:]
        assert all(s in (1, 2, 3, 4, 5, 6, 7, 2 ** 40) for s, _c, _b in got)
    assert (parser._cut is not None) == (reader == 'compiled')


def test_many_replies_in_one_chunk():
    data = b''.join(reply(i, {P.DATA: [[i, u'v%d' % i]]}) for i in range(1, 51))
    got = parse([data])
    assert [s for s, _c, _b in got] == list(range(1, 51))
    assert got[9][2] == ('rows', [[10, u'v10']])


def test_the_reader_accepts_memoryview_slices_of_its_buffer():
    buf = bytearray(STREAM)
    view = memoryview(buf)
    parser = ReplyParser('test')
    got = parser.feed(view[:10])
    buf[:10] = b'\x00' * 10     # the reader reuses its buffer: the parser kept a copy
    got += parser.feed(view[10:])
    assert seen(got) == EXPECTED


def test_an_error_reply_is_a_server_error_with_code_message_and_outage_kind():
    (_s, _c, dup), (_s2, _c2, loading) = ReplyParser().feed(
        reply(4, {P.ERROR_24: u'Duplicate key exists'}, code=P.ERROR_FLAG | 3) +
        reply(5, {P.ERROR_24: u'Instance bootstrap hasn\'t finished yet'},
              code=P.ERROR_FLAG | 116))
    assert isinstance(dup, errors.ServerError) and not isinstance(dup, errors.NetworkError)
    assert (dup.code, dup.message, dup.kind, dup.outage) == (3, u'Duplicate key exists',
                                                             'server:3', False)
    assert loading.outage


def test_an_unreadable_error_body_fails_its_own_reply_and_the_stream_goes_on():
    parser = ReplyParser('test')
    got = parser.feed(frame({P.REQUEST_TYPE: P.ERROR_FLAG | 3, P.SYNC: 1}, b'\xc1') +
                      reply(2, {P.DATA: [[2]]}))
    assert isinstance(got[0][2], P.ProtocolError)
    assert seen(got[1:]) == [(2, P.OK, ('rows', [[2]]))]


# Streams that are not IPROTO: each fails the parser, however it is split.
MALFORMED = [
    ('is not an integer', msgpack.packb(u'abc')),
    ('is not an integer', msgpack.packb([1, 2]) + reply(2, {})),
    ('is not an IPROTO map', msgpack.packb(5) + msgpack.packb([1, 2])),
    ('is not an IPROTO map', frame({P.SYNC: 1}, b'\x80')),                  # no request type
    ('is not an IPROTO map', frame({P.REQUEST_TYPE: P.OK}, b'\x80')),       # no sync
    ('cannot parse the reply stream', b'\xce\x00\x00\x00\x05\xc1'),       # not msgpack
]


@pytest.mark.parametrize('words,bad', MALFORMED)
def test_malformed_streams_are_protocol_errors_wherever_they_are_split(words, bad):
    good = reply(1, {P.DATA: [[1]]})
    data = good + bad
    for cut in range(len(data) + 1):
        parser = ReplyParser('test')
        got = []
        with pytest.raises(P.ProtocolError) as e:
            for piece in (data[:cut], data[cut:]):
                got += parser.feed(piece)
        assert words in str(e.value) and 'from test' in str(e.value), cut
        # The good reply before it comes out of a feed that ends where it ends.
        if cut == len(good):
            assert [s for s, _c, _b in got] == [1]
