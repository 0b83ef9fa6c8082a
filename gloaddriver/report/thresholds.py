"""``--fail-if``: pass/fail thresholds on the result, so a CI job can gate on a load run.
The conditions are parsed in ``config/fail_if.py``; here they are judged.

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

from gloaddriver.report import text

_OPS = {'<': operator.lt, '<=': operator.le, '>': operator.gt, '>=': operator.ge}


def _measure(block, cond):
    metric = cond['metric']
    if cond['latency_key']:
        return block['latency_us'].get(cond['latency_key'])
    if metric in ('errors', 'misses'):
        n = block['failed'] + block['timed_out'] if metric == 'errors' else block['misses']
        if cond['percent']:
            return 100.0 * n / block['attempted'] if block['attempted'] else 0.0
        return n
    if metric == 'syscalls_per_op':
        return (block.get('syscalls') or {}).get('per_op')
    return block.get(metric)


def holds(cond, value):
    """Whether a measured value meets the condition (a value in the limit's units)."""
    return _OPS[cond['cmp']](value, cond['limit'])


def _abort_verdicts(result):
    """A verdict for each @abort condition that broke on its sliding window and stopped
    the run (run/abort.py): failed, whatever the whole phase's figure says."""
    out = []
    for p in result['phases']:
        broke = p.get('threshold_abort')
        if broke:
            out.append({'condition': broke['condition'],
                        'phase': p['name'] + ('.%s' % broke['op'] if broke['op'] else ''),
                        'value': broke['value'], 'limit': broke['limit'], 'held': False,
                        'unit': broke['unit'],
                        'why': 'broke over the last %.1f s at %.1f s: the run stopped early'
                               % (broke['window_seconds'], broke['at_seconds'])})
    return out


def evaluate(conditions, result, baseline=None):
    """One verdict per condition and phase (or op) it judges; first, each @abort
    condition that broke while the run went. A condition relative to --baseline
    (p99<+10%) is judged by report.baseline on ``baseline``."""
    verdicts = _abort_verdicts(result)
    for cond in conditions:
        blocks = []
        for p in result['phases']:
            if cond['phase'] is not None and p['name'] != cond['phase']:
                continue
            if cond['op'] is not None:
                sub = p.get('ops', {}).get(cond['op'])
                if sub is not None:
                    blocks.append(('%s.%s%s' % (p['name'], cond['op'], ' #%d' % p['repeat']
                                                if p.get('repeat') else ''), sub))
            else:
                # A round of --repeat is judged on its own: insert #2.
                blocks.append((p['name'] + (' #%d' % p['repeat'] if p.get('repeat') else ''),
                               dict(p, plain_name=p['name'])))
        if not blocks:
            verdicts.append({'condition': cond['text'], 'phase': None, 'value': None,
                             'held': False, 'why': 'no phase or op of that name ran'})
        for name, block in blocks:
            value = _measure(block, cond)
            if cond.get('relative'):
                from gloaddriver.report import baseline as against
                verdict = {'condition': cond['text'], 'phase': name, 'unit': '%'}
                verdict.update(against.judge(cond, block.get('plain_name'), value, baseline,
                                             holds))
                verdicts.append(verdict)
                continue
            held = value is not None and holds(cond, value)
            # Reported in the condition's own unit: p95<2 is judged, and shown, in ms.
            scale = cond['scale']
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
            text.count(v['value']) if v['value'] >= 100 else '%.3g' % v['value'])
        out.append('threshold %-22s %-7s %s%s' % (
            v['condition'], 'held' if v['held'] else 'FAILED',
            '%s: %s%s' % (v['phase'], value, ' ' + v['unit'] if v.get('unit') else '')
            if v['phase'] else '', ' (%s)' % v['why'] if v['why'] else ''))
    return out
