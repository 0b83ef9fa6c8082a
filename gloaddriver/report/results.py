"""Working with JSON results: ``gloaddriver compare`` and ``gloaddriver merge``.

compare: one table of ops/s, p50/p95/p99/p99.9, syscalls/op and requests per send
for each phase across result files, with ratios to the first file, and the
manifest fields that differ between them.

merge: results of shards that ran at the same time (``--shard I/N`` on each
host) into one, by measure.run_result and measure.phase_result. Counts and exact
latency sums add up; latency histograms are decoded and added (HdrHistogram), so
merged percentiles are exact, never averages of percentiles; syscall counts add up
and are divided again. Timelines are matched row by row (the parts started
together and tick at the same period) and added the same way.
"""
from __future__ import absolute_import, division, print_function

import argparse
import io
import json
import sys

from gloaddriver import errors
from gloaddriver.measure import run_result

SKIP_MANIFEST = ('started', 'argv', 'executable', 'hostname')


def load(path):
    try:
        with io.open(path, encoding='utf-8') as f:
            data = json.load(f)
    except (IOError, OSError, ValueError) as e:
        raise errors.ConfigError('cannot read result %s: %s' % (path, e))
    if 'phases' not in data or 'manifest' not in data:
        raise errors.ConfigError('%s is not a gloaddriver result (no phases/manifest)' % path)
    return data


def _flat(d, prefix=''):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, prefix + k + '.'))
        elif k not in SKIP_MANIFEST:
            out[prefix + k] = v
    return out


def manifest_differences(results):
    flats = [_flat(r['manifest']) for r in results]
    keys = sorted(set().union(*flats))
    return [(k, [f.get(k) for f in flats]) for k in keys
            if len(set(json.dumps(f.get(k), sort_keys=True) for f in flats)) > 1]


def compare(paths, out=None):
    out = out or sys.stdout
    results = [load(p) for p in paths]
    names = [p['name'] for p in results[0]['phases']]
    fmt = '%-8s %-3s %12s %8s %8s %8s %9s %8s %8s %9s'
    out.write(fmt % ('phase', '', 'ops/s', 'p50 us', 'p95 us', 'p99 us', 'p99.9 us', 'sys/op',
                     'req/send', 'vs first') + '\n')
    for name in names:
        base = None
        for i, r in enumerate(results):
            p = [x for x in r['phases'] if x['name'] == name]
            if not p:
                out.write(fmt % (name, chr(65 + i), '-', '-', '-', '-', '-', '-', '-', 'missing')
                          + '\n')
                continue
            p = p[0]
            rate = p.get('ops_per_sec') or 0
            base = rate if base is None else base
            lat = p['latency_us']
            out.write(fmt % (name, chr(65 + i), '{:,}'.format(int(rate)), _n(lat.get('p50')),
                             _n(lat.get('p95')), _n(lat.get('p99')), _n(lat.get('p999')),
                             _f(p['syscalls'].get('per_op')),
                             _f(p['batching'].get('requests_per_send'), 1),
                             '%.2fx' % (rate / base) if base else '-') + '\n')
    for i, path in enumerate(paths):
        out.write('%s: %s\n' % (chr(65 + i), path))
    diffs = manifest_differences(results)
    if diffs:
        out.write('manifest differences:\n')
        for k, vals in diffs:
            out.write('  %-34s %s\n' % (k, ' | '.join('%s: %s' % (chr(65 + i), v)
                                                      for i, v in enumerate(vals))))
    return 0


def merge(results):
    """One result from shards that ran together (measure.run_result.merge)."""
    return run_result.merge(results)


def _n(v):
    return '-' if v is None else '{:,}'.format(int(v))


def _f(v, digits=3):
    return '-' if v is None else '%.*f' % (digits, v)


def main(command, argv):
    from gloaddriver.report import html, output
    if command == 'compare':
        ap = argparse.ArgumentParser(prog='gloaddriver compare',
                                     description='compare result files side by side')
        ap.add_argument('files', nargs='+')
        args = ap.parse_args(argv)
        return compare(args.files)
    if command == 'html':
        ap = argparse.ArgumentParser(prog='gloaddriver html',
                                     description='an HTML report from a result file')
        ap.add_argument('result')
        ap.add_argument('out', help='the HTML file to write')
        args = ap.parse_args(argv)
        html.write(load(args.result), args.out)
        return 0
    ap = argparse.ArgumentParser(prog='gloaddriver merge',
                                 description='merge the results of shards that ran together')
    ap.add_argument('files', nargs='+')
    ap.add_argument('--json', default=None, help='write the merged result here')
    ap.add_argument('--html', default=None, help='write an HTML report of the merged result here')
    ap.add_argument('--csv', default=None, metavar='PREFIX',
                    help='write the merged result as PREFIX_stats/history/failures.csv')
    args = ap.parse_args(argv)
    output.write(merge([load(p) for p in args.files]), args.json, args.html,
                 csv_prefix=args.csv)
    return 0
