"""``--html FILE``: one self-contained page from a result (a run, or a merge).

Per phase: throughput over time (attempted, ok and errors per second, the
target under --rate or --stages), latency percentiles over time, active greenlets
against their target under --stages of greenlets, the latency distribution
of each op (a percentile spectrum from its HdrHistogram), syscalls per op by
name and over time, and what the server reported per interval. Above them, the
summary table and the manifest.

Everything is inline (CSS, SVG); a Content-Security-Policy forbids any fetch,
so the page shows the same with no network, and no script runs in it.
"""
from __future__ import absolute_import, division, print_function

import io
import json
import math

from gloaddriver.measure import stats
from gloaddriver.report import text as report
from gloaddriver.report.svg import bar_chart, esc, line_chart

_NINES = [(0.0, '0%'), (90.0, '90%'), (99.0, '99%'), (99.9, '99.9%'), (99.99, '99.99%'),
          (99.999, '99.999%'), (99.9999, '99.9999%')]

_CSS = u"""
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;
background:#fff;max-width:1400px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;
border-bottom:1px solid #ccc;padding-bottom:4px}
.sub{color:#555;margin:0 0 16px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:8px 0}
th,td{padding:3px 8px;border-bottom:1px solid #e4e4e4;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
th{background:#f5f5f5;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure.chart{margin:0;padding:8px;border:1px solid #e4e4e4;border-radius:4px}
figcaption{font-weight:600;margin-bottom:4px}
svg{display:block;max-width:100%;height:auto}
svg text{font:11px system-ui,sans-serif;fill:#333}
svg .axis{font-size:12px;fill:#555}
svg .grid{stroke:#e8e8e8;stroke-width:1}
.empty{color:#888;font-style:italic}
details{margin:8px 0}pre{white-space:pre-wrap;font-size:12px}
.bad{color:#b00020;font-weight:600}
"""


def _over_time(kind, title, series, y_label, **kw):
    return line_chart(kind, title, series, 'seconds into phase', y_label, x_min=0, **kw)


def _events(p):
    """The phase's outages as shaded bands and its injected faults as marks."""
    last = p['timeline'][-1]['t'] if p.get('timeline') else p.get('seconds') or 0
    bands = [(o['start'], o['end'] if o['end'] is not None else last,
              'outage %.2f s%s' % (o['duration'], ' (still down at the end)' if o['open'] else ''))
             for o in p.get('outages') or ()]
    marks = [(f['t'], report.fault_text(f)) for f in p.get('faults') or ()]
    stages = p.get('stages') or ()
    for s in stages[1:]:
        marks.append((s['start'], 'stage %d from %g s: %g -> %g %s' % (
            s['stage'], s['start'], s['target_from'], s['target_to'], s['unit'])))
    if stages:
        marks.append((stages[-1]['end'], 'end of the stages, %g s' % stages[-1]['end']))
    return {'bands': bands, 'marks': marks}


def _stage_target(p):
    """The --stages target as (t, target) corners of its straight lines, up to the
    phase's end."""
    stages = p['stages']
    end = p.get('seconds') or stages[-1]['end']
    pts = [(stages[0]['start'], stages[0]['target_from'])]
    for s in stages:
        if s['end'] > end:
            part = max(end - s['start'], 0.0) / (s['end'] - s['start'])
            pts.append((end, s['target_from'] + (s['target_to'] - s['target_from']) * part))
            break
        pts.append((s['end'], s['target_to']))
    return pts


