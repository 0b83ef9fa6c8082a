"""``--baseline history[:N]``: this run judged against the last N stored runs of its
scenario, with the spread those runs had.

Each phase's figure in each baseline run (the median of its rounds under --repeat) gives
a mean and a noise: NOISE_SIGMAS sample standard deviations of the N values. A
relative condition (``ops_per_sec>-10%``, ``p99<+10%``) compares this run's change from
the mean, in %, with its limit; a change beyond the limit that is still inside the
noise (|value - mean| <= noise) is no regression: the condition holds, and its verdict
says why. With fewer than MIN_RUNS stored runs of the scenario there is no spread to
judge with, so the condition holds with a note (the first runs of a CI job make the
baseline).
"""
from __future__ import absolute_import, division, print_function

import json
import math

from gloaddriver.measure.repeats import median

NOISE_SIGMAS = 3.0
MIN_RUNS = 2
# The figures of a stored phase row a relative condition may judge.
_COLUMNS = ('ops_per_sec', 'ok_per_sec', 'syscalls_per_op')


def _figures(row):
    out = dict((c, row.get(c)) for c in _COLUMNS)
    out.update(('latency:' + k, v) for k, v in json.loads(row.get('latency') or '{}').items())
    return out


def build(runs, phase_rows, wanted, scenario, where):
    """The baseline of the stored ``runs`` (oldest first) and their phase rows:
    {'phases': {name: {figure: [one value per run]}}, ...} as the result keeps it."""
    by_run = {}
    for row in phase_rows:
        by_run.setdefault(row['run_id'], {}).setdefault(row['name'], []).append(_figures(row))
    phases = {}
    for run in runs:
        for name, rounds in by_run.get(run['id'], {}).items():
            keys = set().union(*[set(r) for r in rounds])
            for key in keys:
                values = [r[key] for r in rounds if r.get(key) is not None]
                if values:
                    phases.setdefault(name, {}).setdefault(key, []).append(median(values))
    return {'store': where, 'scenario': scenario, 'wanted': wanted,
            'runs': [r['id'] for r in runs], 'phases': phases}


def _spread(values):
    n = len(values)
    mean = sum(values) / float(n)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return mean, NOISE_SIGMAS * sd


def judge(cond, phase, value, baseline, holds):
    """The verdict's fields of a relative condition on one phase's ``value`` (in the
    result's units): value and limit are changes in %. ``holds(cond, change)``: whether
    a change meets the condition's limit (report.thresholds')."""
    key = 'latency:' + cond['latency_key'] if cond['latency_key'] else cond['metric']
    values = ((baseline or {}).get('phases', {}).get(phase) or {}).get(key) or []
    if value is None or (baseline or {}).get('error'):
        return {'value': None, 'limit': cond['limit'], 'held': False,
                'why': 'not measured in this run' if value is None else
                       'the baseline could not be read: %s' % baseline['error']}
    if len(values) < MIN_RUNS:
        return {'value': None, 'limit': cond['limit'], 'held': True,
                'why': 'no baseline yet: %d stored run%s of this scenario with phase %s '
                       '(%d needed)' % (len(values), '' if len(values) == 1 else 's', phase,
                                        MIN_RUNS)}
    mean, noise = _spread(values)
    change = 100.0 * (value - mean) / mean if mean else 0.0
    held = holds(cond, change)
    inside = abs(value - mean) <= noise
    why = ''
    if not held and inside:
        held, why = True, ('beyond the limit, but inside the noise of the %d baseline runs '
                           '(%s +- %.3g)' % (len(values), _g(mean), noise))
    return {'value': change, 'limit': cond['limit'], 'held': held, 'why': why,
            'baseline': {'mean': mean, 'noise': noise, 'runs': len(values), 'value': value}}


def _g(v):
    return '%.4g' % v


def line(baseline):
    """The line under the table that says what this run was judged against."""
    runs = baseline['runs']
    if baseline.get('error'):
        return ('baseline: the runs of scenario %s in %s could not be read: %s'
                % (baseline['scenario'], baseline['store'], baseline['error']))
    if not runs:
        return ('baseline: no stored run of scenario %s in %s yet; this run starts it'
                % (baseline['scenario'], baseline['store']))
    return ('baseline: %d of the last %d stored runs of scenario %s in %s (ids %s); '
            'a change inside their noise (%g standard deviations) is no regression'
            % (len(runs), baseline['wanted'], baseline['scenario'], baseline['store'],
               ', '.join(str(i) for i in runs), NOISE_SIGMAS))
