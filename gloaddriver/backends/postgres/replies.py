"""PostgreSQL backend messages from bytes: the pipelined connection's reply parser.

Socket-free: ``ReplyParser.feed`` takes the bytes received, split anywhere, and
returns the reply of every statement they complete; the rest waits inside for the
next feed. The connection's reader calls it (backends/postgres/pipelined.py) and
the byte-by-byte tests (tests/unit/test_pg_replies.py) feed the same class.

A message is a type byte, an int32 length that counts itself, then the payload.
A statement sent as Bind/Execute/Sync (or Parse/Sync) is answered by messages up to
its ReadyForQuery ('Z'), which ends its reply:

* the rows of a query (DataRow 'D', text columns decoded as UTF-8, NULL as None):
  a list, also when it returned none;
* the rows a DML statement changed (from its CommandComplete tag): an int;
* an ErrorResponse ('E'): a ``ServerError`` for that statement alone.

A RowDescription ('T', sent for a Describe or a simple query) leaves its column names
in ``columns`` (what ``\\gset`` needs of a script's query) and [(name, type oid)] in
``description`` (how a statement prepared on the fly reads its rows).

A parser made ``lazy`` builds no Python value for a row: a query's result is ``Rows``
(and so is a DML statement's when it returned rows: RETURNING), the DataRow bytes as
they came with their count and size, decoded (``row_values``) only when something
reads them. A run of rows is crossed one length field at a time, in a loop of its
own, and rows of one length many at a time, by strided slices.

A FATAL or PANIC error ends the session, not a statement: the parser stops there
and keeps it as ``fatal`` (the replies before it are returned; nothing after it
is read). Bytes that cannot be a message stream raise ProtocolError, after which
the parser must not be fed again.

``next_message`` (the framing, for the blocking login) and ``error_fields`` are
the same rules for the startup, so there is one place that reads a message.
"""
from __future__ import absolute_import, division, print_function

import struct

from gloaddriver import errors
from gloaddriver.backends.postgres.row_values import decode_parts
from gloaddriver.backends.postgres.sqlstate import server_error as _server_error

_I = struct.Struct('!I')
_IH = struct.Struct('!IH')
_i = struct.Struct('!i')
_cI = struct.Struct('!cI')
_PROBE = 16         # rows of one length checked at once before the rest of the chunk


