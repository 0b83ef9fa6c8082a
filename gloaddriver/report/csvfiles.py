"""``--csv PREFIX``: the result as CSV files, for spreadsheets and the tools that read
Locust's: ``PREFIX_stats.csv`` (a row per phase and per op of a mix),
``PREFIX_history.csv`` (a row per interval of each phase's timeline) and
``PREFIX_failures.csv`` (a row per error kind, with its first message); with
--find-max, ``PREFIX_find_max.csv`` (a row per step of the search)."""
from __future__ import absolute_import, division, print_function

import csv
import io
import sys

from gloaddriver.measure import stats
from gloaddriver.report import find_max
from gloaddriver.report.text import round_name


def _percentiles(result):
    """(column name, latency key) of the run's --percentiles (today's set for files
    without them), then max."""
    pcts = result['manifest'].get('percentiles') or stats.DEFAULT_PERCENTILES
    return [(stats.percentile_label(p), stats.percentile_key(p)) for p in pcts] + \
        [('max', 'max')]


def _stats_header(result):
    return ['phase', 'op', 'attempted', 'ok', 'failed', 'timed_out', 'misses', 'ops_per_sec',
            'ok_per_sec'] + ['%s_us' % n for n, _k in _percentiles(result)] + \
        ['mean_us', 'cpu_us_per_op', 'syscalls_per_op']


def _history_header(result):
    return ['phase', 't', 'seconds', 'attempted', 'ok', 'errors', 'ops_per_sec'] + \
        ['%s_us' % n for n, _k in _percentiles(result)] + ['syscalls_per_op']


FAILURES = ['phase', 'op', 'kind', 'count', 'first_message', 'first_raised_at']


def paths(prefix):
    return dict((name, '%s_%s.csv' % (prefix, name)) for name in ('stats', 'history',
                                                                   'failures'))


def stats_rows(result):
    keys = [k for _n, k in _percentiles(result)]
    for p in result['phases']:
        blocks = [('all' if 'ops' in p else p['name'], p)]
        blocks += sorted(p.get('ops', {}).items())
        for op, b in blocks:
            lat = b['latency_us']
            yield [round_name(p), op, b['attempted'], b['ok'], b['failed'], b['timed_out'],
                   b['misses'], b['ops_per_sec'], b.get('ok_per_sec')] + \
                [lat.get(k) for k in keys] + \
                [lat.get('mean'), b.get('cpu_us_per_op') if b is p else None,
                 (p.get('syscalls') or {}).get('per_op') if b is p else None]


def history_rows(result):
    keys = [k for _n, k in _percentiles(result)]
    for p in result['phases']:
        for r in p.get('timeline') or ():
            n = r['attempted']
            sys_op = round(r['syscalls'] / n, 4) if r.get('syscalls') is not None and n else None
            yield [round_name(p), r['t'], r['seconds'], n, r['ok'], r['errors'],
                   r.get('ops_per_sec')] + [r['latency_us'].get(k) for k in keys] + [sys_op]


def failure_rows(result):
    for p in result['phases']:
        blocks = sorted(p.get('ops', {}).items()) or [(p['name'], p)]
        for op, b in blocks:
            for kind, count in sorted(b['errors'].items()):
                yield [round_name(p), op, kind, count, b['error_samples'].get(kind, ''),
                       (b.get('error_origins') or {}).get(kind, '')]


def write(result, prefix):
    """Write the three files; returns their paths."""
    out = paths(prefix)
    for name, header, rows in (('stats', _stats_header(result), stats_rows(result)),
                               ('history', _history_header(result), history_rows(result)),
                               ('failures', FAILURES, failure_rows(result))):
        _write(out[name], header, rows)
    if result.get('find_max'):
        out['find_max'] = '%s_find_max.csv' % prefix
        _write(out['find_max'], find_max.CSV_HEADER, find_max.csv_rows(result))
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
