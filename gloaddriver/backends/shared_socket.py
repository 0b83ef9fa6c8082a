"""One socket that many greenlets share: the I/O half of the buffered Tarantool
connection (``tarantool.connection``) and of the pipelined PostgreSQL connection
(``postgres.pipelined``), which each add their protocol.

What does not depend on the protocol lives here:

* connecting within the connect timeout (``_open``), with no resolver thread for an
  IP literal, then the protocol's handshake on the new socket (``_handshake``);
* several addresses (the members of a replica set): each connect, the first and every
  one after a loss, tries them in turn from the one last used, and keeps the first
  member that is what the connection wants (``want``: ``leader``, the writable one;
  ``replica``, a read-only one, else any; ``any``), as the protocol tells it
  (``_read_only(sock)``, after the handshake). A leader lost is so looked for among
  the others with the reconnect loop's backoff, and ``member_changes`` records each
  move to another member (clock time, from, to);
* the outgoing buffer and its flush: the first request after a send schedules one hub
  callback, which sends everything appended in that loop pass with one ``send``; when
  the kernel's buffer is full, the rest waits for the write watcher. A protocol may
  also call ``_flush`` at once (Tarantool does when nothing else is in flight: there
  is nothing to batch with, and waiting for the hub would only add latency);
* a read watcher on the live socket, whose callback the protocol makes (``_reader``);
* losing the socket: EVERY pending request fails at once (``_fail_pending``), the
  unsent buffer goes with them, and a reconnect loop with backoff takes over; a
  request made meanwhile waits for it up to the request timeout (``_wait_ready``),
  and after ``outage_limit`` seconds down fails at once with GaveUp.

A subclass sets ``server`` (its name in messages) and gives ``_handshake(sock)`` (which
may return another socket to talk on: TLS over ``sock``),
``_reader(sock, raw)``, ``_fail_pending(exc)`` and ``_sweep_loop()`` (which fails the
requests older than the timeout); ``_wait_room()``, ``_goodbye()`` and, for several
addresses, ``_read_only(sock)`` are optional.
"""
from __future__ import absolute_import, division, print_function

import errno
import socket as _stdsocket
import ssl

import gevent
from gevent import socket as gsocket
from gevent.event import Event
from gevent.hub import get_hub

from gloaddriver import errors
from gloaddriver.py23 import clock, spawn_named

WOULD_BLOCK = (errno.EAGAIN, errno.EWOULDBLOCK)
# What a non-blocking TLS socket raises for "not now": would-block, as EAGAIN is.
TLS_WANTS = (ssl.SSLWantReadError, ssl.SSLWantWriteError)
# What a connection with several addresses looks for (``want``).
LEADER, REPLICA, ANY = 'leader', 'replica', 'any'
WANTS = (LEADER, REPLICA, ANY)


