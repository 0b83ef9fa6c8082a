"""--stages: the parser, the flags it meets, the ramp of greenlets and of the open loop's
rate, the accounting of staged phases, and what the reports make of them. No server:
tests/fakebackend's dict, registered in conftest.py; each run is a second or two."""
from __future__ import absolute_import, division, print_function

import random
import re

import gevent
import pytest

from gloaddriver import backends, cli, errors
from gloaddriver import config as configuration
from gloaddriver.py23 import clock
from gloaddriver import converters
from gloaddriver.measure import stats
from gloaddriver.measure.syscalls import SyscallCounter
from gloaddriver.measure.timeline import combine_consecutive
from gloaddriver.report import dashboard, html, text
from gloaddriver.run import runner, stages

from tests.unit.test_run import Progress, accounted
from tests import result_schema


def run(*argv, **kw):
    """(Run, phases) of one run of the memory backend (no --greenlets unless given)."""
    config = configuration.parse(['--backend', 'memory', '--progress', '0'] + list(argv),
                                 environ={})
    backend = backends.get('memory').backend(config, None)
    backend.open()
    the_run = runner.Run(config, backend, SyscallCounter(enable=False), progress_out=Progress())
    if kw.get('interrupt_after'):
        gevent.spawn_later(kw['interrupt_after'], the_run.interrupt)
    phases = the_run.execute()
    backend.close()
    return the_run, phases


def stages_add_up(p):
    """Summed over its stages, a phase's counts are the phase's."""
    s = p['stages']
    assert sum(x['attempted'] for x in s) == p['attempted']
    assert sum(x['ok'] for x in s) == p['ok']
    assert sum(x['errors'] for x in s) == p['failed'] + p['timed_out']


# -- the parser ------------------------------------------------------------------------

def test_stages_parse_durations_targets_and_a_starting_target():
    s = converters.stages('10s:10,30s:100,500ms:0')
    assert s.unit == 'greenlets' and s.start == 0
    assert s.stages == (converters.Stage(10.0, 10), converters.Stage(30.0, 100), converters.Stage(0.5, 0))
    s = converters.stages(' 5 , 1m:20 ')
    assert (s.start, s.stages) == (5, (converters.Stage(60.0, 20),))
    s = converters.stages('10s:1000/s,2:2500.5/s')
    assert s.unit == 'ops/s' and s.start == 0.0
    assert s.stages == (converters.Stage(10.0, 1000.0), converters.Stage(2.0, 2500.5))
    assert converters.stages('100/s,3s:0/s').start == 100.0


@pytest.mark.parametrize('text,words', [
    ('', 'takes DURATION:TARGET'),
    ('10s:5,', 'takes DURATION:TARGET'),
    ('10s', "takes DURATION:TARGET, comma-separated, e.g. 10s:10,30s:100,10s:0 "
             "(greenlets) or 10s:1000/s,30s:5000/s (ops/s), optionally after a starting "
             "TARGET (default 0); '10s' is not a whole number"),
    ('5', 'no stage has a duration'),
    ('10s:', 'takes DURATION:TARGET'),
    (':5', 'takes DURATION:TARGET'),
    ('x:5', "'x' is not a time"),
    ('0s:5', 'must last more than 0 s'),
    ('-1s:5', 'must not be negative'),
    ('10s:-5', 'a target must be a number of 0 or more'),
    ('10s:2.5', 'not a whole number of greenlets'),
    ('10s:lots/s', 'not a rate'),
    ('10s:nan/s', 'a target must be a number of 0 or more'),
    ('10s:0,5s:0', 'every target is 0'),
    ('0,10s:0/s', 'not both'),
    ('10s:5,10s:5/s', 'not both'),
])
def test_malformed_stages_are_refused_with_what_is_wrong(text, words):
    with pytest.raises(ValueError) as e:
        converters.stages(text)
    assert words in str(e.value)


# -- the flags it meets ----------------------------------------------------------------

def parse(*argv):
    return configuration.parse(['--backend', 'memory'] + list(argv), environ={})


