"""IPROTO replies from bytes: the one parser of the reply stream.

Socket-free: ``ReplyParser.feed`` takes the bytes received, split anywhere, and
returns every reply they complete; the rest waits inside for the next feed. The
connection's reader (every reply of a run) and its login (the reply to AUTH) both
use it, so the byte-by-byte tests (tests/unit/test_protocol.py) test the parser
the hot path runs.

A reply is ``(sync, code, body)``:

* code OK or CHUNK (a push): the body as received, undecoded (``protocol.Rows``),
  or ``[]`` for the body of an empty result;
* an error code (ERROR_FLAG set): the exception to raise, a ``ServerError`` with the
  box error's code and message. One whose body cannot be read is a
  ``ProtocolError`` for that request alone: the frame had its length, so the
  stream after it is intact.

Anything else is the stream's fault: a length prefix that is not an integer, a
header that is not a map with a sync and a request type, bytes that are not
msgpack. ``feed`` raises ProtocolError and the parser must not be fed again (the
connection drops the socket; at login it means the server does not speak IPROTO).

Two readers, one parser: the compiled one (``_replycut.c``, where setup.py could build
it, unless GLOADDRIVER_PURE_PYTHON is set) cuts the frames a server writes (a 0xce
length, a header of integers) straight into replies, a sixth or less of the msgpack
reader's cost per reply; the msgpack reader takes the stream over for good at the first
frame of any other form, so both give the same replies and the same errors.
"""
from __future__ import absolute_import, division, print_function

import msgpack

from gloaddriver.backends.compiled import optional
from gloaddriver.backends.tarantool import protocol as P

CUT = optional('gloaddriver.backends.tarantool._replycut', 'cut')   # or None
# The single-waiter path's send, wait and read in one call (connection.Connection._alone),
# on the same frames the cutter reads; or None.
ALONE = CUT and optional('gloaddriver.backends.tarantool._replycut', 'alone')


class ReplyParser(object):
    """Cuts a reply stream into replies; ``source`` names the server in messages."""

    __slots__ = ('source', '_feed', '_unpack', '_tell', '_read_bytes', '_state', '_cut',
                 '_pending', '_need')

    def __init__(self, source='the server'):
        self.source = source
        # The compiled reader while the stream is of the form it reads; ``_pending``:
        # the start of a frame it has not had whole yet, ``_need``: that frame's
        # length once its prefix is in (0 before). connection.Connection._alone reads
        # ``_cut`` and ``_pending`` too: its compiled call may read the stream only at
        # a frame's start, while the cutter has it.
        self._cut = CUT
        self._pending = None
        self._need = 0
        # The length prefix is a msgpack uint32, so the stream is a msgpack stream
        # (length, header, body, ...) and one Unpacker buffers partial frames.
        unpacker = P.new_unpacker()
        self._feed = unpacker.feed
        self._unpack = unpacker.unpack
        self._tell = unpacker.tell
        self._read_bytes = unpacker.read_bytes
        # Where the parser stands across feeds: (what comes next: 0 a length, 1 a
        # header, 2 the rest of a body; bytes of the frame still to come; the header;
        # the body so far; where the header began (tell): a header split across feeds
        # is unpacked again from its start, so its size is measured from there).
        self._state = (0, 0, None, None, 0)

    def feed(self, data):
        """Every reply that ``data`` completes, in stream order: a list of
        ``(sync, code, body)`` (the module's docstring says what body is).

        The per-chunk call of every run: the compiled reader's one C call, or
        msgpack's loop once it has taken the stream over (or where it is not built).
        Callers hold this bound method, so the choice is made here, per call.
        """
        cut = self._cut
        if cut is None:
            return self._feed_msgpack(data)
        replies = []
        start = 0
        pending = self._pending
        if pending is not None:
            # A frame begun in an earlier read: complete it alone (a whole read is not
            # copied after it), then go on in this one.
            need = self._need
            start = need - len(pending) if need else len(data)
            pending += data[:start]
            end, need, stuck = cut(pending, 0, P.Rows, self._error, replies)
            if stuck:
                self._pending = None
                return replies + self._take_over(pending[end:], data[start:])
            if end < len(pending):          # still not whole
                if end:
                    pending = bytearray(pending[end:])
                self._pending, self._need = pending, need
                return replies
            self._pending, self._need = None, 0
        end, need, stuck = cut(data, start, P.Rows, self._error, replies)
        if stuck:
            return replies + self._take_over(data[end:])
        if end < len(data):
            self._pending, self._need = bytearray(data[end:]), need
        return replies

    def _take_over(self, *pieces):
        """The msgpack reader from here on: a frame of a form the compiled one does
        not read (``pieces``: the stream from that frame's start)."""
        self._cut = None
        rest = bytearray()
        for piece in pieces:
            rest += piece
        return self._feed_msgpack(bytes(rest))

    def _feed_msgpack(self, data):
        """``feed`` through msgpack alone. The per-reply loop where the compiled reader
        is not built or has handed over: no Python call per reply, the names it uses
        held in locals."""
        self._feed(data)
        replies = []
        append = replies.append
        unpack, tell, read_bytes = self._unpack, self._tell, self._read_bytes
        SYNC, REQUEST_TYPE, OK, CHUNK = P.SYNC, P.REQUEST_TYPE, P.OK, P.CHUNK
        Rows, empty_bodies, empty_max = P.Rows, P.EMPTY_BODIES, P.EMPTY_BODY_MAX
        st, left, header, part, t0 = self._state
        try:
            while True:
                if st == 0:
                    left = unpack()
                    if left.__class__ is not int:
                        raise P.ProtocolError('reply length prefix from %s is not an integer: '
                                              '%r' % (self.source, left))
                    st = 1
                    t0 = tell()
                if st == 1:
                    header = unpack()
                    if header.__class__ is not dict or SYNC not in header or \
                            REQUEST_TYPE not in header:
                        raise P.ProtocolError('reply header from %s is not an IPROTO map: %r'
                                              % (self.source, header))
                    left -= tell() - t0
                    part = None
                    st = 2
                body = read_bytes(left)
                got = len(body)
                if got < left:
                    # The body goes on in the next feed.
                    part = body if part is None else part + body
                    left -= got
                    break
                if part is not None:
                    body = part + body
                    got = len(body)
                st = 0
                code = header[REQUEST_TYPE]
                if code == OK or code == CHUNK:
                    # An empty result is told by its size first: hashing a 1.5 KB
                    # body for the set test would cost more than the test saves.
                    append((header[SYNC], code, [] if got <= empty_max and body in empty_bodies
                            else Rows(body)))
                else:
                    append((header[SYNC], code, self._error(code, body)))
        except msgpack.OutOfData:
            pass
        except P.ProtocolError:
            raise
        except Exception as e:
            # Whatever broke the unpacker, the stream can no longer be trusted.
            raise P.ProtocolError('cannot parse the reply stream from %s: %s: %s'
                                  % (self.source, e.__class__.__name__, e))
        self._state = (st, left, header, part, t0)
        return replies

    def _error(self, code, body):
        """The exception of an error reply; one whose body cannot be read fails its
        own request as a protocol error."""
        try:
            return P.server_error(code, P.decode_body(body) if body else {})
        except Exception as e:
            return P.ProtocolError('cannot read an error reply (code %s) from %s: %s: %s'
                                   % (code, self.source, e.__class__.__name__, e))
