"""--distribution's gaussian, hotspot and exponential and --value-size's range and weighted
list: their shapes, their bad input, and the same draws by seed on 2.7 and 3.x."""
from __future__ import absolute_import, division, print_function

import pytest

from gloaddriver import config as configuration
from gloaddriver import workload
from gloaddriver.workload import keys, sizes


def draws(distribution, n=1000, count=20000, seed=7):
    g = keys.generator(distribution, n, seed, 'select', 3, start=5000)
    return [g() - 5000 for _ in range(count)]


# The first keys of seed 7, phase select, worker 3: written down once, so a run on either
# interpreter (both run this file) that draws otherwise fails here.
GOLDEN = {
    'gaussian': [504, 431, 843, 790, 602, 508, 868, 598],
    'hotspot': [44, 111, 994, 925, 179, 33, 954, 31],
    'hotspot:0.1:0.9': [22, 55, 99, 90, 89, 16, 948, 15],
    'exponential': [996, 928, 972, 766, 390, 377, 319, 914],
}


@pytest.mark.parametrize('name', sorted(GOLDEN))
def test_the_same_seed_draws_the_same_keys_on_every_interpreter(name):
    assert draws(name, count=8) == GOLDEN[name]
    assert draws(name, count=50) == draws(name, count=50)
    assert draws(name, count=50, seed=8) != draws(name, count=50)


def test_gaussian_centres_on_the_middle_and_stays_in_range():
    ks = draws('gaussian')
    assert 0 <= min(ks) and max(ks) < 1000
    mean = sum(ks) / len(ks)
    assert 480 < mean < 520
    # one standard deviation (1/6 of the range, about 167 keys) holds about 68 %
    inside = sum(1 for k in ks if abs(k - 499.5) <= 1000 / 6.0) / len(ks)
    assert 0.64 < inside < 0.72
    narrow = draws('gaussian:0.02')
    assert sum(1 for k in narrow if abs(k - 499.5) <= 20) / len(narrow) > 0.6


def test_hotspot_sends_its_share_of_ops_to_its_share_of_keys():
    ks = draws('hotspot')
    assert 0.77 < sum(1 for k in ks if k < 200) / len(ks) < 0.83
    ks = draws('hotspot:0.01:0.5')
    assert 0.47 < sum(1 for k in ks if k < 10) / len(ks) < 0.53
    assert set(draws('hotspot:1:0.5', count=3000)) <= set(range(1000))


def test_exponential_favours_the_newest_keys_as_ycsb_does():
    ks = draws('exponential')
    assert 0 <= min(ks) and max(ks) < 1000
    # YCSB's default: 95 % of ops on the newest 85.7 % of the keys (before drawing again
    # those beyond the range, which only raises the share)
    assert sum(1 for k in ks if k >= 1000 - 857) / len(ks) > 0.95
    steep = draws('exponential:99:0.1')
    assert sum(1 for k in steep if k >= 900) / len(steep) > 0.98


def test_a_range_of_sizes_is_drawn_within_it_and_a_list_holds_its_weights():
    table = workload.values(sizes.parse('100-4000'), 7)
    lengths = [len(v) for v in table]
    assert len(table) == sizes.POOL and 100 <= min(lengths) and max(lengths) <= 4000
    assert 1900 < sum(lengths) / len(lengths) < 2200
    assert len(set(lengths)) > 500
    listed = [len(v) for v in workload.values(sizes.parse('100:8,4000:2'), 7)]
    assert (listed.count(100), listed.count(4000)) == (800, 200)
    # shuffled by the seed, not in blocks of neighbouring keys
    assert 0 < listed[:100].count(4000) < 50
    assert listed != [len(v) for v in workload.values(sizes.parse('100:8,4000:2'), 8)]
    assert workload.values(sizes.parse('100-4000'), 7) == table
    # the values are the classic characters: key k's starts with printable[k % 100]
    assert workload.values(sizes.parse('10'), 7) == workload.values(10)
    assert table[101][0] == table[1][0] != table[2][0]


def test_the_flags_take_the_forms_and_keep_one_size_an_int():
    c = configuration.parse(['--value-size', '64', '--distribution', 'hotspot:0.1:0.9'],
                            environ={})
    assert (c.load.value_size, c.load.distribution) == (64, 'hotspot:0.1:0.9')
    c = configuration.parse(['--value-size', '100-4000'], environ={})
    assert (c.load.value_size.low, c.load.value_size.high) == (100, 4000)


@pytest.mark.parametrize('argv,words', [
    (['--value-size', '4000-100'], 'goes down'),
    (['--value-size', '100:8,4000'], 'SIZE:WEIGHT'),
    (['--value-size', '100:x'], 'a weight must be a whole number'),
    (['--value-size', '0'], 'must be 1..'),
    (['--distribution', 'hotspot:2'], 'parameter 1 must be a number above 0 and at most 1'),
    (['--distribution', 'exponential:100'], 'below 100'),
    (['--distribution', 'uniform:1'], 'takes no parameters'),
    (['--distribution', 'gaussian:1:2'], 'at most 1 parameter,'),
    (['--distribution', 'pareto'], 'takes one of sequential'),
])
def test_bad_sizes_and_distributions_are_one_line_and_exit_2(argv, words, capsys):
    with pytest.raises(SystemExit) as e:
        configuration.parse(argv, environ={})
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count('\n') == 1 and words in err, err
