"""Stats accounting and key generators: pure code."""
from __future__ import absolute_import, division, print_function

from collections import Counter

import pytest

from gloaddriver import errors
from gloaddriver.measure import stats
from gloaddriver.workload import keys


def test_opstats_accounts_every_outcome():
    st = stats.OpStats('insert')
    st.attempted = 6
    st.lat[10] += 2
    st.lat[2000] += 1
    st.error(errors.ServerError(3, 'dup'))
    st.error(errors.RequestTimeout('slow'))
    st.error(ValueError('bug'))
    st.check()
    st.drain()
    assert st.ok == 3 and st.timed_out == 1
    assert st.failed == {'server:3': 1, 'client:ValueError': 1}
    summary = stats.latency_summary(st.hist, st.sum_us)
    assert summary['p50'] == 10 and summary['max'] >= 1999
    assert summary['mean'] == round((10 + 10 + 2000) / 3, 1)
    st.attempted += 1
    with pytest.raises(errors.GloadError):
        st.check()


def test_drain_moves_latencies_into_the_phase_histogram():
    st = stats.OpStats('select')
    for v in range(1, 101):
        st.lat[v] += 1
    interval = st.drain()
    assert interval.get_total_count() == 100 and st.hist.get_total_count() == 100
    st.lat[5000] += 1
    interval = st.drain()
    assert interval.get_total_count() == 1 and st.hist.get_total_count() == 101
    encoded = st.hist.encode()
    assert stats.decode_histogram(encoded).get_total_count() == 101


def test_reset_histogram_leaves_it_as_hdrh_own_reset_does():
    h, fresh = stats.new_histogram(), stats.new_histogram()
    for v in (1, 7, 250, 31000, stats.HIGHEST_US):
        h.record_value(v, 3)
        fresh.record_value(v, 1)
    stats.reset_histogram(h)
    fresh.reset()
    assert h.counts_len == fresh.counts_len and not any(h.counts)
    for name in ('total_count', 'min_value', 'max_value', 'start_time_stamp_msec',
                 'end_time_stamp_msec'):
        assert getattr(h, name) == getattr(fresh, name), name
    h.record_value(42, 2)                # and it records as a new one does
    fresh.record_value(42, 2)
    assert h.encode() == fresh.encode()
    assert h.get_value_at_percentile(50) == fresh.get_value_at_percentile(50)


def test_uniform_keys_draw_start_plus_n_times_random():
    """The C iterator chain draws exactly what ``start + int(random() * n)`` would, so
    a seeded run's keys are those of earlier releases."""
    for start in (0, 10, 2 ** 40):
        rng = keys.make_rng(7, 'select', 2)
        nk = keys.uniform(1000, keys.make_rng(7, 'select', 2), start)
        assert [nk() for _ in range(300)] == [start + int(rng.random() * 1000)
                                              for _ in range(300)]


def test_sequential_keys_once_each_then_wrap():
    nk = keys.sequential(5, start=10)
    assert [nk() for _ in range(7)] == [10, 11, 12, 13, 14, 10, 11]


def test_random_keys_are_seeded_and_in_range():
    a = keys.generator('uniform', 1000, 42, 'select', 3)
    b = keys.generator('uniform', 1000, 42, 'select', 3)
    sa = [a() for _ in range(500)]
    assert sa == [b() for _ in range(500)]
    assert all(0 <= k < 1000 for k in sa)
    c = keys.generator('uniform', 1000, 42, 'select', 4)
    assert [c() for _ in range(500)] != sa


def test_zipfian_is_skewed_toward_low_keys():
    z = keys.generator('zipfian', 1000, 1, 'p', 0)
    counts = Counter(z() for _ in range(20000))
    assert all(0 <= k < 1000 for k in counts)
    assert counts[0] > counts[10] > counts[500]
    assert counts[0] > 20000 * 0.05


def test_latest_favours_the_newest_keys():
    rng = keys.make_rng(1, 'latest')
    plain = keys.latest(1000, rng, start=5000)
    c = Counter(plain() for _i in range(20000))
    assert c.most_common(1)[0][0] == 5999 and min(c) >= 5000 and max(c) <= 5999
    inserts = keys.sequential(10 ** 9, 100000)
    with_inserts = keys.latest(1000, keys.make_rng(1, 'latest'), start=5000, inserts=inserts)
    for _i in range(50):
        inserts()
    c = Counter(with_inserts() for _i in range(20000))
    assert c.most_common(1)[0][0] == 100049   # the last insert handed out
    assert max(c) <= 100049 and min(c) >= 5000
    assert all(k <= 5999 or 100000 <= k for k in c)
