"""Peer: aiotarantool 1.1.5 (asyncio, default loop) on tarantool-python 0.7.1. Python 3 only.

aiotarantool dates from Python 3.5 and msgpack 0.x; a few things it uses are gone
from 3.11 and msgpack 1.x, so its module source is patched as it is loaded (it
fails loudly if a patch no longer applies), and nothing else is changed:

* ``loop=self.loop`` is dropped from asyncio.Lock/Event/Future/open_connection
  (the parameter was removed in 3.10; the running loop is the same loop);
* ``base64.decodestring`` becomes ``base64.decodebytes`` (removed in 3.9);
* msgpack's ``Unpacker(encoding=...)`` becomes ``Unpacker(raw=False,
  strict_map_key=False)`` on its schema-reload path (msgpack 1.0 removed the one
  and made int map keys need the other);
* tarantool-python 0.7.1 (the newest that still has the Request classes it
  imports; it runs on msgpack 1.x) keeps ``ENCODING_DEFAULT`` in
  ``tarantool.utils``: it is also set in ``tarantool.const``, where aiotarantool
  looks for it.

N tasks share one connection: ``conn.insert/select/update/delete`` by space id.
Run by scripts/bench_peers.py; prints one JSON line.
"""
import asyncio
import importlib.util
import sys
import types

import peerlib

PATCHES = [(', loop=self.loop)', ')'), ('(loop=self.loop)', '()'),
           ('base64.decodestring(', 'base64.decodebytes(')]
# Its schema-reload path (taken on the first request: it starts at schema version 1)
# unpacks with msgpack's ``encoding=``, which msgpack 1.0 removed.
PATCHES.append(('msgpack.Unpacker(use_list=True, encoding=self.encoding)',
                'msgpack.Unpacker(use_list=True, raw=False, strict_map_key=False)'))


def load_patched():
    import tarantool.const
    import tarantool.utils
    tarantool.const.ENCODING_DEFAULT = tarantool.utils.ENCODING_DEFAULT
    spec = importlib.util.find_spec('aiotarantool')
    with open(spec.origin) as f:
        src = f.read()
    for old, new in PATCHES:
        if old not in src:
            raise SystemExit('aiotarantool: patch target %r not found' % old)
        src = src.replace(old, new)
    mod = types.ModuleType('aiotarantool')
    mod.__file__ = spec.origin
    sys.modules['aiotarantool'] = mod
    exec(compile(src, spec.origin, 'exec'), mod.__dict__)
    return mod


async def run(a, aiotarantool):
    conn = aiotarantool.connect(a['host'], a['port'], user=a['user'], password=a['password'])
    await conn.connect()
    space, values = a['space_id'], peerlib.values(a['value_size'])
    conc, n = a['concurrency'], a['ops']
    do = {
        'insert': lambda k: conn.insert(space, (k, values[k % 100])),
        'select': lambda k: conn.select(space, k),
        'update': lambda k: conn.update(space, k, [('=', 1, values[(k + 1) % 100])]),
        'delete': lambda k: conn.delete(space, k),
    }
    counter = peerlib.Syscalls()
    out = []
    for name in a['phases']:
        keys = iter(range(n))
        errors = 0
        fn = do[name]
        lat = []

        async def worker():
            nonlocal errors
            now, add = peerlib.now, lat.append
            for k in keys:
                t0 = now()
                try:
                    await fn(k)
                except Exception:
                    errors += 1
                add(now() - t0)
        ph = peerlib.Phase(name, counter)
        ph.start()
        await asyncio.gather(*[worker() for _ in range(conc)])
        out.append(ph.stop(n, errors, lat))
    await conn.close()
    return out


def main():
    a = peerlib.args()
    aiotarantool = load_patched()
    out = asyncio.run(run(a, aiotarantool))
    peerlib.emit(out, client='aiotarantool %s (patched for 3.11, see its adapter)'
                 % aiotarantool.__version__)


if __name__ == '__main__':
    main()
