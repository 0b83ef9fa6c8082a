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
import os
import sys
import time

from gloaddriver import converters, errors
from gloaddriver.measure import flamegraph, run_result
from gloaddriver.report import text

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


def compare(paths, out=None, diff_dir=None):
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
            # ops/s rounded as the run's table rounds it (text.count): one figure, one text.
            out.write(fmt % (name, chr(65 + i), text.count(rate), _n(lat.get('p50')),
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
    flamegraph_moves(results, out, diff_dir)
    return 0


FLAMEGRAPHS = (('flamegraph', 'client'), ('server_flamegraph', 'server'))


def flamegraph_moves(results, out, diff_dir=None):
    """Where each later file's CPU went against the first's, phase by phase and side by
    side: the frames whose share of samples moved most (shares, so runs of any length
    compare), and with ``diff_dir`` flamegraph.pl's differential input per pair."""
    first = dict((p['name'], p) for p in results[0]['phases'])
    for i, r in enumerate(results[1:], 1):
        for p in r['phases']:
            for key, side in FLAMEGRAPHS:
                a, b = (first.get(p['name']) or {}).get(key), p.get(key)
                if not (a and b and a['samples'] and b['samples']):
                    continue
                out.write('%s: %s CPU, A against %s (share of samples, inclusive):\n'
                          % (p['name'], side, chr(65 + i)))
                a, b = flamegraph.comparable(a['stacks']), flamegraph.comparable(b['stacks'])
                for frame, sa, sb in flamegraph.frame_deltas(a, b):
                    out.write('  %+6.1f%%  %5.1f%% -> %5.1f%%  %s\n'
                              % (100 * (sb - sa), 100 * sa, 100 * sb, frame))
                if diff_dir:
                    path = os.path.join(diff_dir, 'diff.%s.%s.%s.folded'
                                        % (side, p['name'], chr(65 + i)))
                    flamegraph.write_differential(a, b, path)
                    out.write('  wrote %s (flamegraph.pl %s > diff.svg)\n' % (path, path))


def differential_page(a, b, path, a_name, out):
    """B's report page at ``path``, its flame graphs drawn against A's (``a_name``)."""
    from gloaddriver.report import dashboard, html
    view = dashboard.view(b, against=a)
    view['against'] = a_name
    html.write_view(view, path)
    out.write('wrote %s: the flame graphs drawn against %s (red: more, blue: less)\n'
              % (path, a_name))


def merge(results):
    """One result from shards that ran together (measure.run_result.merge)."""
    return run_result.merge(results)


# What shards of one run share: the workload each ran its share of.
SHARED = ('backend', 'greenlets', 'phases', 'keys', 'distribution', 'value_size',
          'ops_per_phase', 'duration_per_phase', 'stages', 'workload_file')


def check_shards(results, paths):
    """Refuse (ConfigError, one line) results that are not shards of one run: the same
    workload, --shard I/N indices of one N with none twice, and each phase's windows
    overlapping (shards run at the same time: their rates add up only then)."""
    names = [chr(65 + i) for i in range(len(results))]
    manifests = [r['manifest'] for r in results]
    problems = []
    for key in SHARED:
        values = [json.dumps(m.get(key), sort_keys=True) for m in manifests]
        if len(set(values)) > 1:
            problems.append('%s differs (%s)' % (key, ', '.join(
                '%s: %s' % (n, v) for n, v in zip(names, values))))
    shards = [m.get('shard') for m in manifests]
    if None in shards:
        problems.append('%s ran without --shard I/N' % ', '.join(
            n for n, s in zip(names, shards) if s is None))
    else:
        split = [tuple(int(x) for x in s.split('/')) for s in shards]
        if len(set(n for _i, n in split)) > 1:
            problems.append('the shards are of different counts (%s)' % ', '.join(shards))
        elif len(set(split)) < len(split):
            problems.append('a shard is there twice (%s)' % ', '.join(shards))
    problems.extend(_apart(results, names))
    if problems:
        listed = ', '.join('%s: %s' % (n, p) for n, p in zip(names, paths))
        raise errors.ConfigError('gloaddriver merge: these are not shards of one run: %s '
                                 '(%s). Merge adds up shards that ran the same workload at '
                                 'the same time; compare shows runs side by side'
                                 % ('; '.join(problems), listed))


# Shards of one run start together (--start-at, or their parent's go), but a phase of a
# few milliseconds can still miss the others' by their jitter; runs made one after the
# other are a process's start (imports, connection, setup) apart, longer than this.
TOGETHER_SLACK = 0.25   # s


def _apart(results, names):
    """The phases whose parts' measured windows did not overlap (within TOGETHER_SLACK).
    Shards told one --start-at began together by design: only their first phase is
    judged, since phases bounded by --ops end when each shard's share is done, and a
    shard given less CPU runs its later phases later."""
    out = []
    names_of = sorted(set(p['name'] for r in results for p in r['phases']))
    starts = set(r['manifest'].get('start_at') for r in results)
    if len(starts) == 1 and None not in starts and results[0]['phases']:
        names_of = [results[0]['phases'][0]['name']]
    for name in names_of:
        windows = []
        for n, r in zip(names, results):
            for p in r['phases']:
                if p['name'] == name and p.get('started_unix') is not None:
                    windows.append((n, p['started_unix'], p['started_unix'] + p['seconds']))
        if len(windows) > 1 and \
                max(w[1] for w in windows) > min(w[2] for w in windows) + TOGETHER_SLACK:
            out.append('phase %s did not run at the same time (%s)' % (name, ', '.join(
                '%s %s-%s' % (n, _hms(a), _hms(b)) for n, a, b in windows)))
    return out


def _hms(unix):
    return time.strftime('%H:%M:%S', time.gmtime(unix)) + ('%.1f' % (unix % 1))[1:]


def _n(v):
    return '-' if v is None else '{:,}'.format(int(v))


def _f(v, digits=3):
    return '-' if v is None else '%.*f' % (digits, v)


def main(command, argv):
    from gloaddriver.report import html, output
    if command == 'compare':
        ap = converters.WholeFlagsParser(prog='gloaddriver compare',
                                     description='compare result files side by side')
        ap.add_argument('files', nargs='+')
        ap.add_argument('--flamegraph-diff', metavar='DIR', default=None,
                        help='write DIR/diff.<side>.<phase>.<B>.folded: each stack with its '
                             "samples in A and in B, flamegraph.pl's differential input")
        ap.add_argument('--html', metavar='FILE', default=None,
                        help="the last file's report page, its flame graphs drawn against "
                             "the first's (differential: red, more of the samples; blue, "
                             "fewer)")
        args = ap.parse_args(argv)
        if args.html and len(args.files) < 2:
            raise errors.ConfigError('compare --html draws the last file against the first: '
                                     'give two files or more')
        if args.flamegraph_diff and not os.path.isdir(args.flamegraph_diff):
            try:
                os.makedirs(args.flamegraph_diff)
            except OSError as e:
                raise errors.ConfigError('--flamegraph-diff %s: %s' % (args.flamegraph_diff, e))
        code = compare(args.files, diff_dir=args.flamegraph_diff)
        if args.html:
            differential_page(load(args.files[0]), load(args.files[-1]), args.html,
                              'A (%s)' % args.files[0], sys.stdout)
        return code
    if command == 'html':
        ap = converters.WholeFlagsParser(prog='gloaddriver html',
                                     description='an HTML report from a result file')
        ap.add_argument('result')
        ap.add_argument('out', help='the HTML file to write')
        args = ap.parse_args(argv)
        html.write(load(args.result), args.out)
        return 0
    ap = converters.WholeFlagsParser(prog='gloaddriver merge',
                                 description='merge the results of shards that ran together')
    ap.add_argument('files', nargs='+')
    ap.add_argument('--json', default=None, help='write the merged result here')
    ap.add_argument('--html', default=None, help='write an HTML report of the merged result here')
    ap.add_argument('--csv', default=None, metavar='PREFIX',
                    help='write the merged result as PREFIX_stats/history/failures.csv')
    args = ap.parse_args(argv)
    loaded = [load(p) for p in args.files]
    check_shards(loaded, args.files)
    output.write(merge(loaded), args.json, args.html, csv_prefix=args.csv)
    return 0
