"""The pure parts of outages and durability: the ledger of acknowledged writes and its
verdicts, the outage watch on a run of the in-memory backend, merging outages of
processes, the --fault schedule's parser, and the report's lines. No server."""
from __future__ import absolute_import, division, print_function

import gevent
import pytest

from gloaddriver import errors
from gloaddriver import config as configuration
from gloaddriver import converters
from gloaddriver.measure import ledger as L
from gloaddriver.measure import outages, stats
from gloaddriver.report import text


# -- the ledger -------------------------------------------------------------------------

def test_an_acknowledged_write_is_intact_only_while_it_is_there():
    led = L.Ledger()
    led.begin(7, L.INSERTED)
    led.acked(7, L.INSERTED)
    led.begin(7, L.UPDATED)
    led.acked(7, L.UPDATED)
    assert led.outcome(7, L.UPDATED) == 'intact'
    assert led.outcome(7, L.INSERTED) == 'acknowledged_lost'    # older data
    assert led.outcome(7, L.GONE) == 'acknowledged_lost'
    assert led.outcome(7, L.CORRUPT) == 'corrupt'
    assert led.outcome(7, L.RMW) == 'unexpected'                # never written there


def test_a_failed_write_may_land_and_a_later_ack_supersedes_it():
    led = L.Ledger()
    led.begin(1, L.INSERTED)
    led.failed(1, L.INSERTED)         # timed out: it may or may not have landed
    assert led.outcome(1, L.GONE) == 'intact'          # nothing was promised
    assert led.outcome(1, L.INSERTED) == 'unacknowledged_applied'
    led.begin(1, L.INSERTED)
    led.acked(1, L.INSERTED)
    led.begin(1, L.UPDATED)
    led.failed(1, L.UPDATED)
    assert led.outcome(1, L.UPDATED) == 'unacknowledged_applied'
    assert led.outcome(1, L.INSERTED) == 'intact'
    led.begin(1, L.GONE)
    led.acked(1, L.GONE)              # an acknowledged delete after both
    assert led.outcome(1, L.GONE) == 'intact'
    assert led.outcome(1, L.UPDATED) == 'acknowledged_lost'    # the delete was lost


def test_writes_in_flight_together_may_land_in_either_order():
    led = L.Ledger()
    led.begin(3, L.UPDATED)
    led.begin(3, L.RMW)
    led.acked(3, L.RMW)
    led.acked(3, L.UPDATED)
    assert led.outcome(3, L.UPDATED) == 'intact'
    assert led.outcome(3, L.RMW) == 'intact'
    assert led.outcome(3, L.GONE) == 'acknowledged_lost'


def test_tracked_ops_record_acks_misses_and_failures():
    led = L.Ledger()
    calls = []

    def insert(key):
        calls.append(key)
        if key == 2:
            raise errors.ServerError(3, 'Duplicate key exists', False)   # did nothing
        if key == 3:
            raise errors.RequestTimeout('no reply')                      # may have landed
        return [[key, u'v']]

    def update(key):
        return []     # a miss: no row, nothing written
    ops = led.track({'insert': insert, 'update': update, 'select': lambda k: []},
                    definite=lambda e: isinstance(e, errors.ServerError) and not e.outage)
    assert ops['insert'](1) == [[1, u'v']]
    for key, exc in ((2, errors.ServerError), (3, errors.RequestTimeout)):
        with pytest.raises(exc):
            ops['insert'](key)
    ops['update'](4)
    assert list(led.keys()) == [1, 3]     # 2 failed for sure, 4 was a miss
    assert led.outcome(1, L.INSERTED) == 'intact'
    assert led.outcome(3, L.INSERTED) == 'unacknowledged_applied'


def test_a_million_keys_cost_two_megabytes_and_ranges_far_apart_stay_small():
    led = L.Ledger()
    for key in range(0, 1000000, 997):
        led.begin(key, L.INSERTED)
        led.acked(key, L.INSERTED)
    assert led.memory_bytes() == 16 * 2 * 65536          # 1M keys: 16 chunks of 128 KB
    far = L.Ledger()
    for key in (5, (3 << 40) + 5):                       # a mix's inserts of shard 3
        far.begin(key, L.UPDATED)
        far.acked(key, L.UPDATED)
    assert far.memory_bytes() == 2 * 2 * 65536
    assert list(far.keys()) == [5, (3 << 40) + 5]


