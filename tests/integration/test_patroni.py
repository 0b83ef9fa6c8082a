"""A private Patroni cluster (``--spawn --replicas N --ha patroni``): real etcd, real
Patroni and PostgreSQL members, HAProxy checking Patroni's REST API. Patroni elects a
new leader after ``kill-leader`` with no promotion from the driver, a ``switchover``
in synchronous mode loses nothing, ``dcs-down`` demotes the primary (an outage), and
nothing of a run is left after it: not after its end, not after a SIGKILL of the
driver. Bad input is one line and exit 2. The fast preset throughout (ttl 10 s)."""
from __future__ import absolute_import, division, print_function

import os
import shutil
import signal
import tempfile
import time

import pytest

from gloaddriver.backends.postgres import patroni
from tests.integration.conftest import assert_accounted, run_cli, started_driver

pytest.importorskip('psycopg2')
if patroni.missing_programs():
    pytest.skip('needs %s (scripts/test installs them)' % ' and '.join(
        patroni.missing_programs()), allow_module_level=True)

HA = ['--backend', 'postgres', '--spawn', '--init', '--ha', 'patroni', '--ha-preset', 'fast']


@pytest.fixture
def root():
    """A folder of the test's own for the run's servers (TMPDIR), which the members'
    unprivileged user can go through; judged empty, and no process of it running, at
    the end."""
    path = tempfile.mkdtemp(prefix='gloaddriver-patroni-test-')
    os.chmod(path, 0o755)
    try:
        yield path
        _assert_nothing_left(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _running_in(path):
    """pid -> command line of every process whose command line names ``path``."""
    out = {}
    for p in os.listdir('/proc'):
        if not p.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % p, 'rb') as f:
                argv = f.read().decode('utf-8', 'replace').replace('\x00', ' ')
            with open('/proc/%s/stat' % p) as f:
                zombie = f.read().rsplit(')', 1)[1].split()[0] == 'Z'
        except (IOError, OSError, IndexError):
            continue
        if path in argv and not zombie:
            out[int(p)] = argv
    return out


def _assert_nothing_left(path, seconds=20):
    """No etcd, Patroni, postmaster, HAProxy or pgbouncer of the run runs, and none of
    their directories is left, within ``seconds`` (a killed driver's reaper waits a
    moment before it removes them)."""
    deadline = time.time() + seconds
    while True:
        left = list(_running_in(path).values()) + os.listdir(path)
        if not left:
            return
        if time.time() > deadline:
            pytest.fail('left behind: %s' % left)
        time.sleep(0.2)


def _run(root, args):
    rc, out, err, res = run_cli(HA + args, env={'TMPDIR': root})
    assert 'Traceback' not in err and res is not None, err[-3000:]
    assert res['aborted'] is None, err[-3000:]
    assert_accounted(res)
    return rc, out, res


def _seen(res, action):
    return [f for f in res['faults'] if f.get('source') and f['action'] == action]


def test_kill_leader_patroni_elects_and_the_run_goes_on_through_haproxy(root):
    """The leader's Patroni and postmaster killed together: Patroni elects another
    member (no promote from the driver), HAProxy's check on /primary admits it, the
    writes go on through the same address, nothing acknowledged is lost (sync mode),
    and the outage is reported with Patroni's and HAProxy's events beside it."""
    rc, out, res = _run(root, ['--replicas', '2', '--replication', 'sync',
                               '--proxy', 'haproxy', '--fault', 'kill-leader@4s', '--verify',
                               '--phases', 'insert', '--ops', '0', '--duration', '24',
                               '--greenlets', '8'])
    server = res['manifest']['server']
    ha = server['ha']
    assert (ha['kind'], ha['ttl'], ha['loop_wait'], ha['synchronous_mode']) == (
        'patroni', 10, 1, True)
    assert ha['dcs']['kind'] == 'etcd' and len(ha['rest']) == 3
    assert 'OPTIONS /primary' in server['proxy']['check']
    injected = [f for f in res['faults'] if not f.get('source')]
    assert [(f['action'], f.get('target')) for f in injected] == [('kill', 'leader')]
    kill = injected[0]
    assert 'error' not in kill, kill
    promoted = _seen(res, 'promoted')
    assert promoted and promoted[0]['member'] != kill['member'], res['faults']
    assert promoted[0]['t'] > kill['t']
    admitted = [f for f in _seen(res, 'proxy-admitted') if f['member'] == promoted[0]['member']]
    assert admitted, res['faults']
    (insert,) = res['phases']
    outages = insert['outages']
    assert outages and all(not o['open'] for o in outages), outages
    # The outage began at the kill and ended once the elected leader took writes.
    first = outages[0]
    seen = dict((f['action'], f['t']) for f in insert['faults'] if f.get('source'))
    assert first['start'] <= seen['promoted'] <= first['end'] + 2.0, (first, seen)
    assert insert['ok'] > 0 and insert['timeline'][-1]['ok'] > 0
    v = res['verify']
    assert v['checked'] > 0 and v['acknowledged_lost'] == 0, v
    assert 'seen promoted (%s)' % promoted[0]['member'] in out
    assert 'the HA stack on its own: ' in out
    assert rc in (0, 1)


