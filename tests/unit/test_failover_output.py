"""What a planned failover prints, on figures made here: the interval of a promotion
says the leader changed (not that the server restarted), a promotion's time is always
given, and the exit line of a run whose planned kill failed ops says why and what
gates such a run. The same on a real replica set: tests/integration/test_failover.py."""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors
from gloaddriver.measure.server_metrics import ServerMetrics
from gloaddriver.report import text, verdict


def _metrics():
    return ServerMetrics(None, None, ['insert', 'requests@a', 'requests@b'], ['lsn'])


def test_counters_that_go_back_across_a_promotion_are_a_leader_change():
    m = _metrics()
    before = {'insert': 5000, 'requests@a': 5000, 'requests@b': 10, 'leader_moves': 0}
    after = {'insert': 40, 'requests@b': 60, 'leader_moves': 1}
    d = m.delta(before, after, 1.0)
    assert d['leader_changed'] and 'server_restarted' not in d and d['rps'] == {}
    assert m.describe(d) == ' | leader changed: no server rates this interval'
    # The sampler reaching the new leader an interval after the promotion: still the
    # leader's change, not a restart.
    later = {'insert': 10, 'requests@b': 90, 'leader_moves': 1}
    assert m.delta(dict(after, insert=500), later, 1.0)['leader_changed']
    # A single server's counters going back: a restart, as before.
    d = m.delta({'insert': 5000}, {'insert': 40}, 1.0)
    assert d['server_restarted'] and m.describe(d) == ' | server restarted'
    assert m.delta({'insert': 10, 'leader_moves': 1}, {'insert': 40, 'leader_moves': 1},
                   1.0)['rps']['insert'] == 30.0


def test_a_promotion_says_how_long_it_took_however_short():
    promote = {'action': 'promote', 'from': 'a', 'to': 'b', 't': 3.0, 'took': 0.013}
    assert text.fault_text(promote) == 'promote a -> b at 3.00 s (took 0.013 s)'
    kill = {'action': 'kill', 'target': 'leader', 'member': 'a', 't': 2.0, 'took': 0.009}
    assert text.fault_text(kill) == 'kill-leader (a) at 2.00 s'


def _result(faults, failed):
    return {'phases': [{'failed': failed, 'timed_out': 0, 'attempted': 1000}],
            'faults': faults}


def test_the_exit_line_of_a_planned_failover_says_why_and_points_to_fail_if():
    kill = {'action': 'kill', 'target': 'leader', 'member': 'a', 't': 2.0}
    promote = {'action': 'promote', 'from': 'a', 'to': 'b', 't': 3.0}
    code, why = verdict.judge(_result([kill, promote], 10))
    assert code == errors.EXIT_OPS_FAILED
    assert why.startswith('10 of 1000 ops failed or timed out (see the error lines above); '
                          'the ops in flight at the planned kill-leader failed with it')
    assert '--fail-if' in why and '\n' not in why
    # No fault that cuts ops: the line as it was.
    assert verdict.judge(_result([promote], 10))[1] == \
        '10 of 1000 ops failed or timed out (see the error lines above)'
    assert verdict.judge(_result([kill, promote], 0)) == (errors.EXIT_OK, None)


def test_a_replica_sets_line_says_leader_and_what_each_member_served():
    m = ServerMetrics(None, None, ['select', 'requests@a:1', 'requests@b:2'], [],
                      progress_rates=['select'], progress_label='req/s (all)')
    d = m.delta({'select': 0, 'requests@a:1': 0, 'requests@b:2': 0},
                {'select': 3, 'requests@a:1': 3, 'requests@b:2': 75436}, 1.0)
    assert m.describe(d) == ' | leader 3 req/s (all) | by member: a:1 3, b:2 75,436 req/s'
    single = ServerMetrics(None, None, ['select'], [], progress_label='req/s (all)')
    assert single.describe(single.delta({'select': 0}, {'select': 5}, 1.0)) == \
        ' | server 5 req/s (all)'
    phase = {'name': 'select', 'server_metrics': {'phase': {'counts': d['counts']}}}
    assert text.member_lines(phase) == [
        "select: requests served by member (their own counters, the samplers' included): "
        "a:1 3, b:2 75,436"]


def test_a_leader_down_leaves_the_members_figures_on_the_line():
    # A failover: the leader's look fails at once, the members' come back. The sample
    # is the members' (not a late one), and the line says the leader gave none.
    def leader(timeout):
        raise IOError('connection refused')

    m = ServerMetrics(leader, lambda: None, ['select'], [], progress_rates=['select'],
                      progress_label='req/s').with_more(
        lambda timeout: {'requests@b:2': 40}, lambda: None, ['requests@b:2'], [], [])
    s = m.sample(timeout=0.5)
    assert s == {'requests@b:2': 40}
    d = m.delta({'requests@b:2': 0}, s, 1.0)
    assert m.describe(d) == ' | leader: no sample | by member: b:2 40 req/s'


def test_a_leader_that_hangs_leaves_the_members_figures_within_the_sample_s_time():
    import gevent

    def leader(timeout):
        gevent.sleep(10)

    m = ServerMetrics(leader, lambda: None, ['select'], []).with_more(
        lambda timeout: {'requests@b:2': 40}, lambda: None, ['requests@b:2'], [], [])
    assert m.sample(timeout=0.3) == {'requests@b:2': 40}


def test_a_look_still_out_when_the_set_stops_ends_with_its_own_error():
    # stop() empties the figures' connections while a look may still be out on one: its
    # failure then met an empty table and died with a KeyError, a traceback on stderr
    # at the end of a failover run.
    import pytest
    from collections import namedtuple
    from gloaddriver.backends.replicaset import ReplicaSet

    class Conn(object):
        closed = False

        def close(self):
            self.closed = True

    class Set(ReplicaSet):
        def _sampling_connection(self, member):
            return Conn()

    rs = Set(1, 'async')
    member = namedtuple('Member', 'uri')('a:1')

    def use(conn):
        rs.stop()            # the run ends while the look waits on its server
        raise IOError('connection closed')
    with pytest.raises(IOError):
        rs._on_sampling_connection(member, use)
    assert rs._sampling == {} and not rs._busy
