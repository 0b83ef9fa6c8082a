"""``--fail-if`` parsed: its text to conditions, each carrying all that judging it
needs (``report/thresholds.py`` judges them on the result), or ConfigError naming the
condition that is wrong, before the first op.
"""
from __future__ import absolute_import, division, print_function

import re

from gloaddriver import errors
from gloaddriver.measure import stats

# The latency metrics and the key of a result's latency block each reads.
_LATENCY = {'p50': 'p50', 'p90': 'p90', 'p95': 'p95', 'p99': 'p99', 'p99.9': 'p999', 'p999': 'p999',
            'max': 'max', 'mean': 'mean'}
_UNITS = {'us': 1.0, 'ms': 1000.0, 's': 1000000.0}
_COND = re.compile(r'^\s*(?:([A-Za-z0-9_:-]+?)(?:\.([A-Za-z0-9_-]+))?:)?\s*'
                   r'([a-z_]+[0-9.]*)\s*(<=|>=|<|>)\s*([+-]?[0-9.]+)\s*(us|ms|s|%)?\s*(@abort)?\s*$')
# The metrics a condition may judge relative to --baseline (p99<+10%: a change in %).
_RELATIVE = ('ops_per_sec', 'ok_per_sec', 'syscalls_per_op')
# What a sliding window of timeline rows holds, so what an @abort condition may judge.
_WINDOWED = ('errors', 'ops_per_sec', 'ok_per_sec', 'max')


def _percentile(metric, percentiles):
    """The latency block's key of ``pNN.N`` when the run measures that percentile (today's
    set and --percentiles), else None."""
    m = re.match(r'^p([0-9]+(?:\.[0-9]+)?)$', metric)
    if not m:
        return None
    pct = float(m.group(1))
    if pct not in set(stats.DEFAULT_PERCENTILES) | set(percentiles or ()):
        return None
    return stats.percentile_key(pct)


def parse(text, percentiles=None):
    """Conditions of --fail-if as dicts; ConfigError naming the one that is wrong.
    ``percentiles``: those --percentiles adds, which a condition may judge too."""
    out = []
    for part in [p for p in text.split(',') if p.strip()]:
        m = _COND.match(part)
        if not m:
            raise errors.ConfigError('--fail-if %r: write METRIC<VALUE, e.g. p99<5ms, '
                                     'errors<0.1%%, ops_per_sec>50000, insert:p99<5ms, '
                                     'p99<50ms@abort' % part)
        phase, op, metric, cmp_, value, unit, abort = m.groups()
        if value[:1] in '+-':
            out.append(_relative(part, phase, op, metric, cmp_, value, unit, abort,
                                 percentiles))
            continue
        try:
            value = float(value)
        except ValueError:
            raise errors.ConfigError('--fail-if %r: %r is not a number' % (part, value))
        latency_key = _LATENCY.get(metric) or _percentile(metric, percentiles)
        if latency_key:
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
        elif re.match(r'^p[0-9]+(\.[0-9]+)?$', metric):
            raise errors.ConfigError('--fail-if %r: %s is not measured; add %s to --percentiles'
                                     % (part, metric, metric[1:]))
        else:
            raise errors.ConfigError('--fail-if %r: unknown metric %r; use p50, p90, p95, p99, '
                                     'p99.9 (or a percentile of --percentiles), max, mean, '
                                     'errors, misses, ops_per_sec, ok_per_sec, syscalls_per_op'
                                     % (part, metric))
        # limit: in us for a latency; unit: what the verdict reports it in, and scale:
        # how many of the limit's units make one of those; latency_key: the key of the
        # latency block a latency metric reads.
        out.append({'text': part.strip(), 'phase': phase, 'op': op, 'metric': metric,
                    'cmp': cmp_, 'limit': value, 'percent': unit == '%',
                    'unit': unit if latency_key else '%' if unit == '%' else '',
                    'scale': _UNITS[unit] if latency_key else 1.0,
                    'latency_key': latency_key, 'abort': bool(abort)})
        if abort and not (metric in _WINDOWED or (latency_key and metric != 'mean')):
            raise errors.ConfigError('--fail-if %r: @abort judges a sliding window of the '
                                     'timeline, which has no %s; mark a latency percentile, '
                                     'max, errors, ops_per_sec or ok_per_sec' % (part, metric))
    if not out:
        raise errors.ConfigError('--fail-if needs at least one condition, e.g. p99<5ms')
    for cond in out:
        if not cond.get('relative'):
            _check_value(cond)
    return out


