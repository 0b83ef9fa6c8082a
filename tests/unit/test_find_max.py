"""--find-max: its flags checked before the first op, and the report of a search. No
server: the config of tests/fakebackend's dict (registered in conftest.py); the search
itself runs on real servers in tests/integration/test_find_max.py."""
from __future__ import absolute_import, division, print_function

import pytest

from gloaddriver import cli, errors
from gloaddriver import config as configuration
from gloaddriver.report import find_max as report
from gloaddriver.report import verdict


def parse(*argv):
    return configuration.parse(['--backend', 'memory'] + list(argv), environ={})


def test_find_max_takes_its_defaults_and_the_search_s_own_flags():
    fm = parse('--phases', 'select', '--find-max', 'p99<5ms,errors<0.1%').load.find_max
    assert [c['text'] for c in fm.conditions] == ['p99<5ms', 'errors<0.1%']
    assert (fm.start, fm.step, fm.warmup, fm.resolution, fm.max_steps) == (
        100.0, 5.0, 1.0, 0.05, 20)
    load = parse('--phases', 'select', '--find-max', 'p99<5', '--find-max-start', '50',
                 '--find-max-step', '2s', '--find-max-warmup', '0', '--find-max-resolution',
                 '10%', '--find-max-steps', '7').load
    fm = load.find_max
    assert (fm.start, fm.step, fm.warmup, fm.resolution, fm.max_steps) == (
        50.0, 2.0, 0.0, 0.1, 7)
    assert load.ops == 0 and load.rate is None     # each step's window ends it
    assert parse('--phases', 'select').load.find_max is None


@pytest.mark.parametrize('argv,words', [
    (['--find-max', 'p99<5ms', '--rate', '100'], '--find-max and --rate exclude each other'),
    (['--find-max', 'p99<5ms', '--stages', '1s:5/s'],
     '--find-max and --stages exclude each other'),
    (['--find-max', 'p99<5ms', '--stages', '1s:5'], '--find-max and --stages exclude each other'),
    (['--find-max', 'p99<5ms', '--duration', '3'], '--find-max and --duration exclude'),
    (['--find-max', 'p99<5ms', '--ops', '1000'], '--find-max and --ops exclude'),
    (['--find-max', 'p99<5ms', '--repeat', '2'], '--find-max and --repeat exclude'),
    (['--find-max', 'p99<5ms', '--verify'], '--find-max and --verify exclude'),
    (['--find-max', 'p99<5ms', '--fail-if', 'p99<5ms'], '--find-max and --fail-if exclude'),
    (['--find-max', 'p99 under 5ms'], "--find-max 'p99 under 5ms': write METRIC<VALUE"),
    (['--find-max', 'p99<5%'], '--find-max \'p99<5%\': a latency takes us, ms or s'),
    (['--find-max', 'p99<50ms@abort'], 'leave @abort out'),
    (['--find-max', 'insert:p99<5ms'], "this run has no phase 'insert'"),
    (['--find-max', 'p99<5ms', '--find-max-start', '0'], '--find-max-start must be above 0'),
    (['--find-max', 'p99<5ms', '--find-max-resolution', '0'],
     '--find-max-resolution \'0\': write a percentage'),
    (['--find-max', 'p99<5ms', '--find-max-resolution', 'fine'],
     '--find-max-resolution \'fine\''),
    (['--find-max-step', '2'], '--find-max-step goes with --find-max CONDITIONS'),
])
def test_find_max_refuses_what_it_does_not_go_with(argv, words):
    with pytest.raises(errors.ConfigError) as e:
        parse('--phases', 'select', *argv)
    assert words in str(e.value)


def test_find_max_searches_one_phase_or_mix():
    with pytest.raises(errors.ConfigError) as e:
        parse('--phases', 'insert,select', '--find-max', 'p99<5ms')
    assert '--find-max searches one phase or mix; got phases insert, select' in str(e.value)
    # A mix with its load phase first: the load runs as usual, the mix is searched.
    fm = parse('--mix', 'select=9,insert=1', '--load', '--find-max', 'p99<5ms').load.find_max
    assert fm is not None


