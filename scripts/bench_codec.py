"""Client-side cost of one op's building blocks, without a server.

Measures, on the interpreter running it: encoding an insert and a select
frame, parsing replies that carry one tuple each (100 replies per chunk),
and parking/waking a greenlet the way the connector does (100 greenlets, one
hub callback per batch). Prints one JSON object; scripts/bench-codec runs it
under each interpreter and prints the table.
"""
from __future__ import absolute_import, division, print_function

import json
import os
import platform
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import gevent  # noqa: E402
import msgpack  # noqa: E402
from gevent.hub import Waiter, get_hub  # noqa: E402

from gloaddriver import workload  # noqa: E402
from gloaddriver.backends.tarantool import protocol as P  # noqa: E402
from gloaddriver._compat import clock  # noqa: E402


def best_of(fn, n, repeat=5):
    """Microseconds per item, the best of ``repeat`` runs (least disturbed by noise)."""
    best = None
    for _ in range(repeat):
        t = clock()
        fn(n)
        us = (clock() - t) / n * 1e6
        best = us if best is None or us < best else best
    return round(best, 3)


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1536
    values = workload.values(size)
    enc = P.Encoder()

    def encode_insert(n):
        buf = bytearray()
        for k in range(n):
            enc.insert(buf, k, 512, [k, values[k % 100]])
            if len(buf) > 1 << 20:
                buf = bytearray()

    def encode_select(n):
        buf = bytearray()
        for k in range(n):
            enc.select(buf, k, 512, 0, [k], P.MAX_SELECT, 0, P.ITERATOR_EQ)
            if len(buf) > 1 << 20:
                buf = bytearray()

    chunk = b''
    for k in range(100):
        payload = (msgpack.packb({P.REQUEST_TYPE: 0, P.SYNC: k, P.SCHEMA_VERSION: 80}) +
                   msgpack.packb({P.DATA: [[k, values[k % 100]]]}, use_bin_type=True))
        chunk += b'\xce' + struct.pack('>I', len(payload)) + payload

    def decode(n):
        reader = P.ResponseReader()
        for _ in range(n // 100):
            reader.feed(chunk)
            reader.responses()

    hub = get_hub()
    callback = hub.loop.run_callback

    def park_wake(n):
        parked = {}

        def worker(i, count):
            for _ in range(count):
                w = parked[i] = Waiter(hub)
                w.get()

        def wake(items):
            for w in items:
                w.switch(None)

        def driver():
            done = 0
            while done < n:
                gevent.sleep(0)
                items = list(parked.values())
                parked.clear()
                callback(wake, items)
                done += len(items)
        workers = [gevent.spawn(worker, i, n // 100) for i in range(100)]
        d = gevent.spawn(driver)
        gevent.joinall(workers)
        d.kill()

    out = {
        'interpreter': '%s %s' % (platform.python_implementation(), platform.python_version()),
        'value_size': size,
        'encode_insert_us': best_of(encode_insert, 50000),
        'encode_select_us': best_of(encode_select, 50000),
        'decode_reply_us': best_of(decode, 50000),
        'park_wake_us': best_of(park_wake, 50000),
    }
    print(json.dumps(out, sort_keys=True))


if __name__ == '__main__':
    main()
