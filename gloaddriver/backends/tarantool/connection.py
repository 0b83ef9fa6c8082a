"""The buffered Tarantool connection: many greenlets, one socket.

How a request travels (README, "The buffered connector", says why):

* the caller encodes its frame straight into the shared outgoing bytearray,
  files its own greenlet under its sync id, schedules one hub callback if no
  flush is pending, and parks by switching to the hub;
* that callback sends the whole buffer with one ``send``. No timer is needed
  for batching: every caller woken in one loop pass appends its next request
  before the hub runs its callbacks, so one send carries the whole batch
  (self-clocking);
* an io watcher's callback, run by the hub, ``recv_into``s a large reusable
  buffer, cuts it into replies and switches to each waiting caller in turn.
  No reader or writer greenlet: a switch to one per chunk and per batch would
  cost more than the callbacks, and a woken caller runs at once instead of
  after a hub callback queued for it;
* a reply's body is handed over undecoded (``protocol.Rows``, a bytes object):
  the public methods decode it, the built-in ops only decode it when asked
  (``--checksum`` iterates it), so a 1.5 KB text value never becomes a 6 KB
  UCS4 unicode object on 2.7 unless something reads it.

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
from gevent.hub import Waiter, get_hub, getcurrent
import msgpack

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
        self._flush_pending = False
        self._io = None             # (read watcher, write watcher, send) of the live socket
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
        self._flush_pending = False
        raw = _raw(sock)
        loop = self._hub.loop
        reader = loop.io(raw.fileno(), 1)
        writer = loop.io(raw.fileno(), 2)
        self._io = (reader, writer, raw.send)
        reader.start(self._reader(sock, raw))
        self._up.set()

    def _stop_io(self):
        """Stop the socket's watchers: before it closes, never after (libev would
        watch a closed, perhaps reused, descriptor)."""
        io, self._io = self._io, None
        if io is not None:
            io[0].close()
            io[1].close()

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
        r = self.rows_request(encode, *args)
        # A body (protocol.Rows) is decoded here, in the caller, and only for the
        # public methods; an empty result comes as an empty list.
        return r if r.__class__ is list else r.data()

    def rows_request(self, encode, *args):
        """``request``, but the reply's rows stay undecoded: a ``protocol.Rows`` (true,
        decoded when iterated) or an empty list (a miss). The built-in ops' path."""
        if self._sock is None or len(self._waiters) >= self.max_pending:
            self._wait_ready()
        self._sync = sync = self._sync + 1
        encode(self._out, sync, *args)
        waiters = self._waiters
        waiters[sync] = getcurrent()
        self.requests += 1
        if not self._flush_pending:
            # First request since the last flush: one hub callback sends them
            # all, after every caller woken in this loop pass has appended.
            self._flush_pending = True
            self._callback(self._flush)
        return _await_reply(self._hub, waiters, sync)

    def rows_frame(self, code, body):
        """``rows_request`` for a body the caller packed itself (packed.py): the
        built-in ops' path, one Python call per request."""
        if self._sock is None or len(self._waiters) >= self.max_pending:
            self._wait_ready()
        self._sync = sync = self._sync + 1
        out = self._out
        out += _pack_head(0xce, _HEAD_AFTER_LEN + len(body), 0x82, P.REQUEST_TYPE, code,
                          P.SYNC, 0xcf, sync)
        out += body
        waiters = self._waiters
        waiters[sync] = getcurrent()
        self.requests += 1
        if not self._flush_pending:
            self._flush_pending = True
            self._callback(self._flush)
        return _await_reply(self._hub, waiters, sync)

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

    def _flush(self):
        """Send everything appended since the last flush: a hub callback (scheduled
        by the first request after a flush) or, for overlap, called by the reader
        in the middle of a chunk."""
        io = self._io
        data = self._out
        if io is None or not data:
            self._flush_pending = False
            return
        if io[1].active:
            return   # the socket is full: the write watcher sends when it drains
        self._out = bytearray()
        try:
            # send(), not sendall(): gevent's sendall adds a getsockopt syscall
            # per call; a batch normally goes out in one send.
            sent = io[2](data)
        except (_stdsocket.error, OSError) as e:
            if e.args and e.args[0] in _WOULD_BLOCK:
                sent = 0
            else:
                self._flush_pending = False
                return self._lost(self._sock, errors.NetworkError(
                    'connection to %s lost while sending: %s' % (self.address, _reason(e))))
        if sent:
            self.sends += 1
        if sent < len(data):
            # The kernel's buffer is full: keep the rest in front of what came since,
            # and send when the socket is writable again. No new flush is scheduled
            # meanwhile (_flush_pending stays set).
            self._out[:0] = memoryview(data)[sent:]
            io[1].start(self._writable)
            return
        self._flush_pending = False

    def _writable(self):
        io = self._io
        if io is not None:
            io[1].stop()
            self._flush()

    def _reader(self, sock, raw):
        """The read watcher's callback for ``sock``: runs in the hub.

        Reads what is there, cuts it into replies (length, header, then the body
        kept as bytes: protocol.Rows), and switches to each waiting caller in
        turn; each runs until it parks again, usually after appending its next
        request. A read that fills the buffer is followed by another at once;
        otherwise libev calls again when there is more.
        """
        buf = bytearray(self.read_buffer)
        view = memoryview(buf)
        size = len(buf)
        unpacker = P.new_unpacker()
        feed, unpack, tell, read_bytes = (unpacker.feed, unpacker.unpack, unpacker.tell,
                                          unpacker.read_bytes)
        recv_into = raw.recv_into
        overlap = self.overlap
        Rows = P.Rows
        empty_bodies = P.EMPTY_BODIES
        empty_max = P.EMPTY_BODY_MAX
        OutOfData = msgpack.OutOfData
        SYNC, REQUEST_TYPE, OK, CHUNK = P.SYNC, P.REQUEST_TYPE, P.OK, P.CHUNK   # locals: per reply
        # The parser's place across chunks: [what comes next (0 a length, 1 a header,
        # 2 the rest of a body), bytes of the frame still to come, header, body so far,
        # where the header began (tell): a header split across chunks is consumed in
        # pieces, so its length is measured from where it began, not from the retry].
        state = [0, 0, None, None, 0]

        def on_readable():
            waiters = self._waiters
            while self._sock is sock:
                try:
                    n = recv_into(buf)
                except (_stdsocket.error, OSError) as e:
                    if e.args and e.args[0] in _WOULD_BLOCK:
                        return
                    return self._lost(sock, errors.NetworkError(
                        'connection to %s lost while reading: %s' % (self.address, _reason(e))))
                if not n:
                    return self._lost(sock, errors.NetworkError(
                        'Tarantool at %s closed the connection' % self.address))
                self.recvs += 1
                feed(view[:n])
                replies = []
                st, left, header, part, t0 = state
                try:
                    while True:
                        if st == 0:
                            left = unpack()
                            if left.__class__ is not int:
                                raise P.ProtocolError('reply length prefix is not an integer: '
                                                      '%r' % (left,))
                            st = 1
                            t0 = tell()
                        if st == 1:
                            header = unpack()
                            if header.__class__ is not dict or SYNC not in header:
                                raise P.ProtocolError('reply header is not an IPROTO map: %r'
                                                      % (header,))
                            left -= tell() - t0
                            part = None
                            st = 2
                        body = read_bytes(left)
                        got = len(body)
                        if got < left:
                            # The body goes on in the next chunk.
                            part = body if part is None else part + body
                            left -= got
                            break
                        if part is not None:
                            body = part + body
                            got = len(body)
                        # An empty result is told by its size first: hashing a 1.5 KB
                        # body for the set test would cost more than the test saves.
                        replies.append((header, [] if got <= empty_max and body in empty_bodies
                                        else Rows(body)))
                        st = 0
                except OutOfData:
                    pass
                except P.ProtocolError as e:
                    return self._lost(sock, e)
                except Exception as e:
                    # Whatever broke the parser, the stream can no longer be
                    # trusted: fail every waiter now rather than leave them to
                    # time out one by one.
                    return self._lost(sock, P.ProtocolError(
                        'cannot parse the reply stream from %s: %s: %s'
                        % (self.address, e.__class__.__name__, e)))
                state[:] = st, left, header, part, t0
                # Overlap: in a chunk of OVERLAP_MIN replies or more, send the first
                # half's next requests while the second half is still being woken,
                # so the server works while the client does.
                count = len(replies)
                flush_at = count >> 1 if overlap and count >= OVERLAP_MIN else -1
                i = 0
                for header, rows in replies:
                    i += 1
                    sync = header[SYNC]
                    waiter = waiters.pop(sync, None)
                    if waiter is None:
                        self.late += 1
                        continue
                    code = header[REQUEST_TYPE]
                    if code == OK:
                        waiter.switch(rows)
                    elif code == CHUNK:
                        self.pushes += 1
                        waiters[sync] = waiter
                        continue
                    else:
                        waiter.throw(P.server_error(code, P.decode_body(rows) if rows else {}))
                    if self._sock is not sock:
                        return   # a woken caller closed the connection
                    if i == flush_at:
                        self._flush()
                self.responses += count
                if self._room_waiters and len(waiters) < self.max_pending:
                    self._wake_room()
                if n < size:
                    return
        return on_readable

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
            # Thrown from the hub, each popped just before: a reply that comes
            # first, or a caller that left, takes its sync out of the list.
            self._callback(self._expire, waiters, [s for s in waiters if s <= expired_below],
                           'no reply from %s within %.1f s' % (self.address, self.timeout))

    def _expire(self, waiters, syncs, message):
        """Hub callback: fail the requests ``syncs`` of ``waiters`` still parked."""
        for sync in syncs:
            g = waiters.pop(sync, None)
            if g is not None:
                g.throw(errors.RequestTimeout(message))
        if self._room_waiters and len(self._waiters) < self.max_pending:
            self._wake_room()

    # -- losing and regaining the socket ----------------------------------------

    def _lost(self, sock, exc):
        if self._sock is not sock:
            return
        self._sock = None
        self._up.clear()
        self.last_error = str(exc)
        self._stop_io()
        try:
            sock.close()
        except Exception:
            pass
        pending, self._waiters = self._waiters, {}
        self._out = bytearray()
        # Every pending request fails in the next hub pass, each with its own
        # exception object (one shared instance would accumulate tracebacks
        # across greenlets).
        self._callback(self._fail_all, pending, exc.__class__, str(exc))
        self._wake_room()
        if not self._closed and self.reconnect:
            self._down_since = clock()
            self._greenlets.append(spawn_named(self.name + '-reconnect', self._reconnect_loop))

    @staticmethod
    def _fail_all(pending, cls, message):
        """Hub callback: throw into every caller still parked in ``pending``."""
        while pending:
            _sync, g = pending.popitem()
            g.throw(cls(message))

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
# The frame head (length prefix, request type, sync) as protocol.Encoder packs it.
_pack_head = P._pack_head
_HEAD_AFTER_LEN = P._HEAD_AFTER_LEN
# A chunk is split for overlap when each half has 4 replies or more. At 10
# greenlets the one batch of 10 becomes two of 5 that take turns with the
# server: 0.35-0.4 network syscalls per op instead of 0.20, for 1.1-1.4x the
# ops/s (README, "Overlap"); halves of fewer than 4 would add sends and gain
# nothing more. --no-overlap keeps one send per loop pass.
OVERLAP_MIN = 8


def _await_reply(hub, waiters, sync):
    """Park until the reader hands over the reply (or an error is thrown in).

    A function of its own so that a wall-clock profile shows the time spent
    waiting for the server under this name, not as the caller's own work.
    Woken by anything but the connection (a timeout or kill from outside), the
    caller takes its entry out itself, so nothing is thrown into it later.
    """
    try:
        return hub.switch()
    except BaseException:
        waiters.pop(sync, None)
        raise


def _raw(sock):
    """The real socket under a gevent socket (its ``_sock``: the same from gevent
    22.10 to 26.x), whose recv_into and send return EAGAIN instead of switching to
    the hub: the connection waits on its own watchers, from the hub."""
    return getattr(sock, '_sock', sock)


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