def test_stages_set_the_defaults_they_change():
    plain = parse().load
    assert (plain.greenlets, plain.ops, plain.stages, plain.rate) == (10, 100000, None, None)
    load = parse('--stages', '1s:7,1s:30,1s:0').load
    assert (load.greenlets, load.ops, load.duration, load.rate) == (30, 0, 0, None)
    assert load.stages.unit == 'greenlets'
    # --greenlets above the highest target is the ceiling; --ops still stops the phase
    load = parse('--stages', '1s:7', '--greenlets', '12', '--ops', '500').load
    assert (load.greenlets, load.ops) == (12, 500)
    # targets in ops/s: the open loop at the highest of them, --greenlets its cap
    load = parse('--stages', '1s:700/s,1s:1500/s', '--arrival', 'poisson').load
    assert (load.greenlets, load.rate, load.arrival, load.stages.unit) == (
        10, 1500.0, 'poisson', 'ops/s')


@pytest.mark.parametrize('argv,words', [
    (['--stages', '0s:5'], 'must last more than 0 s'),
    (['--stages', '1s:0'], 'every target is 0'),
    (['--stages', '1s:5', '--duration', '3'], '--stages and --duration exclude each other'),
    (['--stages', '1s:5', '--rate', '100'], 'write the targets as rates, e.g. --stages 10s:100/s'),
    (['--stages', '1s:5/s', '--rate', '100'], '--stages and --rate exclude each other'),
    (['--stages', '1s:5', '--processes', '2'], '--stages does not split among --processes'),
    (['--stages', '1s:50', '--greenlets', '10'], '--greenlets 10 is below the highest --stages '
                                                 'target, 50 greenlets'),
    (['--stages', '1s:5', '--arrival', 'poisson'], '--arrival and --latency-limit need --rate'),
])
def test_stages_refuse_what_they_do_not_go_with(argv, words):
    with pytest.raises(errors.ConfigError) as e:
        parse(*argv)
    assert words in str(e.value)


def test_the_self_driving_bulk_loader_refuses_stages():
    for stage in ('1s:5', '1s:5/s'):
        with pytest.raises(errors.ConfigError) as e:
            configuration.parse(['--backend', 'postgres', '--workload', 'bulk', '--stages', stage],
                                environ={})
        assert '--stages does not apply to --workload bulk' in str(e.value)


def test_a_bad_stages_flag_is_one_line_and_exit_2(capsys):
    assert cli.main(['--backend', 'memory', '--stages', '10s:5,0s:1']) == errors.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'Traceback' not in err
    assert err.startswith('gloaddriver: error: --stages 0s:1: a stage must last more than 0 s')


# -- the plan and the open loop's schedule (no clock) ----------------------------------

def test_the_plan_is_straight_lines_between_the_targets():
    plan = stages.Plan(converters.stages('10,2s:30,1s:30,2s:0'))
    assert plan.total == 5.0 and plan.peak == 30 and plan.closed
    assert [plan.target(t) for t in (0, 1, 2, 2.5, 3, 4, 5, 9)] == [10, 20, 30, 30, 30, 15, 0, 0]
    assert [plan.stage_at(t) for t in (0, 1.99, 2, 3.5, 5, 9)] == [0, 0, 1, 2, 2, 2]
    assert plan.segments() == [(0.0, 2.0, 10, 30), (2.0, 3.0, 30, 30), (3.0, 5.0, 30, 0)]


def starts(text, arrival='constant', seed=1):
    plan = stages.Plan(converters.stages(text))
    schedule = stages.RampSchedule(plan, arrival, random.Random(seed), 100.0)
    out = []
    while True:
        t = schedule.take()
        if t is None:
            return plan, out
        out.append(t - 100.0)


def per_stage(plan, times):
    counts = [0] * len(plan.segments())
    for t in times:
        counts[plan.stage_at(t)] += 1
    return counts


def test_the_schedule_starts_as_many_ops_as_the_ramp_integrates_to():
    plan, times = starts('2s:1000/s,1s:1000/s,2s:0/s,1s:0/s,1s:500/s')
    assert times == sorted(times) and 0 < times[0] and times[-1] < plan.total
    # the integral of each stage's straight line: 1000, 1000, 1000, 0, 250
    assert per_stage(plan, times) == [1000, 1000, 1000, 0, 250]
    # a ramp from 0 starts slowly: the k-th start at sqrt(2 (k + 1/2) / 500 per s^2)
    assert abs(times[0] - (2 * 0.5 / 500.0) ** 0.5) < 1e-9
    assert abs(times[99] - (2 * 99.5 / 500.0) ** 0.5) < 1e-9
    # a constant stage spaces its starts evenly
    steps = [b - a for a, b in zip(times[1100:1200], times[1101:1201])]
    assert max(steps) - min(steps) < 1e-9 and abs(steps[0] - 0.001) < 1e-9
    _plan, times = starts('1s:10/s')
    assert len(times) == 5   # 0 to 10 ops/s over 1 s: 5 starts


