"""Peer: the plain gevent + psycopg2 loop, one toolbench query (asyncpg's driver
benchmark), every row fetched as psycopg2 builds it.

N greenlets, each with a connection of its own (no pool, no timeouts, no stats),
psycopg2 made cooperative by the simplest wait callback, ``execute`` then ``fetchall``
over and over for the given seconds. Runs on 2.7 and 3.x; run by
scripts/bench_toolbench.py, prints one JSON line.
"""
from __future__ import absolute_import, division, print_function

import json
import time

import gevent
import psycopg2
import psycopg2.extensions

import peerlib
from pg_gevent_psycopg2 import wait     # the kv peer's wait callback, as it is


def main():
    a = peerlib.args()
    psycopg2.extensions.set_wait_callback(wait)
    psycopg2.extensions.register_type(psycopg2.extensions.UNICODE)
    dsn = 'host=%s port=%d dbname=%s user=%s password=%s sslmode=disable' % (
        a['host'], a['port'], a['database'], a['user'], a['password'])
    conns = [psycopg2.connect(dsn) for _ in range(a['concurrency'])]
    sql, params = a['sql'].replace('$1', '%s').replace('$2', '%s'), a['params'] or None
    done = [0, 0]
    end = time.time() + a['seconds']

    def worker(conn):
        conn.autocommit = True
        cur = conn.cursor()
        while time.time() < end:
            cur.execute(sql, params)
            done[1] += len(cur.fetchall())
            done[0] += 1
    t0 = time.time()
    gevent.joinall([gevent.spawn(worker, c) for c in conns], raise_error=True)
    seconds = time.time() - t0
    for c in conns:
        c.close()
    print(json.dumps({'queries': done[0], 'rows': done[1], 'seconds': seconds,
                      'client': 'gevent %s + psycopg2 %s' % (
                          gevent.__version__, psycopg2.__version__.split(' ')[0])}))


if __name__ == '__main__':
    main()
