"""Peer: the plain gevent + psycopg2 loop, kv point selects by PREPARE/EXECUTE.

N greenlets, each with a connection of its own (no pool, no timeouts, no stats),
psycopg2 made cooperative by the simplest wait callback (a new watcher per wait,
as psycogreen does). Runs on 2.7 and 3.x; run by scripts/bench_peers.py, prints
one JSON line.
"""
from __future__ import absolute_import, division, print_function

import random

import gevent
import psycopg2
import psycopg2.extensions
from gevent.socket import wait_read, wait_write

import peerlib


def wait(conn, timeout=None):
    while True:
        state = conn.poll()
        if state == psycopg2.extensions.POLL_OK:
            return
        if state == psycopg2.extensions.POLL_READ:
            wait_read(conn.fileno())
        else:
            wait_write(conn.fileno())


def main():
    a = peerlib.args()
    psycopg2.extensions.set_wait_callback(wait)
    dsn = 'host=%s port=%d dbname=%s user=%s password=%s sslmode=disable' % (
        a['host'], a['port'], a['database'], a['user'], a['password'])
    conns = [psycopg2.connect(dsn) for _ in range(a['concurrency'])]
    for c in conns:
        c.autocommit = True
        c.cursor().execute('PREPARE sel (bigint) AS SELECT value FROM %s WHERE id = $1'
                           % a['table'])
    rnd = random.Random(a['seed'])
    keys = iter([rnd.randrange(a['keys']) for _ in range(a['ops'])])
    errors, misses = [0], [0]

    def worker(conn):
        cur = conn.cursor()
        for k in keys:
            try:
                cur.execute('EXECUTE sel (%s)', (k,))
                if cur.fetchone() is None:
                    misses[0] += 1
            except Exception:
                errors[0] += 1
    ph = peerlib.Phase('select', peerlib.Syscalls())
    ph.start()
    gevent.joinall([gevent.spawn(worker, c) for c in conns])
    out = ph.stop(a['ops'], errors[0])
    out['misses'] = misses[0]
    for c in conns:
        c.close()
    peerlib.emit([out], client='gevent %s + psycopg2 %s, PREPARE/EXECUTE'
                 % (gevent.__version__, psycopg2.__version__.split()[0]))


if __name__ == '__main__':
    main()
