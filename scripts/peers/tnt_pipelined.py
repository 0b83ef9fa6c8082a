"""Peer: the CPython floor at concurrency N. A raw pipelined loop (stdlib socket +
msgpack, no event loop, no greenlets, no accounting): pack N requests, send them with
one ``sendall``, read until N replies are whole (each header's sync and status
checked, the body skipped), next batch. Runs on 2.7 and 3.x.

Nothing a load driver does besides the protocol is done here: no latency histogram,
no timeline, no timeouts, no per-op Python call into a connection. So its ops/s at
100 is what one CPython process can push through one socket with this workload; a
driver's ratio to it says what everything else costs. Each op's latency is its
batch's round trip up to the moment its own reply is read.
Run by scripts/bench_peers.py; prints one JSON line.
"""
from __future__ import absolute_import, division, print_function

import socket
import sys

import msgpack

import peerlib
from tnt_blocking import _HEAD, Blocking, make_bodies


def batch_loop(conn, body, n, per, now, lat):
    """Every op of a phase in batches of ``per``; the count of error replies."""
    sock, buf, view = conn.sock, conn.buf, conn.view
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    feed, unpack, skip = unpacker.feed, unpacker.unpack, unpacker.skip
    errors = 0
    sync = conn.sync
    stage = 0     # of the frame being read: 0 its length, 1 its header, 2 its body
    for first in range(0, n, per):
        keys = range(first, min(first + per, n))
        frames = []
        for k in keys:
            sync += 1
            code, payload = body(k)
            frames.append(_HEAD.pack(0xce, _HEAD.size - 5 + len(payload), 0x82, 0, code, 1,
                                     0xcf, sync) + payload)
        t0 = now()
        sock.sendall(b''.join(frames))
        want = len(frames)
        while want:
            got = sock.recv_into(view)
            if not got:
                raise EOFError('connection closed')
            feed(view[:got])
            while want:
                try:
                    if stage == 0:
                        unpack()           # the length
                        stage = 1
                    if stage == 1:
                        if unpack()[0]:    # the header's status
                            errors += 1
                        stage = 2
                    skip()                 # the body
                except msgpack.OutOfData:
                    break
                stage = 0
                want -= 1
                lat.append(now() - t0)
    conn.sync = sync
    return errors


def main():
    a = peerlib.args()
    conn = Blocking(a['host'], a['port'], a['user'], a['password'])
    conn.buf = bytearray(1 << 20)
    conn.view = memoryview(conn.buf)
    space, values, n, per = a['space_id'], peerlib.values(a['value_size']), a['ops'], \
        a['concurrency']
    bodies = make_bodies(conn.pack, space, values)
    counter = peerlib.Syscalls()
    out = []
    for name in a['phases']:
        lat = []
        ph = peerlib.Phase(name, counter)
        ph.start()
        try:
            errors = batch_loop(conn, bodies[name], n, per, peerlib.now, lat)
        except (socket.error, EOFError):
            errors = n - len(lat)
        out.append(ph.stop(n, errors, lat))
    conn.sock.close()
    peerlib.emit(out, client='raw pipelined loop, batches of %d, msgpack %s, Python %d.%d'
                 % ((per, msgpack.version) + sys.version_info[:2]))


if __name__ == '__main__':
    main()
