"""Peer: psycopg 3 (async, its C extension) on asyncio, kv point selects,
server-side prepared statements (``prepare=True``). Python 3 only.

N tasks, each on an AsyncConnection of its own, autocommit.
Run by scripts/bench_peers.py; prints one JSON line.
"""
import asyncio
import random

import psycopg

import peerlib


async def run(a):
    conninfo = 'host=%s port=%d dbname=%s user=%s password=%s sslmode=disable' % (
        a['host'], a['port'], a['database'], a['user'], a['password'])
    conns = [await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
             for _ in range(a['concurrency'])]
    sql = 'SELECT value FROM %s WHERE id = %%s' % a['table']
    rnd = random.Random(a['seed'])
    keys = iter([rnd.randrange(a['keys']) for _ in range(a['ops'])])
    errors = misses = 0

    async def worker(conn):
        nonlocal errors, misses
        cur = conn.cursor()
        for k in keys:
            try:
                await cur.execute(sql, (k,), prepare=True)
                if await cur.fetchone() is None:
                    misses += 1
            except Exception:
                errors += 1
    for c in conns:                      # prepare outside the measured phase
        await c.execute(sql, (0,), prepare=True)
    ph = peerlib.Phase('select', peerlib.Syscalls())
    ph.start()
    await asyncio.gather(*[worker(c) for c in conns])
    out = ph.stop(a['ops'], errors)
    out['misses'] = misses
    for c in conns:
        await c.close()
    return [out]


def main():
    a = peerlib.args()
    peerlib.emit(asyncio.run(run(a)), client='psycopg %s (%s), asyncio' % (
        psycopg.__version__, psycopg.pq.__impl__))


if __name__ == '__main__':
    main()