def _relative(part, phase, op, metric, cmp_, value, unit, abort, percentiles):
    """A condition on the change from --baseline, in %: ops_per_sec>-5% (at most 5 %
    fewer), p99<+10% (at most 10 % higher); its limit is that change in %."""
    latency_key = _LATENCY.get(metric) or _percentile(metric, percentiles)
    if not (latency_key or metric in _RELATIVE):
        raise errors.ConfigError('--fail-if %r: a change from the baseline is judged on a '
                                 'latency, ops_per_sec, ok_per_sec or syscalls_per_op' % part)
    if unit != '%':
        raise errors.ConfigError('--fail-if %r: a signed value is a change from the '
                                 '--baseline, written in %%, e.g. ops_per_sec>-5%%, p99<+10%%'
                                 % part)
    if op:
        raise errors.ConfigError('--fail-if %r: the store keeps phases, not the ops of a '
                                 'mix: judge the change of the phase (%s:%s...)'
                                 % (part, phase, metric))
    if abort:
        raise errors.ConfigError('--fail-if %r: @abort judges the run as it goes; a change '
                                 'from the baseline is judged at its end' % part)
    try:
        change = float(value)
    except ValueError:
        raise errors.ConfigError('--fail-if %r: %r is not a number' % (part, value))
    return {'text': part.strip(), 'phase': phase, 'op': op, 'metric': metric, 'cmp': cmp_,
            'limit': change, 'percent': False, 'unit': '%', 'scale': 1.0,
            'latency_key': latency_key, 'abort': False, 'relative': True}


def _check_value(cond):
    """Refuse a limit no run can meet (every metric is 0 or more, a share at most 100%):
    judged after the whole load, it would fail the run as if the server had regressed."""
    limit, cmp_ = cond['limit'], cond['cmp']
    if (cmp_ == '<' and limit <= 0) or (cmp_ == '<=' and limit < 0):
        raise errors.ConfigError('--fail-if %r can never hold: %s is never below 0'
                                 % (cond['text'], cond['metric']))
    if cond['percent'] and limit > 100:
        raise errors.ConfigError('--fail-if %r: a share is at most 100%%' % cond['text'])
    if cond['percent'] and cmp_ == '>' and limit >= 100:
        raise errors.ConfigError('--fail-if %r can never hold: a share is at most 100%%'
                                 % cond['text'])


def check_names(conditions, phases):
    """Refuse, before the first op, a condition whose phase or op this run does not have
    (``phases``: the run's workload.Phase tuple), saying which it has."""
    names = [p.name for p in phases]
    ops = dict((p.name, [op for op, _w in p.weights]) for p in phases)
    for cond in conditions:
        phase, op = cond['phase'], cond['op']
        if phase is None:
            continue
        if phase not in ops:
            mixes = [p for p in names if phase in ops[p] and len(ops[p]) > 1]
            hint = ('; %s is an op of phase %s: write %s.%s:...' % (phase, mixes[0], mixes[0],
                                                                     phase)) if mixes else ''
            raise errors.ConfigError('--fail-if %r: this run has no phase %r; its phases are '
                                     '%s%s' % (cond['text'], phase, ', '.join(names), hint))
        if op is not None and (len(ops[phase]) < 2 or op not in ops[phase]):
            raise errors.ConfigError(
                '--fail-if %r: phase %s has no op %r of its own%s' % (
                    cond['text'], phase, op,
                    '; its ops are %s' % ', '.join(ops[phase]) if len(ops[phase]) > 1 else
                    ' (a phase of one op: write %s:%s...)' % (phase, cond['metric'])))
