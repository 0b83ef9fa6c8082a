"""Peer: asyncpg on uvloop, one toolbench query (asyncpg's driver benchmark). Python 3.

N tasks, each on a connection of its own, ``fetch(query)`` over and over for the given
seconds: asyncpg prepares the statement once per connection, asks for binary results
and decodes every row. Run by scripts/bench_toolbench.py; prints one JSON line.
"""
import asyncio
import time

import asyncpg
import uvloop

import peerlib


async def run(a):
    conns = [await asyncpg.connect(host=a['host'], port=a['port'], user=a['user'],
                                   password=a['password'], database=a['database'])
             for _ in range(a['concurrency'])]
    sql, params = a['sql'], a['params']
    for c in conns:                      # prepared and cached outside the measured time
        await c.fetch(sql, *params)
    done = [0, 0]
    end = time.monotonic() + a['seconds']

    async def worker(conn):
        while time.monotonic() < end:
            rows = await conn.fetch(sql, *params)
            done[0] += 1
            done[1] += len(rows)
    t0 = time.monotonic()
    await asyncio.gather(*[worker(c) for c in conns])
    seconds = time.monotonic() - t0
    for c in conns:
        await c.close()
    return {'queries': done[0], 'rows': done[1], 'seconds': seconds}


def main():
    a = peerlib.args()
    uvloop.install()
    out = asyncio.run(run(a))
    out['client'] = 'asyncpg %s + uvloop %s' % (asyncpg.__version__, uvloop.__version__)
    print(__import__('json').dumps(out))


if __name__ == '__main__':
    main()