def test_with_no_phase_named_the_search_takes_the_workload_s_read(capsys):
    # The plainest --find-max was refused: the default phases are four. It searches the
    # read, after a load of the keys (what the default phases would have inserted), and
    # says so.
    load = parse('--find-max', 'p99<5ms').load
    assert [(p.name, p.weights) for p in load.phases] == [
        ('load', (('insert', 1),)), ('select', (('select', 1),))]
    assert load.find_max is not None and load.keys == 100000
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and "searches the workload's read, select" in err
    assert [p.name for p in parse('--find-max', 'p99<5ms', '--no-load').load.phases] == [
        'select']
    # --processes' children are told --load when the parent loads first: the same phases.
    assert [p.name for p in parse('--find-max', 'p99<5ms', '--load').load.phases] == [
        'load', 'select']
    # A phase named is searched as named.
    assert [p.name for p in parse('--find-max', 'p99<5ms', '--phases', 'update')
            .load.phases] == ['update']


@pytest.mark.parametrize('argv', [[], ['--phases', 'insert,select']])
def test_a_malformed_objective_is_said_before_the_phases(argv):
    with pytest.raises(errors.ConfigError) as e:
        parse('--find-max', 'p99<<5ms', *argv)
    assert "--find-max 'p99<<5ms': write METRIC<VALUE" in str(e.value)


def test_a_bad_find_max_is_one_line_and_exit_2(capsys):
    assert cli.main(['--backend', 'memory', '--phases', 'select', '--find-max', 'p99<5ms',
                     '--rate', '100']) == errors.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'Traceback' not in err
    assert err.startswith('gloaddriver: error: --find-max and --rate exclude each other')


def _search(outcome, steps, held=None, broke=None, client=None, why=''):
    def bracket(s):
        return None if s is None else {'step': s, 'target': steps[s - 1]['target'],
                                       'achieved': steps[s - 1]['achieved']}
    return {'objective': 'p99<5ms', 'start': 100.0, 'step_seconds': 5.0,
            'warmup_seconds': 1.0, 'resolution': 0.05, 'max_steps': 20, 'outcome': outcome,
            'why': why, 'held': bracket(held), 'broke': bracket(broke),
            'client_limit': bracket(client), 'steps': steps}


def _step(n, target, verdict_, why=''):
    return {'step': n, 'target': target, 'achieved': target * 0.99, 'seconds': 5.0,
            'p50_us': 100, 'p90_us': 200, 'p99_us': 400, 'p999_us': 900,
            'service_p99_us': 300, 'attempted': int(target * 5), 'errors': 0, 'late': 0,
            'client_cpu': 0.1, 'client_busy': 0.1, 'server_cpu_pct': 50.0,
            'verdict': verdict_, 'why': why, 'verdicts': []}


