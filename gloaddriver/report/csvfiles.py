"""``--csv PREFIX``: the result as CSV files, for spreadsheets and the tools that read
Locust's: ``PREFIX_stats.csv`` (a row per phase and per op of a mix),
``PREFIX_history.csv`` (a row per interval of each phase's timeline) and
``PREFIX_failures.csv`` (a row per error kind, with its first message)."""
from __future__ import absolute_import, division, print_function

import csv
import io
import sys

PERCENTILES = (('p50', 'p50'), ('p90', 'p90'), ('p95', 'p95'), ('p99', 'p99'),
               ('p99.9', 'p999'), ('max', 'max'))
STATS = ['phase', 'op', 'attempted', 'ok', 'failed', 'timed_out', 'misses', 'ops_per_sec',
         'ok_per_sec'] + ['%s_us' % n for n, _k in PERCENTILES] + \
    ['mean_us', 'cpu_us_per_op', 'syscalls_per_op']
HISTORY = ['phase', 't', 'seconds', 'attempted', 'ok', 'errors', 'ops_per_sec'] + \
    ['%s_us' % n for n, _k in PERCENTILES] + ['syscalls_per_op']
FAILURES = ['phase', 'op', 'kind', 'count', 'first_message', 'first_raised_at']


def paths(prefix):
    return dict((name, '%s_%s.csv' % (prefix, name)) for name in ('stats', 'history',
                                                                   'failures'))


def _latencies(lat):
    return [lat.get(k) for _n, k in PERCENTILES]


def stats_rows(result):
    for p in result['phases']:
        blocks = [('all' if 'ops' in p else p['name'], p)]
        blocks += sorted(p.get('ops', {}).items())
        for op, b in blocks:
            lat = b['latency_us']
            yield [p['name'], op, b['attempted'], b['ok'], b['failed'], b['timed_out'],
                   b['misses'], b['ops_per_sec'], b.get('ok_per_sec')] + _latencies(lat) + \
                [lat.get('mean'), b.get('cpu_us_per_op') if b is p else None,
                 (p.get('syscalls') or {}).get('per_op') if b is p else None]


def history_rows(result):
    for p in result['phases']:
        for r in p.get('timeline') or ():
            n = r['attempted']
            sys_op = round(r['syscalls'] / n, 4) if r.get('syscalls') is not None and n else None
            yield [p['name'], r['t'], r['seconds'], n, r['ok'], r['errors'],
                   r.get('ops_per_sec')] + _latencies(r['latency_us']) + [sys_op]


def failure_rows(result):
    for p in result['phases']:
        blocks = sorted(p.get('ops', {}).items()) or [(p['name'], p)]
        for op, b in blocks:
            for kind, count in sorted(b['errors'].items()):
                yield [p['name'], op, kind, count, b['error_samples'].get(kind, ''),
                       (b.get('error_origins') or {}).get(kind, '')]


def write(result, prefix):
    """Write the three files; returns their paths."""
    out = paths(prefix)
    for name, header, rows in (('stats', STATS, stats_rows(result)),
                               ('history', HISTORY, history_rows(result)),
                               ('failures', FAILURES, failure_rows(result))):
        _write(out[name], header, rows)
    return out


def _write(path, header, rows):
    if sys.version_info[0] == 2:   # pragma: no cover - Python 2: csv wants bytes
        with open(path, 'wb') as f:
            w = csv.writer(f)
            for row in [header] + list(rows):
                w.writerow([c.encode('utf-8') if isinstance(c, type(u'')) else c for c in row])
        return
    with io.open(path, 'w', newline='', encoding='utf-8') as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
