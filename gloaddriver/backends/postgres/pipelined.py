"""An optional pipelined PostgreSQL connection: the extended query protocol over one
gevent socket, several greenlets' statements in flight at once.

psycopg2 runs one statement per connection at a time, and in green mode each one
costs a ``poll()`` loop through the wait callback, the parameters formatted into
the SQL text and the result built by libpq and then again by psycopg2. Here a
statement is a Bind/Execute/Sync triple appended to a shared buffer, as the
Tarantool connector does it: every greenlet woken in one loop pass appends before
one hub callback sends them all, and an io watcher's callback (in the hub) parses
the replies, which come back in order, and switches to each waiting caller. One
Sync per statement keeps each statement its own transaction (autocommit) and an
error confined to its statement.

Scope: prepared statements (``prepare`` once, then ``execute``) with text
parameters and text results; authentication by SCRAM-SHA-256, md5 or password. No
COPY, no TLS. Used by scripts/bench-peers (scripts/peers/pg_pipelined.py) to
measure what the protocol itself allows against pgbench and psycopg2.
"""
from __future__ import absolute_import, division, print_function

import base64
import collections
import errno
import hashlib
import hmac
import os
import socket as _stdsocket
import struct

import gevent
from gevent import socket as gsocket
from gevent.hub import Waiter, get_hub

from gloaddriver import errors
from gloaddriver._compat import clock, spawn_named

_I = struct.Struct('!I')
_IH = struct.Struct('!IH')
_H = struct.Struct('!H')
_i = struct.Struct('!i')
_WOULD_BLOCK = (errno.EAGAIN, errno.EWOULDBLOCK)
# Execute (unnamed portal, all rows) and Sync: the same 14 bytes after every Bind.
_EXECUTE_SYNC = b'E\x00\x00\x00\x09\x00\x00\x00\x00\x00S\x00\x00\x00\x04'
_BIND_FORMATS = b'\x00\x00'          # no parameter format codes: all text
_RESULT_FORMATS = b'\x00\x00'        # no result format codes: all text
_NULL = b'\xff\xff\xff\xff'


def _b(text):
    return text if isinstance(text, bytes) else text.encode('utf-8')


def _param(value):
    """One Bind parameter: length and text bytes, or NULL."""
    if value is None:
        return _NULL
    if value.__class__ is not bytes:
        value = (u'%s' % (value,)).encode('utf-8') if not isinstance(value, bytes) else value
    return _I.pack(len(value)) + value


def _scram_client(password, user_nonce=None):
    """SCRAM-SHA-256 (RFC 7677) as PostgreSQL speaks it: a generator fed the server's
    messages, yielding the client's."""
    nonce = user_nonce or base64.b64encode(os.urandom(18))
    first_bare = b'n=,r=' + nonce
    server_first = yield b'n,,' + first_bare
    attrs = dict(kv.split(b'=', 1) for kv in server_first.split(b','))
    if not attrs[b'r'].startswith(nonce):
        raise errors.AuthError('SCRAM: the server changed the nonce')
    salted = hashlib.pbkdf2_hmac('sha256', _b(password), base64.b64decode(attrs[b's']),
                                 int(attrs[b'i']))
    client_key = hmac.new(salted, b'Client Key', hashlib.sha256).digest()
    stored = hashlib.sha256(client_key).digest()
    final_bare = b'c=biws,r=' + attrs[b'r']
    message = first_bare + b',' + server_first + b',' + final_bare
    signature = hmac.new(stored, message, hashlib.sha256).digest()
    proof = bytes(bytearray(a ^ b for a, b in zip(bytearray(client_key), bytearray(signature))))
    yield final_bare + b',p=' + base64.b64encode(proof)


