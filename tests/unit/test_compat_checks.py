"""The verdicts of ``gloaddriver compat`` (gloaddriver.compat.check.checks) on hand-built
sides: no interpreter, no server. Each test changes one thing on one side and expects
exactly the rows it concerns to change verdict."""
from __future__ import absolute_import, division, print_function

import copy

import pytest

from gloaddriver.compat import check
from gloaddriver.compat.check import Side, checks, median_result

TOLERANCE = 15.0
PHASES = ('insert', 'select', 'update')
OPS = 1000


def _phase(name, ops_per_sec=20000.0, cpu_us_per_op=40.0):
    return {
        'name': name, 'attempted': OPS, 'ok': OPS, 'misses': 0,
        'checksum': '00000000deadbeef', 'ops_per_sec': ops_per_sec,
        'cpu_us_per_op': cpu_us_per_op,
        'syscalls': {'source': 'perf_event',
                     'counts': {'total': 3000, 'sendto': 100, 'recvfrom': 100,
                                'epoll_wait': 200, 'getpid': 100}},
        'batching': {'requests_per_send': 10.0, 'responses_per_recv': 10.0},
        'connection': {'requests': OPS, 'schema_fetches': 0, 'reconnects': 0},
    }


def side(label, interpreter='CPython 3.11.9'):
    s = Side(label, '/usr/bin/python-%s' % label)
    s.probe = {
        'fingerprint': {'interpreter': interpreter, 'msgpack_c_extension': True,
                        'dependencies': {'gevent': '24.10.1', 'greenlet': '3.1.1',
                                         'msgpack': '1.1.0'},
                        'gevent_loop': 'gevent.libev.corecext.loop'},
        'wire': [('int', 'aa11'), ('text', 'bb22'), ('bytes', 'cc33')],
        'typed': [('unsigned', 'ok'), ('string', 'ok'), ('varbinary', 'rejected')],
        'errors': {'server:3': 1, 'server:36': 1},
    }
    s.result = {'phases': [_phase(n) for n in PHASES]}
    s.stored = (OPS, 'f' * 40)
    s.cross = {'rows': OPS, 'n_mismatches': 0, 'text_ok': True, 'binary_ok': True,
               'text_key': 'hit', 'native_str_key': 'hit'}
    return s


def pair():
    return side('A'), side('B')


def verdicts(a, b, tolerance=TOLERANCE, not_applicable=None):
    rows = checks(a, b, tolerance, not_applicable)
    return dict((r['check'].split()[0], r) for r in rows)


def changed(rows, verdict):
    """The numbers of the rows whose verdict is ``verdict``."""
    return sorted((n for n, r in rows.items() if r['verdict'] == verdict), key=int)


def test_identical_sides_pass_every_check():
    rows = checks(*pair(), tolerance=TOLERANCE)
    assert [r['check'].split()[0] for r in rows] == [str(i) for i in range(1, 12)]
    assert [r['verdict'] for r in rows] == ['PASS'] * 11, rows
    assert all(r['why'] == '' for r in rows)
    assert all(r['A'] == r['B'] for r in rows if not r['check'].startswith('11'))


def test_schema_fetches_fail_row_6():
    a, b = pair()
    b.result['phases'][1]['connection']['schema_fetches'] = 500
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == ['6']
    assert 'B re-fetched the schema 500 times' in rows['6']['why']
    assert rows['6']['B'] == '1.000, 500 schema fetches'


def test_more_requests_per_op_fail_row_6():
    a, b = pair()
    b.result['phases'][2]['connection']['requests'] = OPS * 2   # 4/3 requests per op
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == ['6'] and rows['6']['why'] == ''


def test_a_syscall_rate_beyond_the_tolerance_fails_row_7():
    a, b = pair()
    for p in b.result['phases']:
        p['syscalls']['counts']['sendto'] = 200       # 0.20 vs 0.10 per op: 2x
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == ['7']
    assert rows['7']['why'].startswith('sendto 0.100 vs 0.200 per op (2.00x, at least 1.5x)')
    assert rows['7']['B'] == 'total 3.000, net 0.300'


def test_network_calls_within_one_and_a_half_times_follow_the_batching():
    a, b = pair()
    for p in b.result['phases']:
        p['syscalls']['counts']['sendto'] = 130       # 0.13 vs 0.10 per op: 1.3x
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == [] and rows['7']['verdict'] == 'EXPLAINED'
    assert 'sendto 0.1000 vs 0.1300 (one per batch' in rows['7']['why']
    # Within a 35% tolerance the same difference passes.
    assert verdicts(a, b, tolerance=35.0)['7']['verdict'] == 'PASS'


