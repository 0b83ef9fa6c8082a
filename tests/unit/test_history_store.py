"""The history store on SQLite (a real file, through the store's own write path), the
scenario key, relative --fail-if conditions, the baseline's noise rule and the step
detector. PostgreSQL, real runs and the trend page in a browser are in
tests/integration/test_history.py."""
from __future__ import absolute_import, division, print_function

import json

import pytest

from gloaddriver import config, errors
from gloaddriver.config import fail_if
from gloaddriver.measure import run_record, steps, store
from gloaddriver.report import baseline, history, thresholds


def synthetic_result(i, ops_per_sec=1000.0, p99=2000, syscalls=1.5, phases=('insert', 'select'),
                     aborted=None):
    """A result shaped as a run's (the keys the store reads), with these figures."""
    out = []
    for n, name in enumerate(phases):
        attempted = int(ops_per_sec * 2)
        out.append({'name': name, 'attempted': attempted, 'ok': attempted - 1, 'failed': 1,
                    'timed_out': 0, 'misses': 0, 'seconds': 2.0, 'ops_per_sec': ops_per_sec,
                    'ok_per_sec': ops_per_sec - 0.5, 'cpu_us_per_op': 20.0,
                    'started_unix': 1795000000.0 + 10 * i + 2 * n,
                    'latency_us': {'p50': p99 // 4, 'p90': p99 // 2, 'p95': p99 // 2,
                                   'p99': p99, 'p999': p99 * 2, 'max': p99 * 3, 'mean': 300.0},
                    'syscalls': {'per_op': syscalls, 'network_per_op': 1.0},
                    'errors': {'network': 1},
                    'outages': [{'start': 0.5, 'end': 0.7, 'duration': 0.2, 'open': False,
                                 'failed': 1, 'timed_out': 0}] if n == 0 else [],
                    'server_metrics': {'phase': {'cpu_pct': 50.0}}})
    return {'manifest': {'started': '2026-11-28T10:%02d:%02dZ' % (i // 60 % 60, i % 60),
                         'backend': 'tarantool', 'connector': 'buffered',
                         'interpreter': 'CPython 3.11.7', 'gloaddriver': '0.1.0',
                         'hostname': 'h', 'server': {'version': '2.6.0'}},
            'phases': out, 'aborted': aborted}


def record(st, result, scenario=('abc123def456', '--backend tarantool'), label=None, tags=(),
           code=0):
    return st.write(*run_record.rows(result, scenario, label, tags, code, ('f00d', 0)))


@pytest.fixture
def sqlite_store(tmpdir):
    st = store.open_store('sqlite:' + str(tmpdir.join('runs.db')))
    yield st
    st.close()


def test_a_run_is_written_and_read_back(sqlite_store):
    run_id = record(sqlite_store, synthetic_result(1, 1500.0, 3000, 1.25), label='v1',
                    tags=[('branch', 'main')])
    runs = sqlite_store.runs()
    assert [r['id'] for r in runs] == [run_id]
    r = runs[0]
    assert r['label'] == 'v1' and r['scenario'] == 'abc123def456' and r['git_commit'] == 'f00d'
    assert r['ops_per_sec'] == pytest.approx(1500.0) and r['p99_us'] == 3000
    assert r['failed'] == 2 and r['syscalls_per_op'] == pytest.approx(1.25)
    phases = sqlite_store.phases([run_id])
    assert [p['name'] for p in phases] == ['insert', 'select']
    assert phases[0]['p99_us'] == 3000 and phases[0]['outage_seconds'] == pytest.approx(0.2)
    assert json.loads(phases[0]['errors']) == {'network': 1}
    assert sqlite_store.tags([run_id]) == {run_id: {'branch': 'main'}}
    outages = sqlite_store.query('SELECT * FROM gloaddriver_outages')
    assert len(outages) == 1 and outages[0]['duration_s'] == pytest.approx(0.2)


def test_history_filters_by_tag_label_scenario_and_last(sqlite_store):
    for i in range(6):
        record(sqlite_store, synthetic_result(i), scenario=('aaaa%08d' % (i % 2), 'x'),
               label='L%d' % i, tags=[('ci', 'nightly' if i % 3 == 0 else 'push')])
    assert [r['label'] for r in sqlite_store.runs(where=[('ci', 'nightly')])] == ['L0', 'L3']
    assert [r['label'] for r in sqlite_store.runs(where=[('label', 'L4')])] == ['L4']
    assert [r['label'] for r in sqlite_store.runs(scenario='aaaa00000001')] == ['L1', 'L3', 'L5']
    assert [r['label'] for r in sqlite_store.runs(last=2)] == ['L4', 'L5']


def test_1000_stored_runs_are_listed_whole(sqlite_store, tmpdir, capsys):
    # How fast is measured outside the suite (docs/keeping-results.md has the figure).
    for i in range(1000):
        record(sqlite_store, synthetic_result(i, 1000.0 + i), label='r%d' % i)
    url = 'sqlite:' + str(tmpdir.join('runs.db'))
    assert history.main(['--store', url, '--last', '0']) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1001 and lines[0].startswith('started (UTC)')
    assert '#1000' in lines[-1] and 'r999' in lines[-1]


def test_a_store_of_another_schema_version_is_refused(tmpdir):
    url = 'sqlite:' + str(tmpdir.join('runs.db'))
    st = store.open_store(url)
    st.execute('UPDATE gloaddriver_schema SET version = 99')
    st.conn.commit()
    st.close()
    with pytest.raises(errors.SetupError) as e:
        store.open_store(url)
    assert 'schema version 99' in str(e.value)


@pytest.mark.parametrize('text,why', [
    ('foo.db', 'sqlite:PATH'), ('sqlite:', 'needs a file'),
    ('mysql://x/y', 'postgresql://')])
def test_a_store_url_that_names_none_is_refused(text, why):
    with pytest.raises(errors.ConfigError) as e:
        store.parse_url(text)
    assert why in str(e.value)


def test_a_password_in_a_store_url_is_never_shown():
    assert store.masked('postgresql://me:secret@127.0.0.1:5432/db') == \
        'postgresql://me:***@127.0.0.1:5432/db'


def _scenario(argv, environ=None):
    return config.parse(argv + ['--store', 'sqlite:/tmp/x.db'], environ or {}).output.scenario


def test_the_scenario_is_the_flags_that_shape_the_load():
    base = _scenario(['--spawn', '--ops', '1000'])
    # Output flags, a label and tags are not the scenario; a default written out is none.
    assert _scenario(['--spawn', '--ops', '1000', '--label', 'x', '--tag', 'a=b', '--json',
                      '/tmp/h.json', '--progress', '0', '--greenlets', '10']) == base
    assert _scenario(['--ops', '1000', '--spawn']) == base
    # The load and the server kind are.
    assert _scenario(['--spawn', '--ops', '2000'])[0] != base[0]
    assert _scenario(['--spawn', '--ops', '1000', '--greenlets', '20'])[0] != base[0]
    assert _scenario(['--spawn', '--ops', '1000', '--wal-mode', 'write'])[0] != base[0]
    assert _scenario(['--backend', 'postgres', '--spawn', '--ops', '1000'])[0] != base[0]
    assert base[1].startswith('--backend tarantool --spawn') and '--ops 1000' in base[1]


def test_the_store_comes_from_the_environment_when_not_given():
    c = config.parse(['--spawn'], {'GLOADDRIVER_STORE': 'sqlite:/tmp/env.db'})
    assert c.output.store == 'sqlite:/tmp/env.db' and c.output.scenario is not None
    assert config.parse(['--spawn'], {}).output.store is None


@pytest.mark.parametrize('argv,why', [
    (['--label', 'x'], 'goes with a history store'),
    (['--baseline', 'history'], 'goes with a history store'),
    (['--store', 'sqlite:/tmp/x.db', '--tag', 'nokey'], 'NAME=VALUE'),
    (['--store', 'sqlite:/tmp/x.db', '--tag', 'commit=1'], 'kept by the store itself'),
    (['--store', 'sqlite:/tmp/x.db', '--baseline', 'history:1'], '2 or more'),
    (['--store', 'sqlite:/tmp/x.db', '--fail-if', 'p99<+10%'], 'give --baseline'),
    (['--store', 'sqlite:/tmp/x.db', '--baseline', 'history', '--fail-if', 'p99<+10'],
     'written in %'),
    (['--store', 'sqlite:/tmp/x.db', '--baseline', 'history', '--fail-if', 'errors<+1%'],
     'judged on a latency'),
    (['--store', 'sqlite:/tmp/x.db', '--baseline', 'history', '--fail-if',
      'p99<+10%@abort'], 'judged at its end'),
])
def test_bad_history_flags_are_refused_before_the_run(argv, why):
    with pytest.raises(errors.ConfigError) as e:
        config.parse(['--spawn'] + argv, {})
    assert why in str(e.value)


def test_the_baseline_brings_its_default_conditions_unless_given_relative_ones():
    c = config.parse(['--spawn', '--store', 'sqlite:/tmp/x.db', '--baseline', 'history'], {})
    assert [x['text'] for x in c.output.fail_if] == ['ops_per_sec>-10%', 'p50<+10%',
                                                     'errors<0.1%']
    assert c.output.baseline == 5
    c = config.parse(['--spawn', '--store', 'sqlite:/tmp/x.db', '--baseline', 'history:3',
                      '--fail-if', 'p99<5ms,ops_per_sec>-5%'], {})
    assert [x['text'] for x in c.output.fail_if] == ['p99<5ms', 'ops_per_sec>-5%']
    assert c.output.baseline == 3


def _base(values, metric='ops_per_sec'):
    runs = [{'id': i + 1} for i in range(len(values))]
    rows = [{'run_id': i + 1, 'name': 'mix', metric: v, 'latency': '{}'}
            for i, v in enumerate(values)]
    return baseline.build(runs, rows, 5, 'k', 'sqlite:x')


def _judge(text, value, values):
    cond = fail_if.parse(text)[0]
    return baseline.judge(cond, 'mix', value, _base(values), thresholds.holds)


def test_a_change_beyond_the_limit_but_inside_the_noise_holds():
    noisy = [1000.0, 800.0, 1100.0, 900.0, 1200.0]     # mean 1000, 3 sd = 474
    v = _judge('ops_per_sec>-10%', 850.0, noisy)
    assert v['held'] and 'inside the noise' in v['why'] and v['value'] == pytest.approx(-15.0)
    quiet = [1000.0, 1010.0, 990.0, 1005.0, 995.0]     # 3 sd = 24
    v = _judge('ops_per_sec>-10%', 850.0, quiet)
    assert not v['held'] and v['baseline']['runs'] == 5
    assert v['baseline']['mean'] == pytest.approx(1000.0)
    # Inside the limit: held, however quiet the baseline.
    assert _judge('ops_per_sec>-10%', 950.0, quiet)['held']


def test_without_two_baseline_runs_a_relative_condition_holds_with_a_note():
    v = _judge('ops_per_sec>-10%', 10.0, [1000.0])
    assert v['held'] and 'no baseline yet' in v['why'] and v['value'] is None


def test_a_baseline_that_could_not_be_read_fails_the_relative_conditions():
    base = baseline.build([], [], 5, 'k', 'sqlite:x')
    base['error'] = 'database is locked'
    cond = fail_if.parse('ops_per_sec>-10%')[0]
    v = baseline.judge(cond, 'mix', 1000.0, base, thresholds.holds)
    assert not v['held'] and 'could not be read: database is locked' in v['why']
    assert 'could not be read' in baseline.line(base)


def test_relative_latency_conditions_read_the_latency_block():
    runs = [{'id': i + 1} for i in range(3)]
    rows = [{'run_id': i + 1, 'name': 'mix', 'latency': json.dumps({'p99': 1000 + i})}
            for i in range(3)]
    base = baseline.build(runs, rows, 3, 'k', 'sqlite:x')
    cond = fail_if.parse('p99<+10%')[0]
    assert not baseline.judge(cond, 'mix', 1500, base, thresholds.holds)['held']
    assert baseline.judge(cond, 'mix', 1050, base, thresholds.holds)['held']


def test_a_step_is_found_where_it_begins():
    values = [1000, 1008, 995, 1003, 998, 1001, 800, 805, 797, 803, 799]
    found = steps.find(values)
    assert [s['index'] for s in found] == [6]
    assert found[0]['change_pct'] == pytest.approx(-20.0, abs=1.0)


def test_noise_and_a_lone_outlier_are_no_step():
    assert steps.find([1000, 1008, 995, 1003, 998, 1001, 1004, 997]) == []
    assert steps.find([1000, 1000, 1000, 1300, 1000, 1000, 1000]) == []
    assert steps.find([1000, 1000, 1000, 1030, 1030, 1030]) == []   # 3 %: below 5 %


def test_a_history_line_says_what_a_user_needs():
    line = history.line({'id': 12, 'started': '2026-11-28T10:23:57Z', 'label': 'v2',
                         'scenario': 'abc123def456', 'ops_per_sec': 1520.3, 'p99_us': 15895,
                         'syscalls_per_op': 1.61, 'failed': 0, 'aborted': None,
                         'exit_code': 4})
    assert line.split() == ['2026-11-28', '10:23:57', '#12', 'v2', 'abc123def456', '1,520',
                            '15,895', '1.61', '0', 'exit', '4']
    assert history.HEAD.split()[:3] == ['started', '(UTC)', 'id']


def test_the_git_commit_is_the_checkout_s_or_none(tmpdir):
    import os
    import re
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    commit, dirty = run_record.git_commit(root)
    assert re.match(r'^[0-9a-f]{40}$', commit) and dirty in (0, 1)
    assert run_record.git_commit(str(tmpdir)) == (None, None)


def test_a_dsn_password_is_neither_in_the_scenario_nor_its_key():
    base = _scenario(['--backend', 'postgres', '--dsn', 'postgresql://u:first@h/db'])
    other = _scenario(['--backend', 'postgres', '--dsn', 'postgresql://u:second@h/db'])
    assert 'first' not in base[1] and 'u:***@h/db' in base[1], base
    assert base == other
    kw = _scenario(['--backend', 'postgres', '--dsn', "host=h password=s3cret dbname=d"])
    assert 's3cret' not in kw[1] and 'password=***' in kw[1], kw


def test_a_label_and_tags_of_any_text_are_stored(sqlite_store):
    # On Python 2.7 argv's values are byte strings; sqlite3 takes only text.
    def raw(text):
        return text.encode('utf-8') if bytes is str else text
    record(sqlite_store, synthetic_result(0), label=raw(u'caf\xe9'),
           tags=[(raw(u'who'), raw(u'Jos\xe9'))])
    (run,) = sqlite_store.runs(where=[(u'who', u'Jos\xe9')])
    assert run['label'] == u'caf\xe9'


def test_only_the_password_of_a_store_url_is_masked():
    assert store.masked('postgresql://u:pw@h/db') == 'postgresql://u:***@h/db'
    assert store.masked('postgresql://u@h/db?password=pw') == 'postgresql://u@h/db?password=***'
