"""The benchmark scripts still run end to end (tiny sizes: a smoke test, no speed asserted)."""
from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

import pytest

from gloaddriver.backends.spawn import which
from tests.integration.conftest import ROOT


def run(script, args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    p = subprocess.Popen([sys.executable, os.path.join(ROOT, 'scripts', script)] + args,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    out, err = p.communicate()
    return p.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


def test_bench_tarantool_table_and_json(tmpdir):
    outdir = str(tmpdir)
    path = os.path.join(outdir, 't.json')
    rc, out, err = run('bench_tarantool.py', ['--ops', '300', '--greenlets', '1,10',
                                              '--out', path])
    assert rc == 0, err
    data = json.load(open(path))
    assert len(data['runs']) == 4 and len(data['table']) == 16
    ratios = [t['buffered_over_sync'] for t in data['table'] if t['connector'] == 'buffered']
    assert all(r is not None and r > 0 for r in ratios)
    assert 'buffered/sync' in out


def test_bench_postgres_table_and_json(tmpdir):
    outdir = str(tmpdir)
    path = os.path.join(outdir, 'p.json')
    rc, out, err = run('bench_postgres.py', ['--rounds', '1', '--kv-ops', '300',
                                             '--relational-ops', '200', '--bulk-rows', '200',
                                             '--pgbench-seconds', '1', '--out', path])
    assert rc == 0, err
    data = json.load(open(path))
    whats = set(t['what'] for t in data['table'])
    assert {'kv select', 'relational mix', 'bulk:copy'} <= whats
    if which('pgbench'):
        assert any(t.get('vs_pgbench') for t in data['table'])


def test_bench_codec_side_by_side_table_and_json(tmpdir):
    path = str(tmpdir.join('c.json'))
    rc, out, err = run('bench_codec.py', ['--python', sys.executable, '--python', sys.executable,
                                          '--out', path, '64'])
    assert rc == 0, err
    rows = json.load(open(path))
    assert len(rows) == 2
    for k in ('encode_insert_us', 'encode_select_us', 'decode_reply_us', 'park_wake_us'):
        assert all(r[k] > 0 for r in rows)
        assert k[:-3] in out
    assert 'ratio' in out


def test_bench_open_loop_table_and_json(tmpdir):
    path = str(tmpdir.join('o.json'))
    rc, out, err = run('bench_open_loop.py', ['--rate', '2000', '--seconds', '3',
                                              '--pause', '0.4', '--greenlets', '10',
                                              '--out', path])
    assert rc == 0, err
    steady, paused = json.load(open(path))['table']
    assert steady['achieved'] > 0 and steady['dropped'] == 0
    # the stall is in the corrected tail, not in the service time (where it
    # delays only the few ops in flight when it began)
    assert paused['p99_us'] > 200000 > paused['service_p99_us']
    assert 'svc p99.9 us' in out


def test_bench_processes_table_and_json(tmpdir):
    path = str(tmpdir.join('p.json'))
    rc, out, err = run('bench_processes.py', ['--rounds', '1', '--ops', '2000',
                                              '--greenlets', '10', '--out', path])
    assert rc == 0, err
    data = json.load(open(path))
    assert [r['phase'] for r in data['table']] == ['insert', 'select', 'update', 'delete']
    assert all(r['ratio'] > 0 and r['busy_two_pct'] > 0 for r in data['table'])
    assert [r['processes'] for r in data['runs']] == [1, 2]


BENCHES = ('tarantool', 'postgres', 'open-loop', 'processes', 'codec', 'compat', 'syscalls',
           'toolbench', 'pg-path', 'orm')


def shell(args):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    out, err = p.communicate()
    return p.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


def test_one_dispatcher_behind_every_bench_name():
    bench = os.path.join(ROOT, 'scripts', 'bench')
    for old in ('bench-tarantool', 'bench-postgres', 'bench-open-loop', 'bench-processes',
                'bench-codec', 'compat', 'syscalls'):
        assert os.readlink(os.path.join(ROOT, 'scripts', old)) == 'bench', old
    # --help and a wrong name answer before anything is installed or built
    rc, out, err = shell([bench, '--help'])
    assert rc == 0, err
    for name in BENCHES:
        assert '\n  %s ' % name in out, name
    rc, out, err = shell([bench, 'nosuch'])
    assert rc == 2 and "no bench named 'nosuch'" in err and out == ''


def _envs_module():
    """scripts/envs.py as a module (it is a script, not part of the package)."""
    scripts = os.path.join(ROOT, 'scripts')
    sys.path.insert(0, scripts)
    try:
        import envs
    finally:
        sys.path.remove(scripts)
    return envs


def test_environment_helper_command_line():
    """scripts/lib.sh makes .venv/pyXY through ``scripts/envs.py``, which runs from the
    checkout with nothing on PYTHONPATH."""
    envs = _envs_module()
    env = dict(os.environ)
    env.pop('PYTHONPATH', None)
    version = '%d.%d' % sys.version_info[:2]
    helper = os.path.join(ROOT, 'scripts', 'envs.py')
    p = subprocess.Popen([sys.executable, helper, 'find', version],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd='/')
    out, err = p.communicate()
    assert p.returncode == 0, err
    found = out.decode().strip()
    code = 'import sys; print("%d.%d" % sys.version_info[:2])'
    assert subprocess.check_output([found, '-c', code]).decode().strip() == version
    p = subprocess.Popen([sys.executable, helper, 'find', '3.99'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd='/')
    out, err = p.communicate()
    assert p.returncode == 1 and out == b'' and b'not found' in err
    assert envs.venv_dir('3.11') == os.path.join(ROOT, '.venv', 'py311')
    # the stamp is what the shell version wrote, with the package's C sources (and
    # their header) after: cat setup.cfg setup.py C-SOURCES | cksum
    if which('cksum'):
        shell_sum = subprocess.check_output(
            'cat setup.cfg setup.py $(find gloaddriver -name "*.c" -o -name "*.h" | '
            'LC_ALL=C sort) | cksum',
            shell=True, cwd=ROOT)
        assert envs.stamp() == shell_sum.decode().split()[0]
    assert envs.cksum(b'') == 4294967295 and envs.cksum(b'123456789') == 930766865


def test_bench_user_table_and_json(tmpdir):
    path = str(tmpdir.join('u.json'))
    rc, out, err = run('bench_user.py', ['--ops', '2000', '--keys', '1000', '--rounds', '1',
                                         '--greenlets', '10', '--out', path])
    assert rc == 0, err
    data = json.load(open(path))
    kinds = [t['kind'] for t in data['table']]
    assert kinds == ['built-in select', 'workload file']
    assert data['table'][0]['cpu_ratio'] == 1.0 and data['table'][1]['cpu_ratio'] > 0
    assert all(r['failed'] == 0 and r['misses'] == 0 for r in data['runs'])
    assert 'cpu ratio' in out


def test_bench_peers_table_and_json(tmpdir):
    # gloaddriver and the hub-driven style only: the other peers need their own
    # environments (scripts/peers/install.sh), which this smoke test does not build.
    assert os.readlink(os.path.join(ROOT, 'scripts', 'bench-peers')) == 'bench'
    path = os.path.join(str(tmpdir), 'p.json')
    rc, out, err = run('bench_peers.py', [
        '--python', sys.executable, '--python27', sys.executable, '--peers311', 'none',
        '--peers27', 'none', '--backends', 'tarantool', '--clients',
        'hub-driven style,gloaddriver --no-overlap', '--concurrency', '1,10', '--rounds', '1',
        '--rounds-1', '2', '--ops', '300', '--ops-1', '200', '--out', path])
    assert rc == 0, err
    data = json.load(open(path))
    # At 1: the three and the blocking-socket loop (always there: the latency floor), in
    # two rounds (--rounds-1); at 10 the three and the raw pipelined loop (always there:
    # the CPython floor), in one.
    assert len(data['runs']) == 12 and all(r['phases'] for r in data['runs'])
    rows = data['table']
    assert len(rows) == 32 and all(r['errors'] == 0 for r in rows)
    assert set((r['concurrency'], r['rounds']) for r in rows) == set([(1, 2), (10, 1)])
    assert set(r['client'] for r in rows if r['concurrency'] == 10) == set([
        'gloaddriver', 'hub-driven style', 'gloaddriver --no-overlap', 'raw pipelined loop'])
    assert all(r['ratio'] > 0 for r in rows) and 'x gloaddriver' in out and '+p50us' in out
    for r in rows:
        # Every client timed its ops; the added latency is against the blocking loop at
        # 1 (its own is 0), and has no floor at 10 without asynctnt.
        assert 0 < r['p50_us'] <= r['p99_us'], r
        if r['concurrency'] == 1:
            assert r['added_vs'] == 'blocking socket loop' and r['added_p50_us'] is not None, r
            if r['client'] == 'blocking socket loop':
                assert r['added_p50_us'] == 0, r
        else:
            assert r['added_p50_us'] is None, r
    for r in rows:
        if r['concurrency'] == 1 or r['network_per_op'] is None:
            continue
        if r['client'] == 'gloaddriver':
            # 10 callers are few (AT_ONCE_BELOW): a send per op, the replies read in
            # chunks, so under a receive per op.
            assert 1.0 <= r['network_per_op'] < 2.0, r
            continue
        # Trains (--no-overlap, the hub-driven style, the raw loop): ops share their
        # sends and receives, one of each per op unbatched (2 an op), one of each per
        # batch of 10 at best (0.2). A loaded machine wakes a greenlet late now and then
        # and splits a batch, so the promise judged is batches of four ops or more on
        # average.
        assert r['network_per_op'] <= 0.5, r


@pytest.mark.skipif(os.sysconf('SC_NPROCESSORS_ONLN') < 2, reason='--pin needs 2 CPUs')
def test_bench_peers_pin_puts_the_server_and_the_clients_on_separate_cpus():
    # pin() in a process of its own (it pins the process that calls it): a real
    # PostgreSQL, whose backends fork after the pin and must inherit its CPU too.
    code = """
from __future__ import print_function
import os, subprocess, sys
sys.path[:0] = [os.path.join(%r, 'scripts'), %r]
import psycopg2
import bench_peers
from gloaddriver.backends.postgres.server import PostgresServer

def cpus(pid):
    out = set()
    for t in os.listdir('/proc/%%d/task' %% pid):
        for line in open('/proc/%%d/task/%%s/status' %% (pid, t)):
            if line.startswith('Cpus_allowed_list:'):
                out.add(line.split()[1])
    return sorted(out)

class Args(object):
    pin = True
with PostgresServer() as server:
    bench_peers.pin(Args(), server)
    conn = psycopg2.connect(server.dsn)
    cur = conn.cursor()
    cur.execute('SELECT pg_backend_pid()')
    backend = cur.fetchone()[0]
    child = subprocess.Popen(['sleep', '5'])
    print(cpus(server.proc.pid), cpus(backend), cpus(os.getpid()), cpus(child.pid))
    child.kill()
    child.wait()
    conn.close()
""" % (ROOT, ROOT)
    p = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=ROOT)
    out, err = p.communicate()
    assert p.returncode == 0, err.decode('utf-8', 'replace')
    # The postmaster, a backend forked after the pin, this process, and a child it starts.
    assert out.decode().split() == ["['0']"] * 2 + ["['1']"] * 2


def test_bench_revisions_table_and_json(tmpdir):
    # The same checkout on both sides: a smoke test of the rounds and the table.
    path = str(tmpdir.join('r.json'))
    rc, out, err = run('bench_revisions.py', [
        '--a', ROOT, '--b', ROOT, '--python-a', sys.executable, '--python-b', sys.executable,
        '--rounds', '2', '--out', path, '--', '--spawn', '--greenlets', '10',
        '--phases', 'insert,select', '--ops', '2000'])
    assert rc == 0, err
    data = json.load(open(path))
    assert len(data['rounds']) == 2
    for rd in data['rounds']:
        assert sorted(rd['A']) == sorted(rd['B']) == ['insert', 'select']
        assert all(f['ops_per_sec'] > 0 for side in rd.values() for f in side.values())
    assert 'B/A per round' in out and 'cpu_us_per_op' in out


def test_bench_pgbench_table_and_json(tmpdir):
    if not which('pgbench'):
        pytest.skip('no pgbench binary')
    path = os.path.join(str(tmpdir), 'pg.json')
    rc, out, err = run('bench_pgbench.py', ['--rounds', '1', '--seconds', '1', '--scale', '1',
                                            '--out', path])
    assert rc == 0, err
    data = json.load(open(path))
    clients = sorted(set(r['client'] for r in data['runs']))
    assert clients == ['kv-pipelined', 'pgbench', 'pipelined', 'psycopg2', 'psycopg2-loop']
    assert len(data['runs']) == 9 and all(r['tps'] > 0 for r in data['runs']), data['runs']
    assert len(data['summary']) == 7 and 'x pgbench' in out and 'plain psycopg2 loop' in out
    assert 'x the kv select' in out


def test_bench_toolbench_table_and_json(tmpdir):
    # asyncpg needs the peers' environment (scripts/peers/install.sh), which this smoke
    # test does not build: the psycopg2 loop and gloaddriver's connectors only.
    path = os.path.join(str(tmpdir), 'tb.json')
    rc, out, err = run('bench_toolbench.py', [
        '--python', sys.executable, '--peers311', 'none', '--clients',
        'gevent+psycopg2 loop,gloaddriver psycopg2,gloaddriver pipelined', '--queries',
        'series,bytea', '--rounds', '1', '--seconds', '0.5', '--conns', '2', '--out', path])
    assert rc == 0, err
    runs = json.load(open(path))['runs']
    assert sorted((r['client'], r['query']) for r in runs) == sorted(
        (c, q) for c in ('gevent+psycopg2 loop', 'gloaddriver psycopg2', 'gloaddriver pipelined')
        for q in ('series', 'bytea'))
    assert all(r['qps'] > 0 for r in runs)
    assert 'gloaddriver pipelined' in out and 'queries/s' in out


def test_bench_pg_path_counts_a_layers_instructions(tmpdir):
    if not which('valgrind'):
        pytest.skip('no valgrind (scripts/test installs it)')
    path = str(tmpdir.join('pp.json'))
    rc, out, err = run('bench_pg_path.py', ['--layers', 'driver', '--ops', '40,120',
                                            '--out', path])
    assert rc == 0, err
    (row,) = json.load(open(path))['rows']
    assert row['layer'] == 'driver' and row['ops'] == [40, 120]
    # The 80 more selects cost instructions: tens of thousands each, not nothing
    assert row['ir'][1] > row['ir'][0] and 5000 < row['ir_per_op'] < 10 ** 6
    assert 'instr per op' in out
    rc, _out, err = run('bench_pg_path.py', ['--ops', '10', '--out', path])
    assert rc == 2 and '--ops takes N1,N2' in err


def _orm_pythons():
    """The interpreters of scripts/bench orm: .venv/py311 (gloaddriver with SQLAlchemy,
    gevent and psycogreen), which scripts/test makes before any test, and
    .venv/peers-py311 (SQLAlchemy's asyncio on asyncpg), made here when missing by
    scripts/peers/install.sh as the dispatcher makes it (it takes a lock: the suite's
    2.7 and 3.11 halves may both ask at once)."""
    envs = _envs_module()
    py311 = os.path.join(envs.venv_dir('3.11'), 'bin', 'python')
    assert os.access(py311, os.X_OK), 'no %s: scripts/test (or scripts/envs.py ensure 3.11) ' \
        'makes it' % py311
    helper = os.path.join(ROOT, 'scripts', 'envs.py')
    found = []
    for version in ('3.11', '2.7'):
        rc, out, err = shell([sys.executable, helper, 'find', version])
        assert rc == 0, err
        found.append(out.strip())
    rc, out, err = shell([os.path.join(ROOT, 'scripts', 'peers', 'install.sh')] + found)
    assert rc == 0, err
    return py311, os.path.join(ROOT, '.venv', 'peers-py311', 'bin', 'python')


def test_bench_orm_table_and_json(tmpdir):
    # Every program for real, tiny: the founding comparison's three (sync Session,
    # asyncio + asyncpg every task at once and in chunks of 40), the gevent + psycogreen
    # loop, and gloaddriver's orm and relational workloads.
    py311, peers311 = _orm_pythons()
    path = str(tmpdir.join('orm.json'))
    rc, out, err = shell([py311, os.path.join(ROOT, 'scripts', 'bench_orm.py'), '--python',
                          py311, '--peers311', peers311, '--ops', '200', '--rounds', '1',
                          '--out', path])
    assert rc == 0, out + err
    data = json.load(open(path))
    rows = dict((r['program'], r) for r in data['table'])
    assert sorted(rows) == sorted(['sync', 'asyncio-all', 'asyncio-chunks', 'gevent', 'orm',
                                   'relational'])
    for key, r in rows.items():
        assert r['rounds'] == 1 and r['ops_per_sec'] > 0 and r['cpu_us_per_op'] > 0, r
        assert r['process_cpu_us_per_op'] >= r['cpu_us_per_op'], r
        if key == 'asyncio-all':
            # 200 connections asked for at once, 100 allowed: the refused ones' ops fail
            assert r['ok'] + r['failed'] == 200 and 1 <= r['connections'] <= 100, r
        else:
            assert r['ok'] == 200 and r['failed'] == 0, r
            assert r['connections'] <= 40, r
    assert rows['sync']['connections'] == 1
    for key in ('asyncio-chunks', 'gevent'):
        assert rows[key]['connections'] >= 1, rows[key]
    clients = dict((r['program'], r['result']['client']) for r in data['runs'])
    assert 'asyncpg' in clients['asyncio-chunks'] and 'psycogreen' in clients['gevent']
    assert clients['orm'].startswith('gloaddriver')
    crit = data['criteria']
    for key in ('orm_over_asyncio_chunks', 'orm_over_gevent'):
        assert crit[key]['of_medians'] > 0 and len(crit[key]['per_round']) == 1
    assert crit['orm_added_cpu']['ratio'] > 0
    for text in ('gloaddriver orm / asyncio chunks of 40', 'gloaddriver orm / gevent',
                 "the ORM's added client CPU per op", 'SQLAlchemy sync Session'):
        assert text in out, text


def test_bench_pg_path_counts_a_scripts_python_calls(tmpdir):
    # Calls are counted, not timed: the interpreter's own per transaction is a bound
    # that holds on any machine (a call for the op and one for the script's commands
    # written as one function; each \set, random() and EXECUTE of its own was 21 more).
    path = str(tmpdir.join('pc.json'))
    rc, out, err = run('bench_pg_path.py', ['--count', '--layers', 'select-loop,select-script',
                                            '--ops', '100,300', '--out', path])
    assert rc == 0, err
    loop, script = json.load(open(path))['rows']
    assert (loop['layer'], script['layer']) == ('select-loop', 'select-script')
    assert loop['calls_per_op'] >= 1
    assert script['calls_per_op'] - loop['calls_per_op'] <= 6, (loop, script)
    assert script['calls']['script interpreter'][0] == 0, script['calls']
    assert 'Python calls per op' in out and 'select-script' in out
