"""Sending live metrics without ever holding up the run.

``Sender`` (Graphite over TCP or UDP, StatsD over UDP): the ticker only puts one
interval's bytes on a short queue (``put``); a greenlet of the sender's own does
the connecting and sending. A collector that is down, refuses, or reads too
slowly costs a dropped payload, counted with its reason, and nothing else:

* the queue holds QUEUE payloads; a newer one pushes the oldest out (dropped);
* a TCP connect waits at most CONNECT_TIMEOUT, a send SEND_TIMEOUT (a send cut
  short leaves half a line on the wire, so that connection is dropped);
* after a failed connect the next one waits (RETRY_FIRST s, doubling up to
  RETRY_MAX s); payloads arriving meanwhile are dropped, not queued up;
* UDP sockets are connected, so a port nobody listens on shows up as "connection
  refused" (the kernel's ICMP answer) on a later send, and is counted too.

``PrometheusEndpoint``: gevent's WSGI server with prometheus_client's exposition
(text format, or OpenMetrics when the scraper asks for it); each scrape reads the
figures of the last closed interval, which are replaced whole, never edited.

A collector's name is resolved once, at the start, with the C library's resolver:
gevent's resolves on a thread pool, and once that thread exists Python 2.7's GIL
hands off every check interval (futex calls in every op's syscall count).
"""
from __future__ import absolute_import, division, print_function

import errno
import os
import socket
from collections import deque

import gevent
from gevent import monkey
from gevent import socket as gsocket
from gevent.event import Event

from gloaddriver import errors
from gloaddriver.py23 import clock, spawn_named

QUEUE = 8
CONNECT_TIMEOUT = 1.0
SEND_TIMEOUT = 1.0
RETRY_FIRST = 1.0
RETRY_MAX = 10.0
DATAGRAM = 1432     # bytes: a datagram that fits an Ethernet frame unfragmented
FLUSH_WAIT = 1.0    # at the end: how long the last payloads may take to go out


def resolve(host, port, kind):
    """(family, sockaddr) of host:port, or SetupError; names resolved without threads."""
    getaddrinfo = monkey.get_original('socket', 'getaddrinfo')
    try:
        infos = getaddrinfo(host, port, 0, kind)
    except (socket.error, OSError) as e:
        raise errors.SetupError('cannot resolve %s: %s' % (host, getattr(e, 'strerror', e) or e))
    family, _t, _p, _c, addr = infos[0]
    return family, addr


def reason(exc):
    """A short, stable name for why a send failed: 'connection refused', 'timed out'."""
    if isinstance(exc, socket.timeout) or isinstance(exc, gevent.Timeout):
        return 'timed out'
    code = getattr(exc, 'errno', None)
    if code is not None and code in errno.errorcode:
        return os.strerror(code).lower()
    return str(exc) or exc.__class__.__name__


