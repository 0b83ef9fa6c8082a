"""What a CI job reads: --fail-if thresholds (parsed, judged per phase and op, exit 4
when one fails) and --csv files."""
from __future__ import absolute_import, division, print_function


import pytest

from gloaddriver import cli, errors
from gloaddriver.config import fail_if
from tests import result_schema


def run(tmpdir, args, capsys=None):
    out = str(tmpdir.join('r.json'))
    rc = cli.main(['--backend', 'memory', '--progress', '0', '--json', out] + args)
    with open(out) as f:
        return rc, result_schema.read(f)


def test_all_held_exits_0_and_the_verdicts_are_in_the_result(tmpdir, capsys):
    rc, res = run(tmpdir, ['--ops', '300', '--fail-if',
                           'p99<10s,errors<1%,ops_per_sec>1,select:misses<1'])
    assert rc == 0
    v = res['thresholds']
    assert len(v) == 4 * 3 + 1 and all(x['held'] for x in v)   # 4 phases x 3, + select
    out = capsys.readouterr().out
    assert 'threshold p99<10s' in out and 'FAILED' not in out


def test_a_failed_threshold_exits_4_even_when_every_op_succeeded(tmpdir, capsys):
    rc, res = run(tmpdir, ['--ops', '300', '--phases', 'insert,select',
                           '--fail-if', 'insert:ops_per_sec>1000000000'])
    assert rc == errors.EXIT_THRESHOLD == 4
    (v,) = res['thresholds']
    assert (v['phase'], v['held']) == ('insert', False) and v['value'] > 0
    assert 'FAILED' in capsys.readouterr().out


def test_failed_ops_within_the_threshold_exit_0(tmpdir):
    rc, res = run(tmpdir, ['--ops', '100', '--phases', 'select', '--fail-every', '50',
                           '--fail-if', 'errors<5%'])
    assert res['phases'][0]['failed'] == 2 and rc == 0
    rc, res = run(tmpdir, ['--ops', '100', '--phases', 'select', '--fail-every', '50',
                           '--fail-if', 'errors<1'])
    assert rc == 4


def test_an_op_of_a_mix(tmpdir):
    rc, res = run(tmpdir, ['--ops', '200', '--mix', 'select=1,update=1', '--fail-if',
                           'mix.select:p99<10s,mix:errors<1'])
    assert rc == 0
    held = dict((v['condition'], (v['phase'], v['held'])) for v in res['thresholds'])
    assert held == {'mix.select:p99<10s': ('mix.select', True), 'mix:errors<1': ('mix', True)}


@pytest.mark.parametrize('flags,words', [
    (['--fail-if', 'selct:p99<2ms'], "no phase 'selct'; its phases are insert, select, "
                                     "update, delete"),
    (['--fail-if', 'p99<0'], 'can never hold'),
    (['--fail-if', 'errors<=0.5%,misses<101%'], 'at most 100%'),
    (['--fail-if', 'ok_per_sec>100%'], 'plain number'),
    (['--mix', 'select=1,update=1', '--fail-if', 'select:p99<2ms'],
     'select is an op of phase mix: write mix.select:'),
    (['--mix', 'select=1,update=1', '--fail-if', 'mix.insert:p99<2ms'],
     "phase mix has no op 'insert' of its own; its ops are select, update"),
    (['--phases', 'insert', '--fail-if', 'insert.insert:p99<2ms'], 'a phase of one op'),
])
def test_names_and_values_that_cannot_be_judged_exit_2_before_the_first_op(
        tmpdir, capsys, flags, words):
    out = tmpdir.join('r.json')
    rc = cli.main(['--backend', 'memory', '--progress', '0', '--ops', '100', '--json',
                   str(out)] + flags)
    assert rc == errors.EXIT_USAGE == 2
    captured = capsys.readouterr()
    assert words in captured.err and len(captured.err.strip().splitlines()) == 1
    assert not out.exists() and 'phase' not in captured.out    # nothing ran


@pytest.mark.parametrize('flag,path', [
    ('--html', '/proc/x.html'), ('--junit', '/proc/x.xml'), ('--csv', '/proc/run'),
    ('--callgrind', '/proc/prof')])
def test_every_output_path_is_tried_before_the_first_op(tmpdir, capsys, flag, path):
    out = tmpdir.join('r.json')
    rc = cli.main(['--backend', 'memory', '--progress', '0', '--ops', '100', '--json',
                   str(out), '--fail-if', 'p99<5s', flag, path])
    assert rc == 2
    assert flag in capsys.readouterr().err and not out.exists()
    assert tmpdir.listdir() == []          # the check leaves no file of its own behind


