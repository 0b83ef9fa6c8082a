"""The PostgreSQL backend against a real private cluster."""
from __future__ import absolute_import, division, print_function

import os
import subprocess
import sys
import time

import pytest

from gloaddriver import workload
from gloaddriver.backends.postgres.server import PostgresServer
from tests.integration.conftest import ROOT, assert_accounted, pg_query, run_cli, started_driver
from tests import result_schema

psycopg2 = pytest.importorskip('psycopg2')


@pytest.fixture(scope='module')
def pg():
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def pg_own():
    server = PostgresServer().start()
    yield server
    server.stop()


def dsn_without_password(server):
    return 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
        server.port, server.database, server.user)


def run_pg(server, args, **kw):
    env = dict(kw.pop('env', {}), GLOADDRIVER_PASSWORD=server.password)
    return run_cli(['--backend', 'postgres', '--dsn', dsn_without_password(server)] + args,
                   env=env, **kw)


def query(server, sql, params=None):
    return pg_query(server.dsn, sql, params)


_n = [0]


def table_name():
    _n[0] += 1
    return 'kv_%d_%d' % (os.getpid(), _n[0])


@pytest.mark.parametrize('prepared', [False, True])
def test_kv_phases_and_the_data_read_back(pg, prepared):
    t = table_name()
    args = ['--init', '--table', t, '--ops', '1500', '--greenlets', '12', '--pool-size', '4',
            '--phases', 'insert,select,update,select', '--value-size', '200']
    rc, out, err, res = run_pg(pg, args + (['--prepared'] if prepared else []))
    assert rc == 0, err
    assert_accounted(res)
    for p in res['phases']:
        assert (p['attempted'], p['ok'], p['misses']) == (1500, 1500, 0), p['name']
        # The pool's connections, seen by the monitor's sample (0: the sample is broken).
        assert 1 <= p['server_connections_peak'] <= 4 and p['pool']['peak_open'] <= 4
    values = workload.values(200)
    rows = query(pg, 'SELECT id, value FROM %s ORDER BY id' % t)
    assert rows == [(k, values[(k + 1) % 100]) for k in range(1500)]
    assert all(type(r[1]) is type(values[0]) for r in rows)   # text, on 2.7 too
    assert res['manifest']['backend'] == 'postgres' and res['manifest']['prepared'] is prepared
    assert pg.password not in out + err


@pytest.mark.parametrize('prepared', [False, True])
def test_kv_scan_and_read_modify_write(pg, prepared):
    t = table_name()
    args = ['--init', '--table', t, '--ops', '1000', '--keys', '1000', '--greenlets', '8',
            '--load', '--mix', 'scan=1,rmw=1', '--distribution', 'latest', '--value-size', '20']
    rc, out, err, res = run_pg(pg, args + (['--prepared'] if prepared else []))
    assert rc == 0, err
    assert_accounted(res)
    mix = res['phases'][1]
    assert mix['ok'] == 1000 and mix['misses'] == 0, mix
    rmw = mix['ops']['rmw']['ok']
    values = workload.values(20)
    changed = query(pg, 'SELECT count(*) FROM %s WHERE value = %%s OR value = %%s' % t,
                    (values[2], values[3]))[0][0]
    assert 0 < changed <= rmw   # hot keys are rewritten more than once
    if mix['syscalls']['source'] == 'perf_event':
        # a scan is one round trip, an rmw two
        per_op = mix['syscalls']['network_per_op']
        assert 2 * 1.4 < per_op < 2 * 1.6 + 0.2, per_op


def test_toolbench_queries_return_their_rows(pg):
    rc, out, err, res = run_pg(pg, ['--init', '--workload', 'toolbench', '--ops', '200',
                                    '--greenlets', '8'])
    assert rc == 0, err
    assert_accounted(res)
    assert [p['name'] for p in res['phases']] == ['pg_type', 'series', 'bytea', 'arrays']
    assert all(p['ok'] == 200 and p['misses'] == 0 for p in res['phases'])
    assert query(pg, 'SELECT count(*), min(length(data)) FROM gloaddriver_tb_bytea') == \
        [(100, 1024)]
    assert query(pg, 'SELECT count(*), min(cardinality(a)) FROM gloaddriver_tb_arrays') == \
        [(100, 100)]


