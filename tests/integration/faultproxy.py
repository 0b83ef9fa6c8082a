"""A fault-injecting TCP proxy for the tests: a real server behind it, faults on the wire.

Plain threads and blocking sockets (the test process is not gevent-patched). Modes,
switched by the test at any time with ``proxy.mode = ...``:

* ``pass``: bytes flow both ways as they come;
* ``down``: every connection is reset (RST, SO_LINGER 0) and new ones are reset as
  soon as they are accepted: the server is unreachable;
* ``blackhole``: connections stay open but nothing is forwarded either way (the bytes
  wait in the kernel's buffers and flow again when the mode goes back to ``pass``);
* ``cut``: the next chunk from the server is forwarded only in part (its first half:
  the middle of a reply frame) and the connection is then closed; the mode returns to
  ``pass`` by itself;
* ``trickle``: replies are forwarded TRICKLE bytes at a time, a segment each
  (``trickled`` counts them). How many of them a reader gets in one recv depends on when
  it reads: more than one, on a busy machine.
"""
from __future__ import absolute_import, division, print_function

import select
import socket
import struct
import threading
import time

TRICKLE = 3


def _reset(sock):
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    except (OSError, socket.error):
        pass
    try:
        sock.close()
    except (OSError, socket.error):
        pass


class FaultProxy(object):
    def __init__(self, target_port, target_host='127.0.0.1'):
        self.target = (target_host, target_port)
        self.mode = 'pass'
        self.accepted = 0
        self.trickled = 0     # segments sent in trickle mode
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(('127.0.0.1', 0))
        self._listener.listen(128)
        self.port = self._listener.getsockname()[1]
        self._closed = False
        self._pairs = []
        self._lock = threading.Lock()
        t = threading.Thread(target=self._accept_loop)
        t.daemon = True
        t.start()

    @property
    def uri(self):
        return '127.0.0.1:%d' % self.port

    def _accept_loop(self):
        while not self._closed:
            try:
                client, _addr = self._listener.accept()
            except (OSError, socket.error):
                return
            if self.mode == 'down':
                _reset(client)
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
            except (OSError, socket.error):
                _reset(client)
                continue
            self.accepted += 1
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            pair = [client, server]
            with self._lock:
                self._pairs.append(pair)
            t = threading.Thread(target=self._pump, args=(pair,))
            t.daemon = True
            t.start()

    def _pump(self, pair):
        client, server = pair
        try:
            while not self._closed:
                mode = self.mode
                if mode == 'down':
                    break
                if mode == 'blackhole':
                    time.sleep(0.01)
                    continue
                ready, _w, _x = select.select([client, server], [], [], 0.05)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        server.sendall(data)
                    elif self.mode == 'cut' and len(data) > 1:
                        client.sendall(data[:len(data) // 2])
                        self.mode = 'pass'
                        return
                    elif self.mode == 'trickle':
                        for i in range(0, len(data), TRICKLE):
                            client.sendall(data[i:i + TRICKLE])   # a segment each (NODELAY)
                            self.trickled += 1
                    else:
                        client.sendall(data)
        except (OSError, socket.error):
            pass
        finally:
            with self._lock:
                if pair in self._pairs:
                    self._pairs.remove(pair)
            _reset(client)
            _reset(server)

    def close(self):
        self._closed = True
        _reset(self._listener)
        with self._lock:
            pairs = list(self._pairs)
        for client, server in pairs:
            _reset(client)
            _reset(server)
