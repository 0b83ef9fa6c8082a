"""The buffered Tarantool connection: many greenlets, one socket.

How a request travels (README, "The buffered connector", says why):

* the caller encodes its frame straight into the shared outgoing bytearray,
  parks on a ``Waiter`` keyed by its sync id and, if the writer is idle,
  schedules it once;
* the writer greenlet swaps the whole buffer out and sends it with one
  ``send``. No timer is needed for batching: every caller woken in one loop
  pass appends its next request before the writer's turn comes, so one send
  carries the whole batch (self-clocking);
* the reader greenlet ``recv_into``s a large reusable buffer, feeds it to the
  protocol parser and wakes each waiter by sync id from the hub.

Failure rules: every wait is bounded (request timeout, connect timeout); when
the socket dies EVERY pending waiter fails at once with a NetworkError, the
unsent buffer is discarded with them (each of those requests has a waiter, so
nothing is dropped silently), and a reconnect loop with backoff takes over.
Callers that arrive while it is down wait for it up to the request timeout,
then fail with NotConnected; after ``outage_limit`` seconds they fail with
GaveUp at once so a run can stop instead of spinning.
"""
from __future__ import absolute_import, division, print_function

import errno
import socket as _stdsocket

import gevent
from gevent import socket as gsocket
from gevent.event import Event
from gevent.hub import Waiter, get_hub

from gloaddriver import errors
from gloaddriver.backends.tarantool import protocol as P
from gloaddriver._compat import clock, spawn_named, to_text

