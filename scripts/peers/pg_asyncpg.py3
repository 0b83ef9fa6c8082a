"""Peer: asyncpg on uvloop, kv point selects. Python 3 only.

N tasks, each on a connection of its own, ``fetchrow('SELECT value FROM kv WHERE
id = $1')``: asyncpg prepares the statement once per connection and caches it.
Run by scripts/bench_peers.py; prints one JSON line.
"""
import asyncio
import random

import asyncpg
import uvloop

import peerlib


async def run(a):
    conns = [await asyncpg.connect(host=a['host'], port=a['port'], user=a['user'],
                                   password=a['password'], database=a['database'])
             for _ in range(a['concurrency'])]
    sql = 'SELECT value FROM %s WHERE id = $1' % a['table']
    rnd = random.Random(a['seed'])
    keys = iter([rnd.randrange(a['keys']) for _ in range(a['ops'])])
    errors = misses = 0

    async def worker(conn):
        nonlocal errors, misses
        for k in keys:
            try:
                if await conn.fetchrow(sql, k) is None:
                    misses += 1
            except Exception:
                errors += 1
    for c in conns:                      # prepare outside the measured phase
        await c.fetchrow(sql, 0)
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
    uvloop.install()
    peerlib.emit(asyncio.run(run(a)),
                 client='asyncpg %s + uvloop %s' % (asyncpg.__version__, uvloop.__version__))


if __name__ == '__main__':
    main()
