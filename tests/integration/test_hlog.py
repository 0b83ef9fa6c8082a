"""--hlog PREFIX: the interval logs read back by HdrHistogram's own Python reader
(hdrh.log.HistogramLogReader), interval by interval and op by op, against the JSON
written by the same run: counts equal, percentiles within the histogram's precision."""
from __future__ import absolute_import, division, print_function

import io
import os
import shutil
import sys
import tempfile

import pytest
from hdrh import log
from hdrh.histogram import HdrHistogram

from tests.integration.conftest import assert_accounted, run_cli

PERCENTILES = (('p50', 50.0), ('p90', 90.0), ('p99', 99.0), ('p999', 99.9))


@pytest.fixture
def folder():
    path = tempfile.mkdtemp(prefix='hlog-')
    yield path
    shutil.rmtree(path)


def read_log(path):
    """[(tag, histogram)] of every interval line, as HdrHistogram's reader gives them,
    and the log's StartTime."""
    if sys.version_info[0] == 2:
        # hdrh's reader opens its file with open(name, 'r', encoding=...), which 2.7's
        # built-in open does not take: give its module io.open, the same call on 3.x.
        log.open = io.open
    reader = log.HistogramLogReader(path, HdrHistogram(1, 3600 * 1000 * 1000, 3))
    out = []
    try:
        while True:
            hist = reader.get_next_interval_histogram()
            if hist is None:
                return out, reader.get_start_time_sec()
            out.append((hist.get_tag(), hist))
    finally:
        reader.close()


def close_enough(ours, theirs):
    """Equal within 3 significant digits (the histogram's precision), 1 us at least."""
    return abs(ours - theirs) <= max(1, 0.001 * max(ours, theirs)), (ours, theirs)


def check_latencies(block, hist):
    assert block['max'] is not None
    for key, pct in PERCENTILES:
        ok, why = close_enough(block[key], hist.get_value_at_percentile(pct))
        assert ok, (key, why)
    ok, why = close_enough(block['max'], hist.get_max_value())
    assert ok, ('max', why)


def check_phase(prefix, phase):
    """One phase's log against its JSON: each row's untagged interval, each op's tagged
    one, and all the intervals added up against the phase's percentiles."""
    intervals, start = read_log('%s.%s.hlog' % (prefix, phase['name']))
    assert abs(start - phase['started_unix']) < 0.01
    rows = [r for r in phase['timeline'] if r['ok']]
    whole = [h for tag, h in intervals if tag is None]
    assert len(whole) == len(rows), (len(whole), len(rows))
    total = HdrHistogram(1, 3600 * 1000 * 1000, 3)
    for row, hist in zip(rows, whole):
        assert hist.get_total_count() == row['ok']
        # the interval's start and end, in seconds from the log's StartTime
        assert abs(hist.get_end_time_stamp() / 1000.0 - start - row['t']) < 0.002
        check_latencies(row['latency_us'], hist)
        total.add(hist)
    check_latencies(phase['latency_us'], total)
    assert total.get_total_count() == phase['ok']
    # A phase of one op (the load before a mix is one of inserts) tags it by the op's name.
    tags = set(tag for tag, _h in intervals if tag is not None)
    if 'ops' in phase:
        assert tags == set(phase['ops'])
        ops = phase['ops']
    else:
        assert len(tags) == 1, tags
        ops = {tags.pop(): phase}
    for op, block in ops.items():
        tagged = HdrHistogram(1, 3600 * 1000 * 1000, 3)
        for tag, hist in intervals:
            if tag == op:
                tagged.add(hist)
        assert tagged.get_total_count() == block['ok'], op
        check_latencies(block['latency_us'], tagged)


def test_tarantool_phases_and_a_mix_read_back_by_hdrhistogram(folder):
    prefix = os.path.join(folder, 'run')
    for args in (['--phases', 'insert,select'], ['--mix', 'select=80,update=20']):
        rc, out, err, res = run_cli(['--spawn', '--ops', '0', '--duration', '2.5',
                                     '--greenlets', '20', '--hlog', prefix] + args)
        assert rc == 0, err
        assert_accounted(res)
        for phase in res['phases']:
            check_phase(prefix, phase)
    names = sorted(os.listdir(folder))
    assert names == ['run.insert.hlog', 'run.load.hlog', 'run.mix.hlog', 'run.select.hlog']


def test_postgres_open_loop_read_back_by_hdrhistogram(folder):
    """Under --rate a row's latency is from the intended start: so is the log's."""
    prefix = os.path.join(folder, 'pg')
    rc, out, err, res = run_cli(['--backend', 'postgres', '--spawn', '--phases',
                                 'insert,select', '--ops', '0', '--duration', '2.5',
                                 '--rate', '2000', '--greenlets', '8', '--hlog', prefix])
    assert rc == 0, err
    assert_accounted(res)
    for phase in res['phases']:
        check_phase(prefix, phase)


def test_a_round_run_again_gets_its_number(folder):
    prefix = os.path.join(folder, 'r')
    rc, out, err, res = run_cli(['--spawn', '--phases', 'select', '--ops', '3000',
                                 '--repeat', '2', '--hlog', prefix])
    assert rc == 0, err
    assert sorted(os.listdir(folder)) == ['r.select.2.hlog', 'r.select.hlog']
    for name, phase in zip(('r.select.hlog', 'r.select.2.hlog'), res['phases']):
        intervals, _start = read_log(os.path.join(folder, name))
        assert sum(h.get_total_count() for tag, h in intervals if tag is None) == phase['ok']


@pytest.mark.parametrize('args, words', [
    (['--hlog', '/nonexistent/folder/run'], '--hlog /nonexistent/folder/run.check.hlog: '
                                            'folder /nonexistent/folder does not exist'),
    (['--hlog', '/tmp', '--spawn'], '--hlog /tmp is a folder'),
    (['--hlog', 'x', '--processes', '2', '--spawn'], '--hlog does not go with --processes'),
])
def test_bad_hlog_is_one_line_before_the_run(args, words):
    rc, out, err, res = run_cli(args)
    assert rc == 2, err
    assert err.strip().count('\n') == 0 and words in err, err
