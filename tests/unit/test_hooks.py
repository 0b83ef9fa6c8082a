"""Phase lifecycle hooks (run.hooks) seen by listeners of a real run of the in-memory
backend: which moments come, in which order, with the window in which state; what a
listener adds to the result; the key space (workload.keyspace) the runner asks."""
from __future__ import absolute_import, division, print_function

import pytest

from gloaddriver import backends
from gloaddriver import config as configuration
from gloaddriver.measure.syscalls import SyscallCounter
from gloaddriver.run import hooks, runner
from gloaddriver.workload import Phase, keyspace
from tests.unit.test_run import Progress, accounted


class Recorder(hooks.Listener):
    """Writes down each moment with what the phase looked like then."""

    def __init__(self, name, log):
        self.name = name
        self.log = log
        self.calls = {}

    def _note(self, moment, phase, *more):
        self.log.append((self.name, moment, phase.name) + more)

    def start(self, phase):
        self._note('start', phase, phase.window is None)

    def opened(self, phase):
        w = phase.window
        self._note('opened', phase, hasattr(w, 't0') and not hasattr(w, 't1'),
                   phase.timeline is not None)

    def ops(self, phase, worker, fns):
        self._note('ops', phase, worker)
        calls = self.calls.setdefault(phase.name, [0])

        def counted(fn):
            def op(key):
                calls[0] += 1
                return fn(key)
            return op
        return dict((k, counted(f)) for k, f in fns.items())

    def ticking(self, phase):
        self._note('ticking', phase)

    def interval(self, phase, row, notes):
        self._note('interval', phase, row['t'], sorted(notes))

    def closing(self, phase):
        self._note('closing', phase, not hasattr(phase.window, 't1'))

    def end(self, phase, result):
        self._note('end', phase, hasattr(phase.window, 't1'), len(phase.rows))
        result['recorded_by_' + self.name] = len(self.log)


def run(listeners, *argv):
    args = ['--backend', 'memory', '--progress', '0', '--greenlets', '3'] + list(argv)
    config = configuration.parse(args, environ={})
    backend = backends.get('memory').backend(config, None)
    backend.open()
    the_run = runner.Run(config, backend, SyscallCounter(enable=False), progress_out=Progress(),
                         listeners=listeners)
    phases = the_run.execute()
    backend.close()
    return phases


def test_a_listener_hears_every_moment_of_each_phase_in_order():
    log = []
    rec = Recorder('a', log)
    phases = run([rec], '--ops', '0', '--duration', '0.35', '--interval', '0.1',
                 '--phases', 'insert,select')
    assert [p['name'] for p in phases] == ['insert', 'select']
    for p in phases:
        mine = [e for e in log if e[2] == p['name']]
        moments = [e[1] for e in mine]
        # start, opened, one ops per worker, the ticker, its rows, closing, end
        assert moments[:5] == ['start', 'opened', 'ops', 'ops', 'ops'], moments
        assert [e[3] for e in mine if e[1] == 'ops'] == [0, 1, 2]
        assert moments[5] == 'ticking' and moments[-2:] == ['closing', 'end'], moments
        intervals = [e for e in mine if e[1] == 'interval']
        assert len(intervals) >= 2 and moments[6:-2] == ['interval'] * len(intervals)
        assert all(e[4] == ['server', 'server_line'] for e in intervals)
        # the window: not open at start; open, not closed while the workers run; closed at end
        assert mine[0][3] is True and mine[1][3:] == (True, True)
        assert mine[-2][3] is True and mine[-1][3] is True
        assert mine[-1][4] == len(p['timeline']) >= len(intervals)
        # what the listener added, and the ops it wrapped: each attempt went through it
        assert p['recorded_by_a'] == log.index(mine[-1]) + 1
        assert rec.calls[p['name']][0] == p['attempted'] > 0 and accounted(p)


