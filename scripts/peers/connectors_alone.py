"""gloaddriver's buffered connection against the hub-driven style's (hubconn.py), each
driven by the same plain loop in this one process: no runner, no latency samples, no
ticker. What the connectors cost per op, apart from the rest of the driver.

    .venv/py311/bin/python scripts/peers/connectors_alone.py [--greenlets 100]
        [--ops 50000] [--rounds 3]

Starts a private Tarantool; rounds interleaved; prints per round ops/s, client CPU
per op and network syscalls per op for insert and select. Runs on 2.7 and 3.x.
"""
from __future__ import absolute_import, division, print_function

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import gevent  # noqa: E402

import peerlib  # noqa: E402
from gloaddriver.backends.tarantool.buffered import make_ops  # noqa: E402
from gloaddriver.backends.tarantool.connection import Connection  # noqa: E402
from gloaddriver.backends.tarantool.server import TarantoolServer  # noqa: E402
from hubconn import HubConnection  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--greenlets', type=int, default=100)
    ap.add_argument('--ops', type=int, default=50000)
    ap.add_argument('--rounds', type=int, default=3)
    args = ap.parse_args()
    values = peerlib.values(1536)
    out = {}
    with TarantoolServer() as s:
        admin = Connection(s.host, s.port, s.user, s.password).connect()
        n = 0
        for _r in range(args.rounds):
            for kind in ('gloaddriver', 'hub-driven style'):
                n += 1
                sid = admin.eval(u"""local s = box.schema.space.create(..., {format = {
                    {'id', 'unsigned'}, {'value', 'string'}}}) s:create_index('primary')
                    return s.id""", 'alone_%d' % n)[0]
                if kind == 'gloaddriver':
                    conn = Connection(s.host, s.port, s.user, s.password).connect()
                    do = make_ops(conn, sid, values)
                else:
                    conn = HubConnection(s.host, s.port, s.user, s.password)
                    do = {'insert': lambda k, c=conn, sid=sid: c.insert(sid, [k, values[k % 100]]),
                          'select': lambda k, c=conn, sid=sid: c.select(sid, [k])}
                for phase in ('insert', 'select'):
                    fn = do[phase]
                    keys = iter(range(args.ops))

                    def worker():
                        for k in keys:
                            fn(k)
                    ph = peerlib.Phase(phase, peerlib.Syscalls())
                    ph.start()
                    gevent.joinall([gevent.spawn(worker) for _ in range(args.greenlets)])
                    out.setdefault((kind, phase), []).append(ph.stop(args.ops))
                if kind == 'gloaddriver':
                    conn.close()
        admin.close()
    print('connectors alone, %d greenlets, %d ops per phase, %d rounds; per round: ops/s, '
          'CPU us/op, network syscalls/op' % (args.greenlets, args.ops, args.rounds))
    for (kind, phase), runs in sorted(out.items()):
        print('%-18s %-7s %s' % (kind, phase, '  '.join(
            '%s/%.2f/%s' % ('{:,}'.format(int(p['ops_per_sec'])), p['cpu_us_per_op'],
                            '-' if p['network_per_op'] is None else '%.3f' % p['network_per_op'])
            for p in runs)))


if __name__ == '__main__':
    main()
