"""The timeline (rows add up, compaction, merging) and the HTML page, without a server."""
from __future__ import absolute_import, division, print_function

import random

import gevent

from gloaddriver.measure import stats, timeline
from gloaddriver.report import dashboard, html as html_report
from gloaddriver.measure.timeline import Timeline


class _NoCounters(object):
    def delta(self, a, b):
        return None


class _Counter(object):
    """Stands in for SyscallCounter: a total that grows by what the test says."""

    def delta(self, a, b):
        return {'total': b - a}


def _tick_run(ticks, seed, counter=None):
    """Feed a timeline ``ticks`` intervals of random ops; return (rows, ops)."""
    rng = random.Random(seed)
    ops = [stats.OpStats('select'), stats.OpStats('update')]
    tl = Timeline(ops, counter or _NoCounters(), 100.0, 0)
    now, sys_total = 100.0, 0
    for _i in range(ticks):
        for st in ops:
            n = rng.randint(0, 50)
            st.attempted += n
            bad = rng.randint(0, min(2, n))
            st.timed_out += bad
            for _k in range(n - bad):
                st.lat[int(rng.lognormvariate(6, 1))] += 1
        sys_total += rng.randint(0, 30)
        now += 0.5
        tl.close_interval(now, sys_total)
    now += 0.2
    st = ops[0]
    st.attempted += 1
    st.lat[77] += 1
    rows = tl.finish(now, sys_total + 3)
    return rows, ops


def test_rows_add_up_to_the_phase():
    rows, ops = _tick_run(20, 1, _Counter())
    assert len(rows) == 21
    assert sum(r['attempted'] for r in rows) == sum(st.attempted for st in ops)
    assert sum(r['ok'] for r in rows) == sum(st.ok for st in ops)
    assert sum(r['errors'] for r in rows) == sum(st.timed_out for st in ops)
    assert abs(sum(r['seconds'] for r in rows) - 10.2) < 1e-6
    assert rows[-1]['t'] == 10.2 and rows[-1]['attempted'] == 1
    assert rows[-1]['latency_us']['max'] == 77
    for r in rows:
        assert r['ops_per_sec'] == round(r['attempted'] / r['seconds'], 1)
        if r['ok']:
            assert stats.decode_histogram(r['histogram']).get_total_count() == r['ok']


def test_a_long_run_halves_its_resolution_and_loses_nothing(monkeypatch):
    monkeypatch.setattr(timeline, 'MAX_ROWS', 8)
    rows, ops = _tick_run(37, 2, _Counter())
    assert len(rows) <= 8
    assert sum(r['attempted'] for r in rows) == sum(st.attempted for st in ops)
    assert sum(r['ok'] for r in rows) == sum(st.ok for st in ops)
    assert abs(sum(r['seconds'] for r in rows) - (37 * 0.5 + 0.2)) < 1e-6
    # the rows' histograms add up to the phase's, value for value
    total = stats.new_histogram()
    for r in rows:
        if r['histogram']:
            total.add(stats.decode_histogram(r['histogram']))
    phase = stats.new_histogram()
    for st in ops:
        phase.add(st.hist)
    assert total.get_total_count() == phase.get_total_count()
    for pct in (50, 99, 99.9, 100):
        assert total.get_value_at_percentile(pct) == phase.get_value_at_percentile(pct)
    # 37 ticks in at most 8 rows: 8 ticks a row, all equal but the last
    spans = [r['seconds'] for r in rows[:-1]]
    assert max(spans) - min(spans) < 1e-6 and spans[0] == 8 * 0.5


def test_a_compaction_cut_short_as_the_phase_ends_loses_nothing(monkeypatch):
    """The ticker's compaction yields between rows, and the phase's end kills the ticker
    there: the last row then comes onto an odd count of rows."""
    monkeypatch.setattr(timeline, 'MAX_ROWS', 8)
    st = stats.OpStats('select')
    tl = Timeline([st], _NoCounters(), 0.0, 0)

    def tick(now):
        st.attempted += 3
        st.lat[100] += 3
        return tl.close_interval(now, None)
    for i in range(7):
        tick(i + 1.0)
    ticker = gevent.spawn(tick, 8.0)   # its row starts a compaction...
    gevent.sleep(0)
    ticker.kill()                      # ...killed at the compaction's first yield
    st.attempted += 1
    st.lat[200] += 1
    rows = tl.finish(8.5, None)
    assert len(rows) == 5
    assert sum(r['attempted'] for r in rows) == st.attempted == 25
    assert sum(r['ok'] for r in rows) == 25 and rows[-1]['latency_us']['max'] == 200
    assert abs(sum(r['seconds'] for r in rows) - 8.5) < 1e-6


def test_concurrent_timelines_add_row_by_row():
    a, _ = _tick_run(5, 3, _Counter())
    b, _ = _tick_run(4, 4, _Counter())
    m = timeline.merge_concurrent([a, b])
    assert len(m) == 6
    assert len(a) == 6 and len(b) == 5
    assert [r['attempted'] for r in m] == [x['attempted'] + y['attempted']
                                           for x, y in zip(a, b)] + [a[5]['attempted']]
    assert m[0]['syscalls'] == a[0]['syscalls'] + b[0]['syscalls']
    assert m[0]['ops_per_sec'] == round(m[0]['attempted'] / 0.5, 1)


