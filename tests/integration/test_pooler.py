"""A private pgbouncer (``--spawn --pooler pgbouncer``) in front of a real PostgreSQL
server and of a replica set's leader: the ops go through it, the server metrics straight
to the server, its pool figures per interval, its errors by name, transaction mode's
refusal of named statements, ``pooler-restart`` as an outage, and nothing of the run
left behind (after the run, on Ctrl-C, and when the driver is killed)."""
from __future__ import absolute_import, division, print_function

import os
import signal
import time

import pytest

from gloaddriver.measure import procfs
from tests.integration.conftest import assert_accounted, run_cli, started_driver

pytest.importorskip('psycopg2')

POOLED = ['--backend', 'postgres', '--spawn', '--init', '--pooler', 'pgbouncer']


def _parts(driver_pid):
    """{pid: work dir} of the pgbouncer, haproxy and postgres processes the driver started (its
    launcher's children), read from their command lines."""
    out = {}
    launchers = [p for p in procfs.family(driver_pid) if p != driver_pid]
    for launcher in launchers:
        for pid in procfs.family(launcher):
            try:
                with open('/proc/%d/cmdline' % pid, 'rb') as f:
                    argv = f.read().decode('utf-8', 'replace').split('\x00')
            except (IOError, OSError):
                continue
            name = os.path.basename(argv[0])
            if name == 'pgbouncer':
                out[pid] = os.path.dirname(argv[1])
            elif name == 'haproxy' and '-f' in argv:
                out[pid] = os.path.dirname(argv[argv.index('-f') + 1])
            elif name == 'postgres' and '-D' in argv:
                out[pid] = os.path.dirname(argv[argv.index('-D') + 1])
    return out


def _alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (IOError, OSError):
        return False