def test_more_network_calls_from_more_requests_are_not_excused_by_batching():
    # A schema cache that misses: B makes 2 requests per op, in batches 1.5x larger,
    # so its sends per op come out only 1.33x A's. That is the extra requests, not
    # the batching: row 7 fails with row 6.
    a, b = pair()
    for p in b.result['phases']:
        p['connection']['requests'] = OPS * 2
        p['syscalls']['counts']['sendto'] = 133
        p['syscalls']['counts']['total'] += 33
        p['batching']['requests_per_send'] = 15.0
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == ['6', '7'], rows
    assert rows['7']['why'].startswith('sendto 0.100 vs 0.133 per op (1.33x)')


def test_a_rate_below_the_noise_floor_is_not_judged():
    a, b = pair()
    for p in b.result['phases']:
        p['syscalls']['counts']['connect'] = 5       # 0.005 per op on one side only
    assert changed(verdicts(a, b), 'FAIL') == []


def test_a_difference_only_in_a_known_cause_is_explained():
    a, b = pair()
    for p in b.result['phases']:
        c = p['syscalls']['counts']
        c['epoll_wait'] += 1000      # 1.2 vs 0.2 per op
        c['total'] += 1000           # and nothing else
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == [] and changed(rows, 'EXPLAINED') == ['7']
    assert rows['7']['why'] == 'epoll_wait 0.2000 vs 1.2000 (%s)' % (
        check.KNOWN_SYSCALL_CAUSES['epoll_wait'])


def test_a_known_cause_does_not_hide_an_unexplained_rise():
    a, b = pair()
    for p in b.result['phases']:
        c = p['syscalls']['counts']
        c['epoll_wait'] += 1000
        c['total'] += 2000           # 1000 more than epoll_wait explains
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == ['7']
    assert 'total less known causes 2.500 vs 3.500' in rows['7']['why']
    assert 'epoll_wait' in rows['7']['why']


def test_without_perf_event_counters_row_7_fails():
    a, b = pair()
    for p in a.result['phases']:
        p['syscalls'] = {'source': 'io_calls', 'per_op': 0.2}
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == ['7'] and 'no perf_event' in rows['7']['why']


def test_different_stored_digests_fail_row_3():
    a, b = pair()
    b.stored = (OPS, 'e' * 40)
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == ['3']
    assert rows['3']['why'] == 'the two runs stored different tuples'
    assert (rows['3']['A'], rows['3']['B']) == ('1000 tuples, sha1 ffffffffffff',
                                                '1000 tuples, sha1 eeeeeeeeeeee')


@pytest.mark.parametrize('factor,verdict', [(3.0, 'FAIL'), (1 / 3.0, 'FAIL'), (2.9, 'PASS'),
                                            (0.4, 'PASS')])
def test_a_3x_throughput_gap_fails_row_11(factor, verdict):
    # A side that costs 3x the CPU per op (no C extension, a profiler left on).
    a, b = pair()
    b.result['phases'][1]['ops_per_sec'] *= factor
    b.result['phases'][1]['cpu_us_per_op'] /= factor
    rows = verdicts(a, b)
    assert rows['11']['verdict'] == verdict
    assert changed(rows, 'FAIL') == (['11'] if verdict == 'FAIL' else [])
    if verdict == 'FAIL':
        assert rows['11']['why'].startswith('a 3.0x gap in client CPU per op')


def test_row_11_judges_cpu_per_op_so_a_busy_machine_does_not_fail_it():
    # One side got a quarter of a core (other work on the machine) at the same CPU per
    # op: its ops/s fell 4x, and that is the machine's, not the interpreter's.
    a, b = pair()
    for p in a.result['phases']:
        p['ops_per_sec'] /= 4
    rows = verdicts(a, b)
    assert rows['11']['verdict'] == 'PASS' and '4.00x' in rows['11']['B']
    # Results without CPU figures are judged by ops/s, as before.
    for s in (a, b):
        for p in s.result['phases']:
            p['cpu_us_per_op'] = None
    assert verdicts(a, b)['11']['verdict'] == 'FAIL'
    assert verdicts(a, b)['11']['why'].startswith('a 4.0x gap in ops/s')


