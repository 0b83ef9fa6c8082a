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

Failure rules, as the Tarantool connector's (the socket's I/O, connecting and
reconnecting are ``shared_socket.SharedSocket``'s, which both share): every wait is bounded (the request
timeout, the connect timeout). A request older than the timeout fails with
RequestTimeout and its reply, when it comes, is counted ``late`` and dropped: replies
come in send order, so its place in the queue is kept. When the socket dies (or the
server sends a FATAL error) EVERY pending request fails at once, and a reconnect loop
with backoff opens a new socket and prepares the statements again before anyone
sends on it. Callers that arrive meanwhile wait up to the timeout (NotConnected);
after ``outage_limit`` seconds down they fail at once with GaveUp.

Scope: prepared statements (``prepare`` once, then ``execute``), one-off ``query``
calls, ``batch``es of statements that are one transaction (scripts: a pgbench
transaction is a batch), simple-protocol queries, text parameters; text results, or
with ``lazy_rows`` each described statement's columns in the format ``row_values``
chooses, its rows undecoded until read (``replies.Rows``); authentication by
SCRAM-SHA-256, md5 or password; TCP only, TLS as the DSN's sslmode asks (``tls``). No
COPY. ``--connector pipelined`` runs the kv workload (``kv_pipelined``), toolbench
and relational (``rows_pipelined``) and scripts (``script_pipelined``) on it.
"""
from __future__ import absolute_import, division, print_function

import base64
import collections
import hashlib
import hmac
import os
import socket as _stdsocket
import struct

import gevent
from gevent.hub import Waiter

from gloaddriver import errors
from gloaddriver.py23 import clock
from gloaddriver.backends.postgres.replies import (ProtocolError, ReplyParser, Rows,
                                                   describe_columns, error_fields,
                                                   next_message)
from gloaddriver.backends.postgres.param_values import encode, plan
from gloaddriver.backends.postgres.sqlstate import server_error
from gloaddriver.backends.postgres.row_values import formats
from gloaddriver.backends.shared_socket import SharedSocket

_I = struct.Struct('!I')
_H = struct.Struct('!H')
# Execute (unnamed portal, all rows) and Sync: the same 14 bytes after every Bind.
_EXECUTE_SYNC = b'E\x00\x00\x00\x09\x00\x00\x00\x00\x00S\x00\x00\x00\x04'
_SYNC = b'S\x00\x00\x00\x04'
_TERMINATE = b'X\x00\x00\x00\x04'
_RESULT_FORMATS = b'\x00\x00'        # no result format codes: all text
# SQLSTATEs of a login the server refused, and of a database that is not there.
_AUTH_CODES = ('28P01', '28000')
_NO_DATABASE = '3D000'


def _b(text):
    return text if isinstance(text, bytes) else text.encode('utf-8')


def _parse(name, sql, types=()):
    """Parse of ``sql`` as the statement ``name``; ``types``: its parameters' type oids
    (0, or none given: the server infers the type)."""
    body = _b(name) + b'\x00' + _b(sql) + b'\x00' + struct.pack('!H%dI' % len(types),
                                                                len(types), *types)
    return b'P' + _I.pack(len(body) + 4) + body


def _bind(name, params, result_formats=_RESULT_FORMATS, how=None):
    """Bind of the statement ``name``: ``params`` as ``how`` (param_values.plan) says,
    results in ``result_formats`` (Bind's tail)."""
    codes, values = encode(params, how)
    parts = [b'\x00', _b(name), b'\x00', codes, _H.pack(len(params))]
    parts.extend(values)
    parts.append(result_formats)
    body = b''.join(parts)
    return b'B' + _I.pack(len(body) + 4) + body


# A statement as a part of a batch (``PipelinedConnection.batch``): no Sync of its own.
_EXECUTE = _EXECUTE_SYNC[:-len(_SYNC)]
SYNC = _SYNC


def _describe(name):
    """Describe of the prepared statement ``name``: its parameters' and columns' types."""
    body = b'S' + _b(name) + b'\x00'
    return b'D' + _I.pack(len(body) + 4) + body


def frame_execute(name, params=()):
    """Bind and Execute of the prepared statement ``name``, without a Sync."""
    return _bind(name, params) + _EXECUTE


def frame_query(sql, params=()):
    """Parse, Bind and Execute of ``sql`` as the unnamed statement, without a Sync."""
    return _parse('', sql) + _bind('', params) + _EXECUTE


def frame_simple(sql):
    """A simple-protocol Query message: answered up to its own ReadyForQuery, so it is a
    batch by itself (several statements in it run as one implicit transaction)."""
    body = _b(sql) + b'\x00'
    return b'Q' + _I.pack(len(body) + 4) + body


def _copy(exc):
    """A fresh exception like ``exc``: one per failed caller, so that tracebacks do
    not pile up on a shared instance."""
    if isinstance(exc, errors.ServerError):
        return server_error(exc.code, exc.message)
    return exc.__class__(str(exc))


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


class PipelinedConnection(SharedSocket):
    """One socket, any number of greenlets; ``execute(name, params)`` returns the rows
    (lists of text or None) of a prepared statement, or the rows it changed.

    ``statements``: (name, sql) prepared on every socket before it is used, the first
    and each one after a reconnect (``prepare`` adds to them). The socket's I/O and
    counters are shared_socket.SharedSocket's.
    """

    server = 'PostgreSQL'

    def __init__(self, host, port, user, password=None, database=None, timeout=5.0,
                 connect_timeout=3.0, statements=(), reconnect=True, outage_limit=30.0,
                 name='pg-pipelined', addresses=None, want='any', session_init=None,
                 tls=None, lazy_rows=False):
        SharedSocket.__init__(self, host, port, timeout=timeout,
                              connect_timeout=connect_timeout, reconnect=reconnect,
                              outage_limit=outage_limit, name=name, addresses=addresses,
                              want=want)
        self._hot_standby = None
        self.user = user
        self._password = password or ''
        self.database = database or user
        self._statements = list(statements)
        self._session_init = session_init   # --session-init: SQL for every new socket
        self._tls = tls                     # tls.Spec of the DSN's sslmode, or None
        # lazy_rows: queries answer replies.Rows, each statement's columns read in the
        # format row_values chooses from its description (made when it is prepared).
        self._lazy = lazy_rows
        self._columns = {}          # statement name -> (Bind's result formats, Columns)
        self._params = {}           # statement name -> its parameters' param_values.plan
        # The waiters of the requests sent and not yet answered, in send order: request
        # number ``requests - len + 1`` first. A timed-out one is left as None, so that
        # its reply still finds its place.
        self._pending = collections.deque()
        self._expired = 0           # the newest request number the sweeper failed
        self._parser = None         # the live socket's ReplyParser (``columns`` reads it)

    # -- connecting -----------------------------------------------------------------

    def _handshake(self, sock):
        """TLS if the DSN asks for it, log in, prepare the statements; returns the socket
        to talk on (a tls.TLSSocket over ``sock``, or ``sock``)."""
        self._hot_standby = None
        if self._tls is not None:
            from gloaddriver.backends.postgres import tls
            sock = tls.negotiate(sock, self._tls, self.host, self.address,
                                 self.connect_timeout)
        buf = self._startup(sock)
        if self._session_init:
            buf = self._run_session_init(sock, buf)
        if self._statements:
            self._prepare_all(sock, buf)
        return sock

    def _startup(self, sock):
        """Log in; returns what was read past ReadyForQuery (nothing, normally)."""
        # Rows and parameters in UTF-8 whatever the database's encoding: they are
        # decoded and encoded as UTF-8 here.
        body = struct.pack('!I', 196608) + b'user\x00' + _b(self.user) + b'\x00database\x00' + \
            _b(self.database) + b'\x00client_encoding\x00UTF8\x00\x00'
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
                        raise errors.AuthError('PostgreSQL at %s offers no SASL mechanism '
                                               'we know' % self.address)
                    scram = _scram_client(self._password)
                    first = next(scram)
                    _send(sock, b'p', b'SCRAM-SHA-256\x00' + _I.pack(len(first)) + first)
                elif code == 11:  # SASL continue
                    _send(sock, b'p', scram.send(bytes(payload[4:])))
                elif code == 12:  # SASL final: the server's signature
                    continue
                else:
                    raise errors.AuthError('PostgreSQL at %s asks for authentication method '
                                           '%d, which is not supported' % (self.address, code))
            elif kind == b'E':
                fields = error_fields(payload)
                code, message = fields.get('C', '?'), fields.get('M', '?')
                if code in _AUTH_CODES:
                    raise errors.AuthError('PostgreSQL at %s refused the login: %s'
                                           % (self.address, message))
                if code == _NO_DATABASE:
                    raise errors.SchemaError('PostgreSQL at %s: %s' % (self.address, message))
                # Starting up, shutting down, too many clients: worth another try.
                raise errors.ConnectError('PostgreSQL at %s refused the connection: %s '
                                          '(SQLSTATE %s)' % (self.address, message, code))
            elif kind == b'S':
                name, _sep, value = bytes(payload).partition(b'\x00')
                value = value.rstrip(b'\x00').decode('utf-8', 'replace')
                if name == b'server_version':
                    self.server_version = value
                elif name == b'in_hot_standby':     # PostgreSQL 14 and later say it
                    self._hot_standby = value
            elif kind == b'Z':
                return buf
            # K (backend key), N (notice): nothing to keep

    def _read_only(self, sock):
        """A standby, as libpq's target_session_attrs tells it: in_hot_standby when the
        server reports it, else ``SHOW transaction_read_only``."""
        if self._hot_standby is not None:
            return self._hot_standby == 'on'
        _send(sock, b'Q', b'SHOW transaction_read_only\x00')
        buf, value = bytearray(), None
        while True:
            kind, payload, buf = _read_message(sock, buf)
            if kind == b'D' and _H.unpack_from(payload)[0] == 1:
                size = _I.unpack_from(payload, 2)[0]
                value = bytes(payload[6:6 + size])
            elif kind == b'Z':
                return value == b'on'

    def _run_session_init(self, sock, buf):
        """--session-init as a simple Query, before the statements are prepared (they
        see the session it sets); its error refuses the socket as a statement's would."""
        sock.sendall(frame_simple(self._session_init))
        error, buf = _first_error(sock, buf)
        if error is not None:
            raise errors.SchemaError('PostgreSQL at %s: --session-init failed: %s (SQLSTATE %s)'
                                     % (self.address, error.get('M', '?'), error.get('C', '?')))
        return buf

    def _prepare_all(self, sock, buf):
        """Parse and describe every statement on a new socket before it carries requests:
        one round trip, so a reconnect costs one more, not one per statement."""
        sock.sendall(b''.join(_parse(*st) + _describe(st[0]) for st in self._statements) +
                     _SYNC)
        error, buf = _first_error(sock, buf, self._described)
        if error is not None:
            raise errors.SchemaError('PostgreSQL at %s cannot prepare the statements: %s '
                                     '(SQLSTATE %s)' % (self.address, error.get('M', '?'),
                                                        error.get('C', '?')))
        if buf:
            raise errors.ConnectError('PostgreSQL at %s sent more than it was asked for'
                                      % self.address)

    def _described(self, described):
        """Each statement's (parameter types, row description or None for no rows), in
        the order they were prepared: the formats its parameters are sent in and (on a
        lazy connection) its results asked in."""
        lazy = self._lazy
        for statement, (params, columns) in zip(self._statements, described):
            name = _b(statement[0])
            self._params[name] = plan(params)
            if lazy:
                self._columns[name] = formats([oid for _n, oid in columns or ()])

    def _goodbye(self):
        io = self._io
        if io is not None and not self._out:
            try:
                io[2](_TERMINATE)   # a polite goodbye, if the socket takes it now
            except (_stdsocket.error, OSError):
                pass

    # -- statements -----------------------------------------------------------------

    def prepare(self, name, sql):
        """Parse a named statement (parameter types left to the server); it is
        prepared again on every new socket after a reconnect."""
        self._send_and_wait(_parse(name, sql) + _SYNC)
        self._statements.append((name, sql))

    def prepare_described(self, name, sql, types=()):
        """A lazy connection's ``prepare``: Parse (``types``: the parameters' type oids)
        and Describe in one round trip, the statement's columns then asked in the formats
        its description chose (``rows``); prepared and described again after a
        reconnect. One at a time on a connection: the description is the parser's last."""
        self._send_and_wait(_parse(name, sql, types) + _describe(name) + _SYNC)
        description = self._parser.description
        self._parser.description = None
        self._columns[_b(name)] = formats([oid for _n, oid in description or ()])
        self._params[_b(name)] = plan(types)
        self._statements.append((name, sql, tuple(types)))

    def execute(self, name, params=()):
        """Rows of the prepared statement ``name`` with ``params``, or its row count."""
        return self._send_and_wait(_bind(name, params, _RESULT_FORMATS, self._params.get(name))
                                   + _EXECUTE_SYNC)

    def rows(self, name, params=()):
        """A lazy connection's ``execute``: the statement's columns asked in the formats
        its description chose; its rows come as replies.Rows that decode to the values
        psycopg2 gives."""
        result_formats, columns = self._columns[name]
        r = self._send_and_wait(_bind(name, params, result_formats, self._params.get(name)) +
                                _EXECUTE_SYNC)
        if r.__class__ is Rows:
            r.decoders = columns
        return r

    def query(self, sql, params=()):
        """One statement, unprepared (the unnamed statement): its rows or row count."""
        return self._send_and_wait(_parse('', sql) + _bind('', params) + _EXECUTE_SYNC)

    def batch(self, frames):
        """Statements (``frame_*`` parts) then one Sync: one implicit transaction, which
        an error anywhere in it rolls back whole. Returns the rows of all its queries
        together, or the row count of its last statement."""
        return self._send_and_wait(frames + _SYNC)

    def simple(self, sql):
        """``sql`` as a simple-protocol Query (``frame_simple``)."""
        return self._send_and_wait(frame_simple(sql))

    def columns(self, sql):
        """The names of the columns ``sql`` returns (a Describe of it), () for none."""
        describe = b'D' + _I.pack(6) + b'S\x00'
        parser = self._parser
        parser.columns = None
        self._send_and_wait(_parse('', sql) + describe + _SYNC)
        return tuple(parser.columns or ())

    def _send_and_wait(self, frame):
        if self._sock is None:
            self._wait_ready()
        self._out += frame
        w = Waiter(self._hub)
        self._pending.append(w)
        self.requests += 1
        if not self._flush_pending:
            self._flush_pending = True
            self._callback(self._flush)
        return w.get()

    def _reader(self, sock, raw):
        """The read watcher's callback for ``sock``: runs in the hub, has the socket's
        ``replies.ReplyParser`` cut what is there into replies and switches to each
        waiting caller in turn (replies come in send order)."""
        buf = bytearray(256 * 1024)
        view = memoryview(buf)
        size = len(buf)
        recv_into = raw.recv_into
        # TLS: what the TLS layer holds decrypted, which no readiness of the descriptor
        # announces (None on a plain socket).
        held = getattr(raw, 'pending', None)
        read_some = self._read_some
        parser = self._parser = ReplyParser('PostgreSQL at %s' % self.address, self._lazy)
        parse = parser.feed
        ServerError = errors.ServerError

        def on_readable():
            pending = self._pending
            while self._sock is sock:
                n = read_some(sock, recv_into, buf)
                if not n:
                    return
                try:
                    for reply in parse(view[:n].tobytes()):
                        w = pending.popleft()
                        self.responses += 1
                        if w is None:
                            self.late += 1
                        elif reply.__class__ is ServerError:
                            w.throw(reply)
                        else:
                            w.switch(reply)
                        if self._sock is not sock:
                            return   # a woken caller closed the connection
                except ProtocolError as e:
                    return self._lost(sock, e)
                except Exception as e:
                    # A reply nobody asked for, or whatever else broke: the stream can
                    # no longer be trusted, fail every waiter now rather than leave
                    # them to time out.
                    return self._lost(sock, errors.NetworkError(
                        'cannot parse the reply stream from PostgreSQL at %s: %s: %s'
                        % (self.address, e.__class__.__name__, e)))
                if parser.fatal is not None:
                    # The server ends the session (the replies before it are handed over).
                    return self._lost(sock, parser.fatal)
                if n < size and not (held is not None and held()):
                    return
        return on_readable

    def _sweep_loop(self):
        """Fail the requests older than the timeout.

        Each tick remembers the newest request number; a mark older than the timeout
        expires every request up to it. That costs the request path nothing (no clock
        read, no timer); a request times out between ``timeout`` and ``timeout + tick``
        after it was sent."""
        tick = min(0.1, max(self.timeout / 10.0, 0.005))
        marks = collections.deque()
        while not self._closed:
            gevent.sleep(tick)
            now = clock()
            marks.append((now, self.requests))
            limit = now - self.timeout
            upto = None
            while marks and marks[0][0] <= limit:
                upto = marks.popleft()[1]
            pending = self._pending
            if upto is None or upto <= self._expired or not pending:
                continue
            first = self.requests - len(pending) + 1    # the number of pending[0]
            for i in range(max(self._expired + 1 - first, 0), min(upto + 1 - first,
                                                                   len(pending))):
                w = pending[i]
                if w is not None:
                    pending[i] = None
                    self._callback(w.throw, errors.RequestTimeout(
                        'no reply from PostgreSQL at %s within %.1f s'
                        % (self.address, self.timeout)))
            self._expired = upto

    # -- losing and regaining the socket ----------------------------------------------

    def _fail_pending(self, exc):
        """The socket is lost: every pending request fails, each with an exception of
        its own (tracebacks would pile up on a shared one)."""
        pending, self._pending = self._pending, collections.deque()
        for w in pending:
            if w is not None:
                self._callback(w.throw, _copy(exc))


def _send(sock, kind, body):
    sock.sendall(kind + _I.pack(len(body) + 4) + body)


def _first_error(sock, buf, described=None):
    """(the fields of the first error before the next ReadyForQuery or None, the rest)
    of a startup exchange (blocking). ``described``: told, with no error, a ([parameter
    type oid], [(name, type oid)] of its RowDescription or None for NoData) for each
    statement described, in order."""
    error = None
    out = []
    params = ()
    while True:
        kind, payload, buf = _read_message(sock, buf)
        if kind == b'E' and error is None:
            error = error_fields(payload)
        elif kind == b't':      # ParameterDescription: then T or n, of the same statement
            n = _H.unpack_from(payload)[0]
            params = struct.unpack_from('!%dI' % n, payload, 2)
        elif kind == b'T':
            out.append((params, describe_columns(payload, 0, len(payload))))
            params = ()
        elif kind == b'n':
            out.append((params, None))
            params = ()
        elif kind == b'Z':
            if described is not None and error is None:
                described(out)
            return error, buf


def _read_message(sock, buf):
    """(type, payload, rest) of the next message during the startup (blocking)."""
    while True:
        message = next_message(buf)
        if message is not None:
            return message
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError('PostgreSQL closed the connection during the startup')
        buf += chunk