def test_poisson_starts_follow_the_ramp_too_and_repeat_with_the_seed():
    plan, times = starts('2s:2000/s,2s:2000/s,2s:0/s', 'poisson')
    counts = per_stage(plan, times)
    for got, want in zip(counts, (2000, 4000, 2000)):
        assert abs(got - want) < 5 * want ** 0.5, counts
    assert times == sorted(times)
    assert starts('2s:2000/s', 'poisson')[1] == starts('2s:2000/s', 'poisson')[1]
    assert starts('2s:2000/s', 'poisson', seed=2)[1] != starts('2s:2000/s', 'poisson')[1]


# -- the gate: an op in flight ends before its worker parks ----------------------------

def test_a_worker_above_the_target_finishes_its_op_then_parks():
    started, running = [], [0]

    def op(w):
        def fn(key):
            started.append((clock(), w))
            running[0] += 1
            gevent.sleep(0.05)
            running[0] -= 1
            return [key]
        return fn
    gate = stages.Gate(3, 3, clock())
    budget = runner.Budget(runner.UNLIMITED)
    st = stats.OpStats('select')
    workers = [gevent.spawn(stages.run_single, budget, st, op(w), lambda: 1, gate, w,
                            runner._failed) for w in range(3)]
    gevent.sleep(0.02)
    assert gate.active == 3 and running[0] == 3
    lowered = clock()
    gate.allow(1)
    gevent.sleep(0.04)            # the three ops in flight end; two of their workers park
    assert gate.active == 1 and running[0] == 1 and st.ok == 3
    gevent.sleep(0.1)
    assert set(w for t, w in started if t > lowered) == {0}
    gate.allow(2)                 # worker 1 runs again, worker 2 stays parked
    gevent.sleep(0.08)
    assert gate.active == 2 and set(w for t, w in started[-2:]) == {0, 1}
    budget.stop('test')
    gate.release()
    gevent.joinall(workers, timeout=1)
    assert all(g.dead for g in workers)
    st.drain()
    st.check()
    assert st.attempted == st.ok > 3 and gate.active == 0


# -- closed loop: active greenlets follow the ramp -------------------------------------

def test_active_greenlets_follow_the_targets_and_every_op_is_accounted_for():
    _run, (p,) = run('--stages', '0.4s:8,0.3s:8,0.4s:2', '--phases', 'insert',
                     '--op-sleep', '0.002', '--interval', '0.05', '--fail-every', '37')
    assert 1.05 < p['seconds'] < 1.4
    assert accounted(p) and p['failed'] > 0
    rows = p['timeline']
    assert all('target' in r and 'active' in r for r in rows)
    # A target moves every 10 ms and a worker parks once its op (2 ms) is over: one greenlet
    # off at most, or two on a machine busy enough to delay the driver by a few ticks.
    off = [abs(r['active'] - r['target']) for r in rows]
    assert max(off) <= 2 and sum(1 for d in off if d <= 1) >= 0.8 * len(off), rows
    # the target in effect as the rows closed: up, hold, down
    assert [r['target'] for r in rows if 0.5 < r['t'] < 0.65] == \
        [8] * len([r for r in rows if 0.5 < r['t'] < 0.65])
    assert max(r['active'] for r in rows) == 8 and rows[-1]['target'] == 2
    s = p['stages']
    assert [(x['stage'], x['start'], x['end'], x['target_from'], x['target_to'], x['unit'])
            for x in s] == [(1, 0.0, 0.4, 0, 8, 'greenlets'), (2, 0.4, 0.7, 8, 8, 'greenlets'),
                            (3, 0.7, 1.1, 8, 2, 'greenlets')]
    for x, target in zip(s, (4.0, 8.0, 5.0)):
        assert x['mean_target'] == target
        assert abs(x['mean_active'] - target) < 1.0, s
        assert x['ops_per_sec'] > 0 and x['p99_us'] > 0 and x['seconds'] > 0.25
    stages_add_up(p)
    # more greenlets, more ops: the held stage (8) runs faster than the ramp (4 on average);
    # about twice on a quiet machine, less where the sleeps of a busy one come late
    assert s[1]['ops_per_sec'] > 1.1 * s[0]['ops_per_sec']