def _row_run(data, pos, end, length, unpack_cI=_cI.unpack_from):
    """(where the run of whole DataRow messages from ``pos`` ends, how many it has,
    counting the one of ``length`` just before ``pos``): a length field each, no value
    read. Rows of one length (fixed-width columns, no NULL) are crossed many at a time."""
    n = 1
    same = 0        # rows of this length one after the other so far
    while end - pos >= 5:
        kind, size = unpack_cI(data, pos)
        if kind != b'D' or size < 4 or end - pos - 1 < size:
            break
        if size != length:
            same = 0
        elif same < 3:
            same += 1
        elif end - pos > _PROBE * (size + 1):
            # Four of one length: try the next _PROBE at once, and the rest if they are.
            step = size + 1
            head = data[pos:pos + 5]
            k = _same_rows(data, pos, _PROBE, step, head)
            if k == _PROBE:
                k += _same_rows(data, pos + k * step, (end - pos) // step - k, step, head)
            pos += k * step
            n += k
            continue
        pos += 1 + size
        n += 1
        length = size
    return pos, n


def _same_rows(data, pos, most, step, head):
    """How many of the ``most`` records of ``step`` bytes from ``pos``, one after the
    other, begin with ``head`` (a DataRow's type and length): each a whole message of
    that length. Five strided slices, no loop per row."""
    k = most
    if k <= 0:
        return 0
    stop = pos + most * step
    for i in range(5):
        column = data[pos + i:stop:step]
        k = min(k, len(column) - len(column.lstrip(head[i:i + 1])))
    return k


class Rows(object):
    """A query's rows, undecoded until read: ``len()`` and truth are the row count
    (no decoding), ``size`` the bytes of its DataRow messages; iterating or indexing
    decodes every row once, into tuples (``row_values.decode_parts`` with ``decoders``,
    the row_values.Columns the connection sets from the statement's description: None
    reads text)."""

    __slots__ = ('count', 'size', 'decoders', '_parts', '_rows')

    def __init__(self, parts, count, size):
        self.count = count
        self.size = size
        self.decoders = None
        self._parts = parts
        self._rows = None

    def __len__(self):
        return self.count

    def decoded(self):
        """The rows as a list of tuples (decoded on the first call)."""
        rows = self._rows
        if rows is None:
            rows = self._rows = decode_parts(self._parts, self.decoders)
            self._parts = None
        return rows

    def __iter__(self):
        return iter(self.decoded())

    def __getitem__(self, i):
        return self.decoded()[i]

    def __repr__(self):
        return '<Rows: %d, %d bytes>' % (self.count, self.size)


class ProtocolError(errors.NetworkError):
    """The byte stream is not the PostgreSQL protocol: the connection cannot be trusted."""


def error_fields(payload):
    """{field code: text} of an ErrorResponse or NoticeResponse."""
    out = {}
    for part in bytes(payload).split(b'\x00'):
        if part:
            out[part[:1].decode('ascii')] = part[1:].decode('utf-8', 'replace')
    return out


def server_error(fields):
    """An ErrorResponse as a ServerError, outage or not as the psycopg2 path says."""
    return _server_error(fields.get('C', '?'), fields.get('M', '?'))


def next_message(buf, source='the server'):
    """(type, payload, rest) of the first whole message in ``buf``, or None."""
    if len(buf) < 5:
        return None
    length = _I.unpack_from(buf, 1)[0]
    if length < 4:
        raise ProtocolError('a message from %s has length %d' % (source, length))
    if len(buf) < 1 + length:
        return None
    return bytes(buf[:1]), bytes(buf[5:1 + length]), buf[1 + length:]


def describe_columns(data, start, end):
    """[(name, type oid)] of the RowDescription in ``data[start:end]``."""
    out = []
    at = start + 2
    for _c in range(struct.unpack_from('!H', data, start)[0]):
        stop = data.index(b'\x00', at, end)
        out.append((data[at:stop].decode('utf-8'), _I.unpack_from(data, stop + 7)[0]))
        at = stop + 19
    return out


class ReplyParser(object):
    """Cuts a backend's message stream into statement replies; ``source`` names the
    server in messages. ``fatal``: the error of a FATAL message, once one came."""

    __slots__ = ('source', 'fatal', 'columns', 'description', 'lazy', '_tail', '_rows', '_count', '_error',
                 '_n', '_size')

    def __init__(self, source='the server', lazy=False):
        self.source = source
        self.lazy = lazy
        self.fatal = None
        self.columns = None         # the names of the last RowDescription's columns
        self.description = None     # and [(name, type oid)] of them
        # Across feeds: the bytes of an unfinished message, and the reply so far.
        self._tail = b''
        self._rows = []
        self._count = None          # None: no CommandComplete yet; -1: a query's
        self._error = None
        self._n = self._size = 0    # lazy: the rows so far and their bytes

    def feed(self, chunk):
        """The replies ``chunk`` (bytes) completes, in stream order: rows (a list; Rows when
        lazy), row counts (int), errors (ServerError). One call per chunk."""
        if self.fatal is not None:
            return []
        replies = []
        tail = self._tail
        if not tail:
            self._parse(chunk, 0, replies)
            return replies
        # A message the last chunk cut: complete that one alone, then read this chunk
        # where it lies, rather than copy all of it behind the tail.
        at = max(0, 5 - len(tail))
        head = tail + chunk[:at]
        if len(head) < 5:
            self._tail = head
            return replies
        need = 1 + _I.unpack_from(head, 1)[0] - len(head)
        if need < 0 or need > len(chunk) - at:
            # A bad length (the parse says so), or the message is still not whole.
            self._parse(tail + chunk, 0, replies)
            return replies
        self._parse(head + chunk[at:at + need], 0, replies)
        if self.fatal is None:
            self._parse(chunk, at + need, replies)
        return replies

    def _parse(self, data, pos, replies):
        """Add to ``replies`` those the messages of ``data`` from ``pos`` complete; keep
        what follows the last whole message for the next feed."""
        unpack_I = _I.unpack_from
        unpack_IH = _IH.unpack_from
        unpack_i = _i.unpack_from
        append = replies.append
        end = len(data)
        rows, count, error = self._rows, self._count, self._error
        lazy, nrows, size = self.lazy, self._n, self._size
        try:
            while end - pos >= 5:
                length = unpack_I(data, pos + 1)[0]
                if end - pos - 1 < length:
                    break
                if length < 4:
                    raise ProtocolError('a message from %s has length %d'
                                        % (self.source, length))
                kind = data[pos:pos + 1]
                start = pos + 5
                pos += 1 + length
                if kind == b'D':
                    if lazy:    # the run of rows here: bytes kept whole, no value built
                        first = start - 5
                        pos, n = _row_run(data, pos, end, length)
                        nrows += n
                        rows.append((data, first, pos))    # no copy until read
                        size += pos - first
                        continue
                    ncols = unpack_IH(data, start - 4)[1]
                    at = start + 2
                    row = []
                    for _c in range(ncols):
                        size_c = unpack_i(data, at)[0]
                        at += 4
                        if size_c < 0:
                            row.append(None)
                        else:
                            row.append(data[at:at + size_c].decode('utf-8'))
                            at += size_c
                    if at > pos:
                        raise ProtocolError('a data row from %s is longer than its message'
                                            % self.source)
                    rows.append(row)
                elif kind == b'C':
                    # A query's rows are its result (-1 marks one), DML's the count.
                    tag = data[start:pos - 1].split(b' ')
                    count = -1 if tag[0] in (b'SELECT', b'FETCH') else (
                        int(tag[-1]) if tag[-1].isdigit() else 0)
                elif kind == b'Z':
                    done = count is not None and count >= 0      # DML
                    append(error if error is not None else
                           Rows(rows, nrows, size) if lazy and (nrows or not done) else
                           count if done else rows)
                    rows, count, error, nrows, size = [], None, None, 0, 0
                elif kind == b'E':
                    fields = error_fields(data[start:pos])
                    if fields.get('V', fields.get('S')) in ('FATAL', 'PANIC'):
                        self.fatal = server_error(fields)
                        break
                    error = server_error(fields)
                elif kind == b'T':
                    self.description = describe_columns(data, start, pos)
                    self.columns = [name for name, _oid in self.description]
                # 2 BindComplete, 1 ParseComplete, n NoData, N notice, S status: skip
        except ProtocolError:
            raise
        except Exception as e:
            # Whatever broke the parser, the stream can no longer be trusted.
            raise ProtocolError('cannot parse the reply stream from %s: %s: %s'
                                % (self.source, e.__class__.__name__, e))
        self._tail = data[pos:]
        self._rows, self._count, self._error = rows, count, error
        self._n, self._size = nrows, size
