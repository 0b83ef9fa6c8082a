"""--stages end to end: ``python -m gloaddriver --stages ...`` against a real Tarantool,
with --json and --html."""
from __future__ import absolute_import, division, print_function

from tests.integration.conftest import assert_accounted, page_view, run_cli


def test_stages_ramp_greenlets_against_tarantool_and_the_reports_show_them(tarantool, space,
                                                                          tmpdir):
    page = str(tmpdir.join('stages.html'))
    rc, out, err, res = run_cli(['--space', space, '--phases', 'insert,select',
                                 '--stages', '0.6s:20,0.6s:20,0.6s:4', '--interval', '0.2',
                                 '--html', page], tarantool)
    assert rc == 0, err
    assert 'Traceback' not in err
    assert_accounted(res)
    assert res['manifest']['greenlets'] == 20 and res['manifest']['ops_per_phase'] == 0
    for p in res['phases']:
        assert 1.75 < p['seconds'] < 2.3, p['seconds']
        s = p['stages']
        assert [(x['start'], x['end'], x['target_from'], x['target_to']) for x in s] == [
            (0.0, 0.6, 0, 20), (0.6, 1.2, 20, 20), (1.2, 1.8, 20, 4)]
        for x, target in zip(s, (10.0, 20.0, 12.0)):
            assert x['unit'] == 'greenlets' and x['mean_target'] == target
            assert abs(x['mean_active'] - target) < 1.5, s
            assert x['attempted'] > 0 and x['p99_us'] > 0 and x['errors'] == 0
        assert sum(x['attempted'] for x in s) == p['attempted']
        for r in p['timeline']:
            assert abs(r['active'] - r['target']) <= 2, p['timeline']
        # the select phase reads the keys the time-bounded insert phase made
        assert p['misses'] == 0
    assert len([l for l in out.splitlines() if ': stage ' in l]) == 6
    view = page_view(page)
    for v, p in zip(view['phases'], res['phases']):
        marks = [m['label'] for m in v['marks']]
        assert 'stage 2 from 0.6 s: 20 -> 20 greenlets' in marks
        assert 'stage 3 from 1.2 s: 20 -> 4 greenlets' in marks
        # the concurrency chart: active greenlets and their target, row by row
        assert [r['target_greenlets'] for r in v['rows']] == [r['target'] for r in p['timeline']]


def test_rate_stages_ramp_the_open_loop_against_tarantool(tarantool, space):
    # Modest rates and many greenlets: the machine may be busy with other work.
    rc, _out, err, res = run_cli(['--space', space, '--phases', 'insert', '--greenlets', '50',
                                  '--stages', '0.5s:600/s,0.5s:600/s', '--interval', '0.25'],
                                 tarantool)
    assert rc == 0, err
    assert_accounted(res)
    (p,) = res['phases']
    assert p['rate']['target'] == 600.0
    first, second = p['stages']
    assert abs(first['achieved_rate'] - 300) < 60 and abs(second['achieved_rate'] - 600) < 120
    assert first['dropped'] == second['dropped'] == 0
    assert all('target' in r for r in p['timeline'])