@pytest.mark.parametrize('callback', ['cached', 'psycogreen'])
def test_wait_callbacks(pg, callback):
    t = table_name()
    rc, out, err, res = run_pg(pg, ['--init', '--table', t, '--ops', '2000', '--greenlets', '8',
                                    '--phases', 'insert,select', '--wait-callback', callback])
    assert rc == 0, err
    sel = res['phases'][1]
    assert sel['ok'] == 2000 and sel['misses'] == 0
    if sel['syscalls']['source'] == 'perf_event':
        epoll_ctl = sel['syscalls']['by_name'].get('epoll_ctl', 0)
        # the cached callback keeps its watchers; psycogreen makes a new one per wait
        assert epoll_ctl < 0.05 if callback == 'cached' else epoll_ctl > 0.9, epoll_ctl
        assert 1.9 < sel['syscalls']['network_per_op'] < 2.2


def test_relational_mix_one_round_trip_per_op_and_bounded_connections(pg):
    before = query(pg, "SELECT to_regclass('rel_parent') IS NOT NULL")[0][0] and \
        query(pg, 'SELECT count(*) FROM rel_parent')[0][0] or 0
    rc, out, err, res = run_pg(pg, ['--init', '--workload', 'relational', '--ops', '2000',
                                    '--greenlets', '20', '--pool-size', '5',
                                    '--distribution', 'uniform'])
    assert rc == 0, err
    (phase,) = res['phases']
    assert_accounted(res)
    creates = phase['ops']['create']['ok']
    assert 800 < creates < 1200 and phase['ops']['read']['ok'] == 2000 - creates
    parents = query(pg, 'SELECT count(*) FROM rel_parent')[0][0] - before
    assert parents == 3 * creates
    children = query(pg, 'SELECT count(*) FROM rel_child c JOIN rel_parent p ON p.id = '
                         'c.parent_id WHERE p.name LIKE %s', ('parent-%',))[0][0]
    assert children >= 5 * creates
    assert phase['server_connections_peak'] <= 5 and phase['pool']['peak_open'] <= 5
    if phase['syscalls']['source'] == 'perf_event':
        assert 1.9 < phase['syscalls']['network_per_op'] < 2.2   # one round trip per op


def test_bulk_methods_load_every_row(pg):
    rc, out, err, res = run_pg(pg, ['--init', '--workload', 'bulk', '--rows', '3000'])
    assert rc == 0, err
    names = [p['name'] for p in res['phases']]
    assert names == ['bulk:row-connect', 'bulk:row', 'bulk:executemany', 'bulk:execute-values',
                     'bulk:unnest', 'bulk:copy']
    for p in res['phases']:
        assert p['ok'] == p['attempted'] and p['failed'] == 0, p['name']
    by = dict((p['name'], p) for p in res['phases'])
    assert by['bulk:row-connect']['attempted'] == 1000     # capped with --method all
    assert by['bulk:copy']['green'] is False and 'outside green mode' in out
    assert by['bulk:unnest']['statements'] == 1 and by['bulk:row']['statements'] == 3000
    rows = query(pg, "SELECT name, attrs -> 'n', id IS NOT NULL, created IS NOT NULL "
                     "FROM bulk_load ORDER BY name LIMIT 1")
    assert rows == [(u'row-0', u'0', True, True)]


@pytest.mark.parametrize('dsn,words', [
    ('host=127.0.0.1 port={port} password={pw} nonsense', 'not a valid connection string'),
    ('host=127.0.0.1 port={port} dbname=gloaddriver user=gloaddriver password=wrong-pw '
     'sslmode=disable', 'password authentication failed'),
    ('host=127.0.0.1 port={port} dbname=nodb user=gloaddriver password={pw} sslmode=disable',
     'does not exist'),
    ('host=127.0.0.1 port=1 dbname=x user=y password={pw}', '127.0.0.1:1'),
])
def test_bad_connections_are_one_clear_line_without_the_password(pg, dsn, words):
    rc, out, err, res = run_cli(['--backend', 'postgres', '--ops', '10', '--dsn',
                                 dsn.format(port=pg.port, pw=pg.password)])
    assert rc == 3 and words in err, err
    assert 'Traceback' not in err and len(err.strip().splitlines()) == 1
    assert pg.password not in out + err


def test_missing_table_names_the_fix(pg):
    rc, out, err, res = run_pg(pg, ['--table', 'no_such_table', '--ops', '10'])
    assert rc == 3 and '--init' in err and 'CREATE TABLE' in err, err


