"""The report page's flame graph, in headless Chromium, from a real run sampled by py-spy:
the function a workload file burns its CPU in is the widest frame, a click zooms on it,
the search box highlights it, hovering names its samples; the live page draws the graph
when the run ends. And a page without a flame graph does not carry d3."""
from __future__ import absolute_import, division, print_function

import io
import os
import re
import subprocess
import sys
import time

import pytest

from gloaddriver.backends.spawn import free_port
from gloaddriver.report import dashboard
from tests.integration.conftest import ROOT, ended, run_cli
from tests.integration.test_dashboard import _listening
from tests.integration.test_flamegraphs import needs_py_spy, own_share

# Three parts of the op's CPU in burn_cpu, one in burn_less_cpu: the graph has a frame
# that is most of the phase and a sibling of it, so a zoom on the first is seen to
# widen it and to hide the second, whatever the machine's load.
WORKLOAD = '''
def burn_cpu(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def burn_less_cpu(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def op_burn(db, key):
    burn_cpu(150000)
    burn_less_cpu(50000)
    db.eval(u'return 1')   # a request: the op yields to the hub, the phase can end
'''

# Each frame of the client's graph as the page has drawn it: its name, the width of its
# box, its fill and whether it is faded (an ancestor of the frame zoomed on).
FRAMES = """
var fig = document.querySelector('figure[data-flame="client"]');
var svg = fig.querySelector('svg');
return {width: +svg.getAttribute('width'),
        hover: fig.querySelector('.flame-hover').textContent,
        found: fig.querySelector('.flame-found').textContent,
        frames: [].map.call(svg.querySelectorAll('g.frame'), function (g) {
          var r = g.querySelector('rect');
          return {name: g.getAttribute('name'), width: +(r.getAttribute('width') || 0),
                  fill: r.getAttribute('fill'), fade: g.classList.contains('fade')};
        }),
        scripts: document.scripts.length,
        resources: performance.getEntriesByType('resource').map(function (e) { return e.name; })};
"""


def _named(frames, prefix):
    return [f for f in frames if f['name'].startswith(prefix + ' (')]


def _widest(frames, prefix):
    found = _named(frames, prefix)
    assert found, (prefix, sorted(set(f['name'] for f in frames))[:30])
    return max(found, key=lambda f: f['width'])


def _until(chromium, check, timeout=15):
    """The page's frames once ``check`` holds of them and they have stopped moving
    (d3-flame-graph animates its boxes to their widths); the last ones seen when that
    never comes."""
    deadline = time.time() + timeout
    last = None
    while True:
        page = chromium.run(FRAMES)
        if (check(page) and page == last) or time.time() > deadline:
            return page
        last = page
        time.sleep(0.2)


