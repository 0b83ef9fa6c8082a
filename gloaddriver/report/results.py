"""Working with JSON results: ``gloaddriver compare`` and ``gloaddriver merge``.

compare: one table of ops/s, p50/p95/p99/p99.9, syscalls/op and requests per send
for each phase across result files, with ratios to the first file, and the
manifest fields that differ between them.

merge: results of shards that ran at the same time (``--shard I/N`` on each
host) into one. Counts add up; latency histograms are decoded and added
(HdrHistogram), so merged percentiles are exact, never averages of
percentiles; syscall counts add up and are divided again. Timelines are
matched row by row (the parts started together and tick at the same period)
and added the same way.
"""
from __future__ import absolute_import, division, print_function

import argparse
import io
import json
import sys

from gloaddriver import errors
from gloaddriver.measure import client_bound, outages
from gloaddriver.measure import phase as shape
from gloaddriver.measure import stats, syscalls, timeline

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
    """One result from shards that ran together."""
    by_name = {}
    order = []
    for r in results:
        for p in r['phases']:
            if p['name'] not in by_name:
                by_name[p['name']] = []
                order.append(p['name'])
            by_name[p['name']].append(p)
    phases = [_merge_phase(name, by_name[name]) for name in order]
    out = {'manifest': dict(results[0]['manifest'], merged_from=len(results),
                            shards=[r['manifest'].get('shard') for r in results]),
           'phases': phases, 'aborted': [r.get('aborted') for r in results if r.get('aborted')]
           or None, 'parts': [r['manifest'] for r in results]}
    out['warnings'] = client_bound.collect(phases)
    verified = [r['verify'] for r in results if r.get('verify')]
    if verified:
        out['verify'] = _merge_verify(verified)
    return out


def _merge_verify(parts):
    """Each part read back its own keys: the counts add up."""
    out = {'examples': {}, 'notes': ['each process read back the keys it wrote']}
    for v in parts:
        for k, n in v.items():
            if isinstance(n, (int, float)) and not isinstance(n, bool):
                out[k] = out.get(k, 0) + n
        for k, keys in v.get('examples', {}).items():
            out['examples'][k] = (out['examples'].get(k, []) + keys)[:5]
    errs = [v['error'] for v in parts if v.get('error')]
    if errs:
        out['error'] = errs[0]
    return out


def _merge_counts(parts):
    """Counts, rates and latencies of one phase (or one op of a mix) over the parts."""
    hist = stats.new_histogram()
    for p in parts:
        hist.add(stats.decode_histogram(p['histogram']))
    sum_us = sum((p['latency_us'].get('mean') or 0) * p['ok'] for p in parts)
    errors = stats.merge_counts(p['errors'] for p in parts)
    timed_out = errors.pop('timeout', 0)
    res = shape.counts(
        sum(p['attempted'] for p in parts), sum(p['ok'] for p in parts), errors, timed_out,
        dict((k, v) for p in parts for k, v in p['error_samples'].items()),
        sum(p['misses'] for p in parts), max(p['seconds'] for p in parts), hist, sum_us,
        sum(int(p.get('checksum') or '0', 16) for p in parts),
        dict((k, v) for p in parts for k, v in (p.get('error_origins') or {}).items()))
    # Parts run side by side: their rates add up.
    res['ops_per_sec'] = round(sum(p['ops_per_sec'] or 0 for p in parts), 1)
    res['ok_per_sec'] = round(sum(p.get('ok_per_sec') or 0 for p in parts), 1)
    return res


def _merge_phase(name, parts):
    total = _merge_counts(parts)
    counts = stats.merge_counts((p['syscalls'].get('counts') or {}) for p in parts)
    block = syscalls.per_op(counts, total['attempted']) if counts else None
    res = dict(total, name=name,
               syscalls=dict(block or {}, source=parts[0]['syscalls'].get('source'),
                             counts=counts) if block else parts[0]['syscalls'],
               batching=_weighted_batching(parts))
    if any('ops' in p for p in parts):
        names = sorted(set(k for p in parts for k in p.get('ops', {})))
        res['ops'] = {}
        for k in names:
            subs = [p['ops'][k] for p in parts if k in p.get('ops', {})]
            res['ops'][k] = _merge_counts(subs)
            if all(s.get('service_histogram') for s in subs):
                res['ops'][k].update(_merge_service(subs))
    if all(p.get('rate') for p in parts):
        res.update(_merge_open_loop(parts, total['seconds']))
    if all(p.get('timeline') for p in parts):
        res['timeline'] = timeline.merge_concurrent([p['timeline'] for p in parts])
    if any('outages' in p for p in parts):
        res['outages'] = outages.merge_concurrent([p.get('outages') or [] for p in parts])
    # One server seen by every part: any part's samples are the server's.
    metrics = [p['server_metrics'] for p in parts if p.get('server_metrics')]
    if metrics:
        res['server_metrics'] = metrics[0]
    # Each part ran in a process of its own: a part's warning is that process's.
    res['warnings'] = [w for p in parts for w in (p.get('warnings') or ())]
    loads = [p['client'] for p in parts if (p.get('client') or {}).get('busy') is not None]
    if loads:   # the busiest process: the one whose figures are most its own
        res['client'] = max(loads, key=lambda c: c['busy'])
    return res


def _merge_service(parts):
    """Service time (open loop) merges like latency: from the summed histograms."""
    service = stats.new_histogram()
    for p in parts:
        service.add(stats.decode_histogram(p['service_histogram']))
    sum_us = sum((p['service_time_us'].get('mean') or 0) * p['ok'] for p in parts)
    return {'service_time_us': stats.latency_summary(service, sum_us),
            'service_histogram': shape.text(service.encode())}


def _merge_open_loop(parts, seconds):
    """--rate parts: the schedules add up; service time merges like latency."""
    first = parts[0]['rate']
    attempted = sum(p['attempted'] for p in parts)
    rate = dict(first, target=sum(p['rate']['target'] for p in parts),
                achieved=round(attempted / seconds, 1) if seconds else None)
    for k in ('late', 'dropped', 'scheduled'):
        rate[k] = sum(p['rate'][k] for p in parts)
    return dict(_merge_service(parts), rate=rate)


def _weighted_batching(parts):
    att = sum(p['attempted'] for p in parts) or 1
    out = {'source': parts[0]['batching'].get('source')}
    for k in ('requests_per_send', 'responses_per_recv'):
        vals = [(p['batching'].get(k), p['attempted']) for p in parts]
        out[k] = round(sum(v * a for v, a in vals if v) / att, 2) if all(v for v, _a in vals) else None
    return out


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
