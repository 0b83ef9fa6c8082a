"""``--fail-if`` parsed: its text to conditions, each carrying all that judging it
needs (``report/thresholds.py`` judges them on the result), or ConfigError naming the
condition that is wrong, before the first op.
"""
from __future__ import absolute_import, division, print_function

import re

from gloaddriver import errors

# The latency metrics and the key of a result's latency block each reads.
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
        # limit: in us for a latency; unit: what the verdict reports it in, and scale:
        # how many of the limit's units make one of those; latency_key: the key of the
        # latency block a latency metric reads.
        out.append({'text': part.strip(), 'phase': phase, 'op': op, 'metric': metric,
                    'cmp': cmp_, 'limit': value, 'percent': unit == '%',
                    'unit': unit if metric in _LATENCY else '%' if unit == '%' else '',
                    'scale': _UNITS[unit] if metric in _LATENCY else 1.0,
                    'latency_key': _LATENCY.get(metric)})
    if not out:
        raise errors.ConfigError('--fail-if needs at least one condition, e.g. p99<5ms')
    return out
