"""``--web [HOST:]PORT``: the report page, live, while the run goes.

A gevent WSGI server in the driver's own hub (as ``--prometheus-port`` is served)
answers two paths: ``/``, the page of report.html (the final report once the run
has ended), and ``/events``, server-sent events: one ``row`` per interval, then
``final`` with the view of the finished run.

The workers pay for none of it per op: each interval is made into its event text
once, by the ticker, and appended to one list; each browser's stream walks that
list (a late one catches up from the start) and sleeps on an event between
intervals. At the end ``finish`` sends the final view, waits a moment for the open
streams to take it, and stops; with ``--web-keep`` it serves until Ctrl-C.
"""
from __future__ import absolute_import, division, print_function

import json
import signal
import socket
import time

import gevent
from gevent import socket as gsocket
from gevent.event import Event

from gloaddriver import errors
from gloaddriver.report import dashboard, html
from gloaddriver.report import find_max as find_max_out

KEEPALIVE = 15.0     # seconds between comments on an idle stream (proxies close silent ones)
FINAL_WAIT = 3.0     # seconds the end waits for open streams to take the final view


def _event(name, obj):
    data = json.dumps(obj, sort_keys=True, separators=(',', ':'))
    return ('event: %s\ndata: %s\n\n' % (name, data)).encode('utf-8')


class Dashboard(object):
    def __init__(self, web, argv, rate=None):
        from gevent.pywsgi import WSGIServer
        self.argv = list(argv)
        self.rate = rate
        self.server_charts = ()
        self.keep = web.keep
        self._chunks = []          # every event sent so far, as bytes
        self._wake = Event()
        self._final = None         # the final page, once the run has ended
        self.streams = 0
        self.failures = 0
        family = socket.AF_INET6 if ':' in web.host else socket.AF_INET
        listener = gsocket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((web.host, web.port))
            listener.listen(16)
        except (socket.error, OSError) as e:
            listener.close()
            raise errors.SetupError('--web: cannot listen on %s:%d: %s' % (
                web.host, web.port, getattr(e, 'strerror', None) or e))
        host = '[%s]' % web.host if ':' in web.host else web.host
        self.url = 'http://%s:%d/' % (host, listener.getsockname()[1])
        self._server = WSGIServer(listener, self._serve, log=None, error_log=None)
        self._server.start()
        errors.say('live dashboard: %s' % self.url)

    # -- from the run ---------------------------------------------------------------

    def interval(self, phase, row, ops, server):
        """A timeline row has closed (called by the ticker): one event for every stream."""
        try:
            self._publish(_event('row', dashboard.live_message(phase, row, server, self.rate)))
        except Exception:   # a bug here must not stop the ticker; the page misses a row
            self.failures += 1

    def step(self, find_max):
        """--find-max judged a step: the curve so far, for every stream."""
        try:
            self._publish(_event('step', find_max_out.view({'find_max': find_max})))
        except Exception:   # as interval: the page misses a point, the search goes on
            self.failures += 1

    def _publish(self, chunk):
        self._chunks.append(chunk)
        wake, self._wake = self._wake, Event()
        wake.set()

    def finish(self, result):
        """The run has ended: the final view to the open pages, then stop (or, with
        --web-keep, serve it until Ctrl-C)."""
        view = dashboard.view(result)
        self._final = html.page(view).encode('utf-8')
        self._publish(_event('final', view))
        if self.keep:
            errors.say('live dashboard: the final report stays at %s until Ctrl-C' % self.url)
            # Ctrl-C (or SIGTERM) ends it as a callback in the hub: no traceback.
            done = Event()
            handles = [gevent.signal_handler(sig, done.set)
                       for sig in (signal.SIGINT, signal.SIGTERM)]
            try:
                done.wait()
            finally:
                for h in handles:
                    h.cancel()
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
        else:
            deadline = time.time() + FINAL_WAIT
            while self.streams and time.time() < deadline:
                gevent.sleep(0.05)
        self.close()

    def close(self):
        if self._server is not None:
            self._server.stop(timeout=1)
            self._server = None

    # -- to the browser -------------------------------------------------------------

    def _serve(self, environ, start_response):
        path = environ.get('PATH_INFO') or '/'
        if path == '/':
            body = self._final or html.page(dashboard.live_view(
                self.argv, self.server_charts), live=True).encode('utf-8')
            start_response('200 OK', [('Content-Type', 'text/html; charset=utf-8'),
                                      ('Cache-Control', 'no-store'),
                                      ('Content-Length', str(len(body)))])
            return [body]
        if path == '/events':
            start_response('200 OK', [('Content-Type', 'text/event-stream'),
                                      ('Cache-Control', 'no-store')])
            return self._stream()
        start_response('404 Not Found', [('Content-Type', 'text/plain')])
        return [b'not found\n']

    def _stream(self):
        self.streams += 1
        try:
            i = 0
            while True:
                wake = self._wake
                while i < len(self._chunks):
                    yield self._chunks[i]
                    i += 1
                if self._final is not None:
                    return
                if not wake.wait(KEEPALIVE):
                    yield b': idle\n\n'
        finally:
            self.streams -= 1


class Both(object):
    """The live metrics sink and the dashboard as one (the run knows one ``live``)."""

    def __init__(self, *sinks):
        self.sinks = sinks

    def interval(self, phase, row, ops, server):
        for s in self.sinks:
            s.interval(phase, row, ops, server)

    def step(self, find_max):
        for s in self.sinks:
            s.step(find_max)


def open(config):   # noqa: A001 (the module's one entry point)
    """The run's dashboard, or None without --web."""
    web = config.output.web
    if web is None:
        return None
    return Dashboard(web, config.argv, config.load.rate if not config.load.stages else None)
