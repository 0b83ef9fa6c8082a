"""The buffered Tarantool connection: many greenlets, one socket.

How a request travels (docs/connectors.md says why):

* the caller encodes its frame straight into the shared outgoing bytearray,
  files its own greenlet under its sync id, schedules one hub callback if no
  flush is pending, and parks by switching to the hub. A request that finds
  nothing else in flight is sent at once instead: no reply is due that could
  wake another caller to batch with it, so a wait would only add latency (one
  greenlet, or the first of a burst; not with --no-overlap, one send per pass).
  So is one that finds few in flight while few callers share the connection
  (AT_ONCE_BELOW): the server works on it while the client wakes the next;
* that callback sends the whole buffer with one ``send``. No timer is needed
  for batching: every caller woken in one loop pass appends its next request
  before the hub runs its callbacks, so one send carries the whole batch
  (self-clocking);
* a request sent alone that finds nothing else ready to run (no hub callback
  queued) takes its reply itself: a plain ``poll`` on the socket, up to 1 ms, and
  the same parser (``_alone``); where the compiled reader is built, the send, the
  poll, the recv and the reply's cut are one C call. One greenlet so pays a send, a
  poll and a recv per op, as a blocking client does, not a hub round (two switches,
  a libev pass with its fork check's ``getpid``, a callback). The hub still gets a
  turn every millisecond (a timer due waits 2 ms at most), and a reply slower than
  1 ms is the hub's as always;
* an io watcher's callback, run by the hub, ``recv_into``s a large reusable
  buffer, cuts it into replies and wakes their callers in turn: the chunk's
  replies are a chain (``_chain``) its callers share, each caller that parks
  switching straight to the next reply's caller (``_await_reply``), the last to
  the hub, so a reply costs one greenlet switch, not two through the hub.
  No reader or writer greenlet: a switch to one per chunk and per batch would
  cost more than the callbacks, and a woken caller runs at once instead of
  after a hub callback queued for it;
* a reply's body is handed over undecoded (``protocol.Rows``, a bytes object):
  the public methods decode it, the built-in ops only decode it when asked
  (``--checksum`` iterates it), so a 1.5 KB text value never becomes a 6 KB
  UCS4 unicode object on 2.7 unless something reads it.

Failure rules: every wait is bounded (request timeout, connect timeout); when
the socket dies EVERY pending request fails at once with a NetworkError, the
unsent buffer is discarded with them (each of those requests has a waiter, so
nothing is dropped silently), and a reconnect loop with backoff takes over.
Callers that arrive while it is down wait for it up to the request timeout,
then fail with NotConnected; after ``outage_limit`` seconds they fail with
GaveUp at once so a run can stop instead of spinning. That half, the socket's
I/O, is ``shared_socket.SharedSocket``, which the pipelined PostgreSQL
connection shares; this module is the IPROTO half.

Parking is a bare greenlet switch, not a gevent ``Waiter`` (one object and two
Cython calls less per request). What makes that safe is one invariant:
``waiters[sync]`` holds a greenlet exactly while that greenlet is parked on that
request. Whoever wakes it (the reader with its reply, an expiry or a lost
socket with an error) pops the entry first, in the hub; a greenlet woken by
anything else (a ``gevent.Timeout`` of a workload file, a kill) pops its own
entry as it leaves. So no wake-up lands in a greenlet that has moved on.
"""
from __future__ import absolute_import, division, print_function

import errno
import functools
import os
import select
import socket
import sys

import gevent
import greenlet
from gevent.hub import Waiter, getcurrent
from gevent.monkey import get_original

from gloaddriver import errors
from gloaddriver.backends.shared_socket import SharedSocket
from gloaddriver.backends.tarantool import protocol as P
from gloaddriver.backends.tarantool.replies import ALONE, ReplyParser
from gloaddriver.py23 import PY2, clock, to_text


