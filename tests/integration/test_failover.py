"""Connections with several addresses follow the writable member; the driver follows a
replica set through a failover, on both backends, spawned by it or started by hand."""
from __future__ import absolute_import, division, print_function

import os
import re

import gevent
import pytest

from gloaddriver import errors
from gloaddriver.backends.tarantool.connection import Connection
from gloaddriver.backends.tarantool.server import TarantoolServer
from gloaddriver.py23 import clock
from tests import result_schema
from tests.integration.conftest import assert_accounted, run_cli, started_driver


@pytest.fixture
def two_tarantools():
    """Two unrelated servers with the same user and password: the first read-only, the
    second writable (the roles a connection tells apart by box.info.ro)."""
    a = TarantoolServer()
    b = TarantoolServer()
    b.password = a.password
    try:
        a.start()
        b.start()
        _eval(a, u'box.cfg{read_only = true}')
        yield a, b
    finally:
        a.stop()
        b.stop()


def _eval(server, lua, *args):
    conn = Connection(server.host, server.port, server.user, server.password).connect()
    try:
        return conn.eval(lua, list(args))
    finally:
        conn.close()


def _follower(a, b, want='leader'):
    return Connection(a.host, a.port, a.user, a.password, addresses=[(a.host, a.port),
                                                                     (b.host, b.port)],
                      want=want, timeout=2.0).connect()


def test_a_connection_with_several_addresses_goes_to_the_member_it_wants(two_tarantools):
    a, b = two_tarantools
    for want, member in (('leader', b), ('replica', a), ('any', a)):
        conn = _follower(a, b, want)
        try:
            assert conn.address == member.uri, want
        finally:
            conn.close()
    # No writable member among them: one error that names each and why.
    _eval(b, u'box.cfg{read_only = true}')
    with pytest.raises(errors.ConnectError) as e:
        _follower(a, b)
    assert 'no writable member' in str(e.value)
    assert ('%s is read-only' % b.uri) in str(e.value) and a.uri in str(e.value)


def test_a_leader_demoted_in_place_is_left_for_the_new_one(two_tarantools):
    """A switchover by the user's orchestrator: the leader turns read-only, a replica
    writable. The first write refused (ER_READONLY, an outage-class error) makes the
    connection look again, and the writes go on on the new leader."""
    a, b = two_tarantools
    for s in (a, b):
        _eval(s, u"box.cfg{read_only = false} "
                 u"box.schema.space.create('t', {if_not_exists = true}) "
                 u"box.space.t:create_index('pk', {if_not_exists = true})")
    _eval(a, u'box.cfg{read_only = true}')
    conn = _follower(a, b)
    try:
        conn.insert('t', [1])
        _eval(b, u'box.cfg{read_only = true}')
        _eval(a, u'box.cfg{read_only = false}')
        with pytest.raises(errors.ServerError) as e:
            conn.insert('t', [2])
        assert e.value.outage and e.value.code == 7
        deadline = clock() + 10
        while True:
            try:
                conn.insert('t', [2])
                break
            except errors.OpError:
                assert clock() < deadline, conn.last_error
                gevent.sleep(0.05)
        assert conn.address == a.uri
        assert [(f, t) for _at, f, t in conn.member_changes] == [(b.uri, a.uri)]
        assert _eval(a, u'return box.space.t:get{2} ~= nil') == [True]
    finally:
        conn.close()


def test_a_leader_lost_is_looked_for_among_the_others(two_tarantools):
    """The leader killed: the connection tries the others with backoff, and takes the
    first that turns writable (a promotion some time later)."""
    a, b = two_tarantools
    conn = _follower(a, b)
    try:
        assert conn.address == b.uri
        b.kill()
        gevent.sleep(0.5)
        with pytest.raises(errors.OpError):
            conn.ping()          # nobody writable yet: waits for the timeout, then fails
        _eval(a, u'box.cfg{read_only = false}')
        promoted = clock()
        deadline = promoted + 10
        while True:
            try:
                conn.ping()
                break
            except errors.OpError:
                assert clock() < deadline, conn.last_error
                gevent.sleep(0.02)
        # Found within the reconnect loop's backoff cap (a quarter second) of the promotion.
        assert clock() - promoted < 1.0
        assert conn.address == a.uri and conn.reconnects == 1
    finally:
        conn.close()


