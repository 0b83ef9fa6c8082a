"""--html: the report of a real run, rendered by headless Chromium and measured there."""
from __future__ import absolute_import, division, print_function

import io
import os
import re

import pytest

from tests.integration.conftest import assert_accounted, run_cli

# What the page drew, as the browser has it: each uPlot chart with its series and the
# number of values each has, the verdict banner, and every resource the page loaded.
MEASURE = """
var out = {title: document.title, charts: window.gloaddriverCharts(), sections: [],
           resources: performance.getEntriesByType('resource').map(function (e) { return e.name; })};
document.querySelectorAll('section.phase').forEach(function (s) {
  out.sections.push(s.getAttribute('data-phase'));
});
var v = document.getElementById('verdict');
out.verdict = v ? {exit: v.getAttribute('data-exit'), text: v.innerText, cls: v.className} : null;
out.cells = [].map.call(document.querySelectorAll('table.summary tr.phase'), function (tr) {
  return [].map.call(tr.children, function (td) { return td.textContent; });
});
return out;
"""


def _render(chromium, html, tmpdir):
    chromium.open('file://' + os.path.abspath(html))
    page = chromium.run(MEASURE)
    png = chromium.screenshot(str(tmpdir.join('report.png')))
    assert png[:8] == b'\x89PNG\r\n\x1a\n' and len(png) > 20000   # a blank page is ~5 KB
    assert page['resources'] == [], 'the page fetched something'
    return page


def _charts(page, phase=None):
    return dict((c['id'], c) for c in page['charts'] if c['phase'] == phase)


def _drawn(chart, labels):
    """Each named series is there and has values; the chart is laid out at a size."""
    assert chart['width'] >= 300 and chart['height'] >= 120, chart
    assert chart['inked'] > 1000, chart
    series = dict((s['label'], s) for s in chart['series'])
    for label in labels:
        assert label in series, (label, chart['id'], sorted(series))
        assert series[label]['values'] >= 1, (label, chart)


def test_report_of_a_mix_renders_every_chart(chromium, tmpdir):
    html = str(tmpdir.join('report.html'))
    rc, out, err, res = run_cli(['--spawn', '--greenlets', '20', '--ops', '20000', '--load',
                                 '--keys', '20000', '--mix', 'insert=1,select=8,update=1',
                                 '--distribution', 'zipfian', '--interval', '0.05',
                                 '--html', html])
    assert rc == 0, err
    assert_accounted(res)
    page = _render(chromium, html, tmpdir)
    assert page['sections'] == ['load', 'mix']
    assert 'gloaddriver' in page['title']
    assert page['verdict']['exit'] == '0' and 'passed' in page['verdict']['text']
    perf = res['phases'][0]['syscalls'].get('source') == 'perf_event'
    whole = _charts(page)
    rows = sum(len(p['timeline']) for p in res['phases'])
    for phase in res['phases']:
        assert len(phase['timeline']) >= (3 if phase['name'] == 'mix' else 2), phase['timeline']
    # One timeline across both phases: a point per row of each.
    assert whole['throughput']['points'] == rows
    _drawn(whole['throughput'], ['attempted/s', 'ok/s', 'errors/s (right axis)'])
    _drawn(whole['latency'], ['p50', 'p99', 'p99.9', 'max'])
    _drawn(whole['concurrency'], ['ops in flight'])
    _drawn(whole['op-throughput'], ['insert', 'select', 'update'])
    _drawn(whole['op-latency'], ['insert p99', 'select p99', 'update p99'])
    # Server charts need the server's samples: on a busy machine a sample may come
    # late (it is then left out), but a mix of this length has some that came in time.
    samples = [r for p in res['phases'] for r in p['server_metrics']['intervals']
               if r.get('arena_used') is not None]
    assert samples, 'no server sample came in time: nothing was tested'
    _drawn(whole['server-rps'], ['client ops/s', 'select/s', 'update/s'])
    _drawn(whole['server-memory'], ['arena_used'])
    if perf:
        _drawn(whole['syscalls-over-time'], ['syscalls/op'])
    for phase in res['phases']:
        name = phase['name']
        ops = sorted(phase['ops']) if 'ops' in phase else [name]
        dist = _charts(page, name)['distribution-' + name]
        _drawn(dist, ops)
        assert sorted(s['label'] for s in dist['series']) == ops
    cells = dict((c[0], c) for c in page['cells'])
    assert cells['mix'][1] == '{:,}'.format(res['phases'][1]['attempted'])
    with io.open(html, encoding='utf-8') as f:
        text = f.read()
    assert not re.search(r'(src|href)\s*=', text), 'the page links to something'


