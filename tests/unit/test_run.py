"""The runner (gloaddriver.run.runner) driven through the in-memory backend: phases,
budgets, key ranges, mixes, the open loop, failures; and a whole run through the CLI.
No server: tests/fakebackend is a dict (registered in conftest.py)."""
from __future__ import absolute_import, division, print_function

import io
import random

import pytest

from gloaddriver import backends, cli, errors
from gloaddriver import config as configuration
from gloaddriver.measure.syscalls import SyscallCounter
from gloaddriver.run import runner
from tests import fakebackend
from tests import result_schema


class Progress(object):
    """A progress_out taking native str on both interpreters (io.StringIO wants unicode
    on 2.7)."""

    def __init__(self):
        self.parts = []

    def write(self, text):
        self.parts.append(text)

    def flush(self):
        pass

    def getvalue(self):
        return ''.join(self.parts)


def run(*argv, **kw):
    """(Run, backend, phases) of one run of the memory backend with these flags."""
    args = ['--backend', 'memory', '--progress', '0', '--greenlets', '4'] + list(argv)
    config = configuration.parse(args, environ={})
    backend = backends.get('memory').backend(config, None)
    backend.open()
    the_run = runner.Run(config, backend, SyscallCounter(enable=False),
                         progress_out=kw.get('progress_out') or Progress())
    phases = the_run.execute()
    backend.close()
    return the_run, backend, phases


def accounted(block):
    return block['ok'] + block['failed'] + block['timed_out'] == block['attempted']


def keys_of(backend, op):
    return [k for name, k in backend.log if name == op]


# -- the contract: a registered kind ------------------------------------------------------

def test_the_memory_kind_is_registered_like_a_real_one():
    kind = backends.get('memory')
    assert kind is fakebackend.KIND and kind.title == 'in-memory dict'
    assert 'memory' in backends.names()
    config = configuration.parse(['--backend', 'memory', '--fail-every', '7'], environ={})
    assert config.backend == 'memory' and config.opts == fakebackend.Options(7, 0)


@pytest.mark.parametrize('argv,words', [
    (['--dsn', 'x'], '--dsn is for --backend postgres'),
    (['--dsn=host=x'], '--dsn is for --backend postgres'),
    (['--uri=1.2.3.4:5'], '--uri is for --backend tarantool'),
    (['--uri', '1.2.3.4:5'], '--uri is for --backend tarantool'),
    (['--no-overlap'], '--no-overlap is for --backend tarantool'),
])
def test_flags_of_other_backends_are_refused(argv, words):
    with pytest.raises(errors.ConfigError) as e:
        configuration.parse(['--backend', 'memory'] + argv, environ={})
    assert words in str(e.value)


def test_its_own_flags_are_refused_for_other_backends():
    for argv in (['--fail-every', '3'], ['--backend', 'postgres', '--op-sleep=0.1']):
        with pytest.raises(errors.ConfigError) as e:
            configuration.parse(argv, environ={})
        assert 'is for --backend memory' in str(e.value)


# -- phases, budgets, keys ----------------------------------------------------------------

def test_phases_run_in_order_and_every_attempt_is_accounted_for():
    the_run, backend, phases = run('--ops', '200')
    assert [p['name'] for p in phases] == ['insert', 'select', 'update', 'delete']
    assert the_run.aborted is None
    for p in phases:
        assert p['attempted'] == 200 and p['ok'] == 200 and accounted(p), p['name']
        assert p['misses'] == 0 and p['errors'] == {}
        rows = p['timeline']
        assert rows, p['name']
        for k in ('attempted', 'ok', 'errors'):
            assert sum(r[k] for r in rows) == (p[k] if k != 'errors' else 0), (p['name'], k)
        assert p['latency_us']['p50'] is not None and p['ops_per_sec'] > 0
    # The run is over: every key inserted, read, updated, then deleted.
    assert backend.data == {}
    assert sorted(keys_of(backend, 'delete')) == list(range(200))


def test_a_sequential_insert_phase_inserts_exactly_the_key_space():
    _run, backend, (p,) = run('--ops', '150', '--phases', 'insert', '--greenlets', '7')
    assert p['attempted'] == p['ok'] == 150
    assert sorted(backend.data) == list(range(150))
    assert sorted(keys_of(backend, 'insert')) == list(range(150))   # each once
    assert backend.data[42] == backend.values[42]