def _assert_nothing_left(parts, seconds=10):
    """None of ``parts``' processes runs and none of their directories is left, within
    ``seconds`` (a killed driver's reaper waits a moment before it removes them)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        left = [p for p in parts if _alive(p)] + [d for d in set(parts.values())
                                                 if os.path.exists(d)]
        if not left:
            return
        time.sleep(0.2)
    pytest.fail('left behind: %s' % left)


@pytest.mark.parametrize('mode', ['session', 'transaction'])
def test_the_ops_go_through_pgbouncer_and_its_pool_is_sampled(mode):
    rc, out, err, res = run_cli(POOLED + ['--pool-mode', mode, '--phases', 'insert,select',
                                          '--ops', '0', '--duration', '2.5', '--greenlets', '8',
                                          '--progress', '0.5'])
    assert rc == 0 and 'Traceback' not in err, err[-3000:]
    assert_accounted(res)
    pooler = res['manifest']['server']['pooler']
    assert (pooler['kind'], pooler['pool_mode'], pooler['version']) == (
        'pgbouncer', mode, '1.18.0')
    assert pooler['address'] != pooler['backend']
    assert 'through pgbouncer (%s pool mode)' % mode in out
    for phase in res['phases']:
        sm = phase['server_metrics']
        # Every op was one pooled transaction (the samplers' own go to the server).
        pooled = sm['phase']['counts']['pgbouncer_total_xact_count']
        assert phase['ok'] <= pooled <= phase['ok'] + 50, (phase['ok'], pooled)
        # The server metrics are the server's: its backends are pgbouncer's server
        # connections and the driver's samplers, never the pooler's address.
        assert sm['phase']['numbackends'] >= 1
        rows = [r for r in sm['intervals'] if not r.get('late')]   # a busy machine's
        assert rows and all('pgbouncer_cl_active' in r and 'pgbouncer_sv_active' in r
                            for r in rows), rows
        assert max(r['pgbouncer_cl_active'] + r['pgbouncer_cl_waiting'] for r in rows) >= 1
        kinds = [c['kind'] for c in sm['charts']]
        assert 'pooler-connections' in kinds and 'pooler-wait' in kinds
        (note,) = [n for n in phase['notes'] if n.startswith('pgbouncer')]
        assert note.startswith('pgbouncer (%s pool mode): ' % mode) and 'SHOW STATS' in note
        assert '%s: %s' % (phase['name'], note) in out


def test_the_pipelined_connector_goes_through_pgbouncer_in_session_mode():
    rc, out, err, res = run_cli(POOLED + ['--connector', 'pipelined', '--phases',
                                          'insert,select', '--ops', '3000', '--greenlets', '16'])
    assert rc == 0 and 'Traceback' not in err, err[-3000:]
    assert_accounted(res)
    assert all(p['ok'] == 3000 for p in res['phases'])
    assert res['manifest']['server']['pooler']['pool_mode'] == 'session'


@pytest.mark.parametrize('flags, named, instead', [
    (['--prepared'], '--prepared', 'leave out --prepared'),
    (['--builtin', 'select-only', '--protocol', 'prepared'], '--protocol prepared',
     'use --protocol extended'),
    (['--builtin', 'select-only', '--prepared'], '--prepared', 'use --protocol extended'),
    (['--connector', 'pipelined'], '--connector pipelined', 'use --connector psycopg2'),
])
def test_named_statements_through_transaction_mode_are_refused_before_anything_starts(
        flags, named, instead):
    t = time.time()
    rc, out, err, res = run_cli(POOLED + ['--pool-mode', 'transaction'] + flags)
    assert rc == 2 and res is None and out == '', (rc, out, err)
    (line,) = err.strip().splitlines()
    assert line.startswith('gloaddriver: error: %s prepares named statements, which '
                           'pgbouncer 1.18 in transaction mode does not carry' % named), line
    assert instead in line and 'or --pool-mode session' in line
    assert time.time() - t < 15      # refused before a server was made


@pytest.mark.parametrize('flags, says', [
    (['--backend', 'postgres', '--pooler', 'pgbouncer'], '--pooler goes with --spawn'),
    (['--backend', 'postgres', '--spawn', '--pool-mode', 'transaction'],
     '--pool-mode goes with --pooler pgbouncer'),
    (['--backend', 'postgres', '--spawn', '--fault', 'pooler-restart@1s'],
     '--fault restart-pooler@1s: there is no pooler; add --pooler pgbouncer'),
    (POOLED + ['--fault', 'pooler-jump@1s'], '--fault pooler-jump@1s: the pooler takes'),
    (POOLED + ['--pooler-setting', 'listen_port=1'],
     '--pooler-setting listen_port: gloaddriver sets it'),
    (POOLED + ['--pooler-setting', 'pool_mode=session'], 'use --pool-mode'),
    (POOLED + ['--processes', '2'], '--pooler with --processes is not supported yet'),
    (POOLED + ['--spawn', '--replicas', '1', '--read-from', 'replica', '--connector',
               'pipelined'], '--read-from replica does not go with --pooler'),
    (['--backend', 'postgres', '--spawn', '--proxy', 'haproxy'],
     '--proxy haproxy goes with --spawn --replicas N'),
    (['--backend', 'postgres', '--spawn', '--replicas', '1', '--proxy', 'haproxy',
      '--read-from', 'replica', '--connector', 'pipelined'],
     '--read-from replica does not go with --proxy'),
])
def test_bad_pooler_flags_are_one_line_and_exit_2(flags, says):
    rc, out, err, res = run_cli(flags)
    assert rc == 2 and res is None, (rc, err)
    (line,) = err.strip().splitlines()
    assert says in line, line


@pytest.mark.parametrize('faults', ['pooler-restart@1.2s', 'pooler-kill@1.2s,pooler-start@1.8s'])
def test_a_pooler_restart_is_reported_as_a_server_restart(faults):
    rc, out, err, res = run_cli(POOLED + ['--pool-mode', 'transaction', '--phases', 'insert',
                                          '--ops', '0', '--duration', '4', '--greenlets', '8',
                                          '--fault', faults, '--verify'])
    assert 'Traceback' not in err, err[-3000:]
    assert_accounted(res)
    address = res['manifest']['server']['pooler']['address']
    events = res['faults']
    assert all(e['target'] == 'pooler' and e['member'] == address and 'error' not in e
               for e in events), events
    (insert,) = res['phases']
    down = events[0]['t']
    back = events[-1]['t'] + events[-1]['took']
    (o,) = [o for o in insert['outages'] if o['start'] <= back and
            (o['end'] is None or o['end'] >= down - 0.1)]
    # As a server restart: from the kill to the first success once it was back, the
    # clients reconnected, and the return time is the start's.
    assert not o['open'] and o['reconnects'] >= 1, o
    assert abs(o['start'] - down) <= 0.5 and o['end'] >= back - 0.3, (o, events)
    assert o['returned'] is not None and o['recovery'] is not None, o
    assert insert['ok'] > 0 and res['verify']['acknowledged_lost'] == 0
    name = '%s-pooler (%s)' % (events[0]['action'], address)
    assert 'fault %s at' % name in out
    # pgbouncer's counters began again at 0: kept going up, not read as a server restart.
    rows = insert['server_metrics']['intervals']
    assert not any(r.get('server_restarted') for r in rows), rows


def _names_fatal_errors(connector):
    """Whether the connector passes on an error that came just before the connection
    closed: psycopg2 on libpq 11 (the 2.7 wheel's) drops it, and says only that the
    server closed the connection."""
    import psycopg2.extensions
    return connector == 'pipelined' or psycopg2.extensions.libpq_version() >= 120000


@pytest.mark.parametrize('connector, mode', [('psycopg2', 'transaction'),
                                             ('pipelined', 'session')])
def test_a_failover_through_pgbouncer_names_the_poolers_errors(connector, mode):
    """kill-leader and promote behind pgbouncer: pgbouncer is pointed at the new leader
    and the run goes on through it; the errors in the window are pgbouncer's, by name.
    server_login_retry=1: pgbouncer's 15 s would outlast the run."""
    rc, out, err, res = run_cli(POOLED + [
        '--connector', connector, '--greenlets', '16',
        '--pool-mode', mode, '--pooler-setting', 'server_login_retry=1',
        '--replicas', '2', '--replication', 'sync', '--wal-mode', 'write',
        '--fault', 'kill-leader@2s,promote@3s', '--verify', '--phases', 'insert',
        '--ops', '0', '--duration', '9'])
    assert 'Traceback' not in err and res['aborted'] is None, err[-3000:]
    assert_accounted(res)
    kill, promote = res['faults']
    assert 'error' not in promote, promote
    (insert,) = res['phases']
    # The window: failures, or a stall alone when pgbouncer held the queries until the
    # new leader took them (seen in transaction mode); either way it closed.
    windows = [o for o in insert['outages'] if o['open'] or o['end'] >= kill['t']]
    assert windows and all(not o['open'] for o in windows), insert['outages']
    kinds = set(insert['errors'])
    # pgbouncer's own, by name, or what the server said through it in session mode (a
    # backend's 57P01 as the kill reaches it), or the connection lost.
    assert all(k.startswith(('pooler:', 'server:08', 'server:57P')) or
               k in ('network', 'timeout') for k in kinds), kinds
    if mode == 'transaction' and _names_fatal_errors(connector) and insert['failed']:
        assert any(k.startswith('pooler:') for k in kinds), kinds
    last = max(o['end'] for o in windows)
    assert last < insert['seconds'] - 1.0, (last, insert['seconds'])   # it went on
    v = res['verify']
    assert v['checked'] > 0 and v['acknowledged_lost'] == 0, v
    pooler = res['manifest']['server']['pooler']
    assert pooler['settings'] == {'server_login_retry': '1'}


@pytest.mark.parametrize('how', ['end', 'sigint', 'sigkill'])
def test_nothing_of_the_run_is_left(how):
    p = started_driver(POOLED + ['--pool-mode', 'transaction', '--replicas', '1',
                                 '--proxy', 'haproxy',
                                 '--phases', 'select', '--ops', '0',
                                 '--duration', '2' if how == 'end' else '60'], {})
    try:
        parts = _parts(p.pid)
        dirs = set(parts.values())
        assert len(dirs) == 4, parts     # the pooler, the proxy and two members
        for name in ('pgbouncer', 'haproxy'):
            assert any(os.path.basename(d).startswith('gloaddriver-%s-' % name)
                       for d in dirs), parts
        if how == 'sigint':
            p.send_signal(signal.SIGINT)
        elif how == 'sigkill':
            p.kill()
        p.communicate()
        assert p.returncode == {'end': 0, 'sigint': 130, 'sigkill': -9}[how]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    _assert_nothing_left(parts)


@pytest.mark.parametrize('front', [[], ['--pooler', 'pgbouncer', '--pool-mode', 'transaction',
                                        '--pooler-setting', 'server_login_retry=1']])
def test_a_failover_goes_on_through_haproxy(front):
    """--proxy haproxy in front of the set the driver fails over itself: its checks find
    the promoted member writable and the run goes on through the same address, nothing
    acknowledged lost (and the same with pgbouncer in front of HAProxy)."""
    rc, out, err, res = run_cli(['--backend', 'postgres', '--spawn', '--init', '--replicas',
                                 '2', '--replication', 'sync', '--wal-mode', 'write',
                                 '--proxy', 'haproxy'] + front + [
        '--fault', 'kill-leader@2s,promote@3s', '--verify', '--phases', 'insert',
        '--ops', '0', '--duration', '9', '--greenlets', '8'])
    assert 'Traceback' not in err and res['aborted'] is None, err[-3000:]
    assert_accounted(res)
    proxy = res['manifest']['server']['proxy']
    assert proxy['kind'] == 'haproxy' and len(proxy['servers']) == 3
    assert 'on-marked-down shutdown-sessions' in proxy['check']
    if front:
        assert res['manifest']['server']['pooler']['backend'] == proxy['address']
    kill, promote = res['faults']
    assert 'error' not in promote, promote
    (insert,) = res['phases']
    assert insert['outages'] and all(not o['open'] for o in insert['outages']), \
        insert['outages']
    last = max(o['end'] for o in insert['outages'])
    assert promote['t'] <= last < insert['seconds'] - 1.0, (last, promote, insert['seconds'])
    assert insert['ok'] > 0
    v = res['verify']
    assert v['checked'] > 0 and v['acknowledged_lost'] == 0, v
