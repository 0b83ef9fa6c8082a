"""The baseline: tarantool-python, one plain connection per greenlet.

Cooperative only because ``socket`` is monkey-patched. It runs exactly the
same ops and keys as the buffered connector; its errors are translated into
our exception tree so the accounting is the same. Space ids are resolved once,
so neither connector pays for a name lookup per request.
"""
from __future__ import absolute_import, division, print_function

import socket

import gevent
import tarantool
from tarantool import error as tnt_error

from gloaddriver import errors, workload
from gloaddriver.py23 import PY2
from gloaddriver.backends import base
from gloaddriver.backends.tarantool import protocol as P
from gloaddriver.backends.tarantool import requests
from gloaddriver.backends.tarantool.backend_base import TarantoolBackend
from gloaddriver.backends.tarantool.connection import login_refused
from gloaddriver.backends.tarantool.layout import Layout
from gloaddriver.backends.tarantool.layout import make_ops as make_layout_ops
from gloaddriver.workload import keys as keygen

# Tarantool's ER_PASSWORD_MISMATCH and ER_NO_SUCH_USER, ER_CREDS_MISMATCH (a refused login).
_LOGIN_REFUSED = (47, 45, 42)


def _translate(exc):
    if isinstance(exc, tnt_error.NetworkError):   # a DatabaseError subclass: test it first
        return errors.NetworkError(str(exc))
    if isinstance(exc, tnt_error.DatabaseError):
        args = exc.args
        if len(args) >= 2 and isinstance(args[0], int):
            return errors.ServerError(args[0], args[1], args[0] in P.OUTAGE_CODES)
        return errors.ServerError('unknown', str(exc))
    if isinstance(exc, socket.timeout):
        return errors.RequestTimeout(str(exc) or 'socket timeout')
    if isinstance(exc, (socket.error, OSError)):
        return errors.NetworkError(str(exc))
    return exc


def make_ops(conn, space, values, layout=None):
    """The built-in ops through tarantool-python, for the space's layout (gloaddriver's
    own when none is given); its exceptions become ours."""
    layout = layout or Layout.classic(space)
    return make_layout_ops(layout, 'method', values, space, methods=conn, translate=_translate)


class SyncBackend(TarantoolBackend):
    connector = 'sync'

    def __init__(self, config):
        base.Backend.__init__(self, config)
        self.conns = []
        self.values = workload.values(config.load.value_size, config.load.seed)
        self._ops = []
        self.space_id = None
        self._version = None

    def describe(self):
        return 'sync connector (tarantool-python %s), %d greenlets on %d connections' % (
            tarantool.__version__, self.config.load.greenlets, self.config.load.greenlets)

    def _connect(self):
        c = self.config
        (host, port), user, password = c.opts.addresses[0], c.target.user, c.target.password
        kwargs = dict(user=user if user != 'guest' or password else None,
                      password=password, socket_timeout=c.limits.timeout,
                      connection_timeout=c.limits.connect_timeout, reconnect_max_attempts=3,
                      reconnect_delay=0.1, encoding='utf-8')
        if not PY2:
            kwargs['fetch_schema'] = True
        try:
            return tarantool.Connection(host, port, **kwargs)
        except tnt_error.NetworkError as e:
            cause = e.args[0] if len(e.args) == 1 else None
            if isinstance(cause, tnt_error.DatabaseError) and cause.args and \
                    cause.args[0] in _LOGIN_REFUSED:
                # tarantool-python wraps a refused login in a NetworkError on connect.
                raise login_refused('%s:%s' % (host, port), user, password, cause.args[-1])
            raise errors.ConnectError('cannot connect to Tarantool at %s:%s: %s'
                                      % (host, port, e))
        except tnt_error.DatabaseError as e:
            raise login_refused('%s:%s' % (host, port), user, password,
                                e.args[-1] if e.args else e)

    def _open(self):
        opts = self.config.opts
        first = self._connect()
        builtin = opts.request is None and not self.config.load.workload_file
        if builtin:
            try:
                self.space_id = first.schema.get_space(opts.space).sid
            except tnt_error.SchemaError:
                raise errors.SchemaError(
                    'Tarantool at %s has no space %r; create it (box.schema.space.create(%r) '
                    'with a primary index) or use --spawn'
                    % (self.address(), opts.space, opts.space))
        try:
            self._version = first.eval('return _TARANTOOL')[0].split('-')[0]
        except Exception:
            self._version = None
        if opts.request is not None:
            self._check_request(opts.request)
        self.conns = [first] + _spawn_all([self._connect] * (self.config.load.greenlets - 1))
        if builtin:
            layout = self._layout()
            space = opts.space if opts.by_name else self.space_id
            self._ops = [make_ops(conn, space, self.values, layout) for conn in self.conns]

    def _schema_connection(self):
        """A buffered connection of a moment's use, for the checks before the run."""
        return self.connection('schema').connect()

    def _check_request(self, request):
        """--call/--eval/--sql proven on the server, as the buffered connector does."""
        conn = self._schema_connection()
        try:
            requests.check(conn, request[0], request[1])
        finally:
            conn.close()

    def _layout(self):
        """The space's layout, read over a buffered connection of a moment's use (the
        schema views are plain selects; tarantool-python's schema cache has no format)."""
        c = self.config
        conn = self._schema_connection()
        try:
            return Layout.read(conn, self.space_id, c.opts.index)
        finally:
            conn.close()

    def worker_ops(self, worker):
        request = self.config.opts.request
        if request is None:
            return self._ops[worker]
        rnd = keygen.make_rng(self.config.load.seed, 'args', self.config.load.shard, worker)
        return {request[0]: requests.sync_op(self.conns[worker], request[0], request[1],
                                             self.config.opts.fill, rnd, worker, _translate)}

    def client(self, worker):
        """This worker's own tarantool-python connection, its errors translated into ours
        (server errors by code, network errors as such)."""
        return _Translated(self.conns[worker])

    def io_counts(self):
        return None   # tarantool-python does not count its socket calls

    def server_version(self):
        return self._version

    def close(self):
        for conn in self.conns:
            try:
                conn.close()
            except Exception:
                pass
        self.conns = []


class _Translated(object):
    """A tarantool-python connection whose methods raise gloaddriver's errors."""

    def __init__(self, conn):
        self._conn = conn

    def __getattr__(self, name):
        method = getattr(self._conn, name)
        if not callable(method):
            return method

        def call(*args, **kwargs):
            try:
                return method(*args, **kwargs)
            except Exception as e:
                raise _translate(e)
        setattr(self, name, call)   # once per method and worker
        return call


def _spawn_all(fns):
    """Run fns (each opens a connection) concurrently: their connections, or the first
    error raised after closing the ones that opened. Each greenlet catches its own
    error: one that dies of it has gevent print its traceback, and a server that
    cannot be reached must be one line, not a traceback per connection."""
    def guarded(fn):
        try:
            return fn(), None
        except Exception as e:
            return None, e
    jobs = [gevent.spawn(guarded, fn) for fn in fns]
    gevent.joinall(jobs)
    done = [j.value for j in jobs]
    failed = [e for _conn, e in done if e is not None]
    if failed:
        for conn, _e in done:
            if conn is not None:
                conn.close()
        raise failed[0]
    return [conn for conn, _e in done]
