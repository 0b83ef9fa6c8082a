"""Flame graphs' data (measure.flamegraph) and perf's samples folded (run.sampler):
folded stacks read and summed, the speedscope file, a merge of processes, a diff."""
from __future__ import absolute_import, division, print_function

import json

from gloaddriver.measure import flamegraph
from gloaddriver.run.sampler import fold_perf_script

PERF = '''tarantool 100/100 
\t          28b744 ev_feed_event+0x64 (/usr/bin/tarantool)
\t          1981f0 ev_run+0x30 (/usr/bin/tarantool)
\t               0 [unknown] ([unknown])

my worker 100/101 
\t    ffffffff8158feab do_syscall_64 ([kernel.kallsyms])
\t          1981f0 [unknown] (/usr/lib/libc.so.6)

other 200/200 
\t          1981f0 main+0x10 (/usr/bin/other)
'''


def test_perf_samples_fold_root_first_and_keep_only_the_servers_pids():
    stacks = fold_perf_script(PERF, set([100]))
    assert stacks == {'tarantool;[unknown];ev_run;ev_feed_event': 1,
                      'my worker;[libc.so.6];do_syscall_64': 1}


def test_a_section_counts_every_sample_and_names_the_top_frame(tmpdir):
    path = str(tmpdir.join('x.folded'))
    with open(path, 'w') as f:
        f.write('main (a.py:1);burn (a.py:5) 7\nmain (a.py:1) 2\nbroken line\n'
                'main (a.py:1);burn (a.py:5) 1\n')
    stacks = flamegraph.read_folded(path)
    assert stacks == {'main (a.py:1);burn (a.py:5)': 8, 'main (a.py:1)': 2}
    sec = flamegraph.section(stacks, [path], sampler='py-spy', rate=99)
    assert sec['samples'] == 10 and sec['dropped_samples'] == 0
    assert sec['top'][0] == {'frame': 'burn (a.py:5)', 'own_samples': 8, 'own_share': 0.8,
                             'total_share': 0.8}
    assert sec['top'][1]['total_share'] == 1.0
    out = str(tmpdir.join('x.json'))
    flamegraph.write_speedscope(stacks, 'insert', out)
    with open(out) as f:
        doc = json.load(f)
    frames = doc['shared']['frames']
    assert {'name': 'burn', 'file': 'a.py', 'line': 5} in frames
    assert sorted(doc['profiles'][0]['weights']) == [2, 8]


def test_processes_merge_by_adding_their_stacks_and_the_cap_loses_no_sample():
    a = flamegraph.section({'m;x': 3, 'm;y': 1}, ['a'], sampler='py-spy', rate=99,
                           sampler_cpu_seconds=0.5)
    b = flamegraph.section({'m;x': 2}, ['b'], sampler='py-spy', rate=99,
                           sampler_cpu_seconds=0.25)
    m = flamegraph.merged([a, None, b])
    assert m['stacks'] == {'m;x': 5, 'm;y': 1} and m['samples'] == 6
    assert m['files'] == ['a', 'b'] and m['sampler_cpu_seconds'] == 0.75
    many = dict(('s%d' % i, 1) for i in range(flamegraph.MAX_STACKS + 5))
    sec = flamegraph.section(many, [])
    assert len(sec['stacks']) == flamegraph.MAX_STACKS
    assert sec['samples'] == flamegraph.MAX_STACKS + 5 and sec['dropped_samples'] == 5


def test_compare_shows_where_b_spent_more_across_interpreters_names(tmpdir):
    import io
    from gloaddriver.report import results

    def result(stacks):
        fg = flamegraph.section(stacks, [], sampler='py-spy', rate=99)
        return {'phases': [{'name': 'insert', 'flamegraph': fg}]}
    # 2.7 names a method plainly, 3.x by its qualified name: the same frame
    a = result({'run (hub.py:1);on_readable (c.py:3)': 8, 'run (hub.py:1);_flush (s.py:9)': 2})
    b = result({'Hub.run (hub.py:1);C.on_readable (c.py:3)': 5,
                'Hub.run (hub.py:1);S._flush (s.py:9)': 5})
    out = io.StringIO() if str is not bytes else io.BytesIO()
    results.flamegraph_moves([a, b], out, str(tmpdir))
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0].startswith('insert: client CPU, A against B')
    moved = [l.split() for l in lines[1:3]]
    assert sorted((m[0], m[-2]) for m in moved) == [('+30.0%', '_flush'),
                                                     ('-30.0%', 'on_readable')], text
    assert 'run (hub.py:1)' in text and 'Hub.run' not in text
    with open(str(tmpdir.join('diff.client.insert.B.folded'))) as f:
        assert sorted(f.read().splitlines()) == ['run (hub.py:1);_flush (s.py:9) 2 5',
                                                 'run (hub.py:1);on_readable (c.py:3) 8 5']


def test_the_page_tree_holds_every_sample_and_leaves_out_only_slivers():
    from gloaddriver.report import dashboard, html
    stacks = {'main (/a/b/app.py:1);burn (/a/b/app.py:9)': 3000,
              'main (/a/b/app.py:1);other (/x/lib.py:4)': 999,
              'main (/a/b/app.py:1);tiny (/x/lib.py:8)': 1,
              'ev_run;epoll_wait': 500}
    tree = dashboard.flame_tree(stacks, total=5000)   # 500 samples the result left out
    assert tree['name'] == 'all' and tree['value'] == 5000
    (ev, main) = tree['children']
    assert (ev['name'], ev['value']) == ('ev_run', 500)
    assert (main['name'], main['value']) == ('main (app.py:1)', 4000)
    # under 1/2000 of the samples: left out, its sample still in its caller's width
    assert [(c['name'], c['value']) for c in main['children']] == [
        ('burn (app.py:9)', 3000), ('other (lib.py:4)', 999)]
    assert 'children' not in main['children'][0]
    # the page carries d3 and d3-flame-graph only when a phase has a graph to draw
    phase = {'name': 'burn', 'flamegraph': {'sampler': 'py-spy', 'rate': 99,
                                            'samples': 5000, 'stacks': stacks}}
    with_fg = dashboard.phase_view(phase, 0.0)
    assert [g['side'] for g in with_fg['flamegraphs']] == ['client']
    assert dashboard.phase_view({'name': 'x'}, 0.0)['flamegraphs'] is None
    view = {'title': 't', 'phases': [with_fg]}
    assert 'd3-flame-graph-tip' in html.page(view)
    assert 'd3-flame-graph-tip' not in html.page({'title': 't', 'phases': [{'name': 'x'}]})
    assert dashboard.has_flamegraph(dashboard.live_view(['--flamegraph=out'], ()))
    assert not dashboard.has_flamegraph(dashboard.live_view(['--ops', '10'], ()))
