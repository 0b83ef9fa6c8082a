"""Client-side cost of one op's building blocks, without a server.

Measures, on the interpreter running it: encoding an insert and a select
frame, parsing replies that carry one tuple each (100 replies per chunk),
and parking/waking a greenlet the way the connector does (100 greenlets, one
hub callback per batch). Prints one JSON object.

With ``--python`` (twice or more; scripts/bench codec passes 2.7 and 3.11) it
runs itself under each interpreter instead, prints them side by side with the
first over the last as a ratio, and writes the rows to bench-results/codec.json
(or --out).
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import platform
import struct
import subprocess
import sys

from benchlib import ROOT, out_path

sys.path.insert(0, ROOT)

import gevent  # noqa: E402
import msgpack  # noqa: E402
from gevent.hub import Waiter, get_hub  # noqa: E402

from gloaddriver import workload  # noqa: E402
from gloaddriver.backends.tarantool import protocol as P  # noqa: E402
from gloaddriver.backends.tarantool.replies import ReplyParser  # noqa: E402
from gloaddriver.py23 import clock  # noqa: E402


def best_of(fn, n, repeat=5):
    """Microseconds per item, the best of ``repeat`` runs (least disturbed by noise)."""
    best = None
    for _ in range(repeat):
        t = clock()
        fn(n)
        us = (clock() - t) / n * 1e6
        best = us if best is None or us < best else best
    return round(best, 3)


KEYS = ['encode_insert_us', 'encode_select_us', 'decode_reply_us', 'park_wake_us']


def side_by_side(pythons, size, path):
    rows = []
    for python in pythons:
        out = subprocess.check_output([python, os.path.abspath(__file__), str(size)], cwd=ROOT)
        rows.append(json.loads(out.decode().strip().splitlines()[-1]))
    print('%-16s %10s' % ('us per op', 'value') +
          ''.join('%18s' % r['interpreter'] for r in rows) + '   ratio')
    for k in KEYS:
        vals = [r[k] for r in rows]
        print('%-16s %10s' % (k[:-3], size) + ''.join('%18.3f' % v for v in vals) +
              '   %.2fx' % (vals[0] / vals[-1]))
    with open(path, 'w') as f:
        json.dump(rows, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('size', nargs='?', type=int, default=1536,
                    help='value size in bytes (default 1536: the 1.5 KB values of the '
                         "the 1.5 KB key-value workload)")
    ap.add_argument('--python', action='append', default=[],
                    help='measure under this interpreter instead (repeat to compare)')
    ap.add_argument('--out', default=None, help='with --python: where the rows go')
    args = ap.parse_args()
    if args.python:
        path = args.out or os.path.join(ROOT, 'bench-results', 'codec.json')
        side_by_side(args.python, args.size, out_path(path, 'codec'))
        return
    size = args.size
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
        reader = ReplyParser()
        for _ in range(n // 100):
            reader.feed(chunk)

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
