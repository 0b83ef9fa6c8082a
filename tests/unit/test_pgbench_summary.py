"""pgbench's summary lines from gloaddriver results: pgbench 15's wording, order and
number formats, with gloaddriver's figures in them. The results are real runs of
``gloaddriver pgbench`` (tests/unit/data/, each made once by the command in RUNS)."""
from __future__ import absolute_import, division, print_function

import io
import math
import os
import re
import sys

from gloaddriver.config import pgbench_args
from gloaddriver.measure import stats
from gloaddriver.report import pgbench_summary as summary
from tests import result_schema

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')

# Each fixture, and the pgbench flags of the run that made it (connection flags left
# out), against a private PostgreSQL 15 made by `pgbench -i -s 2`. pgbench_mix ran with
# PGOPTIONS='-c default_transaction_isolation=repeatable\ read', for serialization
# failures and retries.
RUNS = {
    'pgbench_select_only': ['-c', '4', '-T', '2', '-S', '-n'],
    'pgbench_per_statement': ['-c', '2', '-t', '50', '-N', '-r', '-M', 'prepared', '-n'],
    'pgbench_mix': ['-c', '4', '-j', '2', '-t', '100', '-n', '-b', 'tpcb@3',
                    '-f', '/tmp/pgb/two_selects.sql@1', '-r', '--max-tries', '2',
                    '-R', '2000', '-L', '2', '--failures-detailed', '-P', '1'],
}


def load(name):
    with io.open(os.path.join(DATA, name + '.json'), encoding='utf-8') as f:
        return result_schema.read(f)   # recorded results hold to today's schema too


def lines_of(name, result=None):
    settings = pgbench_args.parse(RUNS[name], environ={}).settings
    return summary.lines(result or load(name), settings)


def test_a_select_only_run_line_by_line():
    r = load('pgbench_select_only')
    (p,) = r['phases']
    assert lines_of('pgbench_select_only') == [
        'transaction type: <builtin: select only>',
        'scaling factor: 2',
        'query mode: simple',
        'number of clients: 4',
        'number of threads: 1',
        'maximum number of tries: 1',
        'duration: 2 s',
        'number of transactions actually processed: %d' % p['ok'],
        'number of failed transactions: 0 (0.000%)',
        'latency average = %.3f ms' % (p['latency_sum_us'] / float(p['ok']) / 1000),
        'tps = %f (without initial connection time)' % (p['ok'] / p['seconds']),
    ]
    # no stddev (pgbench prints it under -P, -R, -L only), no connection time (the
    # manifest has none: it is not guessed)
    assert 'connect_ms' not in r['manifest']


def test_initial_connection_time_comes_from_the_manifest():
    r = load('pgbench_select_only')
    r['manifest']['connect_ms'] = 12.5
    out = lines_of('pgbench_select_only', r)
    assert out[-2:] == ['initial connection time = 12.500 ms', out[-1]]
    assert out[-1].startswith('tps = ')


def test_the_per_statement_table_has_pgbenchs_columns():
    r = load('pgbench_per_statement')
    (p,) = r['phases']
    out = lines_of('pgbench_per_statement')
    assert out[:9] == ['transaction type: <builtin: simple update>', 'scaling factor: 2',
                       'query mode: prepared', 'number of clients: 2',
                       'number of threads: 1', 'maximum number of tries: 1',
                       'number of transactions per client: 50',
                       'number of transactions actually processed: 100/100',
                       'number of failed transactions: 0 (0.000%)']
    at = out.index('statement latencies in milliseconds and failures:')
    assert out[at - 1].startswith('tps = ')
    rows = p['script']['statements']
    assert len(out) == at + 1 + len(rows)
    for line, row in zip(out[at + 1:], rows):
        # latency in 14 columns (3 decimals), failures in 12, two spaces, the command
        assert line == '%14.3f%12d  %s' % (row['latency_us']['mean'] / 1000.0,
                                           row['failures'], row['command'])
    assert out[at + 1].endswith('  \\set aid random(1, 100000 * :scale)')


# The lines of pgbench 15's summary, in its order, as its own run with these flags
# printed them (-c 4 -j 2 -t 100 -b tpcb@3 -f FILE@1 -r --max-tries 2 -R -L
# --failures-detailed -P 1), less the two gloaddriver cannot give from this result:
# "rate limit schedule lag" (no maximum kept) and "initial connection time" (no
# connect_ms in the manifest).
MIX_ORDER = [
    'transaction type: multiple scripts', 'scaling factor: ', 'query mode: ',
    'number of clients: ', 'number of threads: ', 'maximum number of tries: ',
    'number of transactions per client: ', 'number of transactions actually processed: ',
    'number of failed transactions: ', 'number of serialization failures: ',
    'number of deadlock failures: ', 'number of transactions retried: ',
    'total number of retries: ', 'number of transactions skipped: ',
    'number of transactions above the 2.0 ms latency limit: ', 'latency average = ',
    'latency stddev = ', 'tps = ',
    'SQL script 1: /tmp/pgb/two_selects.sql', ' - weight: 1 (targets 25.0% of total)',
    ' - ', ' - number of failed transactions: ', ' - latency average = ',
    ' - latency stddev = ', ' - statement latencies in milliseconds, failures and retries:',
]


