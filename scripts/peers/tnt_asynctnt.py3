"""Peer: asynctnt (Cython, asyncio) on uvloop. Python 3 only.

N tasks share one connection: ``conn.insert/select/update/delete`` by space id.
Run by scripts/bench_peers.py; prints one JSON line.
"""
import asyncio

import asynctnt
import uvloop

import peerlib


async def run(a):
    conn = asynctnt.Connection(host=a['host'], port=a['port'], username=a['user'],
                               password=a['password'])
    await conn.connect()
    space, values = a['space_id'], peerlib.values(a['value_size'])
    conc, n = a['concurrency'], a['ops']
    do = {
        'insert': lambda k: conn.insert(space, [k, values[k % 100]]),
        'select': lambda k: conn.select(space, [k]),
        'update': lambda k: conn.update(space, [k], [('=', 1, values[(k + 1) % 100])]),
        'delete': lambda k: conn.delete(space, [k]),
    }
    counter = peerlib.Syscalls()
    out = []
    for name in a['phases']:
        keys = iter(range(n))
        errors = 0
        fn = do[name]

        async def worker():
            nonlocal errors
            for k in keys:
                try:
                    await fn(k)
                except Exception:
                    errors += 1
        ph = peerlib.Phase(name, counter)
        ph.start()
        await asyncio.gather(*[worker() for _ in range(conc)])
        out.append(ph.stop(n, errors))
    await conn.disconnect()
    return out


def main():
    a = peerlib.args()
    uvloop.install()
    out = asyncio.run(run(a))
    peerlib.emit(out, client='asynctnt %s + uvloop %s' % (asynctnt.__version__, uvloop.__version__))


if __name__ == '__main__':
    main()
