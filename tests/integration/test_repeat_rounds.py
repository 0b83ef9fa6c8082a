"""--repeat N rounds from the same state: each round inserts keys no round before made,
so ``--repeat 3 --phases insert`` on a spawned server is three equal rounds with no
failed op, on Tarantool and on PostgreSQL; a round whose ops failed is named in the
summary and left out of its figures."""
from __future__ import absolute_import, division, print_function

import pytest

from tests.integration.conftest import assert_accounted, run_cli

BACKENDS = {
    'tarantool': ['--spawn'],
    'postgres': ['--backend', 'postgres', '--spawn', '--greenlets', '8'],
}


@pytest.mark.parametrize('backend', sorted(BACKENDS))
@pytest.mark.parametrize('bound', [['--ops', '3000'], ['--ops', '0', '--duration', '1']])
def test_three_rounds_of_inserts_are_equal_and_clean(backend, bound):
    rc, out, err, res = run_cli(BACKENDS[backend] + ['--repeat', '3', '--phases', 'insert'] +
                                bound)
    assert rc == 0, err
    assert_accounted(res)
    rounds = res['phases']
    assert [p['repeat'] for p in rounds] == [1, 2, 3]
    assert [p['failed'] + p['timed_out'] for p in rounds] == [0, 0, 0], [p['errors'] for p in rounds]
    if bound[1] != '0':
        assert [p['ok'] for p in rounds] == [3000, 3000, 3000]
    firsts = [p['keys']['first'] for p in rounds]
    assert len(set(firsts)) == 3, firsts          # each round's keys its own
    summary = res['repeat']['phases'][0]
    assert summary['failed_rounds'] == [] and summary['summarised'] == 3
    assert 'had failed ops' not in out


def test_default_phases_read_the_round_s_own_keys():
    """insert, select, update, delete: every round's selects find the rows its inserts
    made (no misses), on a spawned Tarantool."""
    rc, out, err, res = run_cli(['--spawn', '--repeat', '2', '--ops', '2000'])
    assert rc == 0, err
    assert [p['name'] for p in res['phases']] == ['insert', 'select', 'update', 'delete'] * 2
    assert all(p['misses'] == 0 and p['failed'] == 0 for p in res['phases'])


def test_a_round_with_failures_is_marked_and_left_out_of_the_medians():
    """The server killed in round 2 and started again: round 2's failures leave it out of
    the figures, rounds 1 and 3 are summarised."""
    rc, out, err, res = run_cli(['--spawn', '--repeat', '3', '--phases', 'insert', '--ops', '0',
                                 '--duration', '1.5', '--fault', 'kill@2.0s,start@2.4s',
                                 '--timeout', '0.5'])
    assert_accounted(res)
    rounds = res['phases']
    bad = [p['repeat'] for p in rounds if p['failed'] + p['timed_out']]
    assert 2 in bad, [(p['repeat'], p['errors']) for p in rounds]
    summary = res['repeat']['phases'][0]
    assert summary['failed_rounds'] == bad
    assert summary['summarised'] == 3 - len(bad)
    ops = summary['figures']['ops_per_sec']
    assert ops['values'] == [p['ops_per_sec'] for p in rounds]
    good = [p['ops_per_sec'] for p in rounds if p['repeat'] not in bad]
    assert ops['best'] == max(good) and ops['worst'] == min(good)
    assert 'insert: round #2 had failed ops: left out of the figures above' in out or \
        'insert: rounds #' in out, out
