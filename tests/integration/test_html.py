"""--html: the report of a real run, rendered by headless Chromium and measured there."""
from __future__ import absolute_import, division, print_function

import io
import os

import pytest

from tests.integration import browser
from tests.integration.conftest import assert_accounted, run_cli

# Every chart's drawn size and lines, as the browser laid them out.
MEASURE = """
var out = {title: document.title, resources: performance.getEntriesByType('resource').length,
           charts: [], sections: []};
document.querySelectorAll('section.phase').forEach(function (s) {
  out.sections.push(s.getAttribute('data-phase'));
});
document.querySelectorAll('figure.chart').forEach(function (f) {
  var svg = f.querySelector('svg');
  var box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  var lines = [].map.call(f.querySelectorAll('polyline.series'), function (l) {
    return {label: l.getAttribute('data-label'), points: +l.getAttribute('data-points'),
            length: l.getTotalLength(), stroke: getComputedStyle(l).stroke};
  });
  var bars = [].map.call(f.querySelectorAll('rect.bar'), function (b) {
    return {label: b.getAttribute('data-label'), width: b.getBoundingClientRect().width};
  });
  out.charts.push({kind: f.getAttribute('data-chart'), phase: f.getAttribute('data-phase'),
                   width: box.width, height: box.height, lines: lines, bars: bars,
                   empty: !!f.querySelector('.empty')});
});
return out;
"""


@pytest.fixture(scope='module')
def chromium():
    why = browser.missing()
    if why:
        pytest.fail(why)   # CI installs it: a missing browser is a broken setup, not a skip
    b = browser.Browser()
    yield b
    b.close()


def _render(chromium, html, tmpdir):
    chromium.open('file://' + os.path.abspath(html))
    page = chromium.run(MEASURE)
    png = chromium.screenshot(str(tmpdir.join('report.png')))
    assert png[:8] == b'\x89PNG\r\n\x1a\n' and len(png) > 20000   # a blank page is ~5 KB
    assert page['resources'] == 0, 'the page fetched something'
    return page


def _charts(page, phase):
    return dict((c['kind'], c) for c in page['charts'] if c['phase'] == phase)


def _drawn(chart, labels):
    """Each named line is there and has length on screen."""
    assert chart['width'] >= 300 and chart['height'] >= 120, chart
    assert not chart['empty'], chart
    lines = dict((l['label'], l) for l in chart['lines'])
    for label in labels:
        assert label in lines, (label, chart['kind'], sorted(lines))
        line = lines[label]
        assert line['stroke'] not in ('none', ''), line
        assert line['points'] == 1 or line['length'] > 1, line


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
    perf = res['phases'][0]['syscalls'].get('source') == 'perf_event'
    for phase in res['phases']:
        name = phase['name']
        assert len(phase['timeline']) >= (3 if name == 'mix' else 2), phase['timeline']
        charts = _charts(page, name)
        _drawn(charts['throughput'], ['attempted/s', 'ok/s'])
        _drawn(charts['latency'], ['p50', 'p99', 'p99.9', 'max'])
        ops = sorted(phase['ops']) if 'ops' in phase else [name]
        _drawn(charts['distribution'], ops)
        # A server chart needs the server's samples: a short phase on a busy machine
        # may have none that came in time (then there is nothing to draw, and no chart).
        rows = phase['server_metrics']['intervals']
        if rows:
            _drawn(charts['server-rps'], ['client ops/s'])
        if any(r.get('arena_used') is not None for r in rows):
            _drawn(charts['server-memory'], ['arena_used'])
        if perf:
            _drawn(charts['syscalls-over-time'], ['syscalls/op'])
            bars = dict((b['label'], b['width']) for b in charts['syscalls']['bars'])
            assert set(bars) == set(phase['syscalls']['by_name']), bars
            assert all(w > 0 for w in bars.values())
    mix = _charts(page, 'mix')
    assert sorted(l['label'] for l in mix['distribution']['lines']) == ['insert', 'select',
                                                                         'update']
    assert any(r.get('arena_used') is not None for r in res['phases'][1]['server_metrics']
               ['intervals']), 'the mix phase had no server sample: nothing was tested'
    server = set(l['label'] for l in mix['server-rps']['lines'])
    assert {'select/s', 'update/s'} <= server, server
    with io.open(html, encoding='utf-8') as f:
        text = f.read()
    assert 'http://' not in text and 'https://' not in text and '<script' not in text


def test_report_of_an_open_loop_run_shows_target_and_service_time(chromium, tmpdir):
    html = str(tmpdir.join('rate.html'))
    rc, out, err, res = run_cli(['--spawn', '--greenlets', '10', '--ops', '3000',
                                 '--phases', 'insert', '--rate', '6000', '--interval', '0.1',
                                 '--html', html])
    assert rc == 0, err
    assert_accounted(res)
    page = _render(chromium, html, tmpdir)
    charts = _charts(page, 'insert')
    _drawn(charts['throughput'], ['attempted/s', 'target'])
    _drawn(charts['latency'], ['p99', 'service p99'])
    _drawn(charts['distribution'], ['insert', 'service time (all ops)'])