def test_more_inserts_than_keys_wrap_into_duplicate_key_errors():
    _run, backend, (p,) = run('--ops', '130', '--keys', '100', '--phases', 'insert')
    assert sorted(backend.data) == list(range(100))
    assert (p['ok'], p['failed'], p['errors']) == (100, 30, {'server:3': 30})
    assert p['error_samples']['server:3'] == 'duplicate key (code 3)'
    assert accounted(p)


def test_reads_of_deleted_keys_are_misses_not_errors():
    _run, backend, phases = run('--ops', '100', '--phases', 'insert,delete,select,update')
    ins, dele, sel, upd = phases
    assert (ins['misses'], dele['misses'], sel['misses'], upd['misses']) == (0, 0, 100, 100)
    assert sel['ok'] == 100 and sel['failed'] == 0 and backend.data == {}


def test_failures_are_counted_by_kind_and_the_run_goes_on():
    the_run, backend, phases = run('--ops', '100', '--fail-every', '10', '--greenlets', '3')
    assert [p['name'] for p in phases] == ['insert', 'select', 'update', 'delete']
    assert the_run.aborted is None
    for p in phases:
        assert (p['attempted'], p['ok'], p['failed'], p['timed_out']) == (100, 90, 10, 0)
        assert p['errors'] == {'injected': 10}
        assert p['error_samples']['injected'].startswith('injected failure of op 10 ')
        assert sum(r['errors'] for r in p['timeline']) == 10
    # The ten inserts that failed left their keys out; the selects of them missed.
    missing = set(range(100)) - set(keys_of(backend, 'insert'))
    assert len(missing) == 10


def test_a_phase_ends_on_its_duration():
    out = Progress()
    start = runner.clock()
    the_run, _backend, (p,) = run('--ops', '0', '--duration', '0.3', '--phases', 'select',
                                  '--progress', '0.1', progress_out=out)
    took = runner.clock() - start
    assert 0.3 <= p['seconds'] < 0.6 and took < 1.0
    assert p['attempted'] > 100 and accounted(p)
    assert the_run.aborted is None          # the duration is no abort
    assert sum(r['attempted'] for r in p['timeline']) == p['attempted']
    assert len(p['timeline']) >= 2
    lines = out.getvalue().splitlines()
    assert lines and all(' select ' in line and 'ops/s' in line for line in lines)


def test_ops_end_a_phase_before_its_duration():
    _run, _backend, (p,) = run('--ops', '50', '--duration', '5', '--phases', 'insert')
    assert p['attempted'] == 50 and p['seconds'] < 1


def test_the_budget_keeps_its_first_reason():
    b = runner.Budget(10)
    b.stop('duration')
    b.stop('something later')
    assert (b.left, b.reason) == (0, 'duration')


def test_a_backend_that_gives_up_aborts_the_run(monkeypatch):
    ops = fakebackend.MemoryBackend.worker_ops

    def giving_up(self, worker):
        fns = ops(self, worker)
        select = fns['select']

        def op(key):
            if key == 20:
                raise errors.GaveUp('unreachable for 30 s')
            return select(key)
        fns['select'] = op
        return fns
    monkeypatch.setattr(fakebackend.MemoryBackend, 'worker_ops', giving_up)
    the_run, _backend, phases = run('--ops', '100', '--greenlets', '1')
    assert [p['name'] for p in phases] == ['insert', 'select']     # no update, no delete
    assert the_run.aborted == 'unreachable for 30 s'
    sel = phases[1]
    assert (sel['attempted'], sel['ok'], sel['errors']) == (21, 20, {'network': 1})


def test_warmup_is_not_recorded():
    _run, backend, (p,) = run('--ops', '30', '--phases', 'select', '--warmup', '0.05')
    assert p['attempted'] == 30
    assert len(keys_of(backend, 'select')) > 30


