"""The same run on two checkouts of gloaddriver (before and after a change), rounds
interleaved: did the change cost the hot path anything?

Run by ``scripts/bench revisions --a DIR --b DIR [options] -- DRIVER ARGS``. Each
checkout runs with its own interpreter (DIR/.venv/py311/bin/python unless --python-a,
--python-b) and its own code (PYTHONPATH=DIR, cwd DIR). Rounds go A B, B A, A B, ... so
the machine's load of the moment lands on both alike. Per phase it prints the medians of
ops/s, client CPU per op, p50, p99, p99.9 and max, and B's ratio to A of the same round (median and
range); JSON goes to bench-results/revisions-*.json. Without DRIVER ARGS: a private
Tarantool, 100 greenlets, insert and select of 200,000 ops.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import sys

from benchlib import driver, median, out_path

DEFAULT_ARGS = ['--spawn', '--greenlets', '100', '--phases', 'insert,select', '--ops', '200000']


def run_one(root, python, args):
    """One driver run from checkout ``root``: its phases by name, or None if it failed."""
    result = driver(python, args, None, root=root)
    return None if result is None else dict((ph['name'], ph) for ph in result['phases'])


FIGURES = ('ops_per_sec', 'cpu_us_per_op', 'p50_us', 'p99_us', 'p999_us', 'max_us')


def figures(phase):
    lat = phase.get('latency_us') or {}
    return {'ops_per_sec': phase['ops_per_sec'], 'cpu_us_per_op': phase.get('cpu_us_per_op'),
            'p50_us': lat.get('p50'), 'p99_us': lat.get('p99'), 'p999_us': lat.get('p999'),
            'max_us': lat.get('max')}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--a', required=True, help='checkout A (before)')
    ap.add_argument('--b', required=True, help='checkout B (after)')
    ap.add_argument('--python-a', help='interpreter for A (default A/.venv/py311/bin/python)')
    ap.add_argument('--python-b', help='interpreter for B (default B/.venv/py311/bin/python)')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--out', default=None, help='JSON file (default bench-results/...)')
    ap.add_argument('driver_args', nargs='*', help='after --: the driver\'s arguments')
    opts = ap.parse_args()
    sides = []
    for label, root, python in (('A', opts.a, opts.python_a), ('B', opts.b, opts.python_b)):
        root = os.path.abspath(root)
        python = python or os.path.join(root, '.venv', 'py311', 'bin', 'python')
        if not os.path.isdir(os.path.join(root, 'gloaddriver')) or not os.path.exists(python):
            ap.error('%s: %s is not a checkout with %s' % (label, root, python))
        sides.append((label, root, python))
    args = opts.driver_args or DEFAULT_ARGS
    rounds = []
    for r in range(opts.rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        got = {}
        for label, root, python in order:
            sys.stderr.write('round %d of %d: %s\n' % (r + 1, opts.rounds, label))
            got[label] = run_one(root, python, args)
        if got['A'] is not None and got['B'] is not None:
            rounds.append(dict((label, dict((n, figures(p)) for n, p in got[label].items()))
                               for label in ('A', 'B')))
    if not rounds:
        sys.exit('no round ran on both checkouts')
    print('A: %s\nB: %s\nargs: %s\nrounds: %d (interleaved)\n'
          % (sides[0][1], sides[1][1], ' '.join(args), len(rounds)))
    fmt = '%-8s %-12s %12s %12s  %-22s'
    print(fmt % ('phase', 'figure', 'A median', 'B median', 'B/A per round: median (range)'))
    for name in rounds[0]['A']:
        for key in FIGURES:
            xs = [rd['A'][name][key] for rd in rounds]
            ys = [rd['B'][name][key] for rd in rounds]
            if None in xs or None in ys:
                continue
            ratios = [y / x for x, y in zip(xs, ys) if x]
            print(fmt % (name, key, '%.1f' % median(xs), '%.1f' % median(ys),
                         '%.3f (%.3f-%.3f)' % (median(ratios), min(ratios), max(ratios))))
    path = out_path(opts.out, 'revisions')
    with open(path, 'w') as f:
        json.dump({'a': sides[0][1], 'b': sides[1][1], 'args': args, 'rounds': rounds}, f,
                  indent=1)
    print('\nJSON: %s' % path)


if __name__ == '__main__':
    main()