# -- the outage watch -------------------------------------------------------------------

def _watch_run(script, timeout=1.0, member=None):
    """Feed an OutageWatch a script of (seconds, 'ok' | exception) events on fake ops;
    ``member``: a list whose first item the backend's member() says ('reconnect to X'
    moves it to X)."""
    st = stats.OpStats('select')
    reconnects = [0]
    watch = outages.OutageWatch([st], t0=_now(), timeout=timeout,
                                reconnects=lambda: reconnects[0],
                                member=(lambda: member[0]) if member else None)
    start = _now()
    for at, what in script:
        gevent.sleep(max(start + at - _now(), 0))
        st.attempted += 1
        if what == 'ok':
            st.lat[100] += 1
        elif what.__class__ is str and what.startswith('reconnect'):
            st.attempted -= 1
            reconnects[0] += 1
            if member and what.startswith('reconnect to '):
                member[0] = what[len('reconnect to '):]
        else:
            watch.failed(what)
            st.error(what)
    gevent.sleep(0.1)
    return watch.finish(_now())


def _now():
    from gloaddriver.py23 import clock
    return clock()


def test_an_outage_lasts_from_the_first_error_to_the_first_success():
    lost = errors.NetworkError('connection lost')
    events = _watch_run([(0.0, 'ok'), (0.2, lost), (0.25, errors.NotConnected('down')),
                         (0.55, 'reconnect'), (0.6, 'ok')])
    (e,) = events
    assert abs(e['start'] - 0.2) < 0.05 and abs(e['duration'] - 0.4) < 0.06, e
    assert e['failed'] == 2 and e['timed_out'] == 0 and e['reconnects'] == 1
    assert not e['open'] and e['recovery'] is not None and e['recovery'] < 0.1


def test_an_outage_that_ends_on_another_member_is_a_failover_with_its_errors_by_kind():
    (e,) = _watch_run([(0.0, 'ok'), (0.2, errors.NetworkError('lost')),
                       (0.3, errors.NotConnected('down')), (0.35, errors.NotConnected('down')),
                       (0.45, errors.RequestTimeout('no reply')),
                       (0.47, errors.ServerError(7, 'read-only', True)),
                       (0.5, 'reconnect to b:2'), (0.55, 'ok')], member=['a:1'])
    assert (e['member_before'], e['member_after']) == ('a:1', 'b:2')
    assert e['errors'] == {'network': 3, 'timeout': 1, 'server:7': 1}, e
    (e,) = _watch_run([(0.0, 'ok'), (0.2, errors.NetworkError('lost')), (0.4, 'ok')],
                      member=['a:1'])
    assert (e['member_before'], e['member_after']) == ('a:1', 'a:1')     # no failover
    (e,) = _watch_run([(0.0, 'ok'), (0.2, errors.NetworkError('lost')), (0.4, 'ok')])
    assert 'member_before' not in e and e['errors'] == {'network': 1}    # one server


def test_the_report_and_a_merge_say_where_a_failover_moved_the_writes():
    base = {'open': False, 'timed_out': 0, 'reconnects': 1, 'returned': None,
            'recovery': None, 'first_error': 'network: lost'}
    a = dict(base, start=1.0, end=2.0, duration=1.0, failed=3, errors={'network': 3},
             member_before='a:1', member_after='b:2')
    b = dict(base, start=1.1, end=2.2, duration=1.1, failed=2, errors={'network': 1,
                                                                      'timeout': 1},
             member_before='a:1', member_after='b:2')
    (m,) = outages.merge_concurrent([[a], [b]])
    assert m['errors'] == {'network': 4, 'timeout': 1} and m['member_after'] == 'b:2'
    line = text.outage_lines({'name': 'insert', 'outages': [a]})[0]
    assert line.endswith('FAILOVER: writes moved from a:1 to b:2; first error: network: lost')
    assert 'failover a:1 -> b:2' in outages.summary([a])
    fault = {'action': 'promote', 't': 3.0, 'took': 0.4, 'from': 'a:1', 'to': 'b:2'}
    assert text.fault_text(fault) == 'promote a:1 -> b:2 at 3.00 s (took 0.40 s)'
    fault = {'action': 'kill', 'target': 'leader', 'member': 'a:1', 't': 2.0, 'took': 0.0}
    assert text.fault_text(fault) == 'kill-leader (a:1) at 2.00 s'


