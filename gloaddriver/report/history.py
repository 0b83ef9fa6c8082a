"""``gloaddriver history``: the runs a --store holds, one line each, oldest first (the
newest last, next to the prompt): when it started, its id, label, scenario, ops/s (all
its phases' ops over their seconds), p99 (its highest phase p99), syscalls/op and the
ops that failed or timed out, with its exit code where it was not 0.

``--where NAME=VALUE`` (repeatable) keeps runs with that tag (``label`` and ``commit``
are the run's own), ``--scenario KEY`` one scenario (a key's first characters do),
``--last N`` the newest N (20 unless given; 0 for all). The store is --store, or
$GLOADDRIVER_STORE.
"""
from __future__ import absolute_import, division, print_function

import json
import os
import sys

from gloaddriver import converters, errors
from gloaddriver.measure import store as stores
from gloaddriver.report import text

DEFAULT_LAST = 20


def common_flags(ap):
    """The flags history and trend share: which store, which runs."""
    ap.add_argument('--store', default=None, metavar='sqlite:PATH|postgresql://...',
                    help='the history store (default $%s)' % stores.ENV)
    ap.add_argument('--where', action='append', default=None, metavar='NAME=VALUE',
                    help='only runs with this tag (label=... and commit=... match the '
                         "run's label and git commit); repeatable")
    ap.add_argument('--scenario', default=None, metavar='KEY',
                    help='only runs of this scenario (its key, or the key\'s first '
                         'characters)')


def where(texts):
    out = []
    for t in texts or ():
        name, sep, value = t.partition('=')
        if not sep or not name:
            raise errors.ConfigError('--where takes NAME=VALUE, e.g. --where branch=main; '
                                     'got %r' % t)
        out.append((name, value))
    return out


def open_store(args):
    url = args.store or os.environ.get(stores.ENV)
    if not url:
        raise errors.ConfigError('no history store: give --store sqlite:PATH (or '
                                 'postgresql://...) or set $%s' % stores.ENV)
    return stores.open_store(url)


def line(run):
    """One run's line."""
    when = (run['started'] or '-').replace('T', ' ').rstrip('Z')
    code = run.get('exit_code')
    flags = []
    if run.get('aborted'):
        flags.append('aborted')
    if code not in (None, 0):
        flags.append('exit %d' % code)
    return '%-19s %6s  %-16s %-12s %10s %9s %7s %8s%s' % (
        when, '#%d' % run['id'], (run.get('label') or '-')[:16], run['scenario'],
        text.count(run['ops_per_sec']) if run.get('ops_per_sec') is not None else '-',
        text.count(run['p99_us']) if run.get('p99_us') is not None else '-',
        '%.3g' % run['syscalls_per_op'] if run.get('syscalls_per_op') is not None else '-',
        text.count(run.get('failed') or 0), '  ' + ', '.join(flags) if flags else '')


HEAD = '%-19s %6s  %-16s %-12s %10s %9s %7s %8s' % (
    'started (UTC)', 'id', 'label', 'scenario', 'ops/s', 'p99 us', 'sys/op', 'failed')


def main(argv, out=None):
    out = out or sys.stdout
    ap = converters.WholeFlagsParser(
        prog='gloaddriver history',
        description='list the runs a history store (--store) holds, one line each, '
                    'oldest first: started, id, label, scenario, ops/s, p99, syscalls/op, '
                    'failed ops')
    common_flags(ap)
    ap.add_argument('--last', type=int, default=DEFAULT_LAST, metavar='N',
                    help='the newest N runs (0: all)')
    ap.add_argument('--json', action='store_true',
                    help='one JSON object per run instead of the table (with its tags and '
                         'the flags of its scenario)')
    args = ap.parse_args(argv)
    if args.last < 0:
        raise errors.ConfigError('--last takes 0 (all) or more, got %d' % args.last)
    store = open_store(args)
    try:
        runs = store.runs(where(args.where), args.last or None, args.scenario)
        tags = store.tags([r['id'] for r in runs]) if args.json else {}
    finally:
        store.close()
    if args.json:
        for r in runs:
            out.write(json.dumps(dict(r, tags=tags.get(r['id'], {})), sort_keys=True) + '\n')
        return 0
    out.write(HEAD + '\n')
    for r in runs:
        out.write(line(r) + '\n')
    if not runs:
        errors.say('no stored run matches')
    return 0
