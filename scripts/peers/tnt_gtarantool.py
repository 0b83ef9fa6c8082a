"""Peer: gtarantool 1.0.12 (gevent, Python 2.7, on tarantool-python 0.5.4), unpatched.

gtarantool's own API: ``conn.insert/select/update/delete`` from N
greenlets sharing one connection. Run by scripts/bench_peers.py; prints one JSON line.
"""
from __future__ import absolute_import, division, print_function

from gevent import monkey
monkey.patch_all()

import gevent  # noqa: E402
import gtarantool  # noqa: E402

import peerlib  # noqa: E402


def main():
    a = peerlib.args()
    conn = gtarantool.connect(a['host'], a['port'], user=a['user'], password=a['password'])
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
        errors = [0]
        fn = do[name]
        lat = []

        def worker():
            now, add = peerlib.now, lat.append
            for k in keys:
                t0 = now()
                try:
                    fn(k)
                except Exception:
                    errors[0] += 1
                add(now() - t0)
        ph = peerlib.Phase(name, counter)
        ph.start()
        gevent.joinall([gevent.spawn(worker) for _ in range(conc)])
        out.append(ph.stop(n, errors[0], lat))
    peerlib.emit(out, client='gtarantool %s' % gtarantool.__version__)


if __name__ == '__main__':
    main()
