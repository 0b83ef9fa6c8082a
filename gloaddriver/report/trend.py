"""``gloaddriver trend --html PAGE``: ops/s, p99 and syscalls/op over the stored runs of
one scenario, one line per phase, with the step changes measure.steps finds marked on
the charts and listed under them. The page is drawn as the run report is (report.html,
uPlot, inline, nothing fetched), by trend.js.

The scenario is --scenario (a key, or its first characters), or else the newest stored
run's; the runs are its newest --last N (100 unless given), oldest first. A phase run
more than once in a run (--repeat rounds, --find-max steps) counts with its median.
"""
from __future__ import absolute_import, division, print_function

import io
import os
import sys

from gloaddriver import converters, errors
from gloaddriver.measure import steps
from gloaddriver.measure.repeats import median
from gloaddriver.report import history, html

DEFAULT_LAST = 100
# The charts: (id, title, the phase row's column, unit).
CHARTS = (('ops', 'ops/s', 'ops_per_sec', 'ops/s'),
          ('p99', 'p99 latency', 'p99_us', 'us'),
          ('syscalls', 'syscalls per op', 'syscalls_per_op', 'syscalls/op'))


def _series(runs, phase_rows, column):
    """{phase name: [one value per run, None where the run has none]}, names in the
    order the runs first have them."""
    index = dict((r['id'], i) for i, r in enumerate(runs))
    found, order = {}, []
    for row in phase_rows:
        if row['name'] not in found:
            found[row['name']] = [[] for _r in runs]
            order.append(row['name'])
        if row.get(column) is not None:
            found[row['name']][index[row['run_id']]].append(row[column])
    return [(name, [median(v) if v else None for v in found[name]]) for name in order]


def view(runs, phase_rows, tags, window=steps.WINDOW, min_change=steps.MIN_CHANGE):
    """What the page draws: the runs, and per chart its series and their steps."""
    charts = []
    for cid, title, column, unit in CHARTS:
        series = []
        for name, values in _series(runs, phase_rows, column):
            series.append({'label': name, 'values': values,
                           'steps': steps.find(values, window, min_change)})
        charts.append({'id': cid, 'title': title, 'unit': unit, 'series': series})
    last = runs[-1] if runs else {}
    return {
        'title': 'gloaddriver trend: scenario %s' % last.get('scenario', '-'),
        'scenario': last.get('scenario'), 'flags': last.get('scenario_flags'),
        'window': window, 'min_change_pct': 100.0 * min_change,
        'runs': [{'id': r['id'], 'started': r['started'], 'label': r.get('label'),
                  'commit': (r.get('git_commit') or '')[:10] or None,
                  'tags': tags.get(r['id'], {})} for r in runs],
        'charts': charts}


def write(page_view, path):
    with io.open(path, 'w', encoding='utf-8') as f:
        f.write(html.page(page_view, script='trend.js'))


def _runs(store, args):
    """The runs of the scenario asked for (or of the newest run's), oldest first."""
    where = history.where(args.where)
    scenario = args.scenario
    if not scenario:
        newest = store.runs(where, 1, columns=('id', 'scenario'))
        if not newest:
            raise errors.ConfigError('no stored run matches: nothing to draw')
        scenario = newest[0]['scenario']
    columns = ('id', 'started', 'label', 'scenario', 'scenario_flags', 'git_commit')
    runs = store.runs(where, args.last or None, scenario, columns=columns)
    if not runs:
        raise errors.ConfigError('no stored run of scenario %s matches' % scenario)
    keys = set(r['scenario'] for r in runs)
    if len(keys) > 1:
        raise errors.ConfigError('--scenario %s is the start of %d scenarios (%s): give more '
                                 'of the key' % (scenario, len(keys), ', '.join(sorted(keys))))
    return runs


def main(argv, out=None):
    out = out or sys.stdout
    ap = converters.WholeFlagsParser(
        prog='gloaddriver trend',
        description='draw ops/s, p99 and syscalls/op over the stored runs of one scenario '
                    'as an HTML page, with step changes marked')
    ap.add_argument('--html', required=True, metavar='PAGE', help='write the page here')
    history.common_flags(ap)
    ap.add_argument('--last', type=int, default=DEFAULT_LAST, metavar='N',
                    help='the newest N runs of the scenario (0: all)')
    ap.add_argument('--window', type=int, default=steps.WINDOW, metavar='K',
                    help='a step: the K runs after it and the K before it do not overlap, '
                         'and their means differ by at least --min-change')
    ap.add_argument('--min-change', type=float, default=100.0 * steps.MIN_CHANGE,
                    metavar='PERCENT', help='the least change of the mean a step is')
    args = ap.parse_args(argv)
    if args.last < 0 or args.window < 1 or args.min_change < 0:
        raise errors.ConfigError('--last takes 0 or more, --window 1 or more, --min-change '
                                 'a percent of 0 or more')
    folder = os.path.dirname(os.path.abspath(args.html))
    if not os.path.isdir(folder) or os.path.isdir(args.html):
        raise errors.ConfigError('--html %s: give a file in a folder that exists' % args.html)
    store = history.open_store(args)
    try:
        runs = _runs(store, args)
        ids = [r['id'] for r in runs]
        page_view = view(runs, store.phases(ids), store.tags(ids), args.window,
                         args.min_change / 100.0)
    finally:
        store.close()
    write(page_view, args.html)
    marked = [(c['id'], s['label'], page_view['runs'][st['index']]['id'], st['change_pct'])
              for c in page_view['charts'] for s in c['series'] for st in s['steps']]
    out.write('trend of scenario %s: %d runs (#%d to #%d) in %s; %s\n' % (
        page_view['scenario'], len(runs), ids[0], ids[-1], args.html,
        '%d step changes: %s' % (len(marked), ', '.join(
            '%s %s at run #%d (%+.1f%%)' % m for m in marked)) if marked else
        'no step changes'))
    return 0
