"""Peer: the latency floor. A plain blocking-socket loop (stdlib socket + msgpack, no
event loop, no greenlets): pack the request, ``sendall``, ``recv`` until the reply is
whole, check its header, next. Runs on 2.7 and 3.x.

Only at concurrency 1. At 10 or 100, N threads with a blocking socket each would
measure CPython's GIL handoffs and the scheduler, not the server: every reply would
wait for the interpreter lock held by another thread, so that would be no floor for
a client's added latency. bench-peers compares the other clients' latency at 10 and
100 with asynctnt's instead.

The reply's body is not decoded (as gloaddriver's built-in ops do not): the floor is
what any client must do, a send, a receive, the header's sync and status. Nothing is
made per op that can be made once: the reply lands by ``recv_into`` in one buffer and
one Unpacker reads every header (a new Unpacker and a 64 KB ``recv`` per op cost more
than asynctnt's whole round trip in C).
Run by scripts/bench_peers.py; prints one JSON line.
"""
from __future__ import absolute_import, division, print_function

import socket
import struct
import sys

import msgpack

import peerlib

_HEAD = struct.Struct('>BIBBBBBQ')   # 0xce len | {REQUEST_TYPE: code, SYNC: uint64}
_LEN = struct.Struct('>BI')          # a reply's 0xce length prefix
SELECT, INSERT, UPDATE, DELETE, AUTH = 1, 2, 4, 5, 7


class Blocking(object):
    def __init__(self, host, port, user=None, password=None):
        self.sock = sock = socket.create_connection((host, port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pack = msgpack.Packer(use_bin_type=True).pack
        self.sync = 0
        self.buf = bytearray(65536)
        self.view = memoryview(self.buf)
        self.unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
        greeting = self.recv_exactly(128)
        if user:
            body = msgpack.packb({0x23: user, 0x21: [u'chap-sha1',
                                                     peerlib.chap_sha1(greeting, password)]},
                                 use_bin_type=False)
            self.request(AUTH, body)

    def recv_exactly(self, n):
        data = b''
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise EOFError('connection closed')
            data += chunk
        return data

    def recv_some(self, at):
        n = self.sock.recv_into(self.view[at:])
        if not n:
            raise EOFError('connection closed')
        return n

    def request(self, code, payload):
        """Send one request, wait for its reply; raise on an error reply."""
        self.sync = sync = self.sync + 1
        sock, view, unpacker = self.sock, self.view, self.unpacker
        sock.sendall(_HEAD.pack(0xce, _HEAD.size - 5 + len(payload), 0x82, 0, code, 1,
                                0xcf, sync) + payload)
        got = sock.recv_into(view)
        while got < 5:
            got += self.recv_some(got)
        size = _LEN.unpack_from(self.buf)[1] + 5
        if size > len(view):
            raise RuntimeError('reply of %d bytes: larger than the buffer' % size)
        while got < size:
            got += self.recv_some(got)
        unpacker.feed(view[5:size])
        header = unpacker.unpack()
        unpacker.skip()   # the body: every IPROTO reply here has one
        if header[1] != sync:
            raise RuntimeError('reply to sync %s, expected %s' % (header[1], sync))
        if header[0]:
            raise RuntimeError('error reply %#x' % header[0])


def make_bodies(pack, space, values):
    """{phase: fn(key) -> (request code, packed body)}: the workload's four requests."""
    return {
        'insert': lambda k: (INSERT, pack({0x10: space, 0x21: [k, values[k % 100]]})),
        'select': lambda k: (SELECT, pack({0x10: space, 0x11: 0, 0x12: 0xffffffff, 0x13: 0,
                                           0x14: 0, 0x20: [k]})),
        'update': lambda k: (UPDATE, pack({0x10: space, 0x11: 0, 0x20: [k],
                                           0x21: [[u'=', 1, values[(k + 1) % 100]]]})),
        'delete': lambda k: (DELETE, pack({0x10: space, 0x11: 0, 0x20: [k]})),
    }


def main():
    a = peerlib.args()
    conn = Blocking(a['host'], a['port'], a['user'], a['password'])
    space, values, n = a['space_id'], peerlib.values(a['value_size']), a['ops']
    request = conn.request
    bodies = make_bodies(conn.pack, space, values)
    counter = peerlib.Syscalls()
    now = peerlib.now
    out = []
    for name in a['phases']:
        body = bodies[name]
        errors = 0
        lat = []
        ph = peerlib.Phase(name, counter)
        ph.start()
        for k in range(n):
            t0 = now()
            try:
                request(*body(k))
            except (RuntimeError, socket.error, EOFError):
                errors += 1
            lat.append(now() - t0)
        out.append(ph.stop(n, errors, lat))
    conn.sock.close()
    peerlib.emit(out, client='blocking socket loop, msgpack %s, Python %d.%d'
                 % ((msgpack.version,) + sys.version_info[:2]))


if __name__ == '__main__':
    main()