class PipelinedConnection(object):
    """One socket, any number of greenlets; ``execute(name, params)`` returns the rows
    (lists of text or None) of a prepared statement, or the rows it changed."""

    def __init__(self, host, port, user, password=None, database=None, timeout=5.0,
                 connect_timeout=3.0):
        self.host, self.port, self.user = host, port, user
        self._password = password or ''
        self.database = database or user
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._hub = get_hub()
        self._callback = self._hub.loop.run_callback
        self._sock = None
        self._io = None
        self._out = bytearray()
        self._flush_pending = False
        self._pending = collections.deque()    # (waiter, sent at), in send order
        self._sweeper = None
        self.requests = self.sends = self.recvs = 0

    # -- connecting -----------------------------------------------------------------

    def connect(self):
        timer = gevent.Timeout(self.connect_timeout)
        timer.start()
        try:
            sock = gsocket.create_connection((self.host, self.port))
            sock.setsockopt(_stdsocket.IPPROTO_TCP, _stdsocket.TCP_NODELAY, 1)
            self._startup(sock)
        except gevent.Timeout as t:
            if t is not timer:
                raise
            raise errors.ConnectError('no answer from PostgreSQL at %s:%s within %.1f s'
                                      % (self.host, self.port, self.connect_timeout))
        except (_stdsocket.error, OSError, EOFError) as e:
            raise errors.ConnectError('cannot connect to PostgreSQL at %s:%s: %s'
                                      % (self.host, self.port, e))
        finally:
            timer.close()
        self._sock = sock
        raw = getattr(sock, '_sock', sock)
        loop = self._hub.loop
        reader, writer = loop.io(raw.fileno(), 1), loop.io(raw.fileno(), 2)
        self._io = (reader, writer, raw.send)
        reader.start(self._reader(raw))
        self._sweeper = spawn_named('pg-pipelined-sweeper', self._sweep)
        return self

    def _startup(self, sock):
        body = struct.pack('!I', 196608) + b'user\x00' + _b(self.user) + b'\x00database\x00' + \
            _b(self.database) + b'\x00\x00'
        sock.sendall(_I.pack(len(body) + 4) + body)
        buf = bytearray()
        scram = None
        while True:
            kind, payload, buf = _read_message(sock, buf)
            if kind == b'R':
                code = _I.unpack_from(payload)[0]
                if code == 0:
                    continue
                if code == 3:    # cleartext password
                    _send(sock, b'p', _b(self._password) + b'\x00')
                elif code == 5:  # md5
                    inner = hashlib.md5(_b(self._password) + _b(self.user)).hexdigest()
                    outer = hashlib.md5(inner.encode('ascii') + bytes(payload[4:8])).hexdigest()
                    _send(sock, b'p', b'md5' + outer.encode('ascii') + b'\x00')
                elif code == 10:  # SASL: the mechanisms offered
                    if b'SCRAM-SHA-256' not in bytes(payload[4:]).split(b'\x00'):
                        raise errors.AuthError('the server offers no SASL mechanism we know')
                    scram = _scram_client(self._password)
                    first = next(scram)
                    _send(sock, b'p', b'SCRAM-SHA-256\x00' + _I.pack(len(first)) + first)
                elif code == 11:  # SASL continue
                    _send(sock, b'p', scram.send(bytes(payload[4:])))
                elif code == 12:  # SASL final: the server's signature
                    continue
                else:
                    raise errors.AuthError('authentication method %d is not supported' % code)
            elif kind == b'E':
                fields = _error_fields(payload)
                raise errors.AuthError('PostgreSQL refused user %r: %s'
                                       % (self.user, fields.get('M', '?')))
            elif kind == b'Z':
                if buf:
                    raise errors.ConnectError('unexpected bytes after the startup')
                return
            # S (parameter status), K (backend key), N (notice): nothing to keep

    def close(self):
        io, self._io = self._io, None
        if io is not None:
            io[0].close()
            io[1].close()
        if self._sweeper is not None:
            self._sweeper.kill(block=False)
            self._sweeper = None
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.sendall(b'X\x00\x00\x00\x04')
            except (_stdsocket.error, OSError):
                pass
            sock.close()
        self._fail(errors.NetworkError('connection closed by the client'))

    # -- statements -----------------------------------------------------------------

    def prepare(self, name, sql):
        """Parse a named statement (parameter types left to the server)."""
        body = _b(name) + b'\x00' + _b(sql) + b'\x00\x00\x00'
        return self._send_and_wait(b'P' + _I.pack(len(body) + 4) + body +
                                   b'S\x00\x00\x00\x04')

    def execute(self, name, params=()):
        """Rows of the prepared statement ``name`` with ``params``, or its row count."""
        parts = [b'\x00', _b(name), b'\x00', _BIND_FORMATS, _H.pack(len(params))]
        parts.extend(_param(p) for p in params)
        parts.append(_RESULT_FORMATS)
        body = b''.join(parts)
        return self._send_and_wait(b'B' + _I.pack(len(body) + 4) + body + _EXECUTE_SYNC)

    def _send_and_wait(self, frame):
        if self._io is None:
            raise errors.NotConnected('not connected to PostgreSQL at %s:%s'
                                      % (self.host, self.port))
        self._out += frame
        w = Waiter(self._hub)
        self._pending.append((w, clock()))
        self.requests += 1
        if not self._flush_pending:
            self._flush_pending = True
            self._callback(self._flush)
        return w.get()

    # -- I/O in the hub ---------------------------------------------------------------

    def _flush(self):
        io = self._io
        data = self._out
        if io is None or not data:
            self._flush_pending = False
            return
        if io[1].active:
            return
        self._out = bytearray()
        try:
            sent = io[2](data)
        except (_stdsocket.error, OSError) as e:
            if e.args and e.args[0] in _WOULD_BLOCK:
                sent = 0
            else:
                self._flush_pending = False
                return self._lost(errors.NetworkError('lost while sending: %s' % e))
        if sent:
            self.sends += 1
        if sent < len(data):
            self._out[:0] = memoryview(data)[sent:]
            io[1].start(self._writable)
            return
        self._flush_pending = False

    def _writable(self):
        io = self._io
        if io is not None:
            io[1].stop()
            self._flush()

    def _reader(self, raw):
        buf = bytearray(256 * 1024)
        view = memoryview(buf)
        size = len(buf)
        pending = self._pending
        recv_into = raw.recv_into
        unpack_I = _I.unpack_from
        unpack_IH = _IH.unpack_from
        unpack_i = _i.unpack_from
        # Across chunks: the unparsed tail, and the reply being assembled.
        state = {'tail': b'', 'rows': [], 'count': None, 'error': None}

        def on_readable():
            while self._io is not None:
                try:
                    n = recv_into(buf)
                except (_stdsocket.error, OSError) as e:
                    if e.args and e.args[0] in _WOULD_BLOCK:
                        return
                    return self._lost(errors.NetworkError('lost while reading: %s' % e))
                if not n:
                    return self._lost(errors.NetworkError('PostgreSQL closed the connection'))
                self.recvs += 1
                tail = state['tail']
                data = tail + view[:n].tobytes() if tail else view[:n].tobytes()
                end = len(data)
                pos = 0
                rows, count, error = state['rows'], state['count'], state['error']
                while end - pos >= 5:
                    length = unpack_I(data, pos + 1)[0]
                    if end - pos - 1 < length:
                        break
                    kind = data[pos:pos + 1]
                    start = pos + 5
                    pos += 1 + length
                    if kind == b'D':
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
                        rows.append(row)
                    elif kind == b'C':
                        # A query's rows are its result (-1 marks one), DML's the count.
                        tag = data[start:pos - 1].split(b' ')
                        count = -1 if tag[0] in (b'SELECT', b'FETCH') else (
                            int(tag[-1]) if tag[-1].isdigit() else 0)
                    elif kind == b'Z':
                        w, _t = pending.popleft()
                        if error is not None:
                            w.throw(error)
                        elif count is None or count < 0:
                            w.switch(rows)
                        else:
                            w.switch(count)
                        rows, count, error = [], None, None
                        if self._io is None:
                            return
                    elif kind == b'E':
                        fields = _error_fields(data[start:pos])
                        error = errors.ServerError(fields.get('C', '?'), fields.get('M', '?'))
                    # 2 BindComplete, 1 ParseComplete, n NoData, N notice, S status: skip
                state['tail'] = data[pos:]
                state['rows'], state['count'], state['error'] = rows, count, error
                if n < size:
                    return
        return on_readable

    def _sweep(self):
        """Replies come in order: when the oldest request is older than the timeout,
        the connection is stuck, and every request on it fails."""
        tick = min(0.1, max(self.timeout / 10.0, 0.005))
        while self._io is not None:
            gevent.sleep(tick)
            if self._pending and clock() - self._pending[0][1] > self.timeout:
                self._lost(errors.RequestTimeout('no reply from PostgreSQL within %.1f s'
                                                 % self.timeout))

    def _lost(self, exc):
        io, self._io = self._io, None
        if io is not None:
            io[0].close()
            io[1].close()
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
        self._fail(exc)

    def _fail(self, exc):
        pending, self._pending = self._pending, collections.deque()
        for w, _t in pending:
            self._callback(w.throw, exc.__class__(str(exc)))


def _send(sock, kind, body):
    sock.sendall(kind + _I.pack(len(body) + 4) + body)


def _read_message(sock, buf):
    """(type, payload, rest) of the next message during the startup (blocking)."""
    while True:
        if len(buf) >= 5:
            length = _I.unpack_from(buf, 1)[0]
            if len(buf) >= 1 + length:
                return bytes(buf[:1]), bytes(buf[5:1 + length]), buf[1 + length:]
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError('PostgreSQL closed the connection during the startup')
        buf += chunk


def _error_fields(payload):
    """{field code: text} of an ErrorResponse or NoticeResponse."""
    out = {}
    for part in bytes(payload).split(b'\x00'):
        if part:
            out[part[:1].decode('ascii')] = part[1:].decode('utf-8', 'replace')
    return out
