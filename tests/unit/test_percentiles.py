"""The one-walk percentiles (measure.stats.values_at_percentiles) give what hdrh's own
get_value_at_percentile gives, on the histograms a run makes: drained, added, decoded."""
from __future__ import absolute_import, division, print_function

import random

from gloaddriver.measure import stats

PCTS = [0.0, 1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0]


def _hdrh(hist):
    return [hist.get_value_at_percentile(p) for p in PCTS]


def test_the_same_values_as_hdrh_on_many_shapes():
    rng = random.Random(7)
    shapes = [
        lambda: int(rng.lognormvariate(7.5, 0.5)),      # a server's latencies
        lambda: int(rng.lognormvariate(4.0, 2.5)),      # a long tail, to seconds
        lambda: rng.choice([70, 71, 5000000]),          # two spikes far apart
        lambda: 1,
    ]
    for shape in shapes:
        for n in (1, 2, 3, 10, 1000, 20000):
            hist = stats.new_histogram()
            for _ in range(n):
                hist.record_value(max(1, min(shape(), stats.HIGHEST_US)))
            assert stats.values_at_percentiles(hist, PCTS) == _hdrh(hist), (n,)
            # as the reports see it: encoded, decoded, added
            decoded = stats.decode_histogram(hist.encode())
            assert stats.values_at_percentiles(decoded, PCTS) == _hdrh(decoded)
            total = stats.new_histogram()
            total.add(decoded)
            total.add(hist)
            assert stats.values_at_percentiles(total, PCTS) == _hdrh(total)


def test_an_empty_histogram_gives_hdrhs_zeros():
    hist = stats.new_histogram()
    assert stats.values_at_percentiles(hist, PCTS) == _hdrh(hist) == [0] * len(PCTS)


def test_the_latency_summary_uses_it():
    hist = stats.new_histogram()
    for v in range(1, 5001):
        hist.record_value(v)
    summary = stats.latency_summary(hist, sum(range(1, 5001)))
    assert [summary[name] for name, _p in stats.PERCENTILES] == \
        [hist.get_value_at_percentile(p) for _n, p in stats.PERCENTILES]
    assert summary['max'] == hist.get_max_value() and summary['mean'] == 2500.5