def _start(server, args):
    """Start a run (conftest.started_driver) and return (process, JSON path) once its
    phase has run 0.5 s: a fault then hits the phase, not the --init before it."""
    import tempfile
    path = tempfile.mktemp(suffix='.json')
    p = started_driver(['--backend', 'postgres', '--dsn', dsn_without_password(server),
                        '--json', path] + args, {'GLOADDRIVER_PASSWORD': server.password})
    return p, path


def _finish(p, path):
    out, err = p.communicate()
    err = p.stderr_before + err.decode('utf-8', 'replace')
    assert os.path.exists(path), 'no result (exit %s): %s' % (p.returncode, err[-2000:])
    with open(path) as f:
        res = result_schema.read(f)
    os.unlink(path)
    return p.returncode, err, res


def test_killed_backends_are_replaced_and_the_run_goes_on(pg):
    t = table_name()
    p, path = _start(pg, ['--init', '--table', t, '--phases', 'insert', '--ops', '0',
                          '--duration', '3', '--keys', '100000000', '--greenlets', '6'])
    time.sleep(0.7)
    killed = query(pg, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                       "datname = current_database() AND pid <> pg_backend_pid() AND "
                       "backend_type = 'client backend'")[0][0]
    rc, err, res = _finish(p, path)
    assert killed >= 6
    (phase,) = res['phases']
    assert_accounted(res)
    assert phase['errors'].get('network', 0) >= 1 and rc == 1, err
    assert phase['pool']['connects'] >= 12 and phase['pool']['discarded'] >= 6
    assert phase['pool']['peak_open'] <= 6
    # the server's view of the database also sees this test's own connection
    assert phase['server_connections_peak'] <= 6 + 1


def test_server_restart_mid_run(pg_own):
    p, path = _start(pg_own, ['--init', '--phases', 'insert', '--ops', '0', '--duration', '5',
                              '--keys', '100000000', '--timeout', '1', '--greenlets', '10'])
    time.sleep(1.0)
    pg_own.kill()
    time.sleep(1.0)
    pg_own.restart()
    rc, err, res = _finish(p, path)
    (phase,) = res['phases']
    assert_accounted(res)
    assert rc == 1 and 'Traceback' not in err
    assert phase['errors'].get('network', 0) >= 1
    assert phase['pool']['discarded'] >= 10
    # (a row may be committed while its reply was lost to the kill, so the
    # table and the ok count need not match exactly)
    assert phase['ok'] > 0 and query(pg_own, 'SELECT count(*) FROM gloaddriver')[0][0] > 0


def test_postgres_spawn_runs_the_default_kv_job():
    rc, out, err, res = run_cli(['--backend', 'postgres', '--spawn', '--ops', '500',
                                 '--greenlets', '10'])
    assert rc == 0, err
    assert res['manifest']['server']['spawned'] is True and res['manifest']['server']['ssl'] == 'off'
    assert [p['name'] for p in res['phases']] == ['insert', 'select', 'update', 'delete']


_CLOSE_WHILE_SAMPLING = r'''
import os, signal, sys
from gevent import monkey; monkey.patch_all()
import gevent
from gloaddriver.backends.postgres import metrics, pool as pgpool
pgpool.install('cached')
pool = pgpool.Pool(sys.argv[1], 1)
m = metrics.sampler(pool)
assert m.sample() is not None
item = pool.connect(setup=False)
item.cur.execute('SELECT pid FROM pg_stat_activity WHERE application_name = %s',
                 (pgpool.MONITOR_NAME,))
(pid,) = item.cur.fetchone()
os.kill(pid, signal.SIGSTOP)   # the sampler's own backend stops answering
try:
    g = gevent.spawn(m.sample, timeout=60)
    gevent.sleep(0.3)
    assert not g.dead          # parked inside its query
    m.close()
    print('closed; the sample ended: %s' % g.dead)
finally:
    os.kill(pid, signal.SIGCONT)
'''


def test_server_metrics_close_while_a_sample_is_out(pg):
    """A run's end closes the sampler's connection while a server-metrics sample may be
    parked in its query (the server slow, paused or cut): the close ends that sample and
    returns. It used to wait for ever on psycopg2's connection lock (one thread, two
    greenlets), and the run never ended."""
    p = subprocess.Popen([sys.executable, '-c', _CLOSE_WHILE_SAMPLING, pg.dsn], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    deadline = time.time() + 30   # 2 s when it works
    while p.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    if p.poll() is None:
        p.kill()
        p.communicate()
        pytest.fail('close() hung while a sample was out')
    out, err = p.communicate()
    assert p.returncode == 0 and b'closed; the sample ended: True' in out, err