def _phase_charts(p):
    name = p['name']
    rows = p.get('timeline') or []
    charts = []
    t = [r['t'] for r in rows]
    events = _events(p)

    def per_sec(key):
        return [(r['t'], r[key] / r['seconds'] if r['seconds'] > 0 else None) for r in rows]

    series = [('attempted/s', per_sec('attempted')), ('ok/s', per_sec('ok')),
              ('errors/s', per_sec('errors'))]
    dashed = ()
    closed_stages = p.get('stages') and p['stages'][0]['unit'] == 'greenlets'
    if p.get('stages') and not closed_stages:
        series.append(('target', _stage_target(p)))
        dashed = ('target',)
    elif p.get('rate'):
        series.append(('target', [(x, p['rate']['target']) for x in t]))
        dashed = ('target',)
    charts.append(_over_time('throughput', 'Throughput over time', series, 'ops/s',
                             dashed=dashed, phase=name, **events))
    if closed_stages:
        charts.append(_over_time('greenlets', 'Active greenlets over time', [
            ('active', [(r['t'], r.get('active')) for r in rows]),
            ('target', _stage_target(p))], 'greenlets', dashed=('target',), phase=name,
            **events))
    lat = []
    for key, label in (('p50', 'p50'), ('p90', 'p90'), ('p95', 'p95'), ('p99', 'p99'),
                       ('p999', 'p99.9'), ('max', 'max')):
        lat.append((label, [(r['t'], r['latency_us'].get(key)) for r in rows]))
    dashed = ()
    if rows and 'service_time_us' in rows[0]:
        lat.append(('service p99', [(r['t'], r['service_time_us'].get('p99')) for r in rows]))
        dashed = ('service p99',)
    title = 'Latency over time' + (' (from the intended start)' if p.get('rate') else '')
    charts.append(_over_time('latency', title, lat, 'microseconds',
                             log_y=True, dashed=dashed, phase=name, **events))
    charts.append(_distribution(p))
    sc = p.get('syscalls') or {}
    if sc.get('by_name'):
        charts.append(bar_chart('syscalls', 'Syscalls per op: %.3f in all (%s)'
                                % (sc['per_op'], sc.get('source')),
                                sorted(sc['by_name'].items()), 'per op', phase=name))
    if any(r.get('syscalls') is not None for r in rows):
        charts.append(_over_time('syscalls-over-time', 'Syscalls per op over time', [
            ('syscalls/op', [(r['t'], r['syscalls'] / r['attempted']
                              if r.get('syscalls') is not None and r['attempted'] else None)
                             for r in rows])], 'syscalls per op', phase=name))
    charts.extend(_server_charts(p))
    return charts


def _distribution(p):
    """The percentile spectrum of each op (of the phase when it has one op)."""
    ops = sorted(p['ops'].items()) if p.get('ops') else [(p['name'], p)]
    series = [(name, _spectrum(sub.get('histogram'))) for name, sub in ops]
    if p.get('rate') and p.get('service_histogram'):
        series.append(('service time (all ops)', _spectrum(p['service_histogram'])))
    return line_chart('distribution', 'Latency distribution by op'
                      + (' (from the intended start)' if p.get('rate') else ''), series,
                      'percentile', 'microseconds', log_y=True,
                      x_axis=(_nines, _NINES), phase=p['name'])


def _nines(pct):
    return -math.log10(max(1e-7, 1 - pct / 100.0))


def _spectrum(encoded):
    if not encoded:
        return []
    hist = stats.decode_histogram(encoded)
    n = hist.get_total_count()
    if not n:
        return []
    pts, k = [], 0
    # Ten points a decade of nines, up to where one sample is the tail.
    while True:
        pct = 100.0 * (1 - 10 ** (-k / 10.0))
        if k and 1 - pct / 100.0 < 1.0 / n:
            break
        pts.append((pct, hist.get_value_at_percentile(pct)))
        k += 1
    pts.append((100.0 * (1 - 1.0 / n) if n > 1 else 0.0, hist.get_max_value()))
    return pts


def _server_charts(p):
    sm = p.get('server_metrics') or {}
    rows = sm.get('intervals') or []
    if not rows:
        return []
    kinds = sorted(set(k for r in rows for k, v in r['rps'].items() if v))
    series = [(k + '/s', [(r['t'], r['rps'].get(k)) for r in rows]) for k in kinds]
    series.append(('client ops/s', [(r['t'], r.get('client_ops_per_sec')) for r in rows]))
    out = [_over_time('server-rps', 'Server: requests per second by type', series,
                      'per second', dashed=('client ops/s',),
                      phase=p['name'])]
    for chart in sm.get('charts', ()):   # the backend's gauges, as it groups them
        # Any row: the first may be a sample the server did not answer in time.
        keys = [k for k in chart['keys'] if any(r.get(k) is not None for r in rows)]
        if keys:
            out.append(_over_time(chart['kind'], chart['title'],
                                  [(k, [(r['t'], r.get(k)) for r in rows]) for k in keys],
                                  chart['unit'], phase=p['name']))
    return out