class Connection(object):
    """One socket shared by any number of greenlets.

    Counters (plain ints, read by the stats code): ``requests``, ``responses``,
    ``sends`` (send calls), ``recvs`` (recv calls that returned data),
    ``late`` (replies to requests that had already timed out), ``reconnects``,
    ``outage_seconds``.
    """

    def __init__(self, host, port, user=None, password=None, timeout=5.0,
                 connect_timeout=3.0, max_pending=10000, read_buffer=256 * 1024,
                 reconnect=True, outage_limit=30.0, name='tarantool', overlap=True):
        self.host = host
        self.port = port
        self.user = user
        self._password = password
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_pending = max_pending
        self.read_buffer = read_buffer
        self.reconnect = reconnect
        self.outage_limit = outage_limit
        self.name = name
        self.overlap = overlap
        self.server_version = None
        self.server_greeting = None

        self._hub = get_hub()
        self._callback = self._hub.loop.run_callback
        self.encoder = P.Encoder()
        self._sock = None
        self._up = Event()
        self._closed = False
        self._gave_up = None
        self._down_since = None
        self._sync = 0
        self._waiters = {}
        self._out = bytearray()
        self._writer_waiter = None
        self._room_waiters = []
        self._greenlets = []
        self._space_ids = {}
        self._index_ids = {}

        self.requests = self.responses = self.sends = self.recvs = 0
        self.late = self.pushes = self.reconnects = self.schema_fetches = 0
        self.outage_seconds = 0.0
        self.last_error = None

    # -- connecting ---------------------------------------------------------

    @property
    def address(self):
        return '%s:%s' % (self.host, self.port)

    @property
    def connected(self):
        return self._sock is not None

    def connect(self):
        """Open, read the greeting, authenticate; raise a SetupError on failure."""
        sock = self._open()
        self._attach(sock)
        self._greenlets.append(spawn_named(self.name + '-sweeper', self._sweep_loop))
        return self

    def _open(self):
        timer = gevent.Timeout(self.connect_timeout)
        timer.start()
        sock = None
        try:
            try:
                sock = _connect_socket(self.host, self.port)
                sock.setsockopt(_stdsocket.IPPROTO_TCP, _stdsocket.TCP_NODELAY, 1)
                greeting = _recv_exactly(sock, P.GREETING_SIZE)
                self.server_greeting, salt = P.parse_greeting(greeting)
                words = self.server_greeting.split()
                self.server_version = words[1] if len(words) > 1 else self.server_greeting
                if self.user and (self.user != 'guest' or self._password):
                    self._authenticate(sock, salt)
                return sock
            except gevent.Timeout as t:
                if t is not timer:
                    raise
                raise errors.ConnectError(
                    'no answer from Tarantool at %s within %.1f s' % (self.address, self.connect_timeout))
            except (_stdsocket.error, EOFError, OSError) as e:
                raise errors.ConnectError(
                    'cannot connect to Tarantool at %s: %s' % (self.address, _reason(e)))
            except P.ProtocolError as e:
                raise errors.ConnectError('%s does not speak IPROTO: %s' % (self.address, e))
        except BaseException:
            if sock is not None:
                sock.close()
            raise
        finally:
            timer.close()

    def _authenticate(self, sock, salt):
        buf = bytearray()
        self._sync += 1
        self.encoder.auth(buf, self._sync, self.user, salt, self._password or '')
        sock.sendall(bytes(buf))
        reader = P.ResponseReader()
        while True:
            data = sock.recv(4096)
            if not data:
                raise EOFError('connection closed during authentication')
            reader.feed(data)
            for _sync, code, body in reader.responses():
                if code == P.OK:
                    return
                err = P.server_error(code, body)
                raise errors.AuthError(
                    'Tarantool at %s refused user %r: %s; check --user and --password '
                    '(or GLOADDRIVER_PASSWORD)' % (self.address, self.user, err.message))

    def _attach(self, sock):
        # Forget the greenlets of earlier sockets: a long run with many
        # reconnects would otherwise keep every dead one.
        self._greenlets = [g for g in self._greenlets if not g.dead]
        self._sock = sock
        self._out = bytearray()
        self._writer_waiter = None
        self._up.set()
        self._greenlets.append(spawn_named(self.name + '-reader', self._read_loop, sock))
        self._greenlets.append(spawn_named(self.name + '-writer', self._write_loop, sock))

    def close(self):
        """Close for good: pending requests fail, background greenlets stop."""
        self._closed = True
        sock = self._sock
        if sock is not None:
            self._lost(sock, errors.NetworkError('connection closed by the client'))
        self._up.set()  # release anybody waiting for a reconnect
        gevent.killall([g for g in self._greenlets if g is not gevent.getcurrent()], block=False)
        self._greenlets = []

    # -- the request path -----------------------------------------------------

    def _wait_ready(self):
        """Slow path of a request: not connected, or too much in flight."""
        while True:
            if self._gave_up is not None:
                raise errors.GaveUp(self._gave_up)
            if self._closed:
                raise errors.NotConnected('connection to %s is closed' % self.address)
            if self._sock is None:
                if not self._up.wait(self.timeout) or self._sock is None:
                    if self._gave_up is not None:
                        raise errors.GaveUp(self._gave_up)
                    raise errors.NotConnected(
                        'not connected to %s (reconnecting: %s)' % (self.address, self.last_error))
                continue
            if len(self._waiters) >= self.max_pending:
                # Backpressure: park until the reader frees room.
                w = Waiter(self._hub)
                self._room_waiters.append(w)
                timer = self._hub.loop.timer(self.timeout)
                timer.start(w.switch, None)
                try:
                    if w.get() is None and len(self._waiters) >= self.max_pending:
                        raise errors.RequestTimeout(
                            'no room in the send queue of %s for %.1f s' % (self.address, self.timeout))
                finally:
                    timer.close()
                continue
            return

    def request(self, encode, *args):
        """Send the request ``encode(buf, sync, *args)`` builds and park until its reply.

        ``encode`` is a bound method of ``self.encoder``. This is the path of
        every op; the workload calls it directly to save a call per request.
        Returns the reply's data (a list of tuples), or its body when it has none
        (SQL DML, PREPARE: a dict by IPROTO key).
        """
        if self._sock is None or len(self._waiters) >= self.max_pending:
            self._wait_ready()
        self._sync = sync = self._sync + 1
        encode(self._out, sync, *args)
        w = self._waiters[sync] = Waiter(self._hub)
        self.requests += 1
        ww = self._writer_waiter
        if ww is not None:
            # First request since the writer went idle: schedule it once; it
            # runs after every greenlet woken in this loop pass has appended.
            self._writer_waiter = None
            self._callback(ww.switch, None)
        return _await_reply(w)

    def _space(self, space):
        return space if space.__class__ is int else self.space_id(space)

    def _index(self, space_id, index):
        return index if index.__class__ is int else self.index_id(space_id, index)

    def select(self, space, key, index=0, limit=P.MAX_SELECT, offset=0, iterator=P.ITERATOR_EQ):
        """Return the list of tuples matching ``key`` (a list) in ``space``."""
        space_id = self._space(space)
        return self.request(self.encoder.select, space_id, self._index(space_id, index), key,
                            limit, offset, iterator)

    def insert(self, space, values):
        return self.request(self.encoder.insert, self._space(space), values)

    def replace(self, space, values):
        return self.request(self.encoder.replace, self._space(space), values)

    def update(self, space, key, ops, index=0):
        space_id = self._space(space)
        return self.request(self.encoder.update, space_id, self._index(space_id, index), key, ops)

    def upsert(self, space, values, ops):
        return self.request(self.encoder.upsert, self._space(space), values, ops)

    def delete(self, space, key, index=0):
        space_id = self._space(space)
        return self.request(self.encoder.delete, space_id, self._index(space_id, index), key)

    # Names, Lua and SQL are text on the wire: a native str of a 2.7 caller is decoded
    # (as a space name is), or the server would get msgpack bin and refuse it.

    def call(self, name, *args):
        return self.request(self.encoder.call, to_text(name), args)

    def eval(self, expr, *args):
        return self.request(self.encoder.eval, to_text(expr), args)

    def execute(self, sql, args=()):
        """SQL over IPROTO: rows of a query, or the number of rows a DML statement
        changed. ``sql`` is the text, or the id ``prepare`` returned."""
        r = self.request(self.encoder.execute, sql if sql.__class__ is int else to_text(sql),
                         list(args))
        return r if r.__class__ is list else r[P.SQL_INFO][P.SQL_INFO_ROW_COUNT]

    def prepare(self, sql):
        """The server-side id of a prepared SQL statement (Tarantool 2.3 and later)."""
        return self.request(self.encoder.prepare, to_text(sql))[P.STMT_ID]

    def ping(self):
        self.request(self.encoder.ping)

    # -- schema: names to ids, cached by decoded text ---------------------------

    def space_id(self, name):
        # Keyed by text on both interpreters: a bytes key on py3 would miss on
        # every call and double the round trips (the classic port bug).
        key = to_text(name)
        sid = self._space_ids.get(key)
        if sid is None:
            self.schema_fetches += 1
            rows = self.select(P.VSPACE_ID, [key], index=P.NAME_INDEX)
            if not rows:
                raise errors.SchemaError(
                    'Tarantool at %s has no space %r; create it (box.schema.space.create(%r) '
                    'with a primary index) or use --spawn' % (self.address, key, key))
            sid = self._space_ids[key] = rows[0][0]
        return sid

    def index_id(self, space_id, name):
        key = (space_id, to_text(name))
        iid = self._index_ids.get(key)
        if iid is None:
            self.schema_fetches += 1
            rows = self.select(P.VINDEX_ID, [space_id, key[1]], index=P.NAME_INDEX)
            if not rows:
                raise errors.SchemaError('space %s has no index %r' % (space_id, key[1]))
            iid = self._index_ids[key] = rows[0][1]
        return iid

    # -- background greenlets ---------------------------------------------------

    def _write_loop(self, sock):
        hub = self._hub
        send, wait_writable = _raw_io(sock, 'send', '_write_event')
        while self._sock is sock:
            data = self._out
            if not data:
                w = self._writer_waiter = Waiter(hub)
                w.get()
                continue
            self._out = bytearray()
            try:
                # send(), not sendall(): gevent's sendall adds a getsockopt
                # syscall per call; a batch normally goes out in one send.
                while data:
                    try:
                        sent = send(data)
                    except _stdsocket.error as e:
                        if e.args[0] not in _WOULD_BLOCK:
                            raise
                        wait_writable()
                        continue
                    self.sends += 1
                    data = memoryview(data)[sent:] if sent < len(data) else None
            except (_stdsocket.error, OSError) as e:
                self._lost(sock, errors.NetworkError(
                    'connection to %s lost while sending: %s' % (self.address, _reason(e))))
                return

    def _read_loop(self, sock):
        buf = bytearray(self.read_buffer)
        view = memoryview(buf)
        parser = P.ResponseReader()
        feed = parser.feed
        responses = parser.responses
        waiters = self._waiters
        callback = self._callback
        overlap = self.overlap
        recv_into, wait_readable = _raw_io(sock, 'recv_into', '_read_event')
        size = len(buf)
        n = size
        while self._sock is sock:
            try:
                if n < size:
                    # The last read did not fill the buffer, so the socket is
                    # drained: wait for readability instead of paying for a
                    # recv that would only say EAGAIN.
                    wait_readable()
                n = recv_into(buf)
            except (_stdsocket.error, OSError) as e:
                if e.args and e.args[0] in _WOULD_BLOCK:
                    n = -1   # nothing there yet: wait, then read again
                    continue
                return self._lost(sock, errors.NetworkError(
                    'connection to %s lost while reading: %s' % (self.address, _reason(e))))
            if not n:
                return self._lost(sock, errors.NetworkError(
                    'Tarantool at %s closed the connection' % self.address))
            self.recvs += 1
            feed(view[:n])
            try:
                replies = responses()
                # Flush point at the middle of a large chunk: the writer runs
                # after the first half of the callers woken, so the server
                # starts on their next requests while we wake the rest; client
                # and server overlap instead of taking turns on one batch.
                flush_at = len(replies) >> 1 if overlap and len(replies) >= 8 else -1
                wake = []
                for sync, code, body in replies:
                    waiter = waiters.pop(sync, None)
                    if waiter is None:
                        self.late += 1
                        continue
                    if code == P.OK:
                        # Rows; an SQL or prepare reply without rows gives its body.
                        wake.append((waiter.switch, body.get(P.DATA, body)))
                    elif code == P.CHUNK:
                        self.pushes += 1
                        waiters[sync] = waiter
                        continue
                    else:
                        wake.append((waiter.throw, P.server_error(code, body)))
                    if len(wake) == flush_at:
                        # One hub callback wakes the whole half (cheaper than
                        # one callback per reply), then the writer's turn.
                        callback(_wake, wake)
                        wake = []
                        ww = self._writer_waiter
                        if ww is not None:
                            self._writer_waiter = None
                            callback(ww.switch, None)
                if wake:
                    callback(_wake, wake)
                self.responses += len(replies)
            except P.ProtocolError as e:
                return self._lost(sock, e)
            except Exception as e:
                # Whatever broke the parser, the stream can no longer be
                # trusted: fail every waiter now rather than leave them to
                # time out one by one.
                return self._lost(sock, P.ProtocolError(
                    'cannot parse the reply stream from %s: %s: %s'
                    % (self.address, e.__class__.__name__, e)))
            if self._room_waiters and len(waiters) < self.max_pending:
                self._wake_room()

    def _wake_room(self):
        room, self._room_waiters = self._room_waiters, []
        for w in room:
            self._callback(w.switch, True)

    def _sweep_loop(self):
        """Fail requests older than the timeout.

        Syncs grow with send order, so each tick remembers the newest sync; a
        mark older than the timeout expires every pending sync at or below it.
        That costs the request path nothing (no per-request timer); a request
        times out between ``timeout`` and ``timeout + tick`` after it was sent.
        """
        tick = min(0.1, max(self.timeout / 10.0, 0.005))
        marks = []
        while not self._closed:
            gevent.sleep(tick)
            now = clock()
            marks.append((now, self._sync))
            limit = now - self.timeout
            expired_below = None
            while marks and marks[0][0] <= limit:
                expired_below = marks.pop(0)[1]
            waiters = self._waiters
            if expired_below is None or not waiters or min(waiters) > expired_below:
                continue
            for sync in [s for s in waiters if s <= expired_below]:
                w = waiters.pop(sync)
                self._callback(w.throw, errors.RequestTimeout(
                    'no reply from %s within %.1f s' % (self.address, self.timeout)))
            if self._room_waiters and len(waiters) < self.max_pending:
                self._wake_room()

    # -- losing and regaining the socket ----------------------------------------

    def _lost(self, sock, exc):
        if self._sock is not sock:
            return
        self._sock = None
        self._up.clear()
        self.last_error = str(exc)
        try:
            sock.close()
        except Exception:
            pass
        pending, self._waiters = self._waiters, {}
        self._out = bytearray()
        # Every pending request fails now, each with its own exception object
        # (one shared instance would accumulate tracebacks across greenlets).
        message = str(exc)
        for w in pending.values():
            self._callback(w.throw, exc.__class__(message))
        ww = self._writer_waiter
        if ww is not None:
            self._writer_waiter = None
            self._callback(ww.switch, None)
        self._wake_room()
        if not self._closed and self.reconnect:
            self._down_since = clock()
            self._greenlets.append(spawn_named(self.name + '-reconnect', self._reconnect_loop))

    def _reconnect_loop(self):
        delay = 0.05
        started = self._down_since
        while not self._closed:
            gevent.sleep(delay)
            try:
                sock = self._open()
            except errors.GloadError as e:
                self.last_error = str(e)
                if clock() - started > self.outage_limit:
                    self._gave_up = ('Tarantool at %s unreachable for %.0f s (last error: %s); '
                                     'giving up' % (self.address, clock() - started, e))
                    self._up.set()  # wake waiters so they see _gave_up
                    return
                # Capped low: a server that comes back is found within a quarter second,
                # so an outage measured by the client is within that of the real one.
                delay = min(delay * 2, 0.25)
                continue
            if self._closed:
                sock.close()
                return
            self.reconnects += 1
            self.outage_seconds += clock() - started
            self._down_since = None
            self._attach(sock)
            return

    def stats(self):
        """Counters as a dict (for reports)."""
        return {
            'requests': self.requests, 'responses': self.responses,
            'sends': self.sends, 'recvs': self.recvs, 'late': self.late,
            'reconnects': self.reconnects, 'outage_seconds': self.outage_seconds,
            'schema_fetches': self.schema_fetches,
        }