def test_the_same_seed_gives_the_same_checksums():
    argv = ('--ops', '300', '--checksum', '--distribution', 'uniform', '--value-size', '10')
    a = [p['checksum'] for p in run(*argv)[2]]
    b = [p['checksum'] for p in run(*argv)[2]]
    c = [p['checksum'] for p in run(*(argv[:-1] + ('11',)))[2]]
    assert a == b and len(set(a)) == 4 and int(a[0], 16) != 0
    assert all(x != y for x, y in zip(a, c))


# -- mixes --------------------------------------------------------------------------------

def test_mix_weights_give_the_share_of_each_op():
    _run, _backend, (p,) = run('--mix', 'select=90,update=10', '--ops', '4000', '--keys', '50')
    sel, upd = p['ops']['select'], p['ops']['update']
    assert p['attempted'] == 4000
    assert abs(sel['attempted'] / 4000.0 - 0.9) < 0.02
    assert abs(upd['attempted'] / 4000.0 - 0.1) < 0.02
    for k in ('attempted', 'ok', 'failed', 'misses'):
        assert sel[k] + upd[k] == p[k], k
    assert accounted(sel) and accounted(upd)
    assert p['misses'] == 4000        # nothing was loaded


def test_load_then_a_mix_inserts_above_the_key_space():
    _run, backend, (load, mix) = run('--load', '--mix', 'insert=50,select=50', '--keys', '100',
                                     '--ops', '400')
    assert (load['name'], mix['name']) == ('load', 'mix')
    assert load['attempted'] == 100 and load['ok'] == 100        # the key space, not --ops
    n = mix['ops']['insert']['attempted']
    assert mix['ops']['insert']['failed'] == 0 and 150 < n < 250
    assert sorted(backend.data) == list(range(100 + n))
    assert mix['ops']['select']['misses'] == 0


# -- the open loop ------------------------------------------------------------------------

def test_the_open_loop_keeps_its_rate():
    _run, _backend, (p,) = run('--rate', '1000', '--ops', '300', '--phases', 'insert')
    r = p['rate']
    assert p['attempted'] == 300 and accounted(p)
    assert 0.28 <= p['seconds'] < 0.45
    assert (r['target'], r['arrival'], r['dropped'], r['latency_limit_ms']) == (
        1000, 'constant', 0, None)
    assert abs(r['achieved'] - 1000) < 150
    assert r['scheduled'] == r['dropped'] + p['attempted']
    assert p['service_time_us']['p50'] is not None and p['service_histogram']


def test_a_slow_server_makes_late_ops_and_latency_from_the_intended_start():
    # 4 workers of 10 ms ops serve 400/s; 2000/s are scheduled.
    _run, _backend, (p,) = run('--rate', '2000', '--ops', '40', '--phases', 'insert',
                               '--op-sleep', '0.01')
    r = p['rate']
    assert p['attempted'] == 40 and r['dropped'] == 0 and r['late'] > 20
    svc, lat = p['service_time_us'], p['latency_us']
    assert 10000 <= svc['p50'] < 40000
    assert lat['max'] > 50000 and lat['p50'] > svc['p50']     # the wait is in the latency


def test_the_latency_limit_drops_ops_too_far_behind():
    _run, _backend, (p,) = run('--rate', '2000', '--ops', '40', '--phases', 'insert',
                               '--op-sleep', '0.01', '--latency-limit', '5')
    r = p['rate']
    assert p['attempted'] == p['ok'] == 40
    assert r['dropped'] > 40 and r['scheduled'] == r['dropped'] + 40
    assert r['latency_limit_ms'] == 5
    assert p['latency_us']['max'] < 40000      # nothing waited long for its turn


def test_an_open_loop_mix_splits_the_schedule_by_weight():
    _run, _backend, (p,) = run('--rate', '5000', '--ops', '1000', '--mix', 'select=3,update=1')
    assert p['attempted'] == 1000
    sel = p['ops']['select']['attempted']
    assert 700 < sel < 800 and sel + p['ops']['update']['attempted'] == 1000
    assert 'service_time_us' in p['ops']['select']


def test_a_constant_schedule_is_evenly_spaced():
    s = runner.Schedule(100, 'constant', random.Random(1), 5.0)
    times = [s.take() for _ in range(5)]
    assert times[0] == 5.0
    assert all(abs((b - a) - 0.01) < 1e-9 for a, b in zip(times, times[1:]))


