"""Flame graphs (--flamegraph with py-spy, --server-flamegraph with perf) against real
servers: the CPU goes where a workload file's op burns it, the server's graph names
its binary's functions, the files open in their tools' formats, bad input is refused."""
from __future__ import absolute_import, division, print_function

import json
import os

import pytest

from gloaddriver.backends.postgres.server import PostgresServer
from gloaddriver.backends.spawn import which
from gloaddriver.measure import flamegraph
from gloaddriver.run.sampler import find_tool
from tests.integration.conftest import run_cli

BURN = '''
def burn_cpu(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def op_burn(db, key):
    burn_cpu(200000)   # ~10 ms of pure Python: far more than the request's CPU
    db.eval(u'return 1')   # a request: the op yields to the hub, the phase can end
'''

needs_py_spy = pytest.mark.skipif(find_tool('py-spy') is None,
                                  reason='py-spy is not installed (gloaddriver[profile])')
needs_perf = pytest.mark.skipif(not which('perf'), reason='perf is not installed (linux-perf)')


def burn_file(tmpdir):
    path = str(tmpdir.join('burn.py'))
    with open(path, 'w') as f:
        f.write(BURN)
    return path


def own_share(stacks, name):
    """The share of samples with a frame named ``name`` on top."""
    total = sum(stacks.values())
    return sum(n for s, n in stacks.items()
               if s.split(';')[-1].split(' (')[0].endswith(name)) / total


@needs_py_spy
def test_the_function_that_burns_cpu_holds_most_client_samples(tarantool, tmpdir):
    outdir = str(tmpdir.join('fg'))
    rc, out, err, res = run_cli(['--workload-file', burn_file(tmpdir), '--greenlets', '4',
                                 '--ops', '0', '--duration', '1.5', '--phases', 'burn',
                                 '--flamegraph', outdir], tarantool)
    assert rc == 0, err
    (phase,) = res['phases']
    fg = phase['flamegraph']
    folded = [f for f in fg['files'] if f.endswith('.folded')]
    assert [os.path.basename(f) for f in folded] == [
        'flamegraph.burn.%s.folded' % folded[0].rsplit('.', 2)[1]]
    stacks = flamegraph.read_folded(folded[0])
    assert sum(stacks.values()) == fg['samples'] > 30, fg['samples']
    # burn_cpu's own loop is most of the phase's CPU, whatever the machine's load
    assert own_share(stacks, 'burn_cpu') > 0.5, fg['top'][:3]
    assert fg['top'][0]['frame'].split(' (')[0].endswith('burn_cpu'), fg['top'][:3]
    assert all('op_burn' in s for s in stacks if s.split(';')[-1].startswith('burn_cpu'))
    with open([f for f in fg['files'] if f.endswith('.speedscope.json')][0]) as f:
        doc = json.load(f)
    (profile,) = doc['profiles']
    assert profile['type'] == 'sampled' and sum(profile['weights']) == fg['samples']
    names = [doc['shared']['frames'][i]['name'] for s in profile['samples'] for i in s]
    assert any(n.endswith('burn_cpu') for n in names)
    assert fg['sampler'] == 'py-spy' and fg['rate'] == 99
    assert 'client flame graph' in out and 'burn_cpu' in out


def spawned_insert_graphs(tmpdir, extra):
    """The insert phase of a spawned Tarantool with both flame graphs at 200 Hz, its
    server graph checked: perf's, with Tarantool's own symbols, one recording."""
    outdir = str(tmpdir)
    # perf takes up to a second to start on a loaded machine: a phase of 3 s leaves it 2.
    # Small values: 3 s of inserts on a quiet machine (over 600,000 of them) would fill
    # the spawned server's 1 GiB of memtx with the default 1,536-byte ones.
    rc, out, err, res = run_cli(['--spawn', '--ops', '0', '--duration', '3', '--phases',
                                 'insert', '--value-size', '100', '--flamegraph', outdir,
                                 '--server-flamegraph', outdir, '--flamegraph-rate',
                                 '200'] + extra)
    assert rc == 0, err
    (phase,) = res['phases']
    fg = phase['server_flamegraph']
    assert fg['sampler'] == 'perf' and fg['rate'] == 200 and fg['samples'] > 0, fg
    frames = set(f for s in fg['stacks'] for f in s.split(';'))
    # Tarantool's own symbols, resolved from its binary: the event loop and the fibers
    assert frames & set(['ev_run', 'fiber_loop', 'main']), sorted(frames)[:40]
    data = [f for f in fg['files'] if f.endswith('.perf.data')]
    assert len(data) == 1 and os.path.getsize(data[0]) > 0, fg['files']
    return phase


