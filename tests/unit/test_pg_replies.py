"""The pipelined PostgreSQL connection's reply parser (backends/postgres/replies.py),
the one its reader uses, fed backend message streams split everywhere."""
from __future__ import absolute_import, division, print_function

import struct

import pytest

from gloaddriver import errors
from gloaddriver.backends.postgres.replies import ProtocolError, ReplyParser, next_message


def msg(kind, payload=b''):
    """A backend message, built independently of the code under test."""
    return kind + struct.pack('!I', len(payload) + 4) + payload


def row(*cols):
    out = struct.pack('!H', len(cols))
    for c in cols:
        out += b'\xff\xff\xff\xff' if c is None else struct.pack('!i', len(c)) + c
    return msg(b'D', out)


def done(tag):
    return msg(b'C', tag + b'\x00')


def error(code, text, severity=b'ERROR'):
    return msg(b'E', b'S' + severity + b'\x00V' + severity + b'\x00C' + code + b'\x00M' +
               text + b'\x00\x00')


READY = msg(b'Z', b'I')
BOUND = msg(b'2')

# One stream with every kind of reply: rows (UTF-8 text, NULL, an empty string), a query
# with no rows, DML counts, an error confined to its statement, a Parse/Sync with no
# result, notices and status messages between them, a long row.
STREAM = b''.join([
    BOUND, row(b'1', u'caf\xe9'.encode('utf-8'), None), row(b'2', b'', b'x'),
    done(b'SELECT 2'), READY,
    BOUND, msg(b'n'), done(b'SELECT 0'), READY,
    BOUND, done(b'INSERT 0 1'), READY,
    BOUND, msg(b'N', b'SNOTICE\x00Mhello\x00\x00'), error(b'23505', b'duplicate key'),
    READY,
    msg(b'1'), READY,
    msg(b'S', b'TimeZone\x00UTC\x00'), BOUND, done(b'UPDATE 3'), READY,
    BOUND, row(b'y' * 300), done(b'SELECT 1'), READY,
])
EXPECTED = [
    [[u'1', u'caf\xe9', None], [u'2', u'', u'x']],
    [],
    1,
    ('ServerError', '23505', u'duplicate key', False),
    [],
    3,
    [[u'y' * 300]],
]


def seen(replies):
    return [('ServerError', r.code, r.message, r.outage) if isinstance(r, errors.ServerError)
            else r for r in replies]


def parse(pieces):
    parser = ReplyParser('test')
    out = []
    for piece in pieces:
        out += parser.feed(piece)
    assert parser.fatal is None
    return seen(out)


def test_a_stream_in_one_piece_gives_every_reply():
    assert parse([STREAM]) == EXPECTED


def test_a_stream_split_at_every_offset_gives_the_same_replies():
    for cut in range(len(STREAM) + 1):
        assert parse([STREAM[:cut], STREAM[cut:]]) == EXPECTED, cut


def test_a_stream_split_at_every_two_offsets_gives_the_same_replies():
    data = STREAM[:STREAM.index(msg(b'1'))]    # the first four replies
    for a in range(len(data) + 1):
        for b in range(a, len(data) + 1):
            assert parse([data[:a], data[a:b], data[b:]]) == EXPECTED[:4], (a, b)


def test_a_stream_one_byte_at_a_time_gives_the_same_replies():
    assert parse([STREAM[i:i + 1] for i in range(len(STREAM))]) == EXPECTED


def test_a_reply_comes_out_with_the_feed_that_completes_it():
    parser = ReplyParser()
    first = BOUND + done(b'DELETE 7') + READY
    assert parser.feed(first[:-1]) == []
    assert parser.feed(first[-1:] + BOUND) == [7]


def test_a_fatal_error_ends_the_stream_after_the_replies_before_it():
    before = BOUND + done(b'INSERT 0 1') + READY
    fatal = error(b'57P01', b'terminating connection due to administrator command',
                  severity=b'FATAL')
    data = before + fatal + BOUND + done(b'INSERT 0 1') + READY
    for cut in range(len(data) + 1):
        parser = ReplyParser('test')
        got = parser.feed(data[:cut]) + parser.feed(data[cut:])
        assert got == [1], cut
        assert (parser.fatal.code, parser.fatal.outage) == ('57P01', True), cut
        assert parser.feed(READY) == []    # nothing is read after it


# Streams that cannot be backend messages: each fails the parser, however it is split.
MALFORMED = [
    ('has length 3', b'Z\x00\x00\x00\x03I' + READY),
    ('longer than its message', msg(b'D', struct.pack('!Hi', 1, 50) + b'abc') + READY),
    ('cannot parse the reply stream from test: UnicodeDecodeError',
     row(b'\xff\xfe') + READY),
    ('cannot parse the reply stream from test: error', msg(b'D', b'\x00') + READY),
]


@pytest.mark.parametrize('words,bad', MALFORMED)
def test_malformed_streams_are_protocol_errors_wherever_they_are_split(words, bad):
    good = BOUND + done(b'INSERT 0 1') + READY
    data = good + bad
    for cut in range(len(data) + 1):
        parser = ReplyParser('test')
        got = []
        with pytest.raises(ProtocolError) as e:
            for piece in (data[:cut], data[cut:]):
                got += parser.feed(piece)
        assert isinstance(e.value, errors.NetworkError)
        assert words in str(e.value), (cut, str(e.value))
        if cut == len(good):
            assert got == [1]


def test_the_login_frames_messages_by_the_same_rules():
    data = bytearray(msg(b'R', b'\x00\x00\x00\x00') + READY[:3])
    kind, payload, rest = next_message(data)
    assert (kind, payload, bytes(rest)) == (b'R', b'\x00\x00\x00\x00', READY[:3])
    assert next_message(rest) is None
    with pytest.raises(ProtocolError):
        next_message(bytearray(b'Z\x00\x00\x00\x02'))