class Connection(SharedSocket):
    """One socket shared by any number of greenlets (shared_socket.SharedSocket gives
    the I/O); counters as SharedSocket's (read them from ``stats()``), and ``pushes``,
    ``schema_fetches`` and ``alone``: replies the single-waiter path took."""

    server = 'Tarantool'

    def __init__(self, host, port, user=None, password=None, timeout=5.0,
                 connect_timeout=3.0, max_pending=10000, read_buffer=256 * 1024,
                 reconnect=True, outage_limit=30.0, name='tarantool', overlap=True,
                 addresses=None, want='leader'):
        SharedSocket.__init__(self, host, port, timeout=timeout,
                              connect_timeout=connect_timeout, reconnect=reconnect,
                              outage_limit=outage_limit, name=name, addresses=addresses,
                              want=want)
        self.user = user
        self._password = password
        self.max_pending = max_pending
        self.read_buffer = read_buffer
        self.overlap = overlap
        self.server_greeting = None
        self.encoder = P.Encoder()
        self._sync = 0
        self._waiters = {}
        self._room_waiters = []
        self._space_ids = {}
        self._index_ids = {}
        self.pushes = self.schema_fetches = 0
        # gevent's queue of callbacks due in the hub's next pass: a request finding it
        # empty finds nothing else ready to run. Without it (another gevent loop) the
        # single-waiter path is off: a true tuple never empties.
        self._hub_callbacks = getattr(self._hub.loop, '_callbacks', (None,))
        self._chain = None      # the replies of the chunk being handed out (_reader)
        self._follow = False
        self.alone = self.whole = 0
        self._crowd = 0         # the most requests in flight at once this tick
        # A request that finds fewer in flight is sent at once: AT_ONCE_BELOW while the
        # last tick's _crowd was low, else 1 (only one that finds nothing in flight).
        self._at_once_below = AT_ONCE_BELOW

    # -- connecting ---------------------------------------------------------

    def _handshake(self, sock):
        """Read the greeting, authenticate."""
        try:
            greeting = _recv_exactly(sock, P.GREETING_SIZE)
            self.server_greeting, salt = P.parse_greeting(greeting)
            words = self.server_greeting.split()
            self.server_version = words[1] if len(words) > 1 else self.server_greeting
            if self.user and (self.user != 'guest' or self._password):
                self._authenticate(sock, salt)
        except P.ProtocolError as e:
            raise errors.ConnectError('%s does not speak IPROTO: %s' % (self.address, e))

    def _authenticate(self, sock, salt):
        try:
            self._ask(sock, self.encoder.auth, self.user, salt, self._password or '')
        except errors.ServerError as e:
            raise login_refused(self.address, self.user, self._password, e.message)

    def _read_only(self, sock):
        """box.info.ro of the member on a new socket (with several addresses)."""
        try:
            rows = self._ask(sock, self.encoder.eval, u'return box.info.ro', [])
        except errors.ServerError as e:
            raise errors.ConnectError('Tarantool at %s cannot say whether it is writable '
                                      '(box.info.ro): %s; with several --uri addresses the '
                                      'user needs execute on universe' % (self.address,
                                                                          e.message))
        return bool(rows.data()[0]) if rows.__class__ is not list else False

    def _ask(self, sock, encode, *args):
        """One request on a socket not yet attached (the login, the role check): its
        reply's body, or the reply's error raised."""
        buf = bytearray()
        self._sync += 1
        encode(buf, self._sync, *args)
        sock.sendall(bytes(buf))
        # The reader's parser, so these make the same checks: bytes that are not
        # IPROTO raise ProtocolError, which _handshake reports.
        parser = ReplyParser(self.address)
        while True:
            data = sock.recv(4096)
            if not data:
                raise EOFError('connection closed during the handshake')
            for _sync, code, body in parser.feed(data):
                if code == P.OK:
                    return body
                if code == P.CHUNK:
                    continue
                raise body   # the reply's error (a ServerError, or one that cannot be read)

    # -- the request path -----------------------------------------------------

    def _wait_room(self):
        """Backpressure: park until the reader frees room (True), or there is (False)."""
        if len(self._waiters) < self.max_pending:
            return False
        w = Waiter(self._hub)
        self._room_waiters.append(w)
        timer = self._hub.loop.timer(self.timeout)
        timer.start(w.switch, None)
        try:
            if w.get() is None and len(self._waiters) >= self.max_pending:
                raise errors.RequestTimeout('no room in the send queue of %s at %s for %.1f s'
                                            % (self.server, self.address, self.timeout))
        finally:
            timer.close()
        return True

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
        inflight = len(waiters)
        if inflight > self._crowd:
            self._crowd = inflight
        waiters[sync] = getcurrent()
        self.requests += 1
        # Sent now, not with the train the next hub pass sends, when nothing else is in
        # flight, or few are and few callers share the connection (AT_ONCE_BELOW). Not
        # with --no-overlap, which keeps one send per loop pass: a request sent alone at
        # the start would split a closed loop's callers into two trains for good.
        if inflight < self._at_once_below and self.overlap:
            if inflight or self._hub_callbacks:
                self._flush()
            else:
                # The only request in flight and nothing else ready to run: the
                # single-waiter path (Connection._alone) sends it and skips the hub's round.
                r = self._send_alone(sync)
                if r is not _PARK:
                    return r
        elif not self._flush_pending:
            # First request since the last flush: one hub callback sends them
            # all, after every caller woken in this loop pass has appended.
            self._flush_pending = True
            self._callback(self._flush)
        return _await_reply(self, waiters, sync)

    def rows_frame(self, code, parts):
        """``rows_request`` for a body the caller packed itself (packed.py), as a tuple
        of bytes objects that joined make it: the built-in ops' path, one Python call
        per request."""
        waiters = self._waiters
        inflight = len(waiters)
        if self._sock is None or inflight >= self.max_pending:
            self._wait_ready()
            waiters = self._waiters
            inflight = len(waiters)
        self._sync = sync = self._sync + 1
        FRAME(self._out, code, sync, parts)
        if inflight > self._crowd:
            self._crowd = inflight
        waiters[sync] = getcurrent()
        self.requests += 1
        if inflight < self._at_once_below and self.overlap:     # sent now (rows_request)
            if inflight or self._hub_callbacks:
                self._flush()
            else:                                           # the single-waiter path
                r = self._send_alone(sync)
                if r is not _PARK:
                    return r
        elif not self._flush_pending:
            self._flush_pending = True
            self._callback(self._flush)
        return _await_reply(self, waiters, sync)

    def _space(self, space):
        return space if space.__class__ is int else self.space_id(space)

    def _index(self, space_id, index):
        return index if index.__class__ is int else self.index_id(space_id, index)

    # The public methods take their arguments as tarantool-python does, so that a
    # --workload-file means the same on both connectors: a key may be a scalar or a
    # list/tuple (select: None or empty selects all); call and eval take one list or
    # tuple as the argument list; execute takes a list or a dict of :name values.
    # Spaces and indexes by name or id, iterators by number or name ('GE').

    def select(self, space, key=None, index=0, limit=P.MAX_SELECT, offset=0, iterator=None):
        """Return the list of tuples matching ``key`` in ``space``."""
        key = _key(key)
        if iterator is None:
            iterator = P.ITERATOR_EQ if key else P.ITERATOR_ALL
        elif iterator.__class__ is not int:
            iterator = _iterator(iterator)
        space_id = self._space(space)
        return self.request(self.encoder.select, space_id, self._index(space_id, index), key,
                            limit, offset, iterator)

    def insert(self, space, values):
        return self.request(self.encoder.insert, self._space(space), values)

    def replace(self, space, values):
        return self.request(self.encoder.replace, self._space(space), values)

    def update(self, space, key, ops, index=0):
        space_id = self._space(space)
        return self.request(self.encoder.update, space_id, self._index(space_id, index),
                            _key(key), _ops(ops))

    def upsert(self, space, values, ops, index=0):
        # index: accepted as tarantool-python does; the server matches by the primary key.
        return self.request(self.encoder.upsert, self._space(space), values, _ops(ops))

    def delete(self, space, key, index=0):
        space_id = self._space(space)
        return self.request(self.encoder.delete, space_id, self._index(space_id, index),
                            _key(key))

    # Names, Lua and SQL are text on the wire: a native str of a 2.7 caller is decoded
    # (as a space name is), or the server would get msgpack bin and refuse it.

    def call(self, name, *args):
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = args[0]
        return self.request(self.encoder.call, to_text(name), args)

    def eval(self, expr, *args):
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = args[0]
        return self.request(self.encoder.eval, to_text(expr), args)

    def execute(self, sql, args=None):
        """SQL over IPROTO: rows of a query, or the number of rows a DML statement
        changed. ``sql`` is the text, or the id ``prepare`` returned; ``args`` a list of
        values, or a dict of named ones (``:name`` in the statement)."""
        if isinstance(args, dict):
            args = [{u':' + to_text(k): v} for k, v in args.items()]
        r = self.request(self.encoder.execute, sql if sql.__class__ is int else to_text(sql),
                         list(args or ()))
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

    # -- replies and timeouts (in the hub) ------------------------------------

    def _send_alone(self, sync):
        """Send the request ``sync`` alone in flight (the single-waiter path): until a
        socket's reader makes its own (``_alone``), a plain flush and a park."""
        self._flush()
        return _PARK

    def _alone(self, sock, raw, buf, view, parser, follow):
        """The single-waiter path of ``sock`` (``send_alone``), on the reader's buffer and
        parser: the bytes it reads are the stream's, whoever reads them."""
        recv_into = raw.recv_into
        fd = raw.fileno()
        took = self._taker(sock, view, parser.feed, follow)
        Rows = P.Rows
        ready = _poll()
        ready.register(fd, _POLLIN)
        poll = ready.poll
        turn_at = [0.0]

        def send_alone(sync):
            """The single-waiter path, in the caller: its request is the only one in
            flight and nothing else is ready to run, so a hub round (a switch to the
            hub, a libev pass with its fork check's getpid, a callback, a switch back)
            would only add latency. Send it, wait for the socket up to ALONE_WAIT ms,
            and take the reply here: in one call to the compiled reader's ``alone``
            (send, poll, recv, the reply cut) where it is built and the parser holds
            no partial frame, else a flush, a plain poll and the parser. Returns the
            reply's body, or _PARK: no whole reply yet (a slow server, a cut, a partial
            read), or the hub's turn (it gets one every ALONE_TURN seconds, so a timer
            due, the ticker's among them, waits 2 ms at most); the caller then parks
            as any request does, its waiter filed, and all else (timeouts, a lost
            socket, reconnects) happens in the hub as it always does."""
            now = clock()
            if now >= turn_at[0] or self._sock is not sock:
                turn_at[0] = now + ALONE_TURN
                self._flush()
                return _PARK
            try:
                if ALONE is not None and parser._pending is None and parser._cut is not None:
                    n = ALONE(fd, self._out, sync, buf, ALONE_WAIT, Rows)
                    if n.__class__ is not int:      # the usual: its reply, whole, alone
                        del self._waiters[sync]
                        self.whole += 1
                        return n
                    if n < 0:
                        return self._not_sent(n)
                    self.sends += 1
                    if not n:
                        if self._out:       # sent in part: the rest when it can go
                            self._flush()
                        return _PARK        # the hub's reader reads what there is, if any
                else:
                    self._flush()
                    if self._sock is not sock or not poll(ALONE_WAIT):
                        return _PARK
                    n = recv_into(buf)
                    if not n:
                        return _PARK        # the hub's reader reads the end and says it
            except _WAIT_ERRORS:
                return _PARK        # EINTR on 2.7, or the socket's error: the hub sees to it
            except BaseException:
                # A signal's exception (KeyboardInterrupt) raised in the wait: the
                # caller leaves, so its entry goes, as _await_reply's does.
                self._waiters.pop(sync, None)
                raise
            self.recvs += 1
            return took(n, sync)

        return send_alone

    def _not_sent(self, n):
        """``ALONE`` could send nothing (-errno): the flush sends it when the socket is
        writable, or the socket is lost."""
        if n == -errno.EAGAIN:
            self._flush()
        else:
            self._lost_sending(OSError(-n, os.strerror(-n)))
        return _PARK

    def _taker(self, sock, view, parse, follow):
        """took(n, sync) for the single-waiter path of ``sock``: the ``n`` bytes it read
        into the reader's buffer (``view``), cut into replies: the body of the reply to
        ``sync``, or _PARK; the others' replies go to their callers."""
        OK, CHUNK = P.OK, P.CHUNK

        def took(n, sync):
            try:
                replies = parse(view[:n])
            except P.ProtocolError as e:
                self._lost(sock, e)
                return _PARK
            count = len(replies)
            self.responses += count
            waiters = self._waiters
            mine, error = _PARK, None
            for s, code, body in replies:
                waiter = waiters.pop(s, None)
                if waiter is None:
                    self.late += 1
                elif code == CHUNK:
                    self.pushes += 1
                    waiters[s] = waiter
                elif s != sync:                 # cannot happen: another caller's
                    self._callback(waiter.switch if code == OK else waiter.throw, body)
                elif code == OK:
                    mine = body
                else:
                    error = body
                    if follow and getattr(body, 'code', None) == P.ER_READONLY:
                        self._lost(sock, errors.NetworkError(
                            'Tarantool at %s is read-only now' % self.address))
            if error is not None:
                raise error
            if mine is not _PARK:
                self.alone += 1
            return mine
        return took

    def _reader(self, sock, raw):
        """The read watcher's callback for ``sock``: runs in the hub.

        Reads what is there, has the socket's ``replies.ReplyParser`` cut it into
        replies (bodies kept as bytes: protocol.Rows), and wakes their callers in
        turn; each runs until it parks again, usually after appending its next
        request, and parking wakes the next caller of the chain (``_await_reply``).
        A read that fills the buffer is followed by another at once; otherwise libev
        calls again when there is more.
        """
        buf = bytearray(self.read_buffer)
        view = memoryview(buf)
        size = len(buf)
        parser = ReplyParser(self.address)
        parse = parser.feed
        recv_into = raw.recv_into
        read_some = self._read_some
        overlap = self.overlap
        self._follow = follow = self.want == 'leader' and len(self.addresses) > 1
        OK, CHUNK = P.OK, P.CHUNK   # locals: used per reply
        self._send_alone = self._alone(sock, raw, buf, view, parser, follow)

        def on_readable():
            waiters = self._waiters
            while self._sock is sock:
                n = read_some(sock, recv_into, buf)
                if not n:
                    return
                try:
                    replies = parse(view[:n])
                except P.ProtocolError as e:
                    # The stream can no longer be trusted: fail every waiter now
                    # rather than leave them to time out one by one.
                    return self._lost(sock, e)
                count = len(replies)
                # Overlap: in a chunk of OVERLAP_MIN replies or more, send the first
                # half's next requests while the second half is still being woken,
                # so the server works while the client does (_FLUSH_MARK, mid-chunk).
                if overlap and count >= OVERLAP_MIN:
                    replies.insert(count >> 1, _FLUSH_MARK)
                # The chunk's replies are a chain its callers share (_await_reply): a
                # caller that parks wakes the next one itself, so a reply costs one
                # greenlet switch instead of two through the hub. The hub goes on with
                # the chain wherever it gets its turn back.
                self._chain = chain = iter(replies)
                for sync, code, body in chain:      # the cases of _await_reply's loop
                    waiter = waiters.pop(sync, None)
                    if waiter is None:
                        self._unwaited(sync)
                        continue
                    if code == OK:
                        waiter.switch(body)
                    elif code == CHUNK:
                        self.pushes += 1
                        waiters[sync] = waiter
                        continue
                    else:
                        self._refused(waiter, body)
                    if self._sock is not sock:
                        return   # a woken caller closed the connection, or it was lost
                self._chain = None
                self.responses += count
                if self._room_waiters and len(waiters) < self.max_pending:
                    self._wake_room()
                if n < size:
                    return
        return on_readable

    def _unwaited(self, sync):
        """A chain's entry without a waiter: the overlap's mark (send what the first
        half's callers appended), or the reply to a request whose caller left."""
        if sync is _FLUSH_MARK[0]:
            self._flush()
        else:
            self.late += 1

    def _refused(self, waiter, body):
        """Throw a reply's error into its caller (a switch to it, from the hub or from
        a caller of the chain). With several addresses, ER_READONLY means this member
        was demoted in place (an orchestrator's switchover): the writable member is
        another one now, so the socket is given up first."""
        if self._follow and getattr(body, 'code', None) == P.ER_READONLY:
            self._lost(self._sock, errors.NetworkError('Tarantool at %s is read-only now'
                                                       % self.address))
        return _throw(waiter, body)

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
            # The most requests in flight at once this tick decide the next: sent at once
            # while few callers share the connection, in trains when many do.
            self._at_once_below = AT_ONCE_BELOW if self._crowd < AT_ONCE_BELOW else 1
            self._crowd = 0
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
                           'no reply from %s at %s within %.1f s'
                           % (self.server, self.address, self.timeout))

    def _expire(self, waiters, syncs, message):
        """Hub callback: fail the requests ``syncs`` of ``waiters`` still parked."""
        for sync in syncs:
            g = waiters.pop(sync, None)
            if g is not None:
                g.throw(errors.RequestTimeout(message))
        if self._room_waiters and len(self._waiters) < self.max_pending:
            self._wake_room()

    # -- losing and regaining the socket ----------------------------------------

    def _fail_pending(self, exc):
        """The socket is lost: every pending request fails in the next hub pass,
        each with its own exception object (one shared instance would accumulate
        tracebacks across greenlets)."""
        pending, self._waiters = self._waiters, {}
        self._chain = None      # its replies' callers are among the pending
        self._callback(self._fail_all, pending, exc.__class__, str(exc))
        self._wake_room()

    def _fail_all(self, pending, cls, message):
        """Hub callback: throw into every caller still parked in ``pending``; one that
        cannot be thrown into (it cannot happen while the invariant holds) must not
        leave the others parked for ever."""
        while pending:
            _sync, g = pending.popitem()
            try:
                g.throw(cls(message))
            except Exception:
                self._hub.handle_error(g, *sys.exc_info())

    def stats(self):
        # A request the compiled single-waiter path took whole (``whole``) made one
        # send and one recv, and got one reply: counted there once, added here.
        st = SharedSocket.stats(self)
        for k in ('sends', 'recvs', 'responses'):
            st[k] += self.whole
        st.update(schema_fetches=self.schema_fetches, alone=self.alone + self.whole)
        return st


