"""``--fail-if``: pass/fail thresholds on the result, so a CI job can gate on a load run.

``--fail-if 'p99<5ms,p99.9<20ms,errors<0.1%,ops_per_sec>50000'``: each condition must
hold in every phase; ``insert:p99<5ms`` judges one phase, ``mix.select:p99<2ms`` one
op of a mix. Metrics:

==============================  ==================================================
``p50 p90 p95 p99 p99.9``       latency (from the intended start under --rate);
``max mean``                    units ``us``, ``ms``, ``s``; a bare number is ms
                                (as in k6: ``p95<2`` is 2 ms), and the verdict
                                gives the value in the condition's unit
``errors``                      failed + timed out: a count, or ``%`` of attempted
``misses``                      ops that found no row: a count, or ``%``
``ops_per_sec``                 attempted per second (``ok_per_sec`` as well)
``syscalls_per_op``             all syscalls per op (perf_event or connector counts)
==============================  ==================================================

The verdicts go into the result (``thresholds``) and the report; exit code 4 when
one fails. A run with --fail-if is judged by its thresholds alone: failed ops do not
make exit code 1 by themselves (write ``errors<...`` to gate on them).
"""
from __future__ import absolute_import, division, print_function

import operator
import re

from gloaddriver import errors

_OPS = {'<': operator.lt, '<=': operator.le, '>': operator.gt, '>=': operator.ge}
_LATENCY = {'p50': 'p50', 'p90': 'p90', 'p95': 'p95', 'p99': 'p99', 'p99.9': 'p999', 'p999': 'p999',
            'max': 'max', 'mean': 'mean'}
_UNITS = {'us': 1.0, 'ms': 1000.0, 's': 1000000.0}
_COND = re.compile(r'^\s*(?:([A-Za-z0-9_:-]+?)(?:\.([A-Za-z0-9_-]+))?:)?\s*'
                   r'([a-z_]+[0-9.]*)\s*(<=|>=|<|>)\s*([0-9.]+)\s*(us|ms|s|%)?\s*$')


def parse(text):
    """Conditions of --fail-if as dicts; ConfigError naming the one that is wrong."""
    out = []
    for part in [p for p in text.split(',') if p.strip()]:
        m = _COND.match(part)
        if not m:
            raise errors.ConfigError('--fail-if %r: write METRIC<VALUE, e.g. p99<5ms, '
                                     'errors<0.1%%, ops_per_sec>50000, insert:p99<5ms' % part)
        phase, op, metric, cmp_, value, unit = m.groups()
        try:
            value = float(value)
        except ValueError:
            raise errors.ConfigError('--fail-if %r: %r is not a number' % (part, value))
        if metric in _LATENCY:
            if unit == '%':
                raise errors.ConfigError('--fail-if %r: a latency takes us, ms or s' % part)
            unit = unit or 'ms'   # a bare latency is in milliseconds, as in k6
            value *= _UNITS[unit]
        elif metric in ('errors', 'misses'):
            if unit not in (None, '%'):
                raise errors.ConfigError('--fail-if %r: %s is a count or a %%' % (part, metric))
        elif metric in ('ops_per_sec', 'ok_per_sec', 'syscalls_per_op'):
            if unit is not None:
                raise errors.ConfigError('--fail-if %r: %s takes a plain number'
                                         % (part, metric))
        else:
            raise errors.ConfigError('--fail-if %r: unknown metric %r; use p50, p90, p95, p99, '
                                     'p99.9, max, mean, errors, misses, ops_per_sec, '
                                     'ok_per_sec, syscalls_per_op' % (part, metric))
        # limit: in us for a latency; unit: what the verdict reports it in
        out.append({'text': part.strip(), 'phase': phase, 'op': op, 'metric': metric,
                    'cmp': cmp_, 'limit': value, 'percent': unit == '%',
                    'unit': unit if metric in _LATENCY else '%' if unit == '%' else ''})
    if not out:
        raise errors.ConfigError('--fail-if needs at least one condition, e.g. p99<5ms')
    return out


def _measure(block, cond):
    metric = cond['metric']
    if metric in _LATENCY:
        return block['latency_us'].get(_LATENCY[metric])
    if metric in ('errors', 'misses'):
        n = block['failed'] + block['timed_out'] if metric == 'errors' else block['misses']
        if cond['percent']:
            return 100.0 * n / block['attempted'] if block['attempted'] else 0.0
        return n
    if metric == 'syscalls_per_op':
        return (block.get('syscalls') or {}).get('per_op')
    return block.get(metric)


def evaluate(conditions, result):
    """One verdict per condition and phase (or op) it judges."""
    verdicts = []
    for cond in conditions:
        blocks = []
        for p in result['phases']:
            if cond['phase'] is not None and p['name'] != cond['phase']:
                continue
            if cond['op'] is not None:
                sub = p.get('ops', {}).get(cond['op'])
                if sub is not None:
                    blocks.append(('%s.%s' % (p['name'], cond['op']), sub))
            else:
                blocks.append((p['name'], p))
        if not blocks:
            verdicts.append({'condition': cond['text'], 'phase': None, 'value': None,
                             'held': False, 'why': 'no phase or op of that name ran'})
        for name, block in blocks:
            value = _measure(block, cond)
            held = value is not None and _OPS[cond['cmp']](value, cond['limit'])
            # Reported in the condition's own unit: p95<2 is judged, and shown, in ms.
            scale = _UNITS.get(cond.get('unit'), 1.0)
            verdicts.append({'condition': cond['text'], 'phase': name,
                             'value': value / scale if value is not None else None,
                             'limit': cond['limit'] / scale, 'held': held,
                             'unit': cond.get('unit', ''),
                             'why': '' if value is not None else 'not measured in this run'})
    return verdicts


def lines(verdicts):
    """The report's lines: one per condition and phase."""
    out = []
    for v in verdicts:
        value = '-' if v['value'] is None else (
            '{:,}'.format(int(v['value'])) if v['value'] >= 100 else '%.3g' % v['value'])
        out.append('threshold %-22s %-7s %s%s' % (
            v['condition'], 'held' if v['held'] else 'FAILED',
            '%s: %s%s' % (v['phase'], value, ' ' + v['unit'] if v.get('unit') else '')
            if v['phase'] else '', ' (%s)' % v['why'] if v['why'] else ''))
    return out