def test_ops_in_flight_and_each_ops_latency_over_time_merge_exactly(monkeypatch):
    monkeypatch.setattr(timeline, 'MAX_ROWS', 8)
    ops = [stats.OpStats('select'), stats.OpStats('update')]
    tl = Timeline(ops, _NoCounters(), 0.0, 0)
    ops[0].attempted += 5          # 5 begun, 3 done: 2 in flight at the row's end
    for v in (10, 20, 30):
        ops[0].lat[v] += 1
    ops[1].attempted += 1          # 1 begun, failed: none in flight
    ops[1].timed_out += 1
    row = tl.close_interval(1.0, None)
    assert row['in_flight'] == 2
    assert stats.decode_histogram(row['by_op']['select']['histogram']).get_max_value() == 30
    assert dashboard.view_row(row)['by_op']['select']['latency_us'] == {'p50': 20, 'p99': 30}
    assert row['by_op']['update']['histogram'] is None
    rows, ops = _tick_run(37, 6)
    assert len(rows) <= 8
    for st in ops:   # an op's rows, joined by the compactions, hold all its latencies
        total = stats.new_histogram()
        for r in rows:
            enc = r['by_op'].get(st.name, {}).get('histogram')
            if enc:
                total.add(stats.decode_histogram(enc))
        assert total.get_total_count() == st.hist.get_total_count()
        assert total.get_max_value() == st.hist.get_max_value()
    assert all(r['in_flight'] == 0 for r in rows)   # every op begun there also ended


def _result():
    rows, ops = _tick_run(6, 5, _Counter())
    phase = {'name': 'mix', 'attempted': 10, 'ok': 9, 'failed': 1, 'timed_out': 0,
             'errors': {'server:ER_NO_SUCH_SPACE': 1},
             'error_samples': {'server:ER_NO_SUCH_SPACE': 'Space <script>x</script> missing'},
             'misses': 0, 'seconds': 3.2, 'ops_per_sec': 3.1, 'ok_per_sec': 2.8,
             'latency_us': {'p50': 1, 'p90': 2, 'p99': 3, 'p999': 4, 'max': 5, 'mean': 1.0},
             'cpu_us_per_op': 1.0, 'batching': {},
             'syscalls': {'per_op': 1.5, 'network_per_op': 1.0, 'source': 'perf_event',
                          'by_name': {'sendto': 0.5, 'recvfrom': 1.0}},
             'timeline': rows, 'ops': {}}
    for st in ops:
        phase['ops'][st.name] = {'histogram': st.hist.encode().decode('ascii')}
    return {'manifest': {'gloaddriver': '0', 'backend': 'tarantool', 'connector_detail': 'x',
                         'interpreter': 'CPython', 'dependencies': {}, 'msgpack_c_extension': True,
                         'server': {'address': 'a', 'version': '2'}, 'argv': ['--x'],
                         'syscall_source': 'perf_event'},
            'phases': [phase], 'aborted': None}


def test_page_embeds_its_view_and_escapes_what_it_shows():
    result = _result()
    for sub in result['phases'][0]['ops'].values():
        sub.update(dict((k, result['phases'][0][k]) for k in (
            'attempted', 'ok', 'failed', 'timed_out', 'ops_per_sec', 'latency_us')))
    page = html_report.render(result)
    view = dashboard.view(result)
    (phase,) = view['phases']
    assert len(phase['rows']) == len(result['phases'][0]['timeline'])
    assert 'histogram' not in phase['rows'][0]
    assert [s['label'] for s in phase['spectra']['series']] == ['select', 'update']
    assert phase['syscalls'] == [['recvfrom', 1.0], ['sendto', 0.5]]
    # one data block and two scripts, each allowed by its hash and nothing else
    assert page.count('<script') == 3 and page.count('</script>') == 3
    assert "Space \\u003cscript>x\\u003c/script> missing" in page
    assert "default-src 'none'" in page and page.count("'sha256-") == 2
    assert 'connect-src' not in page and 'connect-src' in html_report.page(view, live=True)
    assert view['verdict']['code'] == 1 and 'failed or timed out' in view['verdict']['why']


def test_verdict_names_outages_faults_verify_warnings_and_errors():
    result = _result()
    phase = result['phases'][0]
    phase['ops'] = {}
    phase['outages'] = [{'start': 0.5, 'end': 1.5, 'duration': 1.0, 'open': False, 'failed': 3,
                         'timed_out': 0, 'reconnects': 1, 'recovery': 0.02,
                         'first_error': 'network: lost'}]
    phase['faults'] = [{'action': 'kill', 't': 0.5, 'took': 0.0}]
    phase['warnings'] = [{'kind': 'client_cpu', 'phase': 'mix', 'value': 97.0, 'limit': 90.0,
                          'message': 'the client used 97% of a core'}]
    result['verify'] = {'checked': 4, 'intact': 3, 'acknowledged_lost': 1,
                        'unacknowledged_applied': 0, 'corrupt': 0, 'unexpected': 0,
                        'examples': {'acknowledged_lost': [7]}}
    view = dashboard.view(result)
    (p,) = view['phases']
    assert p['bands'] == [{'start': 0.5, 'end': 1.5, 'label': 'outage 1.00 s'}]
    assert p['marks'] == [{'t': 0.5, 'label': 'kill at 0.50 s', 'kind': 'fault'}]
    v = view['verdict']
    assert v['code'] == 1 and v['why'] == '1 acknowledged writes were lost (--verify)'
    items = dict((i['t'], i['level']) for i in v['items'])
    assert items['verify: ACKNOWLEDGED WRITES LOST, e.g. keys 7'] == 'bad'
    assert items['mix: errors by kind: server:ER_NO_SUCH_SPACE 1'] == 'bad'
    assert items['warning (mix): the client used 97% of a core'] == 'warn'
    assert any(t.startswith('mix: OUTAGE 0.50-1.50 s (1.00 s)') for t in items)
    # an old file: no p95, no warnings, no in_flight, no per-op latency still makes a page
    assert html_report.render(result)