FRAME = P.FRAME     # rows_frame's framing (protocol.FRAME), a global of this module
# A chunk is split for overlap when each half has 4 replies or more. At 10
# greenlets the one batch of 10 becomes two of 5 that take turns with the
# server: 0.35-0.4 network syscalls per op instead of 0.20, for 1.1-1.4x the
# ops/s (docs/connectors.md, "Overlap"); halves of fewer than 4 would add sends and gain
# nothing more. --no-overlap keeps one send per loop pass.
OVERLAP_MIN = 8


# While fewer than this many requests were in flight at once in the last sweep tick
# (0.1 s), a request that finds fewer in flight is sent at once by its caller, not with
# the train the next hub pass sends. With few callers the server is often idle: a
# request held for the train waits for the callers woken before it, while sent at once
# it overlaps them (asynctnt's way). It pays while the client has CPU to spare, a send
# per op costing about 1.3x the client CPU per op: against trains, here, 10 greenlets
# 1.11-1.18x the ops/s with a p50 13-18 % lower, 12 0.99-1.09x, 14 sent at once
# 0.75-0.85x (the 2026-11-26 runs in docs/benchmarks.md). Decided per tick, not per request: at 20
# greenlets a per-request rule would send alone whenever the others happen to be awake.
AT_ONCE_BELOW = 12


