"""One phase-result type (gloaddriver.measure.phase_result) and one run-result builder
(gloaddriver.measure.run_result): three parts' worth of phases merge to exactly what one
HdrHistogram of all their latencies says, at every percentile, with the mean from the
exact sum; counts add up; older files without the exact fields still merge."""
from __future__ import absolute_import, division, print_function

import copy
import json
import random
from collections import namedtuple

from gloaddriver import errors
from gloaddriver.measure import manifest, run_result, stats
from gloaddriver.measure.phase_result import Counts, PhaseResult
from tests import result_schema
from tests.unit.test_merge import _part, together

Window = namedtuple('Window', 'seconds cpu syscalls io')
LATENCY_KEYS = [name for name, _pct in stats.PERCENTILES] + ['max', 'mean']
# Every percentile a reader could ask for: whole ones, and the tail in tenths.
EVERY = [float(p) for p in range(1, 101)] + [99.0 + i / 10 for i in range(1, 10)] + [99.99]


def _samples(rng, n, scale):
    """n latencies in microseconds, spread over four decades as a real run's are."""
    return [max(1, int(rng.lognormvariate(0, 1.5) * scale)) for _i in range(n)]


def _record(rng, part, open_loop):
    """One part's mix phase recorded as the runner records it; returns the phase and
    {op: (latencies from the intended start, service times)} of its ok ops."""
    ops, seen = [], {}
    for name, n in (('select', 700 + 100 * part), ('update', 200 + 50 * part)):
        st = stats.OpStats(name)
        if open_loop:
            st.open_loop()
        service = _samples(rng, n, 80 * (part + 1))
        intended = [s + w for s, w in zip(service, _samples(rng, n, 300))] if open_loop \
            else service
        for i, (s, c) in enumerate(zip(service, intended)):
            st.lat[s] += 1
            if open_loop:
                st.lat_co[c] += 1
            if i % 97 == 0:
                st.drain()          # a few intervals, as the ticker drains them
        st.misses = n // 10
        st.attempted = n + 3 + part + 2
        for i in range(3 + part):
            st.error(errors.ServerError(3, 'duplicate %d' % i))
        for _i in range(2):
            st.error(errors.RequestTimeout('slow'))
        st.drain()
        st.check()
        if open_loop:
            st.late, st.dropped = 5 + part, part
        ops.append(st)
        seen[name] = (intended, service)
    window = Window(1.0 + part / 10, 0.25 + part / 100,
                    {'total': 4000 + part, 'sendto': 1000 * (part + 1)}, None)
    phase = PhaseResult.recorded('mix', ops, window, None,
                                 (1000.0, 'constant', None) if open_loop else None)
    phase['keys'] = {'first': 0, 'count': 100}   # the runner adds sections by key
    return phase, seen


def _parts(open_loop, seed=7):
    """Three results as three processes write them (through JSON), and every ok latency."""
    rng = random.Random(seed)
    parts, seen = [], {'select': ([], []), 'update': ([], [])}
    for i in range(3):
        phase, samples = _record(rng, i, open_loop)
        parts.append(json.loads(json.dumps(run_result.build(_manifest(i), [phase]))))
        for op, (intended, service) in samples.items():
            seen[op][0].extend(intended)
            seen[op][1].extend(service)
    return parts, seen


def _manifest(shard):
    config, kind, backend, counter, _run = _part(['--shard', '%d/3' % shard])
    return manifest.build(config, kind, backend, {'kind': kind.name, 'spawned': False},
                          counter)


def _reference(values):
    h = stats.new_histogram()
    for v in values:
        h.record_value(v)
    return h


def _same_at_every_percentile(block, values, hist_key='histogram', summary_key='latency_us'):
    """The block's histogram and summary are those of one HdrHistogram of ``values``,
    its mean their exact mean."""
    ref = _reference(values)
    merged = stats.decode_histogram(block[hist_key])
    assert merged.get_total_count() == len(values)
    for pct in EVERY:
        assert merged.get_value_at_percentile(pct) == ref.get_value_at_percentile(pct), pct
    expect = stats.latency_summary(ref, sum(values))
    for k in LATENCY_KEYS:
        assert block[summary_key][k] == expect[k], (summary_key, k)
    assert block[summary_key]['mean'] == round(sum(values) / len(values), 1)


def _accounted(block):
    assert block['ok'] + block['failed'] + block['timed_out'] == block['attempted']
    assert sum(block['errors'].values()) == block['failed'] + block['timed_out']


def test_three_parts_merge_to_one_histogram_of_all_their_samples():
    parts, seen = _parts(open_loop=False)
    merged = result_schema.validate(run_result.merge(parts))
    (p,) = merged['phases']
    all_samples = seen['select'][0] + seen['update'][0]
    _same_at_every_percentile(p, all_samples)
    assert p['latency_sum_us'] == sum(all_samples)
    for op in ('select', 'update'):
        _same_at_every_percentile(p['ops'][op], seen[op][0])
        _accounted(p['ops'][op])
    _accounted(p)
    phases = [r['phases'][0] for r in parts]
    for k in ('attempted', 'ok', 'failed', 'timed_out', 'misses'):
        assert p[k] == sum(x[k] for x in phases), k
        assert p[k] == sum(p['ops'][op][k] for op in ('select', 'update')), k
    assert p['errors'] == {'server:3': 2 * (3 + 4 + 5), 'timeout': 2 * 2 * 3}
    assert p['ok'] == len(all_samples)
    # Rates of parts that ran side by side add up; the wall time is the longest.
    assert p['seconds'] == 1.2
    assert abs(p['ops_per_sec'] - sum(x['attempted'] / x['seconds'] for x in phases)) <= 0.2
    # CPU: all the processes' seconds over all their ops.
    assert p['cpu_seconds'] == round(0.25 + 0.26 + 0.27, 6)
    assert p['cpu_us_per_op'] == round(0.78 * 1e6 / p['attempted'], 2)
    assert p['syscalls']['counts'] == {'total': 12003, 'sendto': 6000}
    assert all(r['phases'][0]['keys'] == {'first': 0, 'count': 100} for r in parts)
    assert merged['warnings'] == []
    assert merged['manifest']['merged_from'] == 3
    assert merged['manifest']['shards'] == ['0/3', '1/3', '2/3']


