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


def test_an_op_of_a_mix_and_a_phase_that_did_not_run(tmpdir):
    rc, res = run(tmpdir, ['--ops', '200', '--mix', 'select=1,update=1', '--fail-if',
                           'mix.select:p99<10s,nosuch:p99<1s'])
    assert rc == 4
    held = dict((v['condition'], v['held']) for v in res['thresholds'])
    assert held == {'mix.select:p99<10s': True, 'nosuch:p99<1s': False}


@pytest.mark.parametrize('text,words', [
    ('p99<<5ms', 'write METRIC<VALUE'),
    ('p98<5ms', 'unknown metric'),
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