def test_a_timeout_dates_the_outage_back_to_its_request():
    events = _watch_run([(0.0, 'ok'), (0.6, errors.RequestTimeout('no reply')), (0.9, 'ok')],
                        timeout=0.5)
    (e,) = events
    assert abs(e['start'] - 0.1) < 0.05 and e['timed_out'] == 1, e


def test_one_slow_op_among_successes_is_no_outage_and_a_server_error_never_is():
    events = _watch_run([(0.0, 'ok'), (0.1, errors.RequestTimeout('slow')), (0.11, 'ok'),
                         (0.2, errors.ServerError(3, 'duplicate')), (0.5, 'ok')])
    assert events == []


def test_an_outage_still_on_at_the_end_is_reported_open():
    (e,) = _watch_run([(0.0, 'ok'), (0.1, errors.NetworkError('gone'))])
    assert e['open'] and e['end'] is None and e['duration'] >= 0.09


def test_outages_of_processes_side_by_side_merge_into_one():
    a = [{'start': 1.0, 'end': 2.0, 'duration': 1.0, 'open': False, 'failed': 3,
          'timed_out': 0, 'reconnects': 1, 'returned': 1.9, 'recovery': 0.1, 'first_error': 'x'}]
    b = [{'start': 1.1, 'end': 2.2, 'duration': 1.1, 'open': False, 'failed': 2,
          'timed_out': 1, 'reconnects': 1, 'returned': 2.0, 'recovery': 0.2, 'first_error': 'y'},
         {'start': 5.0, 'end': None, 'duration': 0.5, 'open': True, 'failed': 1,
          'timed_out': 0, 'reconnects': None, 'returned': None, 'recovery': None,
          'first_error': 'z'}]
    merged = outages.merge_concurrent([a, b])
    assert len(merged) == 2
    m = merged[0]
    assert (m['start'], m['end'], m['duration']) == (1.0, 2.2, 1.2)
    assert (m['failed'], m['timed_out'], m['reconnects']) == (5, 1, 2)
    assert m['returned'] == 1.9 and m['recovery'] == 0.2
    assert merged[1]['open']


# -- --fault ----------------------------------------------------------------------------

def test_fault_specs_parse_into_a_schedule_checked_as_a_sequence():
    f = converters.faults('start@8s, kill@5s,stop@12s:3s,restart@20s:500ms')
    assert [(x.action, x.at, x.duration) for x in f] == [
        ('kill', 5.0, None), ('start', 8.0, None), ('stop', 12.0, 3.0),
        ('restart', 20.0, 0.5)]
    assert converters.duration('2m') == 120.0 and converters.duration('1.5') == 1.5


@pytest.mark.parametrize('spec, words', [
    ('explode@5s', 'ACTION one of'),
    ('kill', 'ACTION@TIME'),
    ('kill@soon', 'is not a time'),
    ('start@5s', 'the server is up then'),
    ('kill@1s,kill@2s', 'the server is down then'),
    ('stop@1s:2s,kill@2s', 'the server is paused then'),
    ('kill@1s:2s', 'only stop and restart'),
])
def test_bad_fault_specs_say_what_is_wrong(spec, words):
    with pytest.raises(ValueError) as e:
        converters.faults(spec)
    assert words in str(e.value)


def test_replica_set_faults_name_their_target_and_promote_plays_the_coordinator():
    f = converters.faults('kill-leader@3s,promote@4s,stop-replica@5s:1s,start-leader@8s',
                          replica_set=True)
    assert [(x.action, x.target, x.at) for x in f] == [
        ('kill', 'leader', 3.0), ('promote', None, 4.0), ('stop', 'replica', 5.0),
        ('start', 'leader', 8.0)]
    # A bare action is the leader's; after a promotion the leader target is live again.
    f = converters.faults('kill@1s,promote@2s,kill-leader@3s', replica_set=True)
    assert [(x.action, x.target) for x in f] == [('kill', 'leader'), ('promote', None),
                                                 ('kill', 'leader')]