@needs_perf
@needs_py_spy
def test_a_spawned_tarantool_shows_its_own_functions(tmpdir):
    phase = spawned_insert_graphs(tmpdir, ['--greenlets', '50'])
    assert phase['flamegraph']['samples'] > 0


@needs_perf
@needs_py_spy
def test_with_processes_the_server_is_recorded_once_and_the_clients_add_up(tmpdir):
    # one perf session, of the spawned server (checked above); a py-spy file per process
    phase = spawned_insert_graphs(tmpdir, ['--processes', '2', '--greenlets', '20'])
    client = phase['flamegraph']
    assert client['rate'] == 200 and client['samples'] > 0
    assert len([f for f in client['files'] if f.endswith('.folded')]) == 2, client['files']


@needs_perf
def test_a_local_postgresql_named_by_pid_shows_its_backends_functions(tmpdir):
    server = PostgresServer().start()
    try:
        env = {'GLOADDRIVER_PASSWORD': server.password}
        rc, out, err, res = run_cli(
            ['--backend', 'postgres', '--dsn', server.dsn, '--greenlets', '10', '--ops', '0',
             '--duration', '3', '--phases', 'insert', '--init', '--server-flamegraph', str(tmpdir),
             '--server-pid', str(server.proc.pid)], env=env)
    finally:
        server.stop()
    assert rc == 0, err
    fg = res['phases'][0]['server_flamegraph']
    assert fg['samples'] > 0, fg
    frames = set(f for s in fg['stacks'] for f in s.split(';'))
    assert 'postgres' in set(s.split(';')[0] for s in fg['stacks']), list(fg['stacks'])[:5]
    assert frames & set(['PostgresMain', 'exec_simple_query', 'exec_execute_message',
                         'ExecutorRun', 'PortalRun']), sorted(frames)[:40]


@pytest.mark.parametrize('args,words', [
    (['--flamegraph-rate', '50'], '--flamegraph DIR'),
    (['--server-flamegraph', '/tmp/x-gloaddriver-fg'], '--server-pid'),
    (['--server-flamegraph', '/tmp/x-gloaddriver-fg', '--server-pid', '999999999'],
     'no such process'),
    (['--flamegraph', '/tmp/x-gloaddriver-fg', '--flamegraph-rate', '5000'], 'at most 1000'),
])
def test_flame_graph_flags_that_cannot_work_say_why(tarantool, args, words):
    rc, out, err, res = run_cli(args + ['--ops', '10'], tarantool)
    assert rc == 2 and words in err and 'Traceback' not in err and res is None, err


@needs_py_spy
def test_compat_writes_a_differential_flame_graph_of_the_two_interpreters(tmpdir):
    from gloaddriver.compat.interpreters import find
    from tests.integration.conftest import ROOT
    import subprocess
    import sys
    other = os.path.join(ROOT, '.venv', 'py27' if sys.version_info[0] == 3 else 'py311',
                         'bin', 'python')
    if not os.path.exists(other):
        other = find('2.7' if sys.version_info[0] == 3 else '3.11')
    if other is None:
        pytest.skip('no second interpreter here')
    outdir = str(tmpdir)
    # 50,000 ops a phase: half a second or more, samples enough at 99 Hz (2,000 ops
    # took 20 ms, often no sample at all on a side, and then no differential)
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', 'compat', '--python', other,
                          '--ops', '50000', '--rounds', '1', '--flamegraph', outdir],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=ROOT), cwd=ROOT)
    out, err = p.communicate()
    out = out.decode('utf-8', 'replace')
    assert 'verdict:' in out, err.decode('utf-8', 'replace')[-800:]
    for phase in ('insert', 'select', 'update'):
        path = os.path.join(outdir, 'diff.client.%s.B.folded' % phase)
        assert '%s: client CPU, A against B' % phase in out and path in out, out[-1500:]
        with open(path) as f:
            rows = [l.rsplit(' ', 2) for l in f.read().splitlines()]
        # each stack with its samples in A and in B; both sides sampled something
        assert rows and all(a.isdigit() and b.isdigit() for _s, a, b in rows)
        assert sum(int(a) for _s, a, _b in rows) > 0 and sum(int(b) for _s, _a, b in rows) > 0
