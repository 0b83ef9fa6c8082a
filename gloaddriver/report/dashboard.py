"""What the dashboard page shows, as plain data: the verdict, the summary table and,
per phase, its rows over time, server samples, marks and latency spectra.

One page serves both ways (report.html): the ``--html`` file embeds ``view(result)``;
the ``--web`` page (report.web) starts from ``live_view`` and gets ``live_row``
messages each interval, then ``view`` of the final result. Every decision of what
a figure means is made here, once; the page's script only draws.
"""
from __future__ import absolute_import, division, print_function

import json
import math
import re

from gloaddriver.measure import flamegraph, stats
from gloaddriver.report import find_max, text, thresholds, verdict

# Row fields the page draws (histograms stay in the JSON result).
_ROW_KEYS = ('t', 'seconds', 'attempted', 'ok', 'errors', 'syscalls', 'latency_us',
             'service_time_us', 'active', 'in_flight', 'errors_by_kind')
_NINES_LABELS = ['0%', '90%', '99%', '99.9%', '99.99%', '99.999%', '99.9999%']


def view_row(row, rate=None):
    """A timeline row as the page draws it: counts, latencies, per-op figures, and the
    throughput or greenlet target (``target_ops``, ``target_greenlets``)."""
    out = dict((k, row[k]) for k in _ROW_KEYS if k in row)
    if 'target' in row:   # --stages: greenlets when the row has active ones, else ops/s
        out['target_greenlets' if 'active' in row else 'target_ops'] = row['target']
    elif rate:
        out['target_ops'] = rate
    if row.get('by_op'):
        out['by_op'] = {}
        for name, b in row['by_op'].items():
            op = dict((k, v) for k, v in b.items() if k != 'histogram')
            if b.get('histogram'):
                op['latency_us'] = _p50_p99(b['histogram'])
            out['by_op'][name] = op
    return out


def _p50_p99(encoded):
    """An op's p50 and p99 of one row, in one walk of its histogram."""
    h = stats.decode_histogram(encoded)
    v = h.get_percentile_to_value_dict([50.0, 99.0])
    return {'p50': v.get(50.0), 'p99': v.get(99.0)}


def server_row(d, t):
    """A server sample of one interval: its rates, gauges and flags (no raw counts)."""
    out = dict((k, v) for k, v in d.items() if k != 'counts')
    out['t'] = t
    return out


def _spectra(p):
    """Latency by percentile of each op, on one x grid of 'nines' (x = -log10(1 - q)),
    ten points a decade, each op's line ending at its max where one sample is its tail."""
    ops = sorted(p['ops'].items()) if p.get('ops') else [(p['name'], p)]
    named = [(name, sub.get('histogram')) for name, sub in ops]
    if p.get('rate') and p.get('service_histogram'):
        named.append(('service time (all ops)', p['service_histogram']))
    hists = []
    for name, encoded in named:
        if encoded:
            h = stats.decode_histogram(encoded)
            if h.get_total_count():
                hists.append((name, h))
    if not hists:
        return None
    most = max(h.get_total_count() for _n, h in hists)
    k_max = int(math.ceil(10 * math.log10(most))) + 1 if most > 1 else 1
    x = [k / 10.0 for k in range(k_max + 1)]
    series = []
    for name, h in hists:
        n = h.get_total_count()
        values, ended = [], False
        for k in range(k_max + 1):
            tail = 10 ** (-k / 10.0)
            if k and tail < 1.0 / n:
                values.append(None if ended else h.get_max_value())
                ended = True
            else:
                values.append(h.get_value_at_percentile(100.0 * (1 - tail)))
        series.append({'label': name, 'values': values})
    return {'x': x, 'series': series, 'labels': _NINES_LABELS}