@needs_py_spy
def test_the_page_draws_the_burning_function_and_zooms_and_searches(tarantool, tmpdir,
                                                                   chromium):
    workload = str(tmpdir.join('burn.py'))
    with open(workload, 'w') as f:
        f.write(WORKLOAD)
    html = str(tmpdir.join('report.html'))
    rc, out, err, res = run_cli(['--workload-file', workload, '--greenlets', '4', '--ops', '0',
                                 '--duration', '1.5', '--phases', 'burn',
                                 '--flamegraph', str(tmpdir.join('fg')), '--html', html],
                                tarantool)
    assert rc == 0, err
    (phase,) = res['phases']
    stacks = phase['flamegraph']['stacks']
    assert phase['flamegraph']['samples'] > 30, phase['flamegraph']
    # burn_cpu has most of the phase's client samples; burn_less_cpu has some
    assert own_share(stacks, 'burn_cpu') > 0.5, phase['flamegraph']['top'][:3]
    assert own_share(stacks, 'burn_less_cpu') > 0.05, phase['flamegraph']['top'][:3]

    chromium.open('file://' + os.path.abspath(html))
    # d3-flame-graph grows the boxes to their widths after the page has loaded
    page = _until(chromium, lambda p: _named(p['frames'], 'burn_cpu') and
                  _widest(p['frames'], 'burn_cpu')['width'] > 0)
    assert page['resources'] == [], 'the page fetched something'
    assert page['scripts'] == 5   # the data, uPlot, d3, d3-flame-graph, the page's own
    w = page['width']
    assert w >= 500, page['width']   # half of a 1400-pixel window, or all of it
    burn, less = _widest(page['frames'], 'burn_cpu'), _widest(page['frames'], 'burn_less_cpu')
    # the boxes are as wide as their samples: burn_cpu most of the graph, its sibling less
    assert 0.5 * w < burn['width'] < w - 1 and 0 < less['width'] < burn['width'], (burn, less, w)

    # hover: the frame's name, its samples and its share of the phase's samples
    rect = _rect_of(chromium, 'burn_cpu')
    chromium.hover(rect)
    page = _until(chromium, lambda p: 'burn_cpu' in p['hover'])
    m = re.match(r"burn_cpu \(burn\.py:\d+\): (\d+) samples, (\d+\.\d+)% of the phase's$",
                 page['hover'])
    assert m, page['hover']
    n, share = int(m.group(1)), float(m.group(2))
    assert 0 < n <= phase['flamegraph']['samples']
    assert abs(share - 100.0 * n / phase['flamegraph']['samples']) < 0.006, (m.group(0), phase)

    # search: the frames whose name has the text turn magenta, the others keep their colour
    chromium.type(chromium.elements('figure[data-flame="client"] input[type=search]')[0],
                  'burn_cpu')
    page = _until(chromium, lambda p: _widest(p['frames'], 'burn_cpu')['fill'] == '#E600E6')
    assert all(f['fill'] == '#E600E6' for f in _named(page['frames'], 'burn_cpu')), page['frames']
    assert not [f for f in page['frames'] if f['fill'] == '#E600E6' and
                not f['name'].startswith('burn_cpu (')], page['frames']
    assert re.match(r'\d+ frames?, \d+ samples \(\d+\.\d+%\)$', page['found']), page['found']

    # a click on burn_cpu zooms on it: its box takes the graph's width, its sibling
    # goes (no box, or one of no width), its callers are faded
    def gone(frames):
        return all(f['width'] == 0 for f in _named(frames, 'burn_less_cpu'))
    chromium.click(_rect_of(chromium, 'burn_cpu'))
    page = _until(chromium, lambda p: _widest(p['frames'], 'burn_cpu')['width'] >= w - 0.5 and
                  gone(p['frames']))
    assert _widest(page['frames'], 'burn_cpu')['width'] >= w - 0.5, page['frames']
    assert gone(page['frames']), page['frames']
    assert any(f['fade'] and f['name'].startswith('op_burn (') for f in page['frames'])


def _rect_of(chromium, name):
    """The widest box of the frames named ``name`` in the client's graph."""
    widths = chromium.run("""
      return [].map.call(document.querySelectorAll('figure[data-flame="client"] g.frame'),
        function (g) {
          return [g.getAttribute('name'), +g.querySelector('rect').getAttribute('width')];
        });
    """)
    rects = chromium.elements('figure[data-flame="client"] g.frame rect')
    assert len(rects) == len(widths)
    best = max((i for i, (n, _w) in enumerate(widths) if n.startswith(name + ' (')),
               key=lambda i: widths[i][1])
    return rects[best]


def test_a_page_without_a_flame_graph_carries_no_d3(tarantool, tmpdir):
    html = str(tmpdir.join('report.html'))
    rc, out, err, res = run_cli(['--ops', '2000', '--phases', 'insert', '--html', html],
                                tarantool)
    assert rc == 0, err
    with io.open(html, encoding='utf-8') as f:
        text = f.read()
    # neither d3's header nor d3-flame-graph's own stylesheet is in it
    assert 'https://d3js.org' not in text and 'd3-flame-graph-tip' not in text
    assert text.count('<script') == 3   # the data, uPlot, the page's own
    assert len(text) < 200000, len(text)   # d3 alone is 280 KB
    assert not dashboard.has_flamegraph(dashboard.view(res))