def test_an_output_that_fails_at_the_end_costs_no_other(tmpdir, capsys):
    from gloaddriver.report import output
    rc, res = run(tmpdir, ['--ops', '100', '--phases', 'insert'])
    paths = dict((k, str(tmpdir.join('again.' + k))) for k in ('json', 'junit'))
    failed = output.write(res, json_path=paths['json'], html_path='/proc/x.html',
                          csv_prefix=str(tmpdir.join('again')), junit_path=paths['junit'],
                          fail_if=fail_if.parse('p99<5s'))
    assert len(failed) == 1 and failed[0].startswith('--html /proc/x.html was not written')
    for path in list(paths.values()) + [str(tmpdir.join('again_stats.csv'))]:
        assert tmpdir.join(path.rsplit('/', 1)[1]).size() > 0
    assert '--html /proc/x.html was not written' in capsys.readouterr().err
    assert output.exit_code(res, failed) == errors.EXIT_OPS_FAILED


def test_junit_has_a_test_case_per_threshold_and_phase(tmpdir):
    import xml.etree.ElementTree as ET
    path = tmpdir.join('junit.xml')
    rc, res = run(tmpdir, ['--ops', '200', '--phases', 'insert,select', '--junit', str(path),
                           '--fail-if', 'p99<10s,insert:ops_per_sec>1000000000'])
    assert rc == 4
    root = ET.parse(str(path)).getroot()
    (suite,) = root.findall('testsuite')
    assert (suite.get('tests'), suite.get('failures')) == ('3', '1')
    cases = dict((c.get('classname') + ' ' + c.get('name'), c.find('failure'))
                 for c in suite.findall('testcase'))
    assert sorted(cases) == ['gloaddriver.insert insert:ops_per_sec>1000000000',
                             'gloaddriver.insert p99<10s', 'gloaddriver.select p99<10s']
    bad = cases['gloaddriver.insert insert:ops_per_sec>1000000000']
    assert bad is not None and bad.get('type') == 'threshold'
    assert cases['gloaddriver.select p99<10s'] is None


def test_junit_needs_thresholds():
    from gloaddriver import config as configuration
    with pytest.raises(errors.ConfigError) as e:
        configuration.parse(['--junit', 'j.xml'], environ={})
    assert '--fail-if' in str(e.value)


@pytest.mark.parametrize('text,words', [
    ('p99<<5ms', 'write METRIC<VALUE'),
    ('p98<5ms', 'add 98 to --percentiles'),
    ('q99<5ms', 'unknown metric'),
    ('p99<5%', 'us, ms or s'),
    ('ops_per_sec>5ms', 'plain number'),
    ('', 'at least one'),
])
def test_bad_conditions_are_one_line(text, words):
    with pytest.raises(errors.ConfigError) as e:
        fail_if.parse(text)
    assert words in str(e.value)


def test_latency_units():
    (c,) = fail_if.parse('p99.9<=2.5ms')
    assert (c['metric'], c['cmp'], c['limit']) == ('p99.9', '<=', 2500.0)
    # a bare latency is in milliseconds (as in k6); explicit units still work
    limits = [(c['metric'], c['limit'], c['unit'])
              for c in fail_if.parse('p95<2,p99<300us,max<1s,mean<1.5')]
    assert limits == [('p95', 2000.0, 'ms'), ('p99', 300.0, 'us'), ('max', 1e6, 's'),
                      ('mean', 1500.0, 'ms')]


def test_csv_files_carry_the_summary_the_timeline_and_the_failures(tmpdir):
    import csv
    import io
    prefix = str(tmpdir.join('run'))
    rc, res = run(tmpdir, ['--ops', '400', '--mix', 'select=1,update=1', '--fail-every', '100',
                           '--interval', '0.05', '--csv', prefix])
    assert rc == 1

    def rows(name):
        with io.open('%s_%s.csv' % (prefix, name), encoding='utf-8') as f:
            return list(csv.DictReader(f))
    stats = rows('stats')
    (phase,) = res['phases']
    assert [(r['phase'], r['op']) for r in stats] == [('mix', 'all'), ('mix', 'select'),
                                                      ('mix', 'update')]
    assert int(stats[0]['attempted']) == 400 and int(stats[0]['failed']) == 4
    assert sum(int(r['attempted']) for r in stats[1:]) == 400
    assert float(stats[0]['p99_us']) == phase['latency_us']['p99']
    history = rows('history')
    assert len(history) == len(phase['timeline'])
    assert sum(int(r['attempted']) for r in history) == 400
    for r in history:   # each row adds up as the table does
        assert int(r['ok']) + int(r['errors']) == int(r['attempted']), r
    assert 'p95_us' in history[0] and 'p95_us' in stats[0]
    failures = rows('failures')
    assert sum(int(r['count']) for r in failures) == 4
    assert set(r['kind'] for r in failures) == {'injected'}