def test_several_scripts_with_retries_rate_and_limit_in_pgbenchs_order():
    r = load('pgbench_mix')
    (p,) = r['phases']
    s = p['script']
    out = lines_of('pgbench_mix')
    for line, prefix in zip(out, MIX_ORDER):
        assert line.startswith(prefix), (line, prefix)
    text = '\n'.join(out)
    ok, failed, skipped = p['ok'], p['failed'] + p['timed_out'], p['rate']['dropped']
    total = float(ok + failed + skipped)
    assert 'number of threads: 2\n' in text
    assert 'number of transactions actually processed: %d/400\n' % ok in text
    assert 'number of failed transactions: %d (%.3f%%)' % (failed, 100 * failed / total) in text
    assert 'number of serialization failures: %d (' % s['failures']['serialization'] in text
    assert 'number of transactions retried: %d (%.3f%%)' % (s['retried'],
                                                            100 * s['retried'] / total) in text
    assert 'total number of retries: %d\n' % s['retries'] in text
    assert 'number of transactions skipped: %d (%.3f%%)' % (skipped, 100 * skipped / total) in text
    # two scripts, files first: the weights 1 and 3 as given
    assert re.findall(r'^SQL script (\d): (.*)$', text, re.M) == [
        ('1', '/tmp/pgb/two_selects.sql'), ('2', '<builtin: TPC-B (sort of)>')]
    assert ' - weight: 3 (targets 75.0% of total)' in out
    for name in ('two_selects', 'tpcb-like'):
        o = p['ops'][name]
        assert ' - %d transactions (%.1f%% of total, tps = %f)' % (
            o['ok'], 100.0 * o['ok'] / ok, o['ok'] / p['seconds']) in out
    # each script's statements under it, with failures and retries (max tries 2)
    rows = re.findall(r'^ +([\d.]+) +(\d+) +(\d+)  (.+)$', text, re.M)
    assert [r[3] for r in rows] == [st['command'] for st in s['statements']]
    assert sum(int(r[1]) for r in rows) == s['failures']['serialization'] > 0
    assert sum(int(r[2]) for r in rows) == s['retries'] > 0


def test_stddev_and_late_count_from_the_histogram():
    r = load('pgbench_mix')
    (p,) = r['phases']
    hist = stats.decode_histogram(p['histogram'])
    mean = p['latency_sum_us'] / float(p['ok'])
    # an independent walk: every recorded value at its slot's middle
    values = []
    for i in range(hist.counts_len):
        c = hist.get_count_at_index(i)
        if c:
            v = hist.get_value_from_index(i)
            values.append(((hist.get_lowest_equivalent_value(v) +
                            hist.get_highest_equivalent_value(v)) / 2.0, c))
    dev = math.sqrt(sum(c * (v - mean) ** 2 for v, c in values) / hist.get_total_count())
    assert abs(summary.stddev_us(p) - dev) < 1e-6 * dev
    over = sum(c for v, c in values if v > 2000)
    assert abs(summary.late_count(p, 2.0) - over) <= sum(
        c for v, c in values if abs(v - 2000) < 2)     # slots astride the limit
    assert 'latency stddev = %.3f ms' % (dev / 1000) in lines_of('pgbench_mix')
    if sys.version_info[0] > 2:    # hdrh's own (its mean from the slots), close
        assert abs(hist.get_stddev() - dev) < 0.02 * dev


def test_a_plain_run_summarised_from_its_manifest():
    r = load('pgbench_mix')
    s = summary.settings_of(r)
    assert (s.clients, s.threads, s.transactions, s.duration) == (4, 2, 100, None)
    assert (s.rate, s.latency_limit, s.detailed) == (True, 2.0, True)
    assert [(x.name, x.label) for x in s.scripts] == [
        ('tpcb-like', '<builtin: TPC-B (sort of)>'), ('two_selects', 'two_selects')]
    out = summary.lines(r)
    assert out[0] == 'transaction type: multiple scripts' and 'SQL script 2: two_selects' in out
    s = summary.settings_of(load('pgbench_select_only'))
    assert (s.clients, s.threads, s.transactions, s.duration, s.detailed) == (4, 1, None, 2,
                                                                            False)


def test_what_is_not_there_is_left_out():
    assert summary.lines({'manifest': {}, 'phases': []}) == []
    r = load('pgbench_mix')
    p = r['phases'][0]
    for name in p['ops']:      # a script that never succeeded: NaN%, no latency
        p['ops'][name].update(ok=0, failed=0, timed_out=0)
    del p['histogram']
    out = lines_of('pgbench_mix', r)
    assert ' - number of failed transactions: 0 (NaN%)' in out
    assert not [l for l in out if l.startswith((' - latency', 'latency stddev',
                                                'number of transactions above'))]
