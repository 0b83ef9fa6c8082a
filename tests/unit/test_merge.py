"""``gloaddriver merge`` (gloaddriver.report.results.merge) on results of the in-memory
backend, and on phases recorded by hand into gloaddriver.measure.phase_result: counts and rates
add up, percentiles come from the summed histograms, never from averaged percentiles."""
from __future__ import absolute_import, division, print_function

import sys
from collections import namedtuple

import gevent

from gloaddriver import backends
from gloaddriver import config as configuration
from gloaddriver.measure import manifest
from gloaddriver.measure.phase_result import PhaseResult
from gloaddriver.measure import stats
from gloaddriver.measure.syscalls import SyscallCounter
from gloaddriver.report import results
from gloaddriver.run import runner

Window = namedtuple('Window', 'seconds cpu syscalls io')


def _part(argv):
    config = configuration.parse(['--backend', 'memory', '--progress', '0', '--greenlets', '3']
                                 + list(argv), environ={})
    kind = backends.get('memory')
    counter = SyscallCounter(enable=False)
    backend = kind.backend(config, counter)
    backend.open()
    the_run = runner.Run(config, backend, counter, progress_out=sys.stderr)
    return config, kind, backend, counter, the_run


def together(*argvs):
    """Results of runs that went side by side (as shards do), one per argv."""
    parts = [_part(argv) for argv in argvs]
    gevent.joinall([gevent.spawn(p[-1].execute) for p in parts], raise_error=True)
    out = []
    for config, kind, backend, counter, the_run in parts:
        m = manifest.build(config, kind, backend, {'kind': kind.name, 'spawned': False}, counter)
        out.append({'manifest': m, 'phases': the_run.phases, 'aborted': the_run.aborted})
    return out


def shards(*argv):
    return together(*[('--shard', '%d/2' % i) + argv for i in range(2)])


def shaped(latencies, seconds=1.0, syscalls=None, name='select'):
    """One phase from (microseconds, count) pairs of ok ops, as the runner shapes it."""
    st = stats.OpStats(name)
    for us, n in latencies:
        st.lat[us] += n
        st.attempted += n
    st.drain()
    return PhaseResult.recorded(name, [st], Window(seconds, 0.01, syscalls, None), None)


def result(*phases):
    return {'manifest': {'backend': 'memory', 'shard': None}, 'phases': list(phases),
            'aborted': None}


def hist_total(encoded):
    return stats.decode_histogram(encoded).get_total_count()


def test_counts_and_rates_add_up():
    a, b = shards('--ops', '100', '--keys', '200', '--fail-every', '25', '--checksum')
    m = results.merge([a, b])
    assert m['manifest']['merged_from'] == 2 and m['manifest']['shards'] == ['0/2', '1/2']
    assert m['manifest']['backend'] == 'memory' and len(m['parts']) == 2
    assert m['aborted'] is None
    assert [p['name'] for p in m['phases']] == ['insert', 'select', 'update', 'delete']
    for i, p in enumerate(m['phases']):
        pa, pb = a['phases'][i], b['phases'][i]
        for k in ('attempted', 'ok', 'failed', 'timed_out', 'misses'):
            assert p[k] == pa[k] + pb[k], (p['name'], k)
        assert (p['attempted'], p['failed']) == (200, 8)
        assert p['errors'] == {'injected': 8} and 'injected' in p['error_samples']
        # over the span the shards ran, first start to last end: side by side, about the
        # sum of their rates; one after the other, never that sum
        span = max(pa['started_unix'] + pa['seconds'], pb['started_unix'] + pb['seconds']) - \
            min(pa['started_unix'], pb['started_unix'])
        assert p['seconds'] == round(span, 4) >= max(pa['seconds'], pb['seconds']) - 1e-3
        assert p['ops_per_sec'] == round(p['attempted'] / p['seconds'], 1)
        assert hist_total(p['histogram']) == p['ok'] == pa['ok'] + pb['ok']
        assert int(p['checksum'], 16) == (int(pa['checksum'], 16) + int(pb['checksum'], 16)) \
            % (1 << 64)


def test_percentiles_come_from_the_summed_histograms_not_averages():
    fast = shaped([(100, 900)])
    slow = shaped([(20000, 100)])
    (p,) = results.merge([result(fast), result(slow)])['phases']
    reference = stats.new_histogram()
    reference.record_value(100, 900)
    reference.record_value(20000, 100)
    assert p['latency_us'] == stats.latency_summary(reference, 900 * 100 + 100 * 20000)
    assert p['latency_us']['mean'] == 2090.0
    # p99 is the slow part's, p50 the fast part's: not (100 + 20000) / 2.
    assert 19990 <= p['latency_us']['p99'] <= 20020
    assert 99 <= p['latency_us']['p50'] <= 101
    assert p['ok'] == hist_total(p['histogram']) == 1000
    assert p['ops_per_sec'] == 1000.0     # 900/s and 100/s side by side


def test_syscall_counts_add_up_and_are_divided_again():
    a = shaped([(50, 100)], syscalls={'total': 300, 'sendto': 100})
    b = shaped([(50, 300)], syscalls={'total': 300, 'sendto': 300})
    assert (a['syscalls']['per_op'], b['syscalls']['per_op']) == (3.0, 1.0)
    (p,) = results.merge([result(a), result(b)])['phases']
    s = p['syscalls']
    assert s['source'] == 'perf_event' and s['counts'] == {'total': 600, 'sendto': 400}
    assert s['per_op'] == 1.5 and s['by_name'] == {'sendto': 1.0}    # not (3 + 1) / 2