def test_kill_leader_through_pgbouncer_in_transaction_mode(root):
    """pgbouncer (transaction mode) in front of HAProxy: the same election is lived
    through, the pooler's own errors named (pooler:NAME) or the connection's, and
    nothing acknowledged lost."""
    rc, out, res = _run(root, ['--replicas', '1', '--replication', 'sync',
                               '--proxy', 'haproxy', '--pooler', 'pgbouncer', '--pool-mode',
                               'transaction', '--pooler-setting', 'server_login_retry=1',
                               '--fault', 'kill-leader@3s', '--verify', '--phases', 'insert',
                               '--ops', '0', '--duration', '20', '--greenlets', '8'])
    server = res['manifest']['server']
    assert server['pooler']['backend'] == server['proxy']['address']
    kill = [f for f in res['faults'] if not f.get('source')][0]
    assert any(f['member'] != kill['member'] for f in _seen(res, 'promoted')), res['faults']
    (insert,) = res['phases']
    assert insert['outages'] and all(not o['open'] for o in insert['outages'])
    assert insert['timeline'][-1]['ok'] > 0
    kinds = set(insert['errors'])
    assert kinds and all(k.startswith(('pooler:', 'network', 'server:', 'timeout'))
                         for k in kinds), kinds
    v = res['verify']
    assert v['checked'] > 0 and v['acknowledged_lost'] == 0, v


def test_switchover_loses_nothing_and_dcs_down_demotes_the_primary(root):
    """One run, two promises: a switchover in synchronous mode moves the leader
    (Patroni's REST API) with nothing acknowledged lost; etcd killed, the primary
    demotes itself (failsafe_mode off): an outage, which ends after etcd is back."""
    rc, out, res = _run(root, ['--replicas', '2', '--replication', 'sync',
                               '--proxy', 'haproxy',
                               '--fault', 'switchover@3s,dcs-down@11s,dcs-up@24s', '--verify',
                               '--phases', 'insert', '--ops', '0', '--duration', '34',
                               '--greenlets', '8'])
    injected = [f for f in res['faults'] if not f.get('source')]
    assert [(f['action'], f.get('target')) for f in injected] == [
        ('switchover', None), ('kill', 'dcs'), ('start', 'dcs')], injected
    switch, down, up = injected
    assert not any('error' in f for f in injected), injected
    assert switch['from'] != switch['to']
    assert any(f['member'] == switch['to'] and switch['t'] <= f['t'] <= down['t']
               for f in _seen(res, 'promoted')), res['faults']
    demoted = [f for f in _seen(res, 'demoted') if f['t'] > down['t']]
    assert demoted, res['faults']
    (insert,) = res['phases']
    # The same events as seconds into the phase.
    at = dict(((f['action'], f.get('target')), f['t']) for f in insert['faults']
              if not f.get('source'))
    demoted_at = min(f['t'] for f in insert['faults'] if f['action'] == 'demoted' and
                     f['t'] > at[('kill', 'dcs')])
    dcs_outages = [o for o in insert['outages']
                   if at[('kill', 'dcs')] <= o['start'] <= at[('start', 'dcs')] + 1.0]
    assert dcs_outages, (insert['outages'], at)
    assert any(o['end'] is None or o['end'] >= demoted_at for o in dcs_outages), \
        (dcs_outages, demoted_at)
    v = res['verify']
    assert v['checked'] > 0 and v['acknowledged_lost'] == 0, v
    assert rc in (0, 1)


@pytest.mark.parametrize('how', ['sigkill'])
def test_a_killed_driver_leaves_nothing(root, how):
    """SIGKILL of the driver mid-run: Patroni dies with its launcher, and the reaper
    kills the postmasters (no descendants of Patroni) and removes every directory."""
    p = started_driver(HA + ['--replicas', '1', '--proxy', 'haproxy', '--pooler',
                             'pgbouncer', '--pool-mode', 'transaction', '--phases', 'select',
                             '--ops', '0', '--duration', '60'], {'TMPDIR': root})
    try:
        running = _running_in(root)
        names = ' '.join(running.values())
        for part in ('patroni', 'etcd', 'haproxy', 'pgbouncer', 'postgres'):
            assert part in names, running
        p.send_signal(signal.SIGKILL)
        p.communicate()
        assert p.returncode == -9
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.parametrize('flags, says', [
    (['--backend', 'postgres', '--spawn', '--ha', 'patroni'], '--spawn --replicas N'),
    (['--backend', 'postgres', '--ha', 'patroni', '--replicas', '2'], 'goes with --spawn'),
    (['--backend', 'postgres', '--spawn', '--replicas', '2', '--ha-preset', 'fast'],
     'go with --ha patroni'),
    (HA + ['--replicas', '2', '--fault', 'kill-leader@3s,promote@4s'], 'Patroni elects'),
    (['--backend', 'postgres', '--spawn', '--replicas', '2', '--fault', 'switchover@3s'],
     'add --ha patroni'),
    (['--backend', 'postgres', '--spawn', '--replicas', '2', '--fault', 'dcs-down@3s'],
     'add --ha patroni'),
    (HA + ['--replicas', '2', '--fault', 'proxy-restart@3s'], 'no proxy'),
    (HA + ['--replicas', '2', '--ha-setting', 'ttl=5'], 'loop_wait + 2 x retry_timeout'),
    (HA + ['--replicas', '2', '--ha-setting', 'synchronous_mode=on'], 'contradicts'),
    (HA + ['--replicas', '2', '--ha-setting', 'lease=3'], 'NAME one of'),
    (HA + ['--replicas', '2', '--processes', '2'], 'not supported yet'),
])
def test_bad_ha_flags_are_one_line_and_exit_2(flags, says):
    rc, out, err, res = run_cli(flags + ['--ops', '10'])
    assert rc == 2 and res is None, (rc, err)
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and says in lines[0], err