def test_report_of_an_open_loop_run_shows_target_and_service_time(chromium, tmpdir):
    html = str(tmpdir.join('rate.html'))
    rc, out, err, res = run_cli(['--spawn', '--greenlets', '10', '--ops', '3000',
                                 '--phases', 'insert', '--rate', '6000', '--interval', '0.1',
                                 '--html', html])
    assert rc == 0, err
    assert_accounted(res)
    page = _render(chromium, html, tmpdir)
    whole = _charts(page)
    _drawn(whole['throughput'], ['attempted/s', 'target ops/s'])
    _drawn(whole['latency'], ['p99', 'service p99'])
    _drawn(_charts(page, 'insert')['distribution-insert'], ['insert', 'service time (all ops)'])


def test_report_of_a_pgbench_script_shows_its_statements_and_retries(chromium, tmpdir):
    html = str(tmpdir.join('tpcb.html'))
    rc, out, err, res = run_cli(['--backend', 'postgres', '--spawn', '--builtin', 'tpcb-like',
                                 '--greenlets', '8', '--ops', '1500', '--per-statement',
                                 '--max-tries', '5', '--html', html])
    assert rc == 0, err
    page = _render(chromium, html, tmpdir)
    table = chromium.run("""
        var t = document.querySelector('table[data-table="statements-tpcb-like"]');
        return t ? [].map.call(t.rows, function (tr) {
            return [].map.call(tr.cells, function (c) { return c.textContent; }); }) : null;""")
    assert table is not None, 'no per-statement table'
    assert table[0][:3] == ['script:line', 'command', 'count']
    rows = res['phases'][0]['script']['statements']
    assert [r[0] for r in table[1:]] == ['tpcb-like:%d' % r['line'] for r in rows]
    assert all(r[2] == '1,500' for r in table[1:]), table      # every line ran every time
    assert any('UPDATE pgbench_branches' in r[1] for r in table[1:])
    notes = chromium.run("""return [].map.call(
        document.querySelectorAll('section.phase p'), function (p) { return p.textContent; });""")
    assert any('transactions retried' in n and 'up to 5 tries' in n for n in notes), notes


def test_report_of_a_failing_threshold_says_failed_and_why(chromium, tmpdir):
    html = str(tmpdir.join('failed.html'))
    rc, out, err, res = run_cli(['--spawn', '--greenlets', '4', '--ops', '2000',
                                 '--phases', 'insert', '--fail-if', 'p50<1us,errors<1%',
                                 '--html', html])
    assert rc == 4, err
    page = _render(chromium, html, tmpdir)
    banner = page['verdict']
    assert banner['exit'] == '4' and banner['cls'] == 'bad', banner
    lines = banner['text'].splitlines()
    assert 'FAILED' in lines[0] and '1 of 2 thresholds failed' in lines[0], lines
    p50 = '{:,}'.format(int(res['phases'][0]['latency_us']['p50']))
    assert any('p50<1us' in l and 'FAILED' in l and p50 in l for l in lines), lines
    assert any('errors<1%' in l and 'held' in l for l in lines), lines


def test_report_of_a_fault_run_shows_the_outage_and_the_verify_verdict(chromium, tmpdir):
    html = str(tmpdir.join('fault.html'))
    rc, out, err, res = run_cli(['--spawn', '--wal-mode', 'write', '--phases', 'insert',
                                 '--ops', '0', '--duration', '2.5', '--greenlets', '10',
                                 '--interval', '0.1', '--fault', 'kill@1s,start@1.6s',
                                 '--verify', '--html', html])
    assert rc == 1, err
    assert_accounted(res)
    (o,) = res['phases'][0]['outages']
    page = _render(chromium, html, tmpdir)
    text = page['verdict']['text']
    assert page['verdict']['exit'] == '1' and page['verdict']['cls'] == 'bad'
    assert 'insert: OUTAGE %.2f-%.2f s (%.2f s)' % (o['start'], o['end'], o['duration']) in text
    v = res['verify']
    assert 'verify: {:,} keys read back: {:,} intact, 0 acknowledged_lost'.format(
        v['checked'], v['intact']) in text, text
    assert 'insert: errors by kind:' in text
    whole = _charts(page)
    _drawn(whole['throughput'], ['attempted/s', 'errors/s (right axis)'])
    # The intervals the dead server gave no sample for are a gap in its lines, never a
    # line drawn across the outage; the client's own line goes on.
    assert whole['server-rps']['points'] >= 10
    late = len([d for d in res['phases'][0]['server_metrics']['intervals'] if d.get('late')])
    series = dict((s['label'], s) for s in whole['server-rps']['series'])
    assert late >= 1 and series['client ops/s']['gaps'] == 0
    for label, s in series.items():
        assert not s['joined'], label
        if label != 'client ops/s':
            assert s['gaps'] == late, (label, s, late)