def test_without_connection_counts_rows_6_and_8_are_not_applicable():
    a, b = pair()
    for s in (a, b):
        for p in s.result['phases']:
            del p['connection']
            p['batching'] = {'requests_per_send': 1.0, 'responses_per_recv': None}
    b.result['phases'][0]['batching']['requests_per_send'] = 50.0    # not judged
    why = {'6 requests per op': 'psycopg2 sends one query per round trip',
           '8 batching (req/send, resp/recv)': 'one query per round trip: nothing to batch'}
    rows = verdicts(a, b, not_applicable=why)
    assert changed(rows, 'N/A') == ['6', '8'] and changed(rows, 'FAIL') == []
    assert rows['6']['why'] == why['6 requests per op']
    assert rows['8']['why'] == why['8 batching (req/send, resp/recv)']
    assert (rows['6']['A'], rows['8']['B']) == ('n/a', 'n/a')
    # Without the backend's words, a default reason is given.
    rows = verdicts(a, b)
    assert rows['6']['why'] == 'the connector keeps no request counts'
    assert rows['8']['why'] == 'the connector keeps no batching counts'


def test_batching_beyond_the_tolerance_fails_row_8():
    a, b = pair()
    b.result['phases'][1]['batching']['requests_per_send'] = 5.0
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == ['8'] and rows['8']['why'] == 'select req/send 10.0 vs 5.0'


def test_batch_sizes_within_one_and_a_half_times_are_load_not_a_difference():
    a, b = pair()
    b.result['phases'][1]['batching']['requests_per_send'] = 8.0     # 1.25x: load moves it
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == [] and rows['8']['verdict'] == 'EXPLAINED'
    assert 'select req/send 10.0 vs 8.0' in rows['8']['why']


def _pure_msgpack(a, b):
    b.probe['fingerprint']['msgpack_c_extension'] = False


def _wire(a, b):
    b.probe['wire'][1] = ('text', 'bb23')


def _typed(a, b):
    b.probe['typed'][2] = ('varbinary', 'ok')


def _cross_mismatch(a, b):
    b.cross['n_mismatches'] = 3


def _cross_rows(a, b):
    a.cross['rows'] = OPS - 1


def _checksum(a, b):
    b.result['phases'][2]['checksum'] = '00000000deadbeee'


def _misses(a, b):
    b.result['phases'][1]['misses'] = 1


def _errors(a, b):
    b.probe['errors'] = {'server:3': 1, 'network': 1}


@pytest.mark.parametrize('change,row,words', [
    (_pure_msgpack, '1', 'pure-Python fallback on B'),
    (_wire, '2', 'different request bytes for: text'),
    (_typed, '4', 'accepted on one side only: varbinary'),
    (_cross_mismatch, '5', 'failed on B'),
    (_cross_rows, '5', 'failed on A'),
    (_checksum, '9', 'results differ in: update'),
    (_misses, '9', 'results differ in: select'),
    (_errors, '10', 'failed differently'),
])
def test_each_difference_fails_its_own_row(change, row, words):
    a, b = pair()
    change(a, b)
    rows = verdicts(a, b)
    assert changed(rows, 'FAIL') == [row]
    assert words in rows[row]['why']


def test_a_binary_native_str_is_explained_on_that_side_only():
    a, b = side('A', 'CPython 2.7.18'), side('B')
    a.cross['native_str_key'] = 'miss'
    rows = verdicts(a, b)
    assert changed(rows, 'EXPLAINED') == ['5'] and changed(rows, 'FAIL') == []
    assert 'on CPython 2.7.18 the native str is binary' in rows['5']['why']


def test_checks_do_not_change_the_sides():
    a, b = pair()
    before = copy.deepcopy((a.probe, a.result, b.probe, b.result))
    checks(a, b, TOLERANCE)
    assert (a.probe, a.result, b.probe, b.result) == before


def test_timing_rows_judge_the_medians_of_the_rounds():
    # One round of B ran while the machine was busy (4x slower, batches 4x smaller):
    # the median of three rounds is B's ordinary figure, and rows 7, 8, 11 pass.
    a, b = pair()
    slow = {'phases': [dict(_phase(n, ops_per_sec=5000.0, cpu_us_per_op=160.0),
                            batching={'requests_per_send': 2.5, 'responses_per_recv': 2.5},
                            syscalls={'source': 'perf_event',
                                      'counts': {'total': 12000, 'sendto': 400,
                                                 'recvfrom': 400, 'epoll_wait': 800,
                                                 'getpid': 400}})
                       for n in PHASES]}
    a.timed = median_result([a.result, a.result, a.result])
    b.timed = median_result([b.result, slow, b.result])
    rows = verdicts(a, b)
    assert rows['11']['verdict'] == 'PASS' and rows['7']['verdict'] in ('PASS', 'EXPLAINED')
    assert rows['8']['verdict'] == 'PASS', rows['8']
    # The slow round alone would have failed the throughput row.
    b.timed = median_result([slow])
    assert verdicts(a, b)['11']['verdict'] == 'FAIL'