def test_per_op_blocks_of_a_mix_merge():
    a, b = shards('--mix', 'select=90,update=10', '--ops', '500', '--keys', '100')
    (p,) = results.merge([a, b])['phases']
    assert sorted(p['ops']) == ['select', 'update'] and p['attempted'] == 1000
    for op, sub in p['ops'].items():
        parts = [r['phases'][0]['ops'][op] for r in (a, b)]
        assert sub['attempted'] == sum(x['attempted'] for x in parts)
        assert sub['ok'] == hist_total(sub['histogram']) == sum(x['ok'] for x in parts)
        assert sub['misses'] == sum(x['misses'] for x in parts)
    for k in ('attempted', 'ok', 'misses'):
        assert sum(sub[k] for sub in p['ops'].values()) == p[k], k


def test_timelines_merge_row_by_row():
    # 12 rows of 0.05 s each when the machine is quiet; a busy one delays the ticker, and
    # rows stretch. What is judged needs several rows a shard, not how many.
    a, b = shards('--ops', '0', '--duration', '0.6', '--interval', '0.05', '--phases', 'select')
    ta, tb = a['phases'][0]['timeline'], b['phases'][0]['timeline']
    assert len(ta) >= 3 and len(tb) >= 3
    (p,) = results.merge([a, b])['phases']
    rows = p['timeline']
    assert len(rows) == max(len(ta), len(tb))
    for i, row in enumerate(rows):
        parts = [t[i] for t in (ta, tb) if i < len(t)]
        for k in ('attempted', 'ok', 'errors'):
            assert row[k] == sum(r[k] for r in parts), (i, k)
        assert row['seconds'] == max(r['seconds'] for r in parts)
        if row['ok']:
            assert hist_total(row['histogram']) == row['ok']
        assert row['ops_per_sec'] == round(row['attempted'] / row['seconds'], 1)
    assert sum(r['attempted'] for r in rows) == p['attempted']
    assert sum(r['ok'] for r in rows) == p['ok']


def test_open_loop_schedules_add_up():
    a, b = shards('--rate', '500', '--ops', '50', '--phases', 'insert', '--keys', '100')
    (p,) = results.merge([a, b])['phases']
    pa, pb = a['phases'][0], b['phases'][0]
    r = p['rate']
    assert r['target'] == 1000 and r['arrival'] == 'constant'
    for k in ('late', 'dropped', 'scheduled'):
        assert r[k] == pa['rate'][k] + pb['rate'][k], k
    assert r['scheduled'] == r['dropped'] + p['attempted'] == 100
    assert r['achieved'] == round(100 / p['seconds'], 1)
    # Never above the target; how far below it is the machine's (50 ops a shard last
    # 0.1 s, which one busy moment stretches by a third).
    assert 0 < r['achieved'] < 1100
    assert hist_total(p['service_histogram']) == hist_total(p['histogram']) == p['ok'] == 100
    # latency_us is from the intended start, service_time_us from the actual one.
    assert p['latency_us']['max'] >= p['service_time_us']['max']
    for part in (pa, pb):
        assert p['latency_us']['max'] >= part['latency_us']['max']


def test_merging_one_part_keeps_its_figures():
    (a,) = together(('--mix', 'select=3,update=1', '--ops', '300', '--keys', '50'))
    (p,) = results.merge([a])['phases']
    orig = a['phases'][0]
    for k in ('attempted', 'ok', 'failed', 'misses', 'errors', 'ops_per_sec', 'histogram'):
        assert p[k] == orig[k], k
    for q in ('p50', 'p90', 'p99', 'p999', 'max'):
        assert p['latency_us'][q] == orig['latency_us'][q]
    for op in ('select', 'update'):
        assert p['ops'][op]['latency_us']['p99'] == orig['ops'][op]['latency_us']['p99']


def test_open_loop_per_op_latency_survives_a_merge():
    (a,) = together(('--rate', '2000', '--ops', '40', '--mix', 'select=1,update=1',
                     '--op-sleep', '0.01'))
    sub = a['phases'][0]['ops']['select']
    assert sub['latency_us']['p99'] > 2 * sub['service_time_us']['p99']
    merged = results.merge([a])['phases'][0]['ops']['select']
    assert merged['latency_us']['p99'] == sub['latency_us']['p99']
    assert merged['service_time_us']['p99'] == sub['service_time_us']['p99']


def test_aborted_parts_are_listed():
    a, b = result(shaped([(10, 5)])), result(shaped([(10, 5)]))
    b['aborted'] = 'no successful op for 30 s'
    m = results.merge([a, b])
    assert m['aborted'] == ['no successful op for 30 s']


def _timed(start_at, *windows):
    """A result whose phases ran in these (name, start, seconds) windows."""
    return {'manifest': {'start_at': start_at},
            'phases': [{'name': n, 'started_unix': t, 'seconds': s} for n, t, s in windows]}


def test_shards_of_one_start_at_are_judged_by_their_first_phase_only():
    # Phases bounded by --ops: the shard given less CPU ends its first phase later, and
    # its second starts later, apart from the others'.
    a = _timed(100.0, ('insert', 100.0, 0.5), ('select', 100.5, 0.1))
    b = _timed(100.0, ('insert', 100.0, 0.1), ('select', 100.1, 0.1))
    assert results._apart([a, b], 'AB') == []
    # Without one --start-at (or with two), every phase is judged.
    for start_a, start_b in ((None, None), (100.0, 101.0)):
        a['manifest']['start_at'], b['manifest']['start_at'] = start_a, start_b
        (why,) = results._apart([a, b], 'AB')
        assert why.startswith('phase select did not run at the same time'), why
    # One --start-at, and a shard that began its first phase late: not together.
    late = _timed(100.0, ('insert', 101.0, 0.1), ('select', 101.1, 0.1))
    a['manifest']['start_at'] = 100.0
    (why,) = results._apart([a, late], 'AB')
    assert why.startswith('phase insert did not run at the same time'), why
