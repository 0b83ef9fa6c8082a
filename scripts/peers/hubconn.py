"""A hub-driven gevent Tarantool connector in about 100 lines: the "hub-driven style"
peer of scripts/bench-peers. Not part of gloaddriver; no stats, no timeouts, no
reconnect.

* No reader or writer greenlet: an io watcher's callback, run by the hub, reads
  whatever is there, parses every complete reply and switches straight to each
  waiting caller (the caller runs until it parks again, then the hub goes on).
* One flush per loop pass: the first request after a flush schedules one hub
  callback; every request appended before it runs goes out in the same send.
"""
from __future__ import absolute_import, division, print_function

import socket
import struct

import msgpack
from gevent.hub import Waiter, get_hub

from peerlib import chap_sha1

_HEAD = struct.Struct('>BIBBBBBQ')          # 0xce len | {REQUEST_TYPE: code, SYNC: uint64}
SELECT, INSERT, UPDATE, DELETE, AUTH = 1, 2, 4, 5, 7


class ServerError(Exception):
    pass


class HubConnection(object):
    def __init__(self, host, port, user=None, password=None):
        sock = socket.create_connection((host, port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        greeting = b''
        while len(greeting) < 128:
            greeting += sock.recv(128 - len(greeting))
        self.sock, self.hub, self.sync, self.waiters = sock, get_hub(), 0, {}
        self.out, self.flushing = bytearray(), False
        self.pack = msgpack.Packer(use_bin_type=True).pack
        self.unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
        self.state, self.header = 0, None
        if user:
            scramble = chap_sha1(greeting, password)
            body = msgpack.packb({0x23: user, 0x21: [u'chap-sha1', scramble]}, use_bin_type=False)
            head = _HEAD.pack(0xce, _HEAD.size - 5 + len(body), 0x82, 0, AUTH, 1, 0xcf, 0)
            sock.sendall(head + body)
            self.unpacker.feed(sock.recv(4096))
            _n, header, reply = next(self.unpacker), next(self.unpacker), next(self.unpacker)
            if header[0]:
                raise ServerError(reply.get(0x31))
        sock.setblocking(False)
        loop = self.hub.loop
        self.callback = loop.run_callback
        self.reader = loop.io(sock.fileno(), 1)
        self.reader.start(self._on_readable)
        self.writer = loop.io(sock.fileno(), 2)

    def request(self, code, body):
        self.sync = sync = self.sync + 1
        payload = self.pack(body)
        self.out += _HEAD.pack(0xce, _HEAD.size - 5 + len(payload), 0x82, 0, code, 1, 0xcf, sync)
        self.out += payload
        if not self.flushing:
            self.flushing = True
            self.callback(self._flush)
        w = self.waiters[sync] = Waiter(self.hub)
        return w.get()

    def select(self, space, key, index=0):
        return self.request(SELECT, {0x10: space, 0x11: index, 0x12: 0xffffffff, 0x13: 0,
                                     0x14: 0, 0x20: key})

    def insert(self, space, values):
        return self.request(INSERT, {0x10: space, 0x21: values})

    def update(self, space, key, ops, index=0):
        return self.request(UPDATE, {0x10: space, 0x11: index, 0x20: key, 0x21: ops})

    def delete(self, space, key, index=0):
        return self.request(DELETE, {0x10: space, 0x11: index, 0x20: key})

    def _flush(self):
        data, self.out = self.out, bytearray()
        try:
            sent = self.sock.send(data)
        except (BlockingIOError if str is not bytes else socket.error):
            sent = 0
        if sent < len(data):      # the kernel's buffer is full: the rest when writable
            self.out = data[sent:] + self.out
            self.writer.start(self._flush)
            return
        self.writer.stop()
        self.flushing = False

    def _on_readable(self):
        data = self.sock.recv(262144)
        if not data:
            self.reader.stop()
            for w in self.waiters.values():
                w.throw(EOFError('connection closed'))
            return
        self.unpacker.feed(data)
        waiters = self.waiters
        for obj in self.unpacker:
            if self.state == 2:
                self.state = 0
                code = self.header[0]
                w = waiters.pop(self.header[1])
                if code == 0:
                    w.switch(obj.get(0x30))      # the caller runs now, until it parks again
                else:
                    w.throw(ServerError(code & 0x7fff, obj.get(0x31)))
            elif self.state == 1:
                self.header, self.state = obj, 2
            else:
                self.state = 1