# The single-waiter path (Connection._alone's wait_alone): a poll waits up to
# ALONE_WAIT ms for the reply (a slower one is left to the hub), and the hub gets a
# turn at least every ALONE_TURN seconds. At 1 greenlet a reply takes 70-80 us here:
# one request in 13 or so goes through the hub.
ALONE_WAIT = 1
ALONE_TURN = 0.001
_PARK = object()
# The overlap's mark in a chunk's chain of replies: a sync no request has.
_FLUSH_MARK = (object(), None, None)
_OK, _CHUNK = P.OK, P.CHUNK
# How a caller of the chain parks: by switching to (or throwing into) the next caller.
# Called through a partial, which profilers do not record as a call of a builtin, so a
# wall-clock profile shows the wait as _await_reply's own time, as it shows a park in
# the hub's (Cython) switch. The plain greenlet's throw: gevent's Greenlet.throw returns
# None, not the value that later switches back into the thrower.
_switch = functools.partial(greenlet.greenlet.switch)
_throw = functools.partial(greenlet.greenlet.throw)
_WAIT_ERRORS = (socket.error, OSError, select.error)
_poll = get_original('select', 'poll')
_POLLIN = select.POLLIN


def _await_reply(conn, waiters, sync):
    """Park until the reply comes (or an error is thrown in).

    While the hub's reader is waking the callers of a chunk (``conn._chain``), the
    caller wakes the next one of them itself and parks by that switch; the last one
    of the chunk, or any caller outside a chunk, parks by switching to the hub.
    Whoever wakes a caller has popped its entry first. A function of its own so that a
    wall-clock profile shows the time spent waiting for the server under this name,
    not as the caller's own work. Woken by anything but the connection (a timeout or
    kill from outside), the caller takes its entry out itself, so nothing is thrown
    into it later.
    """
    try:
        chain = conn._chain
        if chain is not None:
            # The cases of the reader's own loop (Connection._reader), written out here,
            # not shared through a function: that would be one more call per op.
            for s, code, body in chain:
                waiter = waiters.pop(s, None)
                if waiter is None:
                    conn._unwaited(s)
                elif code == _OK:
                    return _switch(waiter, body)
                elif code == _CHUNK:
                    conn.pushes += 1
                    waiters[s] = waiter
                else:
                    return conn._refused(waiter, body)
        return conn._hub.switch()
    except BaseException:
        waiters.pop(sync, None)
        raise