def _marks(p):
    marks = [{'t': f['t'], 'label': text.fault_text(f), 'kind': 'fault'}
             for f in p.get('faults') or ()]
    stages = p.get('stages') or ()
    for s in stages[1:]:
        marks.append({'t': s['start'], 'kind': 'stage', 'label': 'stage %d from %g s: %g -> %g %s'
                      % (s['stage'], s['start'], s['target_from'], s['target_to'], s['unit'])})
    if stages:
        marks.append({'t': stages[-1]['end'], 'kind': 'stage',
                      'label': 'end of the stages, %g s' % stages[-1]['end']})
    return marks


def _bands(p):
    last = p['timeline'][-1]['t'] if p.get('timeline') else p.get('seconds') or 0
    return [{'start': o['start'], 'end': o['end'] if o['end'] is not None else last,
             'label': 'outage %.2f s%s' % (o['duration'], ' (still down at the end)'
                                           if o['open'] else '')}
            for o in p.get('outages') or ()]


def _notes(p):
    out = []
    if p.get('rate'):
        r = p['rate']
        out.append(('info', 'open loop: target %s%s ops/s (%s), achieved %s; late %s, dropped '
                    '%s; latency from the intended start, service time apart'
                    % tuple(['up to ' if p.get('stages') else ''] + [
                        r.get(k, '-') for k in ('target', 'arrival', 'achieved', 'late',
                                                'dropped')])))
    for line in text.stage_lines(p):
        out.append(('info', line))
    for line in text.retry_lines(p):    # the per-statement rows are a table of their own
        out.append(('info', line))
    for line in text.result_size_lines(p):     # rows and result bytes, in all and per second
        out.append(('info', line))
    for note in p.get('notes', ()):
        out.append(('info', note))
    for kind, sample in sorted(p.get('error_samples', {}).items()):
        out.append(('bad', '%s: %s' % (kind, sample)))
    srv = (p.get('server_metrics') or {}).get('phase') or {}
    if srv.get('cpu_pct') is not None:
        out.append(('info', 'server CPU over the phase: %s%% of one core' % srv['cpu_pct']))
    return [{'level': lv, 'text': t} for lv, t in out]


def phase_view(p, offset, against=None):
    """A phase as the page draws it, ``offset`` seconds into the whole run; ``against``,
    the same phase of another run, its flame graphs drawn as differentials against it."""
    rate = (p.get('rate') or {}).get('target') if not p.get('stages') else None
    sm = p.get('server_metrics') or {}
    sc = p.get('syscalls') or {}
    return {
        'name': text.round_name(p), 'offset': round(offset, 4), 'seconds': p.get('seconds'),
        'open_loop': bool(p.get('rate')),
        'rows': [view_row(r, rate) for r in p.get('timeline') or ()],
        'server': [server_row(d, d['t']) for d in sm.get('intervals') or ()],
        'server_charts': sm.get('charts') or [],
        'bands': _bands(p), 'marks': _marks(p), 'spectra': _spectra(p),
        'syscalls': [list(kv) for kv in sorted(sc['by_name'].items())] if sc.get('by_name')
        else None,
        'syscalls_per_op': sc.get('per_op'), 'syscall_source': sc.get('source'),
        'notes': _notes(p),
        'statements': _statements(p),
        'flamegraphs': _flamegraphs(p, against),
    }


# A frame narrower than this share of a phase's samples is left out of the page's tree
# (its samples stay in its parent's width): under a pixel at any width the page has,
# and it keeps a varied run's view small.
FLAME_MIN_SHARE = 1.0 / 2000
_FRAME_FILE = re.compile(r' \((?:[^()]*/)?([^/()]+:\d+)\)$')