class SharedSocket(object):
    """Counters (plain ints, read by the stats code): ``requests``, ``responses``,
    ``sends`` (send calls), ``recvs`` (recv calls that returned data), ``late``
    (replies to requests that had already timed out), ``reconnects``,
    ``outage_seconds``."""

    server = 'the server'

    def __init__(self, host, port, timeout=5.0, connect_timeout=3.0, reconnect=True,
                 outage_limit=30.0, name='connection', addresses=None, want=LEADER):
        # (host, port) of every member, the first tried first; host and port are those
        # of the member connected to (or last tried).
        self.addresses = list(addresses or [(host, port)])
        self.host, self.port = self.addresses[0]
        if want not in WANTS:
            raise ValueError('want must be one of %s' % (WANTS,))
        self.want = want
        self.member_changes = []    # (clock time, from host:port, to host:port)
        self._member = None         # (host, port) of the member connected to last
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.reconnect = reconnect
        self.outage_limit = outage_limit
        self.name = name
        self.server_version = None

        self._hub = get_hub()
        self._callback = self._hub.loop.run_callback
        self._sock = None
        self._io = None             # (read watcher, write watcher, send) of the live socket
        self._out = bytearray()
        self._flush_pending = False
        self._up = Event()
        self._closed = False
        self._gave_up = None
        self._down_since = None
        self._greenlets = []

        self.requests = self.responses = self.sends = self.recvs = 0
        self.late = self.reconnects = 0
        self.outage_seconds = 0.0
        self.last_error = None

    @property
    def address(self):
        return '%s:%s' % (self.host, self.port)

    @property
    def connected(self):
        return self._sock is not None

    # -- connecting -------------------------------------------------------------------

    def connect(self):
        """Open and hand-shake (log in...); raise a SetupError on failure."""
        self._attach(self._open())
        self._greenlets.append(spawn_named(self.name + '-sweeper', self._sweep_loop))
        return self

    def _open(self):
        """A socket to the member wanted, tried from the one last used; with one address,
        that address whatever it is. ``host`` and ``port`` follow each try (the
        handshake's messages name the member it talks to)."""
        if len(self.addresses) == 1:
            return self._open_at(self.host, self.port)[0]
        first = self.addresses.index(self._member or self.addresses[0])
        order = self.addresses[first:] + self.addresses[:first]
        fallback, why = None, []
        for host, port in order:
            self.host, self.port = host, port
            try:
                sock, read_only = self._open_at(host, port, ask=self.want != ANY)
            except errors.ConnectError as e:
                why.append(str(e))
                continue
            except errors.OpError as e:
                why.append('%s:%s: %s' % (host, port, e))
                continue
            if self.want == ANY or read_only == (self.want == REPLICA):
                if fallback is not None:
                    fallback[0].close()
                return self._moved_to(sock, host, port)
            if self.want == REPLICA and fallback is None:
                fallback = (sock, host, port)     # no replica up: any member serves reads
                continue
            why.append('%s at %s:%s is %s' % (self.server, host, port, 'read-only' if read_only
                                                else 'writable'))
            sock.close()
        if fallback is not None:
            return self._moved_to(*fallback)
        self.host, self.port = self._member or self.addresses[0]
        raise errors.ConnectError('no %s among %s: %s' % (
            'writable member' if self.want == LEADER else 'member',
            ', '.join('%s:%s' % a for a in order), '; '.join(why)))

    def _moved_to(self, sock, host, port):
        """The member of a socket just opened: a move to another is recorded."""
        if self._member is not None and self._member != (host, port):
            self.member_changes.append((clock(), '%s:%s' % self._member, '%s:%s' % (host, port)))
        self._member = (host, port)
        self.host, self.port = host, port
        return sock

    def _read_only(self, sock):
        """Whether the member at the other end of a new socket is read-only (asked only
        with several addresses); raise ConnectError when it cannot tell."""
        raise errors.ConnectError('%s connections take one address' % self.server)

    def _open_at(self, host, port, ask=False):
        """(socket, whether read-only if ``ask``, else None) of ``host:port``, connected
        and hand-shaken within the connect timeout."""
        timer = gevent.Timeout(self.connect_timeout)
        timer.start()
        sock = None
        address = '%s:%s' % (host, port)
        try:
            try:
                sock = connect_socket(host, port)
                sock.setsockopt(_stdsocket.IPPROTO_TCP, _stdsocket.TCP_NODELAY, 1)
                # A handshake may return another socket to talk on (TLS over this one).
                sock = self._handshake(sock) or sock
                return sock, (self._read_only(sock) if ask else None)
            except gevent.Timeout as t:
                if t is not timer:
                    raise
                raise errors.ConnectError('no answer from %s at %s within %.1f s'
                                          % (self.server, address, self.connect_timeout))
            except (_stdsocket.error, EOFError, OSError) as e:
                raise errors.ConnectError('cannot connect to %s at %s: %s'
                                          % (self.server, address, reason(e)))
            except errors.GloadError:
                raise
            except Exception as e:
                # A handshake that breaks in a way no rule foresaw is still a failed
                # connect: the reconnect loop tries again instead of dying with it.
                raise errors.ConnectError('cannot connect to %s at %s: the handshake failed: '
                                          '%s: %s' % (self.server, address,
                                                      e.__class__.__name__, e))
        except BaseException:
            if sock is not None:
                sock.close()
            raise
        finally:
            timer.close()

    def _attach(self, sock):
        # Forget the greenlets of earlier sockets: a long run with many
        # reconnects would otherwise keep every dead one.
        self._greenlets = [g for g in self._greenlets if not g.dead]
        self._sock = sock
        self._out = bytearray()
        self._flush_pending = False
        raw = real_socket(sock)
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
            self._goodbye()
            self._lost(sock, errors.NetworkError('connection closed by the client'))
        self._up.set()  # release anybody waiting for a reconnect
        gevent.killall([g for g in self._greenlets if g is not gevent.getcurrent()], block=False)
        self._greenlets = []

    def _goodbye(self):
        """What the protocol says before the client closes (nothing by default)."""

    # -- the slow path of a request -----------------------------------------------------

    def _wait_ready(self):
        """Not connected, or (``_wait_room``) too much in flight: wait, within the
        request timeout, or fail."""
        while True:
            if self._gave_up is not None:
                raise errors.GaveUp(self._gave_up)
            if self._closed:
                raise errors.NotConnected('connection to %s at %s is closed'
                                          % (self.server, self.address))
            if self._sock is None:
                if not self._up.wait(self.timeout) or self._sock is None:
                    if self._gave_up is not None:
                        raise errors.GaveUp(self._gave_up)
                    raise errors.NotConnected('not connected to %s at %s (reconnecting: %s)'
                                              % (self.server, self.address, self.last_error))
                continue
            if not self._wait_room():
                return

    def _wait_room(self):
        """Backpressure: True after waiting for room in flight, False when there is."""
        return False

    # -- I/O in the hub -------------------------------------------------------------------

    def _flush(self):
        """Send everything appended since the last flush: a hub callback (scheduled
        by the first request after a flush), or called by a reader mid-chunk, or by a
        request that found nothing in flight."""
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
            if isinstance(e, TLS_WANTS) or (e.args and e.args[0] in WOULD_BLOCK):
                sent = 0
            else:
                self._flush_pending = False
                return self._lost_sending(e)
        if sent:
            self.sends += 1
        if sent < len(data):
            # The kernel's buffer is full: keep the rest in front of what came since,
            # and send when the socket is writable again. No new flush is scheduled
            # meanwhile (_flush_pending stays set, or is set by a direct call's).
            self._out[:0] = memoryview(data)[sent:]
            self._flush_pending = True
            io[1].start(self._writable)
            return
        self._flush_pending = False

    def _lost_sending(self, e):
        """The socket failed a send with ``e``: it is lost."""
        self._lost(self._sock, errors.NetworkError('connection to %s at %s lost while sending: %s'
                                                   % (self.server, self.address, reason(e))))

    def _writable(self):
        io = self._io
        if io is not None:
            io[1].stop()
            self._flush()

    def _read_some(self, sock, recv_into, buf):
        """``recv_into(buf)`` for a reader: the bytes read, or 0 when there is nothing
        more for now, or the socket is lost (and then it is)."""
        try:
            n = recv_into(buf)
        except (_stdsocket.error, OSError) as e:
            if not (isinstance(e, TLS_WANTS) or (e.args and e.args[0] in WOULD_BLOCK)):
                self._lost(sock, errors.NetworkError(
                    'connection to %s at %s lost while reading: %s'
                    % (self.server, self.address, reason(e))))
            return 0
        if not n:
            self._lost(sock, errors.NetworkError('%s at %s closed the connection'
                                                 % (self.server, self.address)))
            return 0
        self.recvs += 1
        return n

    # -- losing and regaining the socket ---------------------------------------------------

    def _lost(self, sock, exc):
        if sock is None or self._sock is not sock:
            return
        self._sock = None
        self._up.clear()
        self.last_error = str(exc)
        self._stop_io()
        try:
            sock.close()
        except Exception:
            pass
        self._out = bytearray()
        self._flush_pending = False
        self._fail_pending(exc)
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
                    self._gave_up = ('%s at %s unreachable for %.0f s (last error: %s); '
                                     'giving up' % (self.server, self.address,
                                                    clock() - started, e))
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
        return {'requests': self.requests, 'responses': self.responses, 'sends': self.sends,
                'recvs': self.recvs, 'late': self.late, 'reconnects': self.reconnects,
                'outage_seconds': self.outage_seconds}


def connect_when_up(connect, patience):
    """connect(), tried again every 0.25 s for up to ``patience`` seconds while the
    server is down (a read-back right after an injected restart)."""
    deadline = clock() + patience
    while True:
        try:
            return connect()
        except errors.ConnectError:
            if clock() > deadline:
                raise
            gevent.sleep(0.25)


def summed_stats(conns):
    """The counters of several connections, added up."""
    total = {}
    for conn in conns:
        for k, v in conn.stats().items():
            total[k] = total.get(k, 0) + v
    return total


def real_socket(sock):
    """The real socket under a gevent socket (its ``_sock``: the same from gevent
    22.10 to 26.x), whose recv_into and send return EAGAIN instead of switching to
    the hub: the connection waits on its own watchers, from the hub."""
    return getattr(sock, '_sock', sock)


def connect_socket(host, port):
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


def reason(exc):
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
