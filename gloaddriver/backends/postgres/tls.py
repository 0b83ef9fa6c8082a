"""TLS for the pipelined PostgreSQL connection: sslmode and its files read from the DSN as
libpq reads them, the SSLRequest, the handshake, and the socket the connection then uses.

libpq's modes: ``disable`` and ``allow`` talk plain (allow would only try TLS after a
refusal, which a server that takes plain connections never gives), ``prefer`` (libpq's
default) asks for TLS and talks plain when the server says no, ``require`` asks and
insists, without checking the certificate (as libpq without a root certificate),
``verify-ca`` checks the chain against ``sslrootcert`` (default
~/.postgresql/root.crt), ``verify-full`` also that the certificate names the host.
``sslcert``/``sslkey`` give a client certificate. The PG* variables fill in what the DSN
leaves out, as for libpq.

After the handshake the connection's reader and flush use the non-blocking
``ssl.SSLSocket`` from the hub as they use a plain socket (``shared_socket`` takes its
want-read/want-write as would-block); the reader also drains what the TLS layer holds
decrypted, which no readiness of the descriptor would announce.
"""
from __future__ import absolute_import, division, print_function

import os
import socket as _stdsocket
import ssl
import struct
from collections import namedtuple

from gevent.socket import wait_read, wait_write

from gloaddriver import errors
from gloaddriver.py23 import PY2

MODES = ('disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full')
_SSL_REQUEST = struct.pack('!II', 8, 80877103)
# mode, and the files of verify-ca/verify-full and of a client certificate
Spec = namedtuple('Spec', 'mode rootcert cert key')


def spec_of(get):
    """The Spec of a DSN (``get(key, PGVAR, default)`` reads it, libpq's way), or None to
    talk plain; ConfigError for a mode libpq would not take or a file that is missing."""
    mode = get('sslmode', 'PGSSLMODE', 'prefer')
    if mode not in MODES:
        raise errors.ConfigError('--dsn: sslmode=%s is none of %s' % (mode, ', '.join(MODES)))
    if mode in ('disable', 'allow'):
        return None
    home = os.path.expanduser('~/.postgresql')
    root = get('sslrootcert', 'PGSSLROOTCERT', os.path.join(home, 'root.crt'))
    cert, key = get('sslcert', 'PGSSLCERT'), get('sslkey', 'PGSSLKEY')
    if mode.startswith('verify') and not os.path.isfile(root):
        raise errors.ConfigError('--dsn: sslmode=%s checks the server\'s certificate against '
                                 '%s, which is not there; give sslrootcert=FILE' % (mode, root))
    for name, path in (('sslcert', cert), ('sslkey', key)):
        if path and not os.path.isfile(path):
            raise errors.ConfigError('--dsn: %s=%s: no such file' % (name, path))
    return Spec(mode, root, cert, key)


def _context(spec):
    ctx = ssl.SSLContext(getattr(ssl, 'PROTOCOL_TLS', ssl.PROTOCOL_SSLv23))
    if spec.mode.startswith('verify'):
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(spec.rootcert)
        ctx.check_hostname = spec.mode == 'verify-full'
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if spec.cert:
        ctx.load_cert_chain(spec.cert, spec.key)
    return ctx


def negotiate(sock, spec, host, address, timeout):
    """Ask the server at ``address`` for TLS on a connected gevent socket (before the
    startup message); returns the socket to talk on: a TLSSocket, or ``sock`` when a
    server that says no may be talked to plainly (prefer)."""
    sock.sendall(_SSL_REQUEST)
    answer = sock.recv(1)
    if answer == b'N':
        if spec.mode == 'prefer':
            return sock
        raise errors.ConnectError('PostgreSQL at %s does not take TLS connections (ssl=off), '
                                  'and --dsn says sslmode=%s' % (address, spec.mode))
    if answer != b'S':
        raise errors.ConnectError('PostgreSQL at %s answered the TLS request with %r'
                                  % (address, answer))
    raw = getattr(sock, '_sock', sock)   # the real socket under gevent's
    raw.setblocking(False)
    if PY2:   # 2.7's ssl wraps a socket.socket, not the _socket one gevent's holds
        raw = _stdsocket.socket(_sock=raw)
    ctx = _context(spec)
    tls = ctx.wrap_socket(raw, server_hostname=host if ctx.check_hostname else None,
                          do_handshake_on_connect=False)
    wrapped = TLSSocket(tls, timeout)
    try:
        wrapped.wait_for(tls.do_handshake)
    except ssl.SSLError as e:
        tls.close()
        raise errors.ConnectError('TLS with PostgreSQL at %s failed (sslmode=%s): %s'
                                  % (address, spec.mode, getattr(e, 'reason', None) or e))
    return wrapped


class TLSSocket(object):
    """A non-blocking ssl.SSLSocket seen as the blocking, cooperative socket the startup
    reads and writes (``recv``, ``sendall``); ``_sock`` is that SSLSocket, which the
    connection's hub-side reader and flush use directly."""

    def __init__(self, tls, timeout):
        self._sock = tls
        self._timeout = timeout

    def wait_for(self, call, *args):
        """call(*args), waiting cooperatively each time TLS wants the socket."""
        fd = self._sock.fileno()
        while True:
            try:
                return call(*args)
            except ssl.SSLWantReadError:
                wait_read(fd, self._timeout)
            except ssl.SSLWantWriteError:
                wait_write(fd, self._timeout)

    def recv(self, n):
        return self.wait_for(self._sock.recv, n)

    def sendall(self, data):
        view = memoryview(data)
        while len(view):
            view = view[self.wait_for(self._sock.send, view.tobytes()):]

    def setsockopt(self, *args):
        return self._sock.setsockopt(*args)

    def fileno(self):
        return self._sock.fileno()

    def close(self):
        self._sock.close()