def test_a_staged_mix_and_a_ceiling_above_the_targets():
    _run, (p,) = run('--stages', '3,0.3s:5,0.3s:0', '--mix', 'select=3,insert=1',
                     '--greenlets', '9', '--op-sleep', '0.001', '--interval', '0.1')
    assert accounted(p) and all(accounted(o) for o in p['ops'].values())
    assert max(r['active'] for r in p['timeline']) <= 5
    assert all(abs(r['active'] - r['target']) <= 2 for r in p['timeline'])
    assert [x['target_from'] for x in p['stages']] == [3, 5]
    stages_add_up(p)


def test_ops_stops_a_staged_phase_and_later_stages_are_not_reached():
    _run, (p,) = run('--stages', '0.2s:4,5s:4,5s:0', '--phases', 'insert', '--ops', '800',
                     '--op-sleep', '0.001')
    assert p['attempted'] == p['ok'] == 800 and p['seconds'] < 2
    first, second, third = p['stages']
    assert first['seconds'] > 0 and 0 < second['seconds'] < 2 and third['seconds'] == 0
    assert second['mean_target'] == 4.0 and third['attempted'] == 0
    assert third['ops_per_sec'] is None and third['mean_target'] is None
    stages_add_up(p)
    lines = text.stage_lines(p)
    assert 'not reached' in lines[2] and 'the phase ended' in lines[1]


def test_an_interrupt_wakes_the_parked_workers_and_ends_the_phase():
    started = clock()
    the_run, phases = run('--stages', '0.1s:2,20s:2', '--greenlets', '50', '--op-sleep',
                          '0.001', interrupt_after=0.3)
    assert clock() - started < 2 and the_run.aborted == errors.INTERRUPTED
    assert len(phases) == 1 and accounted(phases[0])
    stages_add_up(phases[0])


def test_each_phase_runs_the_stages():
    # (not delete: a sequential delete phase without --ops ends once every key is gone)
    _run, phases = run('--stages', '0.15s:3,0.05s:0', '--phases', 'insert,select,update',
                       '--op-sleep', '0.001')
    assert [p['name'] for p in phases] == ['insert', 'select', 'update']
    for p in phases:
        assert 0.19 < p['seconds'] < 0.5 and len(p['stages']) == 2 and accounted(p)
        stages_add_up(p)
    # a time-bounded insert phase: the later phases work on the keys it made
    assert phases[2]['keys']['count'] == phases[0]['attempted']


# -- open loop: the rate follows the ramp ----------------------------------------------

def test_an_open_loop_ramp_achieves_each_stage_rate():
    # Rows of 0.2 s: on 2.7 an open loop's rows cost the ticker some milliseconds each.
    _run, (p,) = run('--stages', '0.4s:1500/s,0.4s:1500/s,0.4s:0/s', '--phases', 'insert',
                     '--interval', '0.2')
    assert accounted(p) and 1.15 < p['seconds'] < 1.5
    assert p['rate']['target'] == 1500.0 and 'service_time_us' in p
    s = p['stages']
    for x, want in zip(s, (750.0, 1500.0, 750.0)):
        assert x['unit'] == 'ops/s' and x['mean_target'] == want
        assert abs(x['achieved_rate'] - want) < 0.15 * want, s
        assert x['dropped'] == 0 and x['p99_us'] > 0
    assert abs(p['attempted'] - 1200) < 60
    stages_add_up(p)
    rows = p['timeline']
    assert all('target' in r and 'active' not in r for r in rows)
    # A row's target is the ramp's as of the row's end (t), however late a busy machine
    # let the ticker close it: here 1500/s x t / 0.4 s until the peak.
    first = rows[0]
    assert abs(first['target'] - 1500.0 * min(first['t'], 0.4) / 0.4) < 75
    assert max(r['target'] for r in rows) == 1500.0