# -- the driver through a failover ------------------------------------------------------

def _phase(result, name):
    return [p for p in result['phases'] if p['name'] == name][0]


def _failover(phase):
    """The phase's one outage that moved the writes to another member."""
    moved = [o for o in phase['outages']
             if o.get('member_after') not in (None, o.get('member_before'))]
    assert len(moved) == 1, phase['outages']
    return moved[0]


def _assert_failures_in_the_window(res, rc):
    """Every op that failed did so in an outage, and the exit code says whether any did
    (1: some ops failed; the verdict is honest about a failover's cost)."""
    bad = sum(p['failed'] + p['timed_out'] for p in res['phases'])
    in_outages = sum(o['failed'] + o['timed_out'] for p in res['phases'] for o in p['outages'])
    assert bad == in_outages, [p['outages'] for p in res['phases']]
    assert rc == (1 if bad or res['verify']['acknowledged_lost'] else 0), rc


def _assert_went_on(phase, promoted_at):
    """Ops succeeded after the promotion: the timeline's rows after it have successes."""
    after = [r for r in phase['timeline'] if r['t'] - r['seconds'] >= promoted_at + 0.5]
    assert after and sum(r['ok'] for r in after) > 0, phase['timeline']


def _libpq():
    import psycopg2.extensions
    return psycopg2.extensions.libpq_version()


SPAWNED = [('tarantool', 'buffered'), ('postgres', 'psycopg2'), ('postgres', 'pipelined')]


def _backend_argv(backend, connector):
    argv = ['--backend', backend, '--connector', connector]
    return argv + (['--init'] if backend == 'postgres' else [])


@pytest.mark.parametrize('backend, connector', SPAWNED)
def test_a_spawned_sync_set_loses_no_acknowledged_write_through_kill_and_promote(
        backend, connector):
    rc, out, err, res = run_cli(_backend_argv(backend, connector) + [
        '--spawn', '--replicas', '2', '--replication', 'sync', '--wal-mode', 'write',
        '--fault', 'kill-leader@2s,promote@3s', '--verify', '--phases', 'insert,update',
        '--ops', '0', '--duration', '6', '--greenlets', '8', '--progress', '0.5'])
    assert_accounted(res)
    assert res['aborted'] is None and 'Traceback' not in err, err[-3000:]
    _assert_failures_in_the_window(res, rc)
    kill, promote = res['faults']
    assert (kill['action'], kill['target'], promote['action']) == ('kill', 'leader', 'promote')
    assert kill['member'] == promote['from'] and promote['to'] != promote['from']
    assert 'error' not in promote, promote
    insert = _phase(res, 'insert')
    o = _failover(insert)
    assert (o['member_before'], o['member_after']) == (promote['from'], promote['to'])
    assert not o['open'] and o['failed'] + o['timed_out'] > 0 and o['errors']
    # The window: from about the kill to about the promotion's end, the first success.
    assert o['start'] <= kill['t'] + 1.0 and o['end'] >= promote['t']
    _assert_went_on(insert, promote['t'] + promote['took'])
    assert _phase(res, 'update')['ok'] > 0
    v = res['verify']
    assert v['checked'] > 0 and v['acknowledged_lost'] == 0, v
    assert res['manifest']['server']['replication'] == 'sync'
    assert 'FAILOVER: writes moved from %s to %s' % (o['member_before'], o['member_after']) \
        in out


@pytest.mark.parametrize('backend', ['tarantool', 'postgres'])
def test_async_replication_reports_what_the_failover_lost(backend):
    """Asynchronous: a promoted replica may lack the last acknowledged writes; the run
    says how many (zero or more) and exits 1 when there were any."""
    rc, out, err, res = run_cli(_backend_argv(backend, 'buffered' if backend == 'tarantool'
                                              else 'psycopg2') + [
        '--spawn', '--replicas', '2', '--replication', 'async', '--wal-mode', 'write',
        '--fault', 'kill-leader@2s,promote@2.5s', '--verify', '--phases', 'insert',
        '--ops', '0', '--duration', '5', '--greenlets', '8'])
    v = res['verify']
    assert_accounted(res)
    assert res['aborted'] is None and 'Traceback' not in err, err[-3000:]
    _assert_failures_in_the_window(res, rc)
    assert v['checked'] > 0 and sum(v[k] for k in ('intact', 'unacknowledged_applied',
                                                     'acknowledged_lost', 'corrupt',
                                                     'unexpected')) == v['checked']
    _failover(_phase(res, 'insert'))