class Sender(object):
    """One collector: ``put(payload)`` from the ticker, sent by a greenlet of its own."""

    def __init__(self, name, endpoint):
        self.name = name
        self.endpoint = endpoint
        self.udp = endpoint.proto == 'udp'
        self.family, self.addr = resolve(endpoint.host, endpoint.port,
                                         socket.SOCK_DGRAM if self.udp else socket.SOCK_STREAM)
        self.offered = 0          # payloads put (one per interval)
        self.sent = 0
        self.dropped = {}         # reason -> payloads
        self._queue = deque()
        self._wake = Event()
        self._sock = None
        self._retry_at = 0.0
        self._backoff = RETRY_FIRST
        self._last_error = None
        self._sending = False     # a payload is out of the queue but not yet sent
        self._greenlet = spawn_named('live-%s' % name, self._run)

    def __str__(self):
        e = self.endpoint
        host = '[%s]' % e.host if ':' in e.host else e.host
        return '%s %s://%s:%d' % (self.name, e.proto, host, e.port)

    def put(self, payload):
        """Queue one interval's bytes; never waits."""
        self.offered += 1
        if len(self._queue) >= QUEUE:
            self._queue.popleft()
            self._drop('queue full: the collector reads too slowly')
        self._queue.append(payload)
        self._wake.set()

    def _drop(self, why, n=1):
        self.dropped[why] = self.dropped.get(why, 0) + n

    def _run(self):
        while True:
            self._wake.wait()
            self._wake.clear()
            while self._queue:
                self._sending = True
                self._send(self._queue.popleft())
                self._sending = False

    def _connect(self):
        kind = socket.SOCK_DGRAM if self.udp else socket.SOCK_STREAM
        sock = gsocket.socket(self.family, kind)   # cooperative, patched or not
        try:
            if self.udp:
                sock.connect(self.addr)   # connected: the kernel reports a refusing port
                sock.settimeout(0.0)      # a full send buffer drops, never waits
            else:
                sock.settimeout(CONNECT_TIMEOUT)
                sock.connect(self.addr)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(SEND_TIMEOUT)
        except BaseException:
            sock.close()
            raise
        return sock

    def connect_now(self):
        """Before the run: connect over TCP once, so a collector that is down is said at
        the start, not only at the end. Returns why it failed, or None."""
        if self.udp:
            return None   # nothing answers a UDP connect; a refusal shows on a send
        try:
            self._sock = self._connect()
        except (socket.error, OSError, gevent.Timeout) as e:
            self._last_error = reason(e)
            self._retry_at = clock() + self._backoff
            self._backoff = min(self._backoff * 2, RETRY_MAX)
            return self._last_error
        return None

    def _send(self, payload):
        if self._sock is None:
            if clock() < self._retry_at:
                self._drop(self._last_error)   # still down, as far as we know
                return
            try:
                self._sock = self._connect()
            except (socket.error, OSError, gevent.Timeout) as e:
                self._failed(e)
                return
        try:
            if self.udp:
                for chunk in datagrams(payload):
                    self._sock.send(chunk)
            else:
                self._sock.sendall(payload)
        except (socket.error, OSError, gevent.Timeout) as e:
            self._failed(e)
            return
        self.sent += 1
        self._backoff = RETRY_FIRST

    def _failed(self, exc):
        """Count the payload, drop the connection, and wait before the next connect."""
        why = reason(exc)
        self._drop(why)
        self._last_error = why
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._retry_at = clock() + self._backoff
        self._backoff = min(self._backoff * 2, RETRY_MAX)

    def close(self):
        """Let what is queued go out (FLUSH_WAIT at most), stop; a note on drops, or None."""
        with gevent.Timeout(FLUSH_WAIT, False):
            while self._queue or self._sending:
                gevent.sleep(0.01)
        self._greenlet.kill()
        left = len(self._queue) + (1 if self._sending else 0)
        if left:
            self._drop('not sent by the end of the run', left)
            self._queue.clear()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        return self.note()

    def note(self):
        n = sum(self.dropped.values())
        if not n:
            return None
        if len(self.dropped) == 1:
            why = list(self.dropped)[0]
        else:
            why = ', '.join('%s: %d' % (k, v) for k, v in
                            sorted(self.dropped.items(), key=lambda kv: (-kv[1], kv[0])))
        return '%s: %d of %d sends dropped (%s)' % (self, n, self.offered, why)


def datagrams(payload, size=DATAGRAM):
    """Whole lines packed into datagrams of at most ``size`` bytes (a longer line alone)."""
    out, cur = [], b''
    for line in payload.splitlines(True):
        if cur and len(cur) + len(line) > size:
            out.append(cur)
            cur = b''
        cur += line
    if cur:
        out.append(cur)
    return out