_WOULD_BLOCK = (errno.EAGAIN, errno.EWOULDBLOCK)


def _await_reply(waiter):
    """Park until the reader hands over the reply.

    A function of its own so that a wall-clock profile shows the time spent
    waiting for the server under this name, not as the caller's own work.
    """
    return waiter.get()


def _wake(items):
    """Run in the hub: switch to each parked caller in turn.

    Each switch returns here when that caller parks again. Waiter.switch and
    Waiter.throw report their own errors to the hub, so one failing caller
    cannot stop the rest from being woken.
    """
    for resume, value in items:
        resume(value)


def _raw_io(sock, method, event):
    """(io call, wait) on a gevent socket, skipping gevent's Python wrapper.

    gevent's own recv_into/send first try the call, then wait, then retry:
    every drained read costs an extra EAGAIN syscall and a Python frame. We
    call the real socket's method and wait on gevent's watcher ourselves.
    These are gevent internals (the same from 22.10 to 26.x); without them we
    fall back to the public methods, which are correct, only dearer.
    """
    raw = getattr(sock, '_sock', None)
    watcher = getattr(sock, event, None)
    wait = getattr(sock, '_wait', None)
    if raw is None or watcher is None or wait is None or not hasattr(raw, method):
        return getattr(sock, method), _no_wait

    def _wait_io():
        wait(watcher)
    return getattr(raw, method), _wait_io