def _hand_started(backend):
    if backend == 'tarantool':
        from gloaddriver.backends.tarantool.replicaset import TarantoolReplicaSet
        return TarantoolReplicaSet(2, 'sync', wal_mode='write').start()
    from gloaddriver.backends.postgres.replicaset import PostgresReplicaSet
    return PostgresReplicaSet(2, 'sync', wal_mode='write').start()


@pytest.mark.parametrize('backend, connector', SPAWNED)
def test_a_set_promoted_by_hand_is_followed_and_the_outage_is_the_promotion(
        backend, connector, tmpdir):
    """The user's own replica set and orchestrator: the test starts the set, kills its
    leader and promotes a replica itself; the driver knows only the addresses (--uri
    a,b,c; a multi-host DSN, which through psycopg2 once aborted the driver inside
    libev) and finds the new leader. Its outage lasts as long as the promotion took."""
    import time
    rs = _hand_started(backend)
    out = str(tmpdir.join('r.json'))
    try:
        if backend == 'tarantool':
            argv, env = ['--uri', ','.join(rs.uris), '--user', rs.user], {
                'GLOADDRIVER_PASSWORD': rs.password}
        else:
            argv, env = ['--dsn', rs.dsn, '--init'], {}
        p = started_driver(_backend_argv(backend, connector) + argv + [
            '--phases', 'insert', '--ops', '0', '--duration', '7', '--greenlets', '8',
            '--json', out], env)
        time.sleep(1.0)
        killed = time.time()
        rs.kill('leader')
        time.sleep(1.0)
        old, new = rs.promote()
        promoted = time.time()
        stdout, stderr = p.communicate()
        assert p.returncode in (0, 1), (p.returncode, p.stderr_before + stderr.decode()[-3000:])
        assert 'Traceback' not in stderr.decode()
        with open(out) as f:
            res = result_schema.read(f)
    finally:
        rs.stop()
    assert_accounted(res)
    assert res['aborted'] is None
    o = _failover(res['phases'][0])
    assert (o['member_before'], o['member_after']) == (old.uri, new.uri)
    assert abs(o['duration'] - (promoted - killed)) <= 0.5, (o, promoted - killed)


@pytest.mark.parametrize('backend, connector', SPAWNED)
def test_reads_from_replicas_are_the_replicas_requests(backend, connector):
    """--read-from replica: the select phase's requests are served by a replica, as the
    members' own counters say (server metrics, requests@MEMBER), the leader idle; the
    inserts before it went to the leader."""
    rc, out, err, res = run_cli(_backend_argv(backend, connector) + [
        '--spawn', '--replicas', '2', '--read-from', 'replica', '--phases', 'insert,select',
        '--ops', '0', '--duration', '5', '--greenlets', '8'])
    if connector == 'psycopg2' and _libpq() < 140000:
        # libpq before 14 cannot ask for a standby: refused before anything starts.
        assert rc == 2 and 'needs libpq 14 or later' in err and res is None, err
        return
    assert rc == 0, err[-3000:]
    assert_accounted(res)
    leader = res['manifest']['server']['members'][0]

    def served(name):
        phase = _phase(res, name)
        sm = phase['server_metrics']
        assert sm['phase'] is not None, (name, sm['error'])
        counts = sm['phase']['counts']
        return phase['ok'], dict((k.split('@')[1], v) for k, v in counts.items()
                                 if k.startswith('requests@'))
    (inserts, writes), (selects, reads) = served('insert'), served('select')
    replicas = [m for m in reads if m != leader]
    assert len(replicas) == 2, reads
    # PostgreSQL flushes a backend's counters about once a second: most, not all, of a
    # phase's statements show by its end (on a loaded machine 48 % of a 3 s phase's did:
    # the phases last 5 s, so that the last second's are a smaller part). Each member
    # also counts the sampler's query.
    share = 0.5 if backend == 'postgres' else 1.0
    assert max(reads[m] for m in replicas) >= share * selects, (selects, reads)
    assert reads[leader] < 0.05 * selects, (selects, reads)
    assert writes[leader] >= share * inserts, (inserts, writes)
    assert max(writes[m] for m in replicas) < 0.05 * inserts, (inserts, writes)