def test_csv_prefix_in_a_missing_folder_is_refused_before_the_run(tmpdir):
    from gloaddriver import config as configuration
    with pytest.raises(errors.ConfigError) as e:
        configuration.parse(['--csv', str(tmpdir.join('no', 'such', 'run'))], environ={})
    assert '--csv' in str(e.value) and 'does not exist' in str(e.value)


def test_table_columns_widen_to_the_longest_name(tmpdir, capsys):
    rc, res = run(tmpdir, ['--ops', '200', '--mix', 'select=1,update=1'])
    out = capsys.readouterr().out.splitlines()
    start = [i for i, line in enumerate(out) if line.startswith('phase ')][0]
    table = out[start:start + 4]   # the header, the mix, its two ops
    assert [line.split()[0] for line in table] == ['phase', 'mix', 'select', 'update']
    # right-aligned columns of equal width: every line of the table is as long
    assert len(set(len(line) for line in table)) == 1, table
    # a name longer than the column's least width: still aligned
    from gloaddriver.report import text
    res['phases'][0]['name'] = 'a_rather_long_phase_name'
    lines = text.table(res)[1:5]
    assert len(set(len(line) for line in lines)) == 1, lines
    assert lines[1].startswith('a_rather_long_phase_name  ')


def test_percentiles_of_your_choice_in_the_table_csv_json_and_thresholds(tmpdir, capsys):
    import csv
    import io
    prefix = str(tmpdir.join('run'))
    rc, res = run(tmpdir, ['--ops', '3000', '--phases', 'insert', '--percentiles',
                           '50,90,99,99.9,99.99', '--csv', prefix,
                           '--fail-if', 'p99.99<10s,p99.9<10s'])
    assert rc == 0
    lat = res['phases'][0]['latency_us']
    # The chosen ones beside today's five (which every reader of a result knows).
    assert set(lat) == {'p50', 'p90', 'p95', 'p99', 'p999', 'p9999', 'max', 'mean'}
    assert lat['p999'] <= lat['p9999'] <= lat['max']
    assert res['manifest']['percentiles'] == [50.0, 90.0, 99.0, 99.9, 99.99]
    out = capsys.readouterr().out
    header = [line for line in out.splitlines() if line.startswith('phase ')][0].split()
    assert header[6:12] == ['p50us', 'p90us', 'p99us', 'p99.9us', 'p99.99us', 'maxus']
    assert 'threshold p99.99<10s' in out
    with io.open(prefix + '_stats.csv', encoding='utf-8') as f:
        (row,) = list(csv.DictReader(f))
    assert 'p95_us' not in row and int(row['p99.99_us']) == lat['p9999']


@pytest.mark.parametrize('text,words', [
    ('50,100', 'above 0 and below 100'), ('99.9,9.99', 'both be named p999'), ('x', 'got')])
def test_bad_percentiles_are_refused(text, words):
    from gloaddriver import config as configuration
    with pytest.raises(errors.ConfigError) as e:
        configuration.parse(['--percentiles', text], environ={})
    assert words in str(e.value)


def test_a_broken_abort_threshold_stops_the_run_keeps_what_it_measured_and_exits_4(
        tmpdir, capsys):
    # Each op takes 2 ms: p99<1ms breaks in the first full window, 1 s into a 30 s phase.
    rc, res = run(tmpdir, ['--ops', '0', '--duration', '30', '--phases', 'insert,select',
                           '--op-sleep', '0.002', '--greenlets', '4', '--interval', '0.2',
                           '--fail-if', 'p99<1ms@abort,errors<1', '--abort-window', '1'])
    assert rc == errors.EXIT_THRESHOLD == 4
    (p,) = res['phases']                     # select never ran
    assert p['seconds'] < 15 and p['ok'] > 0
    assert p['ok'] + p['failed'] + p['timed_out'] == p['attempted']
    broke = p['threshold_abort']
    assert (broke['condition'], broke['phase'], broke['unit']) == ('p99<1ms@abort', 'insert',
                                                                   'ms')
    assert broke['value'] >= 1 and broke['at_seconds'] >= 1 and broke['window_seconds'] >= 0.99
    assert 'p99<1ms@abort broke' in res['aborted']
    captured = capsys.readouterr()
    assert 'broke in phase insert and stopped the run' in captured.err
    assert [v['held'] for v in res['thresholds']][0] is False