def test_a_poisson_schedule_has_the_mean_spacing_of_its_rate():
    s = runner.Schedule(1000, 'poisson', random.Random(42), 0.0)
    times = [s.take() for _ in range(20001)]
    gaps = [b - a for a, b in zip(times, times[1:])]
    mean = sum(gaps) / len(gaps)
    sd = (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5
    assert abs(mean - 0.001) < 0.00003
    assert 0.95 < sd / mean < 1.05      # exponential: the spread equals the mean
    again = runner.Schedule(1000, 'poisson', random.Random(42), 0.0)
    assert [again.take() for _ in range(100)] == times[:100]


# -- shards -------------------------------------------------------------------------------

def test_a_shard_inserts_and_reads_only_its_part_of_the_key_space():
    _run, backend, (ins, sel) = run('--shard', '2/4', '--keys', '100', '--ops', '25',
                                    '--phases', 'insert,select', '--distribution', 'uniform')
    assert sorted(backend.data) == list(range(50, 75))
    reads = keys_of(backend, 'select')
    assert len(reads) == 25 and all(50 <= k < 75 for k in reads)
    assert sel['misses'] == 0


def test_a_shard_inserts_of_a_mix_go_to_its_own_range():
    _run, backend, _phases = run('--shard', '1/2', '--keys', '10', '--ops', '40',
                                 '--mix', 'insert=1,select=1')
    inserted = keys_of(backend, 'insert')
    assert inserted and sorted(inserted) == list(range(10 + (1 << 40),
                                                       10 + (1 << 40) + len(inserted)))
    assert all(5 <= k < 10 for k in keys_of(backend, 'select'))


# -- a whole run through the CLI --------------------------------------------------------

def test_the_cli_runs_the_memory_backend_end_to_end(tmpdir, capsys):
    path = str(tmpdir.join('r.json'))
    code = cli.main(['--backend', 'memory', '--ops', '50', '--progress', '0', '--no-syscalls',
                     '--json', path])
    out = capsys.readouterr().out
    assert code == 0
    with io.open(path, encoding='utf-8') as f:
        result = result_schema.read(f)
    m = result['manifest']
    assert m['backend'] == 'memory' and m['server']['product'] == 'in-memory dict'
    assert m['server']['address'] == 'in-process' and m['connector_detail'] == 'dict'
    assert [p['name'] for p in result['phases']] == ['insert', 'select', 'update', 'delete']
    assert all(p['attempted'] == 50 for p in result['phases'])
    assert result['aborted'] is None
    assert out.splitlines()[0].split(': ', 1)[1].startswith('in-memory dict ')
    assert 'injected' not in out


def test_the_cli_exits_1_when_ops_fail(capsys):
    code = cli.main(['--backend', 'memory', '--ops', '20', '--progress', '0', '--no-syscalls',
                     '--fail-every', '5', '--phases', 'insert'])
    captured = capsys.readouterr()
    assert code == 1
    assert 'insert: 4 x injected: injected failure of op 5' in captured.out
    assert '4 of 20 ops failed' in captured.err


def test_a_phase_that_cannot_start_aborts_the_run_and_keeps_what_ran(tmpdir, capsys,
                                                                       monkeypatch):
    # A server error where no op can count it (the backend's phase setup): the run
    # stops there as aborted, exit 1, and the phase that ran is still written.
    started = fakebackend.MemoryBackend.phase_started

    def phase_started(self):
        if self.data:       # the inserts are in: the next phase's setup fails
            raise errors.NetworkError('cannot reach the server')
        return started(self)
    monkeypatch.setattr(fakebackend.MemoryBackend, 'phase_started', phase_started)
    path = str(tmpdir.join('r.json'))
    code = cli.main(['--backend', 'memory', '--ops', '30', '--progress', '0', '--no-syscalls',
                     '--json', path])
    captured = capsys.readouterr()
    assert code == 1
    with io.open(path, encoding='utf-8') as f:
        result = result_schema.read(f)
    assert result['aborted'] == 'phase select could not run: cannot reach the server'
    assert [(p['name'], p['ok']) for p in result['phases']] == [('insert', 30)]
    assert 'phase select could not run' in captured.out + captured.err
    assert 'Traceback' not in captured.err