def test_closing_and_end_go_last_to_first():
    log = []
    run([Recorder('a', log), Recorder('b', log)], '--ops', '40', '--phases', 'select')
    order = [(who, moment) for who, moment, _name in (e[:3] for e in log)
             if moment in ('start', 'opened', 'closing', 'end')]
    assert order == [('a', 'start'), ('b', 'start'), ('a', 'opened'), ('b', 'opened'),
                     ('b', 'closing'), ('a', 'closing'), ('b', 'end'), ('a', 'end')]


def test_ops_wrappers_nest_in_listener_order():
    seen = []

    class Tag(hooks.Listener):
        def __init__(self, tag):
            self.tag = tag

        def ops(self, phase, worker, fns):
            def wrap(fn):
                def op(key):
                    seen.append(self.tag)
                    return fn(key)
                return op
            return dict((k, wrap(f)) for k, f in fns.items())
    (p,) = run([Tag('inner'), Tag('outer')], '--ops', '5', '--phases', 'select')
    assert p['attempted'] == 5
    assert seen == ['outer', 'inner'] * 5


def test_the_stages_leave_no_schedule_lag_warning_when_the_ramp_is_kept():
    # The open loop's target is the ramp's peak; what it achieves is the ramp's mean,
    # which is no lag: the warning is judged with the stages in the result.
    (p,) = run([], '--stages', '0.3s:600/s,0.3s:60/s', '--phases', 'select')
    assert p['stages'] and p['rate']['achieved'] < 0.9 * p['rate']['target']
    assert [w for w in p['warnings'] if w['kind'] == 'schedule_lag'] == []


# -- the key space ---------------------------------------------------------------------

def load(*argv):
    return configuration.parse(['--backend', 'memory'] + list(argv), environ={}).load


@pytest.mark.parametrize('shard,want', [(None, (0, 1000)), ('0/3', (0, 333)),
                                        ('1/3', (333, 333)), ('2/3', (666, 334))])
def test_a_shard_gets_its_part_of_the_keys(shard, want):
    argv = ['--keys', '1000'] + (['--shard', shard] if shard else [])
    assert keyspace.KeySpace(load(*argv)).shard_range() == want


def test_the_limit_of_a_phase():
    space = keyspace.KeySpace(load('--keys', '500', '--ops', '70'))
    assert space.limit(Phase('select', (('select', 1),))) == 70
    assert space.limit(Phase('load', (('insert', 1),))) == 500   # the whole key space once
    timed = keyspace.KeySpace(load('--keys', '500', '--ops', '0', '--duration', '1',
                                   '--distribution', 'sequential'))
    assert timed.limit(Phase('delete', (('delete', 1),))) == 500  # every key, then done
    assert timed.limit(Phase('select', (('select', 1),))) == keyspace.UNLIMITED


def test_a_time_bounded_insert_phase_sets_the_keys_of_the_later_ones():
    space = keyspace.KeySpace(load('--keys', '100', '--ops', '0', '--duration', '1'))
    ins = space.phase(Phase('insert', (('insert', 1),)))
    next_key = ins.source('insert', 0)
    assert ins.source('insert', 1) is next_key          # one generator for all workers
    made = [next_key() for _i in range(250)]
    assert made == list(range(250))                      # past --keys: fresh, no wrap
    assert ins.covered() == {'first': 0, 'count': 250}
    assert space.shard_range() == (0, 250)
    sel = space.phase(Phase('select', (('select', 1),)))
    draw = sel.source('select', 0)
    assert all(0 <= draw() < 250 for _i in range(500))
    assert sel.covered() == {'first': 0, 'count': 250}


def test_inserts_in_a_mix_take_keys_above_the_key_space():
    space = keyspace.KeySpace(load('--keys', '100', '--shard', '1/2'))
    mix = space.phase(Phase('mix', (('select', 1), ('insert', 1))))
    ins = mix.source('insert', 0)
    assert [ins(), ins()] == [100 + (1 << 40), 101 + (1 << 40)]
    sel = mix.source('select', 0)
    assert all(50 <= sel() < 100 for _i in range(200))
    assert mix.covered() == {'first': 50, 'count': 50}
