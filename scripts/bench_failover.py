"""A leader killed and a replica promoted mid-run, on private replica sets: what each
replication mode loses, on both backends, rounds interleaved.

Run by ``scripts/bench failover``. Each round runs, for each backend and mode,

    gloaddriver --spawn --replicas 2 --replication MODE --fault kill-leader@3s,promote@4s
                --verify --duration SECONDS [--phases ...]

and reads its result: the exit code, whether ops succeeded after the promotion, the
failover window (the outage that moved the writes to another member), the ops that
failed or timed out in it by kind, reconnects, and what --verify read back from the
new leader (acknowledged writes lost, failed writes that landed). Prints one table,
then per backend and mode the counts over the rounds; writes JSON.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import sys

from benchlib import ROOT, driver, out_path

sys.path.insert(0, ROOT)

from gloaddriver.report.verdict import judge  # noqa: E402

BACKENDS = {'tarantool': ['--backend', 'tarantool'],
            'postgres': ['--backend', 'postgres', '--init']}
MODES = {'tarantool': ('sync', 'async'), 'postgres': ('sync', 'remote_apply', 'async')}


def one(python, backend, mode, args):
    argv = BACKENDS[backend] + [
        '--spawn', '--replicas', '2', '--replication', mode, '--wal-mode', args.wal_mode,
        '--fault', args.fault, '--verify', '--duration', str(args.seconds),
        '--greenlets', str(args.greenlets)] + (['--phases', args.phases] if args.phases else [])
    res, err = driver(python, argv, None, stderr_lines=True)
    if res is None:
        return {'backend': backend, 'mode': mode, 'error': (err or ['no result'])[-1]}
    first = res['phases'][0]
    moved = [o for p in res['phases'] for o in p['outages']
             if o.get('member_after') not in (None, o.get('member_before'))]
    promote = [f for f in res.get('faults') or () if f['action'] == 'promote']
    after = promote[0]['t'] + promote[0]['took'] + 0.5 if promote else None
    went_on = after is not None and sum(r['ok'] for r in first['timeline']
                                        if r['t'] - r['seconds'] >= after) > 0
    v = res.get('verify') or {}
    o = moved[0] if moved else {}
    return {'backend': backend, 'mode': mode, 'exit': judge(res)[0],
            'aborted': res.get('aborted'), 'went_on': went_on,
            'window': o.get('duration'), 'failed': o.get('failed'),
            'timed_out': o.get('timed_out'), 'errors': o.get('errors'),
            'reconnects': o.get('reconnects'), 'from': o.get('member_before'),
            'to': o.get('member_after'), 'checked': v.get('checked'),
            'lost': v.get('acknowledged_lost'), 'applied': v.get('unacknowledged_applied'),
            'verify_error': v.get('error'), 'ops_per_sec': first['ops_per_sec'],
            'promote_error': promote[0].get('error') if promote else 'no promote'}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--python', default=sys.executable)
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--seconds', type=float, default=10)
    ap.add_argument('--greenlets', type=int, default=10)
    ap.add_argument('--fault', default='kill-leader@3s,promote@4s')
    ap.add_argument('--wal-mode', default='write')
    ap.add_argument('--phases', default=None, help='default: the driver\'s (insert, select, '
                                                   'update, delete)')
    ap.add_argument('--backends', default='tarantool,postgres')
    ap.add_argument('--modes', default=None, help='default: every mode of each backend')
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    backends = [b for b in args.backends.split(',') if b]
    rows = []
    for r in range(args.rounds):
        for backend in backends:
            for mode in (args.modes.split(',') if args.modes else MODES[backend]):
                sys.stderr.write('round %d: %s %s\n' % (r + 1, backend, mode))
                row = one(args.python, backend, mode, args)
                row['round'] = r + 1
                rows.append(row)
    fmt = '%5s %-9s %-12s %4s %7s %8s %8s %8s %10s %8s %8s  %s'
    print('kill the leader and promote a replica (--fault %s), %d greenlets, --wal-mode %s, '
          '%g s a phase' % (args.fault, args.greenlets, args.wal_mode, args.seconds))
    print(fmt % ('round', 'backend', 'replication', 'exit', 'went on', 'window s', 'failed',
                 'timed out', 'ack lost', 'applied', 'checked', 'errors in the window'))
    for row in rows:
        if 'error' in row:
            print('%5d %-9s %-12s  FAILED: %s' % (row['round'], row['backend'], row['mode'],
                                                  row['error']))
            continue
        print(fmt % (row['round'], row['backend'], row['mode'], row['exit'],
                     'yes' if row['went_on'] else 'NO', row['window'], row['failed'],
                     row['timed_out'], row['lost'], row['applied'], row['checked'],
                     json.dumps(row['errors'], sort_keys=True)))
    print()
    print('%-9s %-12s %6s %12s %16s %14s' % ('backend', 'replication', 'runs', 'went on',
                                            'runs losing acks', 'acks lost'))
    for backend in backends:
        for mode in (args.modes.split(',') if args.modes else MODES[backend]):
            mine = [x for x in rows if x['backend'] == backend and x['mode'] == mode]
            ok = [x for x in mine if 'error' not in x]
            print('%-9s %-12s %6d %12s %16d %14s' % (
                backend, mode, len(mine), '%d of %d' % (sum(1 for x in ok if x['went_on']),
                                                        len(mine)),
                sum(1 for x in ok if x['lost']), ','.join(str(x['lost']) for x in ok)))
    out = out_path(args.out, 'failover')
    with open(out, 'w') as f:
        json.dump({'args': vars(args), 'rows': rows}, f, indent=1)
    print('\nJSON: %s' % out)


if __name__ == '__main__':
    main()