@needs_py_spy
def test_the_live_page_of_a_sampled_run_draws_its_flame_graph_at_the_end(chromium, tmpdir):
    # the live page is served before any graph exists: it carries d3 and d3-flame-graph
    # because the run was started with --flamegraph, and draws the graph from the final
    # view the driver sends it
    port = free_port()
    errf = open(str(tmpdir.join('stderr')), 'w+')
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', '--spawn', '--greenlets', '20',
                          '--phases', 'insert', '--ops', '0', '--duration', '3',
                          '--progress', '0', '--flamegraph', str(tmpdir.join('fg')),
                          '--web', '127.0.0.1:%d' % port],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=errf,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        deadline = time.time() + 30
        while not _listening(port) and time.time() < deadline:
            time.sleep(0.1)
        chromium.open('http://127.0.0.1:%d/' % port)
        live = chromium.run('return {scripts: document.scripts.length, '
                            'verdict: !!document.querySelector("#verdict[data-exit]")}')
        p.communicate()
    finally:
        err = ended(p, errf)
    assert p.returncode == 0, err
    assert live == {'scripts': 5, 'verdict': False}, live   # opened while the run went
    page = _until(chromium, lambda pg: len(pg['frames']) > 2 and
                  all(f['width'] > 0 for f in pg['frames'] if f['name'] == 'all'))
    assert [f for f in page['frames'] if f['name'] == 'all' and f['width'] == page['width']]
    assert len(page['frames']) > 2, page


DIFF = """
var fig = document.querySelector('figure[data-flame="client"]');
return {differential: fig.getAttribute('data-differential'),
        caption: fig.querySelector('figcaption').textContent,
        frames: [].map.call(fig.querySelectorAll('svg g.frame'), function (g) {
          return {name: g.getAttribute('name'), fill: g.querySelector('rect').getAttribute('fill'),
                  width: +(g.querySelector('rect').getAttribute('width') || 0)};
        })};
"""


def _rgb(fill):
    return tuple(int(c) for c in re.match(r'rgb\((\d+),\s*(\d+),\s*(\d+)\)$', fill).groups())


@needs_py_spy
def test_compare_draws_where_the_second_run_spent_more_in_red_and_less_in_blue(
        tarantool, tmpdir, chromium):
    # The same file at the same path, its two burns swapped between the runs: B spends
    # three parts in burn_less_cpu where A spent one.
    workload = str(tmpdir.join('burn.py'))
    results = []
    for name, swap in (('a', False), ('b', True)):
        with open(workload, 'w') as f:
            f.write(WORKLOAD.replace('burn_cpu(150000)', 'burn_cpu(50000)')
                    .replace('burn_less_cpu(50000)', 'burn_less_cpu(150000)')
                    if swap else WORKLOAD)
        path = str(tmpdir.join(name + '.json'))
        rc, out, err, res = run_cli(['--workload-file', workload, '--greenlets', '4', '--ops',
                                     '0', '--duration', '1.5', '--phases', 'burn',
                                     '--flamegraph', str(tmpdir.join('fg-' + name)),
                                     '--json', path], tarantool)
        assert rc == 0, err
        results.append(path)
    page = str(tmpdir.join('diff.html'))
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', 'compare'] + results +
                         ['--html', page], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=ROOT))
    out, err = p.communicate()
    assert p.returncode == 0, err
    assert ('wrote %s' % page) in out.decode('utf-8')
    chromium.open('file://' + os.path.abspath(page))
    deadline, got = time.time() + 15, None
    while time.time() < deadline:
        got = chromium.run(DIFF)
        if _named(got['frames'], 'burn_cpu') and _named(got['frames'], 'burn_less_cpu') \
                and _widest(got['frames'], 'burn_cpu')['width'] > 0:
            break
        time.sleep(0.2)
    assert got['differential'] == 'true' and 'against A (' in got['caption'], got['caption']
    # Red where B spent more of its samples than A did, blue where it spent fewer.
    r, g, b = _rgb(_widest(got['frames'], 'burn_less_cpu')['fill'])
    assert r > g and g == b, (r, g, b)
    r, g, b = _rgb(_widest(got['frames'], 'burn_cpu')['fill'])
    assert b > r and r == g, (r, g, b)


def test_a_differential_tree_gives_each_frame_its_samples_less_its_share_elsewhere():
    a = {'main;work;burn': 30, 'main;work;other': 10}
    b = {'main;work;burn': 20, 'main;work;other': 50, 'main;new': 10}
    tree = dashboard.flame_tree(b, against=a)
    assert tree['value'] == 80 and tree['delta'] == 0.0
    main = tree['children'][0]
    assert main['name'] == 'main' and main['delta'] == 0.0
    kids = dict((k['name'], k) for k in main['children'])
    assert kids['new']['delta'] == 10.0            # not in A at all
    work = dict((k['name'], k) for k in kids['work']['children'])
    # A's shares scaled to B's 80 samples: burn 60, other 20
    assert work['burn']['delta'] == 20 - 60.0 and work['other']['delta'] == 50 - 20.0
    assert 'delta' not in dashboard.flame_tree(b)