def _overlapping(boxes):
    """The pairs of label boxes (canvas pixels) that print over each other."""
    return [(a['text'], b['text']) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if a['y'] == b['y'] and a['x'] < b['x'] + b['w'] and b['x'] < a['x'] + a['w']]


def test_a_planned_failover_says_what_happened(chromium, tmpdir):
    # What a planned kill-leader and promote printed: "server restarted" when the
    # leader changed; a promote line without the (took ...) its JSON has; an exit 1
    # with no word that the ops in flight at the kill fail by design; and on the page
    # the two faults' labels, a second apart, printed over each other.
    html = str(tmpdir.join('failover.html'))
    rc, out, err, res = run_cli([
        '--spawn', '--replicas', '1', '--fault', 'kill-leader@1s,promote@1.5s', '--phases',
        'insert', '--ops', '0', '--duration', '3.5', '--progress', '0.5', '--html', html])
    assert_accounted(res)
    assert res['aborted'] is None and 'Traceback' not in err, (
        res['aborted'], err[err.find('Traceback'):][:3000] if 'Traceback' in err
        else err[-3000:])
    kill, promote = res['faults']
    intervals = res['phases'][0]['server_metrics']['intervals']
    assert not any(d.get('server_restarted') for d in intervals), intervals
    assert any(d.get('leader_changed') for d in intervals), intervals
    assert 'server restarted' not in err
    assert '| leader changed: no server rates this interval' in err
    took = '(took %s s)' % ('%.3f' % promote['took'] if promote['took'] < 0.05
                            else '%.2f' % promote['took'])
    assert 'insert: fault promote %s -> %s at' % (promote['from'], promote['to']) in out
    assert took in [l for l in out.split('\n') if 'fault promote' in l][0], out
    # Ops in flight at the kill failed: exit 1, and the line says why and what gates it.
    assert rc == 1 and res['phases'][0]['failed'] > 0
    last = err.strip().split('\n')[-1]
    assert 'the ops in flight at the planned kill-leader failed with it' in last, last
    assert '--fail-if' in last, last
    # The page: every chart that marks the two faults prints their labels apart.
    chromium.open('file://' + os.path.abspath(html))
    charts = chromium.run('return window.gloaddriverCharts();')
    marked = [c for c in charts if len(c['markLabels']) >= 2]
    assert marked, charts
    for c in marked:
        assert not _overlapping(c['markLabels']), (c['id'], c['markLabels'])


def test_reads_from_a_replica_show_on_the_line_the_table_and_the_page(chromium, tmpdir):
    # The progress line followed the leader only: "server 3 req/s" while a replica served
    # 75,000 reads a second, which looked like a broken sampler.
    html = str(tmpdir.join('reads.html'))
    rc, out, err, res = run_cli([
        '--spawn', '--replicas', '1', '--read-from', 'replica', '--phases', 'insert,select',
        '--ops', '0', '--duration', '1.5', '--keys', '1000', '--progress', '0.5',
        '--html', html])
    assert rc == 0, err[-3000:]
    leader, replica = res['manifest']['server']['members']
    selects = _phase(res, 'select')['ok']

    def served(line):
        found = re.search(r'by member: (.*) req/s$', line)
        return dict((m.rsplit(' ', 1)[0], int(m.rsplit(' ', 1)[1].replace(',', '')))
                    for m in found.group(1).split(', '))
    lines = [l for l in err.split('\n') if re.match(r'^ +[\d.]+s select ', l)]
    assert lines, err
    for line in lines:
        assert '| leader ' in line and '| server ' not in line, line
        by = served(line)
        assert by[replica] > 10 * max(by[leader], 1), line
    table = [l for l in out.split('\n') if l.startswith('select: requests served by member')]
    assert len(table) == 1, out
    counts = dict(re.findall(r'(\S+:\d+) ([\d,]+)', table[0].split(': ', 2)[2]))
    assert int(counts[replica].replace(',', '')) >= selects, (table, selects)
    chromium.open('file://' + os.path.abspath(html))
    charts = dict((c['id'], c) for c in chromium.run('return window.gloaddriverCharts();')
                  if c['phase'] is None)
    series = dict((s['label'], s) for s in charts['member-rps']['series'])
    assert series[replica + ' req/s']['values'] >= 1, charts['member-rps']
    assert leader + ' req/s' in series