def _no_wait():
    pass


def _connect_socket(host, port):
    """A connected gevent socket; no resolver thread for an IP literal.

    gevent's create_connection resolves even "127.0.0.1" on its thread pool,
    and once that thread exists, Python 2.7's GIL hands off every check
    interval: ~0.03-0.06 futex syscalls per op that 3.x does not make (found by
    "gloaddriver compat"). A literal address needs no resolving at all.
    """
    for family in (_stdsocket.AF_INET, getattr(_stdsocket, 'AF_INET6', None)):
        if family is None:
            continue
        try:
            _stdsocket.inet_pton(family, host)
        except (_stdsocket.error, ValueError, OSError):
            continue
        sock = gsocket.socket(family, _stdsocket.SOCK_STREAM)
        try:
            sock.connect((host, port))
        except BaseException:
            sock.close()
            raise
        return sock
    return gsocket.create_connection((host, port))


def _recv_exactly(sock, size):
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError('connection closed before the greeting')
        data += chunk
    return data


def _reason(exc):
    """A short text for a socket error: 'connection refused', not a repr."""
    if isinstance(exc, EOFError):
        return str(exc) or 'connection closed'
    code = getattr(exc, 'errno', None)
    if code == errno.ECONNREFUSED:
        return 'connection refused'
    if code == errno.ECONNRESET:
        return 'connection reset by peer'
    if code == errno.EPIPE:
        return 'broken pipe'
    return (getattr(exc, 'strerror', None) or str(exc) or exc.__class__.__name__).lower()