def test_an_open_loop_ramp_to_zero_ends_on_time():
    # No start is due in the last stage: the workers wait for the phase's end.
    _run, (p,) = run('--stages', '200/s,0.2s:0/s,0.3s:0/s', '--phases', 'insert',
                     '--arrival', 'poisson')
    assert 0.48 < p['seconds'] < 0.7 and accounted(p)
    assert p['stages'][1]['attempted'] == 0 and p['stages'][0]['attempted'] > 10


# -- what the reports make of it -------------------------------------------------------

def test_joined_timeline_rows_keep_the_target_as_of_their_end():
    a = {'t': 1.0, 'seconds': 1.0, 'attempted': 5, 'ok': 5, 'errors': 0, 'syscalls': None,
         'histogram': None, 'target': 4, 'active': 3}
    b = dict(a, t=2.0, target=6, active=6)
    row = combine_consecutive(a, b)
    assert (row['t'], row['attempted'], row['target'], row['active']) == (2.0, 10, 6, 6)
    plain = dict((k, v) for k, v in a.items() if k not in ('target', 'active'))
    assert 'target' not in combine_consecutive(plain, dict(plain, t=2.0))


def test_text_and_html_show_the_stages(tmpdir):
    out = str(tmpdir.join('r.html'))
    rc = cli.main(['--backend', 'memory', '--progress', '0', '--interval', '0.1',
                   '--stages', '0.3s:4,0.3s:0', '--phases', 'insert', '--op-sleep', '0.001',
                   '--html', out, '--json', str(tmpdir.join('r.json'))])
    assert rc == 0
    import io
    with io.open(str(tmpdir.join('r.json')), encoding='utf-8') as f:
        result = result_schema.read(f)
    (p,) = result['phases']
    assert result['manifest']['stages'] == '0.3s:4,0.3s:0'
    lines = [l for l in text.table(result) if ': stage ' in l]
    assert len(lines) == 2 and lines[0].startswith('insert: stage 1   0.0-0.3 s, greenlets 0->4')
    assert 'mean active' in lines[0] and 'p99' in lines[0]
    with io.open(out, encoding='utf-8') as f:
        page = f.read()
    assert page == html.render(result)
    (v,) = dashboard.view(result)['phases']
    marks = [m['label'] for m in v['marks']]
    assert 'stage 2 from 0.3 s: 4 -> 0 greenlets' in marks and 'end of the stages, 0.6 s' in marks
    # the concurrency chart's lines: active greenlets against their target, row by row
    assert [r['active'] for r in v['rows']] == [r['active'] for r in p['timeline']]
    assert [r['target_greenlets'] for r in v['rows']] == [r['target'] for r in p['timeline']]
    assert not any('target_ops' in r for r in v['rows'])


def test_an_open_loop_report_draws_the_ramp_as_the_target():
    result = {'manifest': {}, 'phases': [{
        'name': 'insert', 'seconds': 2.0, 'rate': {'target': 100.0}, 
        'timeline': [{'t': 1.0, 'seconds': 1.0, 'attempted': 50, 'ok': 50, 'errors': 0,
                      'latency_us': {}}, {'t': 2.0, 'seconds': 1.0, 'attempted': 100,
                                          'ok': 100, 'errors': 0, 'latency_us': {}}],
        'stages': [{'stage': 1, 'start': 0.0, 'end': 1.0, 'unit': 'ops/s', 'target_from': 0.0,
                    'target_to': 100.0}, {'stage': 2, 'start': 1.0, 'end': 3.0,
                                          'unit': 'ops/s', 'target_from': 100.0,
                                          'target_to': 0.0}]}]}
    for r in result['phases'][0]['timeline']:
        r['target'] = r['attempted'] / r['seconds']   # as the ramp set them
    for s in result['phases'][0]['stages']:
        s['seconds'] = 0
    v = dashboard.phase_view(result['phases'][0], 0.0)
    assert [r.get('target_ops') for r in v['rows']] == [50.0, 100.0]
    assert not any('target_greenlets' in r for r in v['rows'])
    plain = dict(result['phases'][0], stages=None)   # --rate alone: its one target
    plain['timeline'] = [dict(r) for r in plain['timeline']]
    for r in plain['timeline']:
        del r['target']
    v = dashboard.phase_view(plain, 0.0)
    assert [r.get('target_ops') for r in v['rows']] == [100.0, 100.0]