def _recv_exactly(sock, size):
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError('connection closed before the greeting')
        data += chunk
    return data


def _key(key):
    """A key as tarantool-python takes it: None -> [], a scalar -> [scalar], a list or
    tuple -> a list of its parts."""
    if key.__class__ is list:
        return key
    if key is None:
        return []
    if isinstance(key, (list, tuple)):
        return list(key)
    return [key]


def _ops(ops):
    """Update operations with their operator as text: on 2.7 a native '+' is bytes,
    which tarantool-python sends as a string and our encoder would send as bin."""
    if not PY2:
        return ops
    return [[o[0].decode('ascii')] + list(o[1:]) if o and isinstance(o[0], bytes) else o
            for o in ops]


# box.index iterator numbers, for an iterator given by name (as box.index.GE is 'GE').
_ITERATORS = {'EQ': 0, 'REQ': 1, 'ALL': 2, 'LT': 3, 'LE': 4, 'GE': 5, 'GT': 6,
              'BITS_ALL_SET': 7, 'BITS_ANY_SET': 8, 'BITS_ALL_NOT_SET': 9, 'OVERLAPS': 10,
              'NEIGHBOR': 11}


def _iterator(name):
    if not isinstance(name, (type(u''), bytes)):
        return name                  # a number (a long, on 2.7)
    try:
        return _ITERATORS[to_text(name).upper()]
    except (KeyError, AttributeError):
        raise ValueError('unknown iterator %r; use a number or one of %s'
                         % (name, ', '.join(sorted(_ITERATORS))))


def login_refused(address, user, password, reason):
    """The AuthError of a refused login (both connectors): a user given no password is
    told so, not just the server's "Incorrect password supplied"."""
    if not password:
        return errors.AuthError('Tarantool at %s refused user %r, which was given no password '
                                '(%s): set GLOADDRIVER_PASSWORD or --password'
                                % (address, user, reason))
    return errors.AuthError('Tarantool at %s refused user %r: %s; check --user and --password '
                            '(or GLOADDRIVER_PASSWORD)' % (address, user, reason))
