"""Peer: asynctnt (Cython, asyncio) on uvloop. Python 3 only.

Written the way asynctnt's docs and its own benchmark (bench/benchmark.py in its
repository) use it: one ``Connection``, N tasks made with ``asyncio.create_task``
each awaiting ``conn.insert/select/update/delete`` by space id in turn, on uvloop's
loop (``uvloop.run``, its documented entry point). What costs per request was
checked in asynctnt 2.4.0's source:

* ``fetch_schema=False, auto_refetch_schema=False``, as its benchmark sets: this
  workload names spaces and indexes by id, so the schema is never needed; with
  the defaults every request carries the schema id for the server to check and
  every reply is matched against it (measured within noise here, but it is the
  documented setting for id-only use);
* ``request_timeout`` is left at its default (-1: no timeout), so no per-request
  timer is armed (a positive one costs a ``call_later`` and a done callback each);
* each task calls the connection's method itself: no lambda or other Python
  layer between the task and asynctnt. Keys come from one shared ``range``
  iterator, as in the other adapters, so every client does the same keys.

Each op is timed with ``time.perf_counter`` (median and p99 per phase).
Run by scripts/bench_peers.py; prints one JSON line.
"""
import asyncio

import asynctnt
import uvloop

import peerlib


def workers(conn, space, values, keys, lat, errors):
    """One coroutine function per phase: each awaits its requests one after another."""
    now, add = peerlib.now, lat.append

    async def insert():
        for k in keys:
            t0 = now()
            try:
                await conn.insert(space, [k, values[k % 100]])
            except Exception:
                errors[0] += 1
            add(now() - t0)

    async def select():
        for k in keys:
            t0 = now()
            try:
                await conn.select(space, [k])
            except Exception:
                errors[0] += 1
            add(now() - t0)

    async def update():
        for k in keys:
            t0 = now()
            try:
                await conn.update(space, [k], [('=', 1, values[(k + 1) % 100])])
            except Exception:
                errors[0] += 1
            add(now() - t0)

    async def delete():
        for k in keys:
            t0 = now()
            try:
                await conn.delete(space, [k])
            except Exception:
                errors[0] += 1
            add(now() - t0)
    return {'insert': insert, 'select': select, 'update': update, 'delete': delete}


async def run(a):
    conn = asynctnt.Connection(host=a['host'], port=a['port'], username=a['user'],
                               password=a['password'], fetch_schema=False,
                               auto_refetch_schema=False)
    await conn.connect()
    space, values = a['space_id'], peerlib.values(a['value_size'])
    conc, n = a['concurrency'], a['ops']
    counter = peerlib.Syscalls()
    out = []
    for name in a['phases']:
        lat, errors = [], [0]
        work = workers(conn, space, values, iter(range(n)), lat, errors)[name]
        ph = peerlib.Phase(name, counter)
        ph.start()
        await asyncio.wait([asyncio.create_task(work()) for _ in range(conc)])
        out.append(ph.stop(n, errors[0], lat))
    await conn.disconnect()
    return out


def main():
    a = peerlib.args()
    out = uvloop.run(run(a))
    peerlib.emit(out, client='asynctnt %s + uvloop %s' % (asynctnt.__version__, uvloop.__version__))


if __name__ == '__main__':
    main()
