"""Peer: the hub-driven gevent connector of ``hubconn.py`` (our own ~100-line
prototype, no stats). N greenlets share one connection. Runs on 2.7 and 3.x.
Run by scripts/bench_peers.py; prints one JSON line.
"""
from __future__ import absolute_import, division, print_function

import sys

import gevent

import peerlib
from hubconn import HubConnection


def main():
    a = peerlib.args()
    conn = HubConnection(a['host'], a['port'], a['user'], a['password'])
    space, values = a['space_id'], peerlib.values(a['value_size'])
    conc, n = a['concurrency'], a['ops']
    do = {
        'insert': lambda k: conn.insert(space, [k, values[k % 100]]),
        'select': lambda k: conn.select(space, [k]),
        'update': lambda k: conn.update(space, [k], [[u'=', 1, values[(k + 1) % 100]]]),
        'delete': lambda k: conn.delete(space, [k]),
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
    peerlib.emit(out, client='hub-driven style (scripts/peers/hubconn.py), Python %d.%d'
                 % sys.version_info[:2])


if __name__ == '__main__':
    main()