def _flamegraphs(p, against=None):
    """The phase's flame graphs, client then server, each as the tree d3-flame-graph
    draws: ``{name, value, children}``, the root the phase's samples. With ``against``
    (the same phase of another run) a side both have is a differential: frames named
    as flamegraph.comparable names them, each with its ``delta``."""
    out = []
    for key, side in (('flamegraph', 'client'), ('server_flamegraph', 'server')):
        fg = p.get(key)
        if fg and fg.get('stacks'):
            base = (against or {}).get(key) or {}
            g = {'side': side, 'sampler': fg.get('sampler'), 'rate': fg.get('rate'),
                 'samples': fg.get('samples')}
            if base.get('stacks'):
                g['tree'] = flame_tree(flamegraph.comparable(fg['stacks']), fg.get('samples'),
                                       flamegraph.comparable(base['stacks']))
                g['against_samples'] = base.get('samples') or sum(base['stacks'].values())
            else:
                g['tree'] = flame_tree(fg['stacks'], fg.get('samples'))
            out.append(g)
    return out or None


def flame_tree(stacks, total=None, against=None):
    """Folded stacks as one tree, a node per frame on its path: ``value`` is the
    samples the frame was on the stack for; ``total`` (the phase's samples, which
    count the stacks the result left out) is the root's. A frame's file is named by
    its last part: ``burn_cpu (burn.py:2)``. With ``against`` (another run's stacks),
    each node's ``delta`` is its samples less what it had there, scaled to these
    samples' total: how many more (or fewer) of these samples than its share there."""
    root = _tree(stacks)
    root['value'] = max(root['value'], total or 0)
    if against:
        other = _tree(against)
        _deltas(root, other, root['value'] / float(other['value'] or 1))
    least = root['value'] * FLAME_MIN_SHARE
    return _tree_out(root, least)


def _tree(stacks):
    root = {'name': 'all', 'value': 0, 'kids': {}}
    for stack, n in stacks.items():
        root['value'] += n
        node = root
        for frame in stack.split(';'):
            kid = node['kids'].get(frame)
            if kid is None:
                kid = node['kids'][frame] = {'name': _FRAME_FILE.sub(r' (\1)', frame),
                                             'value': 0, 'kids': {}}
            kid['value'] += n
            node = kid
    return root


def _deltas(node, other, scale):
    node['delta'] = round(node['value'] - (other['value'] if other else 0) * scale, 1)
    for frame, kid in node['kids'].items():
        _deltas(kid, other['kids'].get(frame) if other else None, scale)


def _tree_out(node, least):
    out = {'name': node['name'], 'value': node['value']}
    if 'delta' in node:
        out['delta'] = node['delta']
    kids = sorted((k for k in node['kids'].values() if k['value'] >= least),
                  key=lambda k: k['name'])
    if kids:
        out['children'] = [_tree_out(k, least) for k in kids]
    return out


def has_flamegraph(view):
    """Does the page draw a flame graph (so it needs d3 and d3-flame-graph)?"""
    return bool(view.get('flamegraphs')) or any(
        ph.get('flamegraphs') for ph in view.get('phases') or ())


STATEMENT_COLUMNS = ('script:line', 'command', 'count', 'mean ms', 'p50 ms', 'p99 ms',
                     'failures', 'retries')


def _statements(p):
    """--per-statement: a row per script command, as the text report has them."""
    rows = (p.get('script') or {}).get('statements')
    if not rows:
        return None
    out = []
    for r in rows:
        lat = r['latency_us']
        out.append(['%s:%d' % (r['script'], r['line']), r['command'], text.count(r['count'])] +
                   [text.ms(lat[k]) for k in ('mean', 'p50', 'p99')] +
                   [text.count(r['failures']), text.count(r['retries'])])
    return {'columns': list(STATEMENT_COLUMNS), 'rows': out}


def _fmt(v):
    return '{:,}'.format(int(v)) if v >= 100 else '%.3g' % v