def test_the_exit_code_and_the_finding_follow_the_outcome():
    steps = [_step(1, 100.0, 'held'), _step(2, 200.0, 'broke', 'p99<5ms: 9ms'),
             _step(3, 150.0, 'held')]
    knee = {'phases': [], 'aborted': None, 'find_max': _search('knee', steps, 3, 2)}
    assert verdict.judge(knee) == (errors.EXIT_OK, None)
    assert report.finding(knee['find_max']) == (
        'find-max: knee at 150 ops/s (achieved 148 ops/s) held p99<5ms; 200 ops/s broke it')
    steps = [_step(1, 100.0, 'held'), _step(2, 200.0, 'client', 'the driver\'s CPU was '
                                                              'saturated')]
    client = {'phases': [], 'aborted': None,
              'find_max': _search('client', steps, 1, None, 2, steps[1]['why'])}
    code, why = verdict.judge(client)
    assert code == errors.EXIT_CLIENT_LIMIT == 5
    assert 'the client\'s limit, not the server\'s knee; add --processes' in why
    line = report.finding(client['find_max'])
    assert line.startswith('find-max: NO KNEE: at 200 ops/s the client could not keep')
    never = {'phases': [], 'aborted': None,
             'find_max': _search('never_held', [_step(1, 100.0, 'broke')], None, 1)}
    assert verdict.judge(never)[0] == errors.EXIT_THRESHOLD
    # An interrupted search is judged as any interrupted run.
    stopped = dict(knee, aborted=errors.INTERRUPTED)
    assert verdict.judge(stopped)[0] == errors.EXIT_INTERRUPTED
    # Every step is a row of the search's table, under its heading.
    lines = report.lines(knee)
    assert len(lines) == 1 + 1 + 3 + 1 and 'broke: p99<5ms: 9ms' in lines[3]
    # While the search goes on (the live page's curve): the last step and the best.
    going = _search('searching', steps[:1], 1, None)
    assert report.finding(going) == ('find-max: searching; step 1 at 100 ops/s held, '
                                     '100 ops/s held so far')
    assert report.view({'find_max': going})['knee'] is None


def _phase(target, achieved, p99_us, service_mean_us, warnings=()):
    """A step's phase result, as much of it as the classification reads."""
    return {'name': 'select', 'attempted': int(achieved * 5), 'failed': 0, 'timed_out': 0,
            'misses': 0, 'rate': {'target': target, 'achieved': achieved},
            'latency_us': {'p99': p99_us}, 'service_time_us': {'mean': service_mean_us},
            'warnings': [{'kind': k} for k in warnings]}


def test_a_step_is_held_broken_or_the_client_s_limit():
    from gloaddriver.config import fail_if
    from gloaddriver.run.find_max import classify
    objective = fail_if.parse('p99<50ms')
    # Kept its rate within the objective: held, whatever the client's CPU.
    assert classify(objective, _phase(1000, 990, 4000, 900, ['client_cpu']), 10, 900)[0] == \
        'held'
    # Fell behind with every greenlet busy (95 ops/s x 10.5 ms = 1 in flight of 1) while
    # the service time stayed as before: too few greenlets, the client's limit.
    verdict, why, _v = classify(objective, _phase(160, 95, 800000, 10500), 1, 10200)
    assert verdict == 'client' and 'all 1 greenlets were busy' in why
    # The same lag where the server queued the ops (service time 8 times the lowest
    # before): the server's knee.
    assert classify(objective, _phase(1600, 950, 800000, 16800), 16, 2100)[0] == 'broke'
    # Broke with greenlets to spare: the server's (or the machine's) figure.
    verdict, why, _v = classify(objective, _phase(200, 199, 70000, 1500), 10, 1400)
    assert verdict == 'broke' and why == 'p99<50ms: 70ms'
    # The driver's CPU saturated on a step that broke: the client's limit.
    assert classify(objective, _phase(5000, 4000, 90000, 1500, ['client_cpu']), 10,
                    1400)[:2] == ('client', "the driver's CPU was saturated")


def test_a_workload_file_of_several_phases_is_searched_as_one_mix(tmpdir, capsys):
    path = tmpdir.join('two.py')
    path.write(u'PHASES = ("put", "get")\n'
               u'def op_put(db, key):\n    db.insert(key)\n'
               u'def op_get(db, key):\n    return db.select(key)\n')
    load = parse('--workload-file', str(path), '--find-max', 'p99<5ms').load
    assert [(p.name, p.weights) for p in load.phases] == [('mix', (('put', 1), ('get', 1)))]
    assert "the workload file's ops as one mix, put=1,get=1" in capsys.readouterr().err
    # Named: as named.
    load = parse('--workload-file', str(path), '--find-max', 'p99<5ms', '--phases',
                 'get').load
    assert [p.name for p in load.phases] == ['get']