@pytest.mark.parametrize('spec, replica_set, words', [
    ('kill-leader@3s', False, 'is a member of a replica set'),
    ('promote@3s', False, 'promote needs a replica set'),
    ('kill-primary@3s', True, 'kill-leader, stop-replica'),
    ('start-replica@3s', True, 'the replica is up then'),
    ('kill-leader@1s,kill-leader@2s', True, 'the leader is down then'),
    ('stop-replica@1s,stop-replica@2s', True, 'the replica is paused then'),
    ('promote@1s:2s', True, 'only stop and restart'),
])
def test_bad_replica_set_faults_say_what_is_wrong(spec, replica_set, words):
    with pytest.raises(ValueError) as e:
        converters.faults(spec, replica_set=replica_set)
    assert words in str(e.value)


def test_fault_needs_a_spawned_server():
    with pytest.raises(errors.ConfigError) as e:
        configuration.parse(['--fault', 'kill@1s'], environ={})
    assert '--fault needs --spawn' in str(e.value)
    c = configuration.parse(['--spawn', '--fault', 'kill@1s,start@2s', '--verify'], environ={})
    assert [f.action for f in c.target.faults] == ['kill', 'start'] and c.load.verify


# -- the report's lines -----------------------------------------------------------------

def test_the_report_says_each_outage_and_what_verify_found():
    phase = {'name': 'insert', 'outages': [
        {'start': 1.5, 'end': 2.7, 'duration': 1.2, 'open': False, 'failed': 10,
         'timed_out': 0, 'reconnects': 1, 'recovery': 0.05, 'first_error': 'network: lost'},
        {'start': 4.0, 'end': None, 'duration': 2.0, 'open': True, 'failed': 3, 'timed_out': 1,
         'reconnects': None, 'recovery': None, 'first_error': 'network: lost'}],
        'faults': [{'action': 'kill', 't': 1.5, 'took': 0.0}]}
    lines = text.outage_lines(phase)
    assert lines[0].startswith('insert: OUTAGE 1.50-2.70 s (1.20 s): 10 failed, 0 timed out, '
                               '1 reconnect, first success 0.05 s after')
    assert 'STILL DOWN' in lines[1] and lines[2] == 'insert: fault kill at 1.50 s'
    v = {'checked': 10, 'intact': 8, 'acknowledged_lost': 2, 'unacknowledged_applied': 0,
         'corrupt': 0, 'unexpected': 0, 'examples': {'acknowledged_lost': [4, 9]}}
    lines = text.verify_lines(v)
    assert '2 acknowledged_lost' in lines[0] and lines[1].endswith('keys 4, 9')


def test_ops_in_flight_that_never_complete_are_a_stall_from_the_last_completion():
    st = stats.OpStats('select')
    watch = outages.OutageWatch([st], t0=_now(), timeout=5.0)
    watch.watch_stalls(lambda: 0.001)
    start = _now()
    while _now() - start < 0.3:        # healthy: an op completes every few ms
        st.attempted += 1
        st.lat[1000] += 1
        gevent.sleep(0.005)
    stalled_at = _now() - start
    st.attempted += 1                  # sent, never answered
    gevent.sleep(0.9)
    st.lat[900000] += 1                # answered at last
    gevent.sleep(0.1)
    (e,) = watch.finish(_now())
    assert e['first_error'].startswith('stall') and e['failed'] == e['timed_out'] == 0
    assert abs(e['start'] - stalled_at) < 0.08 and abs(e['duration'] - 0.9) < 0.1, e


def test_slow_ops_are_not_a_stall():
    from tests.unit.test_run import run
    _r, _b, phases = run('--op-sleep', '0.7', '--greenlets', '1', '--phases', 'select',
                         '--ops', '3')
    assert phases[0]['outages'] == [] and phases[0]['ok'] == 3