def _summary_table(result):
    out = [u'<table class="summary"><tr>%s</tr>' % u''.join(u'<th>%s</th>' % esc(c[0])
                                                            for c in report.COLUMNS)]
    for is_op, cells in report.summary_rows(result):
        if is_op:
            cells[0] = u'\u2003' + cells[0]
        out.append(u'<tr%s>%s</tr>' % (u' class="op"' if is_op else u'',
                                       u''.join(u'<td>%s</td>' % esc(c) for c in cells)))
    out.append(u'</table>')
    return u''.join(out)


def _phase_notes(p):
    out = []
    rows = p.get('timeline')
    if rows:
        out.append(u'<p class="sub">%.1f s, timeline of %d row%s (a row per interval: '
                   u'--progress or --interval sets it)</p>'
                   % (p['seconds'], len(rows), u'' if len(rows) == 1 else u's'))
    if p.get('errors'):
        out.append(u'<p class="bad">errors: %s</p>' % esc(', '.join(
            '%s %d' % kv for kv in sorted(p['errors'].items()))))
        origins = p.get('error_origins') or {}
        for kind, text in sorted(p.get('error_samples', {}).items()):
            out.append(u'<p>%s%s: <code>%s</code></p>' % (
                esc(kind), esc(' at %s' % origins[kind]) if kind in origins else u'',
                esc(text)))
    if p.get('rate'):
        r = p['rate']
        out.append(u'<p>open loop: target %s%s ops/s (%s), achieved %s; late %s, dropped %s; '
                   u'latency from the intended start, service time apart</p>'
                   % tuple(esc(x) for x in ('up to ' if p.get('stages') else '', r['target'],
                                            r['arrival'], r['achieved'], r['late'],
                                            r['dropped'])))
    for line in report.stage_lines(p):
        out.append(u'<p class="stage">%s</p>' % esc(line))
    for note in p.get('notes', ()):
        out.append(u'<p>%s</p>' % esc(note))
    for line in report.outage_lines(p):
        out.append(u'<p class="bad">%s</p>' % esc(line))
    srv = (p.get('server_metrics') or {}).get('phase') or {}
    if srv.get('cpu_pct') is not None:
        out.append(u'<p>server CPU over the phase: %s%% of one core</p>' % esc(srv['cpu_pct']))
    return u''.join(out)


def render(result):
    """The page as text."""
    m = result['manifest']
    parts = [u'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
             u'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
             u'style-src \'unsafe-inline\'; img-src data:">',
             u'<meta name="viewport" content="width=device-width, initial-scale=1">',
             u'<title>gloaddriver: %s</title><style>%s</style></head><body>'
             % (esc(' '.join(m.get('argv') or []) or m.get('backend')), _CSS),
             u'<h1>gloaddriver report</h1><p class="sub">%s<br>%s%s</p>'
             % (esc(report.headline(result)), esc(m.get('started', '')),
                u'; merged from %d parts' % m['merged_from'] if m.get('merged_from') else u''),
             _summary_table(result)]
    if result.get('aborted'):
        parts.append(u'<p class="bad">run aborted: %s</p>' % esc(result['aborted']))
    for w in result.get('warnings') or ():
        parts.append(u'<p class="bad warning" data-kind="%s">warning: %s</p>'
                     % (esc(w['kind']), esc(w['message'])))
    if result.get('verify'):
        for line in report.verify_lines(result['verify']):
            parts.append(u'<p%s>%s</p>' % (u' class="bad"' if 'LOST' in line or 'NOT DONE' in line
                                           else u'', esc(line)))
    for p in result['phases']:
        parts.append(u'<section class="phase" data-phase="%s"><h2>Phase %s</h2>'
                     % (esc(p['name']), esc(p['name'])))
        parts.append(_phase_notes(p))
        if p.get('timeline') is not None:
            parts.append(u'<div class="charts">%s</div>' % u''.join(_phase_charts(p)))
        else:
            parts.append(u'<div class="charts">%s</div>' % _distribution(p))
        parts.append(u'</section>')
    parts.append(u'<h2>Manifest</h2><details><summary>what ran, where, with which versions'
                 u'</summary><pre>%s</pre></details>'
                 % esc(json.dumps(m, indent=2, sort_keys=True)))
    parts.append(u'</body></html>\n')
    return u''.join(parts)


def write(result, path):
    with io.open(path, 'w', encoding='utf-8') as f:
        f.write(render(result))