def test_three_open_loop_parts_merge_latency_and_service_time_alike():
    parts, seen = _parts(open_loop=True, seed=11)
    (p,) = result_schema.validate(run_result.merge(parts))['phases']
    intended = seen['select'][0] + seen['update'][0]
    service = seen['select'][1] + seen['update'][1]
    _same_at_every_percentile(p, intended)
    _same_at_every_percentile(p, service, 'service_histogram', 'service_time_us')
    assert (p['latency_sum_us'], p['service_sum_us']) == (sum(intended), sum(service))
    for op in ('select', 'update'):
        _same_at_every_percentile(p['ops'][op], seen[op][0])
        _same_at_every_percentile(p['ops'][op], seen[op][1], 'service_histogram',
                                  'service_time_us')
    r = p['rate']
    assert r['target'] == 3000.0 and r['late'] == 2 * (5 + 6 + 7) and r['dropped'] == 2 * 3
    assert r['scheduled'] == p['attempted'] + r['dropped']
    _accounted(p)


def test_a_merge_in_memory_gives_what_a_merge_of_the_files_gives():
    parts = together(*[('--shard', '%d/3' % i, '--ops', '300', '--keys', '600',
                        '--mix', 'select=3,update=1', '--fail-every', '40', '--checksum')
                       for i in range(3)])
    files = json.loads(json.dumps(parts))
    merged = run_result.merge(parts)
    assert json.loads(json.dumps(merged)) == run_result.merge(files)
    result_schema.validate(json.loads(json.dumps(merged)))
    for i, p in enumerate(merged['phases']):
        pieces = [r['phases'][i] for r in parts]
        _accounted(p)
        assert p['attempted'] == sum(x['attempted'] for x in pieces) == 900
        assert p['latency_sum_us'] == sum(x['latency_sum_us'] for x in pieces)
        assert p['latency_us']['mean'] == round(p['latency_sum_us'] / p['ok'], 1)
        expect = stats.new_histogram()
        for x in pieces:
            expect.add(stats.decode_histogram(x['histogram']))
        assert p['latency_us'] == stats.latency_summary(expect, p['latency_sum_us'])


def test_a_phase_keeps_the_sections_added_to_it():
    parts, _seen = _parts(open_loop=False)
    phase = PhaseResult.merged('mix', [r['phases'][0] for r in parts])
    phase['keys'] = {'first': 0, 'count': 10}
    assert json.loads(json.dumps(phase))['keys'] == {'first': 0, 'count': 10}


def test_older_files_without_exact_sums_still_merge():
    parts, seen = _parts(open_loop=True, seed=3)
    old = copy.deepcopy(parts)
    for r in old:
        p = r['phases'][0]
        for block in [p] + list(p['ops'].values()):
            del block['latency_sum_us'], block['service_sum_us']
        del p['cpu_seconds']
    merged = result_schema.validate(run_result.merge(old))
    (p,) = merged['phases']
    intended = seen['select'][0] + seen['update'][0]
    # Percentiles are the histograms' still; the mean is the parts' means weighted,
    # within their rounding, and no exact sum is claimed for it.
    ref = _reference(intended)
    for pct in EVERY:
        assert stats.decode_histogram(p['histogram']).get_value_at_percentile(pct) == \
            ref.get_value_at_percentile(pct)
    assert abs(p['latency_us']['mean'] - sum(intended) / len(intended)) <= 0.1
    assert 'latency_sum_us' not in p and 'service_sum_us' not in p
    assert 'latency_sum_us' not in p['ops']['select']
    exact = run_result.merge(parts)['phases'][0]
    assert abs(p['cpu_us_per_op'] - exact['cpu_us_per_op']) <= 0.02
    _accounted(p)
    # A merge of a merge of old files estimates again, from the rounded mean.
    again = run_result.merge([merged])['phases'][0]
    assert 'latency_sum_us' not in again and again['latency_us'] == p['latency_us']


def test_a_bulk_phase_counts_rows_and_times_statements_through_a_merge():
    """ok is rows found, latency per statement (the bulk loader): the mean divides by
    the statements, in the phase and after a merge, old file or new."""
    parts = []
    for stmts in ([1000, 3000], [2000]):
        st = stats.OpStats('copy')
        for us in stmts:
            st.lat[us] += 1
        st.drain()
        counts = Counts(5000, 5000, {}, 0, 2.0, st.hist, st.sum_us)
        phase = PhaseResult.measured('bulk:copy', counts, Window(2.0, 0.5, None, None), None,
                                     batching_block={'source': 'workload',
                                                     'requests_per_send': None,
                                                     'responses_per_recv': None})
        assert phase['latency_us']['mean'] == sum(stmts) / len(stmts)
        assert phase['ok'] == 5000 and phase['ops_per_sec'] == 2500.0
        parts.append(json.loads(json.dumps(phase)))
    merged = PhaseResult.merged('bulk:copy', parts)
    assert merged['latency_us']['mean'] == 2000.0 and merged['ok'] == 10000
    for p in parts:
        del p['latency_sum_us']
    assert PhaseResult.merged('bulk:copy', parts[:1])['latency_us']['mean'] == 2000.0
    assert PhaseResult.merged('bulk:copy', parts)['latency_us']['mean'] == 2000.0