def test_an_abort_threshold_waits_out_its_grace_and_one_that_holds_never_stops(tmpdir):
    rc, res = run(tmpdir, ['--ops', '0', '--duration', '1.5', '--phases', 'insert',
                           '--op-sleep', '0.002', '--interval', '0.1',
                           '--fail-if', 'p99<1ms@abort', '--abort-window', '0.3',
                           '--abort-grace', '5'])
    assert rc == 4 and res['aborted'] is None       # judged on the whole phase at the end
    assert 'threshold_abort' not in res['phases'][0] and res['phases'][0]['seconds'] >= 1.4
    rc, res = run(tmpdir, ['--ops', '0', '--duration', '1', '--phases', 'insert',
                           '--interval', '0.1', '--fail-if', 'p99<10s@abort',
                           '--abort-window', '0.3'])
    assert rc == 0 and res['aborted'] is None


def test_abort_takes_only_what_a_window_of_rows_holds():
    with pytest.raises(errors.ConfigError) as e:
        fail_if.parse('misses<1@abort')
    assert '@abort judges a sliding window' in str(e.value)
    (c,) = fail_if.parse('insert:ops_per_sec>1000@abort')
    assert c['abort'] and c['phase'] == 'insert'


def test_repeat_runs_the_phases_n_times_and_summarises_each_figure(tmpdir, capsys):
    rc, res = run(tmpdir, ['--ops', '500', '--phases', 'insert,delete', '--repeat', '3',
                           '--fail-if', 'errors<1'])
    assert rc == 0
    assert [(p['name'], p['repeat']) for p in res['phases']] == [
        ('insert', 1), ('delete', 1), ('insert', 2), ('delete', 2), ('insert', 3),
        ('delete', 3)]
    rep = res['repeat']
    assert (rep['rounds'], rep['ran']) == (3, 3)
    assert [p['name'] for p in rep['phases']] == ['insert', 'delete']
    ops = rep['phases'][0]['figures']['ops_per_sec']
    rates = [p['ops_per_sec'] for p in res['phases'] if p['name'] == 'insert']
    assert ops['values'] == rates
    assert (ops['best'], ops['worst'], ops['median']) == (max(rates), min(rates),
                                                          round(sorted(rates)[1], 1))
    assert ops['spread_pct'] == round(100.0 * (max(rates) - min(rates)) / ops['median'], 1)
    p99 = rep['phases'][0]['figures']['p99']
    assert p99['best'] == min(p99['values']) and p99['worst'] == max(p99['values'])
    # each round is judged on its own, and the table names each
    assert len(res['thresholds']) == 6 and res['thresholds'][2]['phase'] == 'insert #2'
    out = capsys.readouterr().out
    assert 'insert #3' in out and 'repeat: 3 of 3 rounds ran' in out


def test_repeat_stops_after_an_aborted_round(tmpdir):
    rc, res = run(tmpdir, ['--ops', '0', '--duration', '30', '--phases', 'insert',
                           '--op-sleep', '0.002', '--interval', '0.1', '--repeat', '3',
                           '--fail-if', 'p99<1ms@abort', '--abort-window', '0.3'])
    assert rc == 4 and len(res['phases']) == 1 and res['repeat']['ran'] == 1


def test_an_abort_threshold_on_one_op_of_a_mix(tmpdir):
    rc, res = run(tmpdir, ['--ops', '0', '--duration', '30', '--mix', 'select=1,update=1',
                           '--op-sleep', '0.002', '--interval', '0.1',
                           '--fail-if', 'mix.select:p99<1ms@abort,mix.update:p99<10s@abort',
                           '--abort-window', '0.5'])
    assert rc == 4
    broke = res['phases'][0]['threshold_abort']
    assert (broke['phase'], broke['op'], broke['condition']) == ('mix', 'select',
                                                                 'mix.select:p99<1ms@abort')
    assert res['thresholds'][0]['phase'] == 'mix.select' and res['phases'][0]['seconds'] < 15


@pytest.mark.parametrize('text,url', [
    ('127.0.0.1:9091', 'http://127.0.0.1:9091'),
    ('https://gw.example:9091/', 'https://gw.example:9091'),
    ('http://[::1]:9091/prefix', 'http://[::1]:9091/prefix'), ('ftp://gw:1', None), ('a b', None)])
def test_the_pushgateway_url_is_checked_before_the_run(text, url):
    from gloaddriver import config as configuration
    if url is None:
        with pytest.raises(errors.ConfigError) as e:
            configuration.parse(['--prometheus-push', text], environ={})
        assert 'URL of a Pushgateway' in str(e.value)
        return
    live = configuration.parse(['--prometheus-push', text], environ={}).output.live
    assert live.push == url and live.prefix == 'gloaddriver'