class PrometheusEndpoint(object):
    """The last closed interval as Prometheus/OpenMetrics text, served over HTTP."""

    def __init__(self, endpoint, families):
        try:
            from prometheus_client import CollectorRegistry, make_wsgi_app
        except ImportError:
            raise errors.SetupError('--prometheus-port needs the prometheus_client package '
                                    '(pip install prometheus_client)')
        from gevent.pywsgi import WSGIServer
        self.endpoint = endpoint
        self.scrapes = 0
        self.failed = 0
        self.first_failure = None
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(families))
        self._app = make_wsgi_app(registry)
        host = endpoint.host or ''
        family = socket.AF_INET6 if ':' in host else socket.AF_INET
        listener = gsocket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, endpoint.port))
            listener.listen(16)
        except (socket.error, OSError) as e:
            listener.close()
            raise errors.SetupError('--prometheus-port: cannot listen on %s:%d: %s'
                                    % (host or '*', endpoint.port, reason(e)))
        self.port = listener.getsockname()[1]
        self._server = WSGIServer(listener, self._serve, log=None)
        self._server.start()

    def _serve(self, environ, start_response):
        self.scrapes += 1
        try:
            return self._app(environ, start_response)
        except Exception as e:   # a broken scrape must not print a traceback mid-run
            self.failed += 1
            if self.first_failure is None:
                self.first_failure = '%s: %s' % (e.__class__.__name__, e)
            start_response('500 Internal Server Error', [('Content-Type', 'text/plain')])
            return [b'gloaddriver: cannot format the metrics\n']

    def close(self):
        self._server.stop(timeout=FLUSH_WAIT)
        if self.failed:
            return 'prometheus: %d of %d scrapes failed (%s)' % (self.failed, self.scrapes,
                                                                self.first_failure)
        return None


class _Collector(object):
    """prometheus_client's collector interface over a function that gives families."""

    def __init__(self, families):
        self._families = families

    def collect(self):
        return iter(self._families())


PUSH_TIMEOUT = 2.0    # seconds one push to a Pushgateway may take
PUSH_FLUSH = 5.0      # at the end: how long the last push may take to go out


class PrometheusPush(object):
    """``--prometheus-push URL``: each interval's families pushed to a Prometheus
    Pushgateway (prometheus_client's ``push_to_gateway``: a PUT that replaces the group),
    for jobs too short for a scraper. One group per phase (job PREFIX, instance this
    host, phase, and shard when sharded), so that every phase's last figures stay on the
    gateway after the run. A greenlet of its own pushes; an interval that comes while a
    push is out replaces the one waiting (the gateway keeps only the newest anyway); a
    push that fails is counted with its reason and said at the end."""

    def __init__(self, url, job, grouping):
        try:
            from prometheus_client import push_to_gateway
        except ImportError:
            raise errors.SetupError('--prometheus-push needs the prometheus_client package '
                                    '(pip install prometheus_client)')
        self._push = push_to_gateway
        self.url = url
        self.job = job
        self.grouping = grouping
        self.offered = 0
        self.pushed = 0
        self.dropped = {}
        self._pending = None
        self._wake = Event()
        self._busy = False
        self._greenlet = spawn_named('live-prometheus-push', self._run)

    def __str__(self):
        return 'prometheus push %s' % self.url

    def put(self, phase, families):
        """The newest interval of ``phase`` (its metric families); never waits."""
        self.offered += 1
        self._pending = (phase, families)
        self._wake.set()

    def _run(self):
        from prometheus_client import CollectorRegistry
        while True:
            self._wake.wait()
            self._wake.clear()
            while self._pending is not None:
                (phase, families), self._pending = self._pending, None
                self._busy = True
                registry = CollectorRegistry(auto_describe=False)
                registry.register(_Collector(lambda fams=families: fams))
                try:
                    self._push(self.url, job=self.job, registry=registry,
                               grouping_key=dict(self.grouping, phase=phase),
                               timeout=PUSH_TIMEOUT)
                    self.pushed += 1
                except Exception as e:   # (urllib's errors differ on 2.7 and 3.x)
                    why = reason(getattr(e, 'reason', None) or e)
                    self.dropped[why] = self.dropped.get(why, 0) + 1
                finally:
                    self._busy = False

    def close(self):
        """Let the last push go out (PUSH_FLUSH at most), stop; a note on drops, or None."""
        with gevent.Timeout(PUSH_FLUSH, False):
            while self._pending is not None or self._busy:
                gevent.sleep(0.01)
        self._greenlet.kill()
        if self._pending is not None:
            self.dropped['not pushed by the end of the run'] = 1
        n = sum(self.dropped.values())
        if not n:
            return None
        why = ', '.join('%s: %d' % kv for kv in sorted(self.dropped.items()))
        return '%s: %d pushes failed, %d went through (%s)' % (self, n, self.pushed, why)
