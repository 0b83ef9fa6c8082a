"""--find-max in the report: the search's table (``lines``) and its CSV rows
(``csv_rows``), from the result's ``find_max`` (run/find_max.py makes it)."""
from __future__ import absolute_import, division, print_function

CSV_HEADER = ['step', 'target_ops_per_sec', 'achieved_ops_per_sec', 'p50_us', 'p90_us',
              'p99_us', 'p999_us', 'service_p99_us', 'attempted', 'errors', 'late',
              'client_cpu', 'server_cpu_pct', 'verdict', 'why']


def _n(v):
    return '-' if v is None else '{:,.0f}'.format(v)


def _ms(us):
    return '-' if us is None else '%.2f' % (us / 1000.0)


def _pct(v):
    return '-' if v is None else '%.0f%%' % (v * 100)


def lines(result):
    """The search's lines under the table: a row per step, then the finding."""
    fm = result.get('find_max')
    if not fm:
        return []
    out = ['find-max %s: %d steps of %g s (warm-up %g s), resolution %g%%'
           % (fm['objective'], len(fm['steps']), fm['step_seconds'], fm['warmup_seconds'],
              fm['resolution'] * 100)]
    head = ('step', 'target/s', 'achieved/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms',
            'errors', 'client cpu', 'server cpu', 'verdict')
    rows = [head]
    for s in fm['steps']:
        rows.append((str(s['step']), _n(s['target']), _n(s['achieved']), _ms(s['p50_us']),
                     _ms(s['p90_us']), _ms(s['p99_us']), _ms(s['p999_us']), _n(s['errors']),
                     _pct(s['client_cpu']),
                     '-' if s['server_cpu_pct'] is None else '%.0f%%' % s['server_cpu_pct'],
                     s['verdict'] + (': ' + s['why'] if s['why'] else '')))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    for r in rows:
        out.append('  ' + '  '.join(c.rjust(w) for c, w in zip(r, widths)) + '  ' + r[-1])
    out.append(finding(fm))
    return out


def finding(fm):
    """One line: the knee, or why there is none."""
    held, broke, outcome = fm['held'], fm['broke'], fm['outcome']
    if outcome == 'client':
        return ('find-max: NO KNEE: at %s ops/s the client could not keep the rate (%s); '
                'that is the client\'s limit, not the server\'s: add --processes or '
                '--greenlets%s' % (_n(fm['client_limit']['target']), fm['why'],
                                   '; %s ops/s held before it' % _n(held['target'])
                                   if held else ''))
    if outcome == 'knee':
        return ('find-max: knee at %s ops/s (achieved %s ops/s) held %s; %s ops/s broke it%s'
                % (_n(held['target']), _n(held['achieved']), fm['objective'],
                   _n(broke['target']), ' (%s)' % fm['why'] if fm['why'] else ''))
    if outcome == 'no_knee':
        return ('find-max: %s held up to %s ops/s and no step broke it (%s)'
                % (fm['objective'], _n(held['target']), fm['why']))
    if outcome == 'searching':
        last = fm['steps'][-1]
        return 'find-max: searching; step %d at %s ops/s %s%s' % (
            last['step'], _n(last['target']), last['verdict'],
            ', %s ops/s held so far' % _n(held['target']) if held else '')
    if outcome == 'never_held':
        return 'find-max: no rate tried held %s; the lowest tried, %s ops/s, broke it' % (
            fm['objective'], _n(broke['target']) if broke else '-')
    return 'find-max: the search stopped before it ended (see above)'


def csv_rows(result):
    for s in (result.get('find_max') or {}).get('steps') or ():
        yield [s['step'], s['target'], s['achieved'], s['p50_us'], s['p90_us'], s['p99_us'],
               s['p999_us'], s['service_p99_us'], s['attempted'], s['errors'], s['late'],
               s['client_cpu'], s['server_cpu_pct'], s['verdict'], s['why']]


_TO_MS = {'us': 0.001, 'ms': 1.0, 's': 1000.0}


def view(result):
    """The page's curve (report/dashboard.js draws it): each step's latency percentiles
    in ms against its achieved rate, in the order of that rate; the objective's latency
    limits as lines; the knee (the highest step held) and the finding. None without
    --find-max."""
    fm = result.get('find_max')
    if not fm or not fm['steps']:
        return None
    steps = sorted(fm['steps'], key=lambda s: (s['achieved'] or 0, s['target']))
    limits = []
    for v in steps[0]['verdicts']:
        if v['unit'] in _TO_MS and v.get('limit') is not None:
            limits.append({'label': 'objective ' + v['condition'],
                           'ms': v['limit'] * _TO_MS[v['unit']]})
    held = fm['held'] if fm['outcome'] == 'knee' else None
    return {'x': [s['achieved'] or 0 for s in steps],
            'targets': [s['target'] for s in steps],
            'verdicts': [s['verdict'] for s in steps],
            'latency_ms': dict((k, [None if s[k + '_us'] is None else s[k + '_us'] / 1000.0
                                    for s in steps]) for k in ('p50', 'p90', 'p99', 'p999')),
            'objective': limits,
            'knee': None if held is None else [i for i, s in enumerate(steps)
                                              if s['step'] == held['step']][0],
            'finding': finding(fm)}