def _verdict(result):
    """The banner: the exit code and why, then each thing that decided or colours it."""
    code, why = verdict.judge(result)
    items = []
    for v, line in zip(result.get('thresholds') or (), thresholds.lines(
            result.get('thresholds') or ())):
        items.append(('good' if v['held'] else 'bad', re.sub(r'\s+', ' ', line)))
    if result.get('verify'):
        for line in text.verify_lines(result['verify']):
            items.append(('bad' if 'LOST' in line or 'NOT DONE' in line else 'good', line))
    aborted = result.get('aborted')
    if aborted:
        items.append(('bad', 'run aborted: %s' % (', '.join(aborted) if isinstance(aborted, list)
                                                  else aborted)))
    for p in result['phases']:
        for line in text.outage_lines(p):
            items.append(('bad' if 'OUTAGE' in line or 'FAILED' in line else 'info', line))
        if p.get('errors'):
            items.append(('bad', '%s: errors by kind: %s' % (p['name'], ', '.join(
                '%s %s' % (k, _fmt(n)) for k, n in sorted(p['errors'].items())))))
    seen = set()
    for w in list(result.get('warnings') or ()) + [w for p in result['phases']
                                                   for w in p.get('warnings') or ()]:
        if w.get('message') not in seen:
            seen.add(w.get('message'))
            items.append(('warn', 'warning%s: %s' % (' (%s)' % w['phase'] if w.get('phase')
                                                     else '', w.get('message'))))
    if why:
        why = re.sub(r'\s*\(see [^)]*\)|, see [^)]*', '', why)
    elif result.get('find_max'):   # the search judges the run: its finding
        why = find_max.finding(result['find_max'])
    elif 'thresholds' in result:
        why = 'all %d thresholds held' % len(result['thresholds'])
    else:
        why = 'every op succeeded'
    return {'code': code, 'why': why, 'items': [{'level': lv, 't': t} for lv, t in items]}


def view(result, against=None):
    """Everything the page shows of a finished run (or a merge); ``against``, another
    run whose phases' flame graphs this one's are drawn against (gloaddriver compare
    --html)."""
    m = result['manifest']
    phases, offset = [], 0.0
    others = dict((p['name'], p) for p in (against or {}).get('phases') or ())
    for p in result['phases']:
        phases.append(phase_view(p, offset, others.get(p['name'])))
        rows = p.get('timeline')
        offset += rows[-1]['t'] if rows else (p.get('seconds') or 0)
    return {
        'final': True,
        'title': 'gloaddriver: %s' % (' '.join(m.get('argv') or []) or m.get('backend')),
        'headline': _headline(result),
        'started': m.get('started', ''),
        'merged_from': m.get('merged_from'),
        'verdict': _verdict(result),
        'columns': [c[0] for c in text.columns(result)],
        'table': [[is_op, cells] for is_op, cells in text.summary_rows(result)],
        'phases': phases,
        'find_max': find_max.view(result),   # --find-max: the latency-throughput curve
        'manifest': json.dumps(m, indent=2, sort_keys=True),
    }


def _headline(result):
    try:
        return text.headline(result)
    except (KeyError, TypeError):   # a hand-made or partial manifest: what it has
        return ' '.join(result['manifest'].get('argv') or [])


def live_view(argv, server_charts):
    """The page of a run that has not closed an interval yet."""
    return {'final': False, 'title': 'gloaddriver (live): %s' % ' '.join(argv),
            'headline': 'running: gloaddriver %s' % ' '.join(argv), 'started': '',
            'merged_from': None, 'verdict': None, 'columns': [], 'table': [],
            'phases': [], 'server_charts': list(server_charts or ()), 'manifest': '',
            # the final view, sent to this page, will have flame graphs to draw
            'flamegraphs': any(a.split('=')[0] in ('--flamegraph', '--server-flamegraph')
                               for a in argv)}


def live_message(phase, row, server, rate=None):
    """One interval of a running phase, as the page appends it."""
    srv = None
    if server is not None:   # as the result's server intervals have it
        srv = server_row(server, row['t'])
        srv['client_ops_per_sec'] = round(row['attempted'] / row['seconds'], 1) \
            if row['seconds'] > 0 else None
    return {'phase': phase, 'row': view_row(row, rate), 'server': srv}
