"""gloaddriver's optional pipelined PostgreSQL connection
(gloaddriver/backends/postgres/pipelined.py) on kv point selects: ``per_conn``
greenlets on each of ``concurrency`` connections, a prepared statement, statements
of one connection's greenlets in flight together. Runs on 2.7 and 3.x with
gloaddriver's environment; run by scripts/bench_peers.py, prints one JSON line.
"""
from __future__ import absolute_import, division, print_function

import os
import random
import sys

import gevent

import peerlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from gloaddriver.backends.postgres.pipelined import PipelinedConnection  # noqa: E402


def main():
    a = peerlib.args()
    per = a.get('per_conn', 1)
    conns = [PipelinedConnection(a['host'], a['port'], a['user'], a['password'],
                                 a['database']).connect() for _ in range(a['concurrency'])]
    for c in conns:
        c.prepare('sel', 'SELECT value FROM %s WHERE id = $1' % a['table'])
    rnd = random.Random(a['seed'])
    keys = iter([rnd.randrange(a['keys']) for _ in range(a['ops'])])
    errors, misses = [0], [0]

    def worker(conn):
        execute = conn.execute
        for k in keys:
            try:
                if not execute('sel', (k,)):
                    misses[0] += 1
            except Exception:
                errors[0] += 1
    ph = peerlib.Phase('select', peerlib.Syscalls())
    ph.start()
    gevent.joinall([gevent.spawn(worker, c) for c in conns for _ in range(per)])
    out = ph.stop(a['ops'], errors[0])
    out['misses'] = misses[0]
    sends = sum(c.sends for c in conns)
    out['requests_per_send'] = a['ops'] / sends if sends else None
    for c in conns:
        c.close()
    peerlib.emit([out], client='gloaddriver pipelined, %d greenlets per connection' % per)


if __name__ == '__main__':
    main()
