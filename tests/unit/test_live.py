"""Live metrics out (report.live, report.live_send), without a database server: the three
formats, the flags, the timeline's per-op and per-kind counts, the senders against real
sockets (a listener, a dead port, a collector that never reads), and whole runs of the
in-memory backend feeding a Graphite listener and scraped over HTTP while they run."""
from __future__ import absolute_import, division, print_function

import re
import time

import gevent
import pytest
from gevent import socket as gsocket
from gevent.pool import Pool
from gevent.server import DatagramServer, StreamServer

from gloaddriver import cli, errors
from gloaddriver import config as configuration
from gloaddriver.measure import stats, timeline
from gloaddriver.measure.timeline import Timeline
from gloaddriver.report import live, live_send
from tests import result_schema

T = 1700000000


def _latency(p50, p90, p99, p999, mx):
    return {'p50': p50, 'p90': p90, 'p99': p99, 'p999': p999, 'max': mx}


def _one_op_figures(shardless=True):
    row = {'t': 2.0, 'seconds': 0.5, 'attempted': 1000, 'ok': 990, 'errors': 10,
           'syscalls': 500, 'latency_us': _latency(100, 150, 300, 900, 1200), 'histogram': None,
           'errors_by_kind': {'timeout': 4, 'server:3': 6}}
    ops = [stats.OpStats('insert')]
    server = {'rps': {'insert': 2000.0, 'select': 0.0}, 'counts': {'insert': 1000},
              'arena_used': 12345, 'lsn': 77}
    return live.Totals().add(live.figures('insert', row, ops, server), ops)


# -- formats ---------------------------------------------------------------------


def test_graphite_lines_of_a_one_op_phase_with_its_server_figures():
    text = live.graphite_lines(_one_op_figures(), 'gloaddriver', T + 0.7)
    assert text.endswith('\n')
    head = 'gloaddriver.insert.'
    assert sorted(text.splitlines()) == sorted(head + l + ' %d' % T for l in [
        'client.insert.ops_per_sec 2000', 'client.insert.ok_per_sec 1980',
        'client.insert.errors_per_sec 20', 'client.insert.attempted 1000',
        'client.insert.ok 990', 'client.insert.errors 10',
        'client.insert.latency_us.p50 100', 'client.insert.latency_us.p90 150',
        'client.insert.latency_us.p99 300', 'client.insert.latency_us.p999 900',
        'client.insert.latency_us.max 1200', 'client.insert.syscalls_per_op 0.5',
        'client.insert.errors_by_kind.server_3 6', 'client.insert.errors_by_kind.timeout 4',
        'server.per_sec.insert 2000', 'server.per_sec.select 0', 'server.arena_used 12345',
        'server.lsn 77', 'server.sample_late 0', 'server.restarted 0'])


def test_statsd_lines_count_the_interval_and_gauge_the_rest_under_the_shard():
    lines = live.statsd_lines(_one_op_figures(), live.base_path('lt', (1, 2))).splitlines()
    assert 'lt.shard_1.insert.client.insert.attempted:1000|c' in lines
    assert 'lt.shard_1.insert.client.insert.errors_by_kind.server_3:6|c' in lines
    assert 'lt.shard_1.insert.client.insert.ops_per_sec:2000|g' in lines
    assert 'lt.shard_1.insert.client.insert.latency_us.p99:300|g' in lines
    assert 'lt.shard_1.insert.server.per_sec.insert:2000|g' in lines
    assert all(re.match(r'^lt\.shard_1\.insert\.[a-z0-9_.]+:[0-9.]+\|[cg]$', l) for l in lines)


def test_numbers_and_path_elements():
    assert [live.number(v) for v in (0, 12, 2 ** 40, 0.5, 1.0, 1234.56789, 0.0004, 0.00004,
                                     0.1 + 0.2, 123456789.5, True)] == \
        ['0', '12', '1099511627776', '0.5', '1', '1234.5679', '0.0004', '0', '0.3',
         '123456789.5', '1']
    assert live.element('server:3') == 'server_3'
    assert live.element('client:ValueError') == 'client_ValueError'
    assert live.element(u'bulk:row connect.x') == 'bulk_row_connect_x'


def _mix():
    """A mix's row as the timeline makes it, with its OpStats drained."""
    ops = [stats.OpStats('select'), stats.OpStats('update')]
    tl = Timeline(ops, _NoCounters(), 0.0, None)
    ops[0].attempted, ops[1].attempted = 30, 12
    ops[0].lat[100] += 29
    ops[0].failed['injected'] = 1
    ops[1].lat[400] += 10
    ops[1].timed_out = 2
    row = tl.close_interval(1.0, None)
    return row, ops


def test_a_mix_has_the_phase_as_all_and_each_op_with_its_own_latency():
    row, ops = _mix()
    counts = dict((op, dict((k, b[k]) for k in ('attempted', 'ok', 'errors')))
                  for op, b in row['by_op'].items())
    assert counts == {'select': {'attempted': 30, 'ok': 29, 'errors': 1},
                      'update': {'attempted': 12, 'ok': 10, 'errors': 2}}
    assert stats.decode_histogram(row['by_op']['update']['histogram']).get_max_value() == 400
    assert row['errors_by_kind'] == {'injected': 1, 'timeout': 2}
    fig = live.Totals().add(live.figures('mix', row, ops, None), ops)
    lines = dict(l.rsplit(' ', 2)[:2] for l in live.graphite_lines(fig, 'g', T).splitlines())
    assert lines['g.mix.client.all.attempted'] == '42'
    assert lines['g.mix.client.select.attempted'] == '30'
    assert lines['g.mix.client.update.errors'] == '2'
    assert lines['g.mix.client.select.latency_us.max'] == '100'
    assert lines['g.mix.client.update.latency_us.p50'] == '400'
    assert lines['g.mix.client.all.errors_by_kind.timeout'] == '2'
    assert not any(k.startswith('g.mix.server') for k in lines)   # no server figures here


class _NoCounters(object):
    def delta(self, a, b):
        return None


def parse_prometheus(text):
    """{(name, ((label, value), ...)): value} of a Prometheus or OpenMetrics text."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)', line)
        labels = tuple(sorted(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m.group(2) or '')))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def _prometheus_text(fig, shard=None):
    from prometheus_client import CollectorRegistry, generate_latest
    registry = CollectorRegistry(auto_describe=False)
    registry.register(live_send._Collector(lambda: live.prometheus_families(fig, 'gl.x', shard)))
    return generate_latest(registry).decode('utf-8')


def test_prometheus_text_gauges_the_interval_and_counts_the_phase():
    fig = _one_op_figures()
    m = parse_prometheus(_prometheus_text(fig, (1, 2)))
    lab = (('op', 'insert'), ('phase', 'insert'), ('shard', '1'))
    assert m[('gl_x_client_ops_per_second', lab)] == 2000.0
    assert m[('gl_x_client_errors_per_second', lab)] == 20.0
    assert m[('gl_x_client_latency_seconds', tuple(sorted(lab + (('quantile', '0.99'),))))] \
        == pytest.approx(300e-6)
    assert m[('gl_x_client_latency_seconds', tuple(sorted(lab + (('quantile', '1'),))))] \
        == pytest.approx(1200e-6)
    assert m[('gl_x_client_syscalls_per_op', lab)] == 0.5
    assert m[('gl_x_client_ops_total', lab)] == 1000.0
    assert m[('gl_x_client_errors_by_kind_total', tuple(sorted(lab + (('kind', 'server:3'),))))] \
        == 6.0
    ph = (('phase', 'insert'), ('shard', '1'))
    assert m[('gl_x_phase_elapsed_seconds', ph)] == 2.0
    assert m[('gl_x_interval_seconds', ph)] == 0.5
    assert m[('gl_x_server_per_second', tuple(sorted(ph + (('counter', 'insert'),))))] == 2000.0
    assert m[('gl_x_server_arena_used', ph)] == 12345.0
    assert m[('gl_x_server_sample_late', ph)] == 0.0


def test_totals_grow_over_a_phase_and_start_again_with_the_next():
    totals = live.Totals()
    row, ops = _mix()
    totals.add(live.figures('mix', row, ops, None), ops)
    fig = totals.add(live.figures('mix', dict(row, errors_by_kind={}), ops, None), ops)
    assert fig['blocks'][0]['total']['attempted'] == 84
    assert fig['blocks'][0]['errors_by_kind'] == {'injected': 0, 'timeout': 0}  # seen: 0 now
    assert fig['blocks'][0]['total']['errors_by_kind'] == {'injected': 1, 'timeout': 2}
    other = [stats.OpStats('select'), stats.OpStats('update')]
    fig = totals.add(live.figures('mix', row, other, None), other)
    assert fig['blocks'][0]['total']['attempted'] == 42


# -- the timeline's per-op and per-kind counts ------------------------------------


def test_per_op_and_per_kind_counts_add_up_through_compaction_and_merging(monkeypatch):
    import random
    monkeypatch.setattr(timeline, 'MAX_ROWS', 6)

    def run(seed):
        rng = random.Random(seed)
        ops = [stats.OpStats('select'), stats.OpStats('update')]
        tl = Timeline(ops, _NoCounters(), 0.0, None)
        for i in range(15):
            for st in ops:
                n = rng.randint(0, 20)
                st.attempted += n
                bad = rng.randint(0, min(3, n))
                for _k in range(bad):
                    st.error(errors.NetworkError('down') if rng.random() < 0.5 else
                             errors.RequestTimeout('slow'))
                st.lat[rng.randint(1, 900)] += n - bad
            tl.close_interval(0.5 * (i + 1), None)
        return tl.finish(7.6, None), ops

    rows, ops = run(1)
    for name in ('select', 'update'):
        st = [s for s in ops if s.name == name][0]
        assert sum(r['by_op'][name]['attempted'] for r in rows) == st.attempted
        assert sum(r['by_op'][name]['ok'] for r in rows) == st.ok
        assert sum(r['by_op'][name]['errors'] for r in rows) == st.failed_total + st.timed_out
    for r in rows:
        assert sum(o['attempted'] for o in r['by_op'].values()) == r['attempted']
        assert sum(r.get('errors_by_kind', {}).values()) == r['errors']
    kinds = stats.merge_counts(r.get('errors_by_kind', {}) for r in rows)
    assert kinds == {'network': sum(s.failed.get('network', 0) for s in ops),
                     'timeout': sum(s.timed_out for s in ops)}
    other, _ops = run(2)
    merged = timeline.merge_concurrent([rows, other])
    for name in ('select', 'update'):
        assert sum(r['by_op'][name]['attempted'] for r in merged) == \
            sum(r['by_op'][name]['attempted'] for r in rows + other)
    assert stats.merge_counts(r.get('errors_by_kind', {}) for r in merged) == \
        stats.merge_counts(r.get('errors_by_kind', {}) for r in rows + other)


def test_a_one_op_phase_keeps_its_rows_as_they_were():
    ops = [stats.OpStats('select')]
    tl = Timeline(ops, _NoCounters(), 0.0, None)
    ops[0].attempted = 5
    ops[0].lat[10] += 5
    row = tl.close_interval(1.0, None)
    assert 'by_op' not in row and 'errors_by_kind' not in row


# -- flags -----------------------------------------------------------------------


def parse(*argv):
    return configuration.parse(['--backend', 'memory'] + list(argv), environ={})


def test_flags_give_endpoints_and_a_prefix():
    assert parse().output.live is None
    c = parse('--graphite', 'carbon.example:2003', '--statsd', '127.0.0.1:8125',
              '--metrics-prefix', 'team.load-1').output.live
    E = configuration.Endpoint
    assert c.graphite == E('tcp', 'carbon.example', 2003)
    assert c.statsd == E('udp', '127.0.0.1', 8125)
    assert (c.prometheus, c.prefix) == (None, 'team.load-1')
    c = parse('--graphite', 'udp://[::1]:2003').output.live
    assert c.graphite == E('udp', '::1', 2003) and c.prefix == 'gloaddriver'
    port = _free_port()
    c = parse('--prometheus-port', str(port)).output.live
    assert c.prometheus == E('http', '', port)
    assert parse('--prometheus-port', '127.0.0.1:%d' % port).output.live.prometheus.host == \
        '127.0.0.1'


@pytest.mark.parametrize('argv,words', [
    (['--graphite', 'localhost'], '--graphite takes HOST:PORT, e.g. 127.0.0.1:2003'),
    (['--graphite', 'localhost:http'], 'takes HOST:PORT'),
    (['--graphite', '127.0.0.1:0'], 'port 0 is out of range (1-65535)'),
    (['--graphite', '127.0.0.1:70000'], 'port 70000 is out of range'),
    (['--graphite', 'http://127.0.0.1:2003'], 'sends over TCP (tcp://) or UDP (udp://)'),
    (['--statsd', 'tcp://127.0.0.1:8125'], '--statsd sends over UDP (udp://); got tcp://'),
    (['--statsd', ':8125'], '--statsd takes HOST:PORT'),
    (['--prometheus-port', 'x'], '--prometheus-port takes PORT or HOST:PORT'),
    (['--prometheus-port', '99999'], 'out of range'),
    (['--metrics-prefix', 'x'], '--metrics-prefix goes with --graphite'),
    (['--graphite', '127.0.0.1:2003', '--metrics-prefix', 'a..b'], 'dot-separated names'),
    (['--graphite', '127.0.0.1:2003', '--metrics-prefix', '1x'], 'starting with a letter'),
])
def test_bad_live_flags_are_one_line(argv, words):
    with pytest.raises(errors.ConfigError) as e:
        parse(*argv)
    assert words in str(e.value) and '\n' not in str(e.value)


def test_a_taken_prometheus_port_is_refused_before_the_run(capsys):
    taken = gsocket.socket()
    taken.bind(('127.0.0.1', 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        rc = cli.main(['--backend', 'memory', '--ops', '10', '--prometheus-port',
                       '127.0.0.1:%d' % port])
        err = capsys.readouterr().err
        # The value is good; the machine does not give the port: as --web, exit 3
        assert rc == errors.EXIT_SETUP == 3
        assert err.strip() == ('gloaddriver: --prometheus-port 127.0.0.1:%d: cannot '
                               'listen on port %d: Address already in use' % (port, port))
        # and were it taken between the check and the run, the run does not start
        with pytest.raises(errors.SetupError) as e:
            live_send.PrometheusEndpoint(configuration.Endpoint('http', '127.0.0.1', port),
                                         lambda: [])
        assert 'cannot listen on 127.0.0.1:%d: address already in use' % port in str(e.value)
    finally:
        taken.close()


# -- senders against real sockets ---------------------------------------------------


def _free_port(kind=gsocket.SOCK_STREAM):
    s = gsocket.socket(gsocket.AF_INET, kind)
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Collector(object):
    """A Graphite (TCP) or StatsD (UDP) collector on a free loopback port: the lines it got."""

    def __init__(self, udp=False):
        self.data = b''
        self.connections = 0
        if udp:
            self.server = DatagramServer(('127.0.0.1', 0), self._datagram)
        else:
            # a pool of its own: stop() ends the connections too, not only the listener
            self.server = StreamServer(('127.0.0.1', 0), self._stream, spawn=Pool(8))
        self.server.start()
        self.port = self.server.address[1]

    def _datagram(self, data, _addr):
        self.data += data if data.endswith(b'\n') else data + b'\n'

    def _stream(self, sock, _addr):
        self.connections += 1
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                self.data += chunk
        finally:   # a stopped collector closes its connections, as a dead one's kernel does
            sock.close()

    def lines(self):
        return self.data.decode('utf-8').splitlines()

    def stop(self):
        self.server.stop(timeout=0.1)


def _wait_for(cond, limit=3.0):
    deadline = time.time() + limit
    while not cond() and time.time() < deadline:
        gevent.sleep(0.01)
    return cond()


def _endpoint(proto, port):
    return configuration.Endpoint(proto, '127.0.0.1', port)


@pytest.mark.parametrize('proto', ['tcp', 'udp'])
def test_a_sender_delivers_every_payload_to_a_live_collector(proto):
    c = Collector(udp=proto == 'udp')
    try:
        s = live_send.Sender('graphite', _endpoint(proto, c.port))
        for i in range(5):
            # long enough for UDP to split it into several datagrams
            s.put(''.join('a.b.c%d.m%d %d %d\n' % (i, k, k, T) for k in range(100))
                  .encode('ascii'))
        assert _wait_for(lambda: len(c.lines()) == 500)
        assert s.close() is None and (s.offered, s.sent, s.dropped) == (5, 5, {})
        assert c.lines()[0] == 'a.b.c0.m0 0 %d' % T
    finally:
        c.stop()


def test_a_dead_collector_costs_a_counted_drop_and_never_a_wait(monkeypatch):
    monkeypatch.setattr(live_send, 'RETRY_FIRST', 0.05)
    s = live_send.Sender('graphite', _endpoint('tcp', _free_port()))
    slowest = 0.0
    for _i in range(6):
        t0 = time.time()
        s.put(b'x 1 %d\n' % T)
        slowest = max(slowest, time.time() - t0)
        gevent.sleep(0.03)
    assert slowest < 0.005
    note = s.close()
    assert note == 'graphite tcp://127.0.0.1:%d: 6 of 6 sends dropped (connection refused)' \
        % s.endpoint.port
    # reconnects are rate-limited: 6 payloads in ~0.2 s, but far fewer connects
    assert s._backoff > live_send.RETRY_FIRST


def test_a_dead_statsd_is_counted_too():
    s = live_send.Sender('statsd', _endpoint('udp', _free_port(gsocket.SOCK_DGRAM)))
    for _i in range(4):
        s.put(b'a:1|c\n' * 400)   # several datagrams: the kernel's refusal shows on the next
        gevent.sleep(0.02)
    note = s.close()
    assert note is not None and 'sends dropped (connection refused)' in note, note


def test_a_collector_that_never_reads_costs_drops_not_time(monkeypatch):
    monkeypatch.setattr(live_send, 'SEND_TIMEOUT', 0.2)
    monkeypatch.setattr(live_send, 'FLUSH_WAIT', 0.3)
    stalled = []
    server = StreamServer(('127.0.0.1', 0), lambda sock, addr: stalled.append(sock) or
                          gevent.sleep(10))
    server.start()
    try:
        s = live_send.Sender('graphite', _endpoint('tcp', server.address[1]))
        big = b'x' * (4 << 20)   # more than the socket buffers hold
        slowest = 0.0
        for _i in range(live_send.QUEUE + 4):
            t0 = time.time()
            s.put(big)
            slowest = max(slowest, time.time() - t0)
        assert slowest < 0.05
        gevent.sleep(0.5)
        note = s.close()
        assert s.offered == live_send.QUEUE + 4 and s.sent + sum(s.dropped.values()) == s.offered
        assert 'timed out' in note and 'queue full: the collector reads too slowly' in note, note
    finally:
        server.stop(timeout=0.1)


def test_a_connect_that_hangs_holds_up_only_the_sender(monkeypatch):
    """A listener whose backlog is full drops the SYNs: connect() hangs until its timeout."""
    monkeypatch.setattr(live_send, 'CONNECT_TIMEOUT', 0.3)
    full = gsocket.socket()
    full.bind(('127.0.0.1', 0))
    full.listen(0)
    fillers = []
    try:
        for _i in range(3):   # fill the accept queue; later connects get no answer
            f = gsocket.socket()
            f.setblocking(False)
            try:
                f.connect(full.getsockname())
            except gsocket.error:
                pass
            fillers.append(f)
        s = live_send.Sender('graphite', _endpoint('tcp', full.getsockname()[1]))
        t0 = time.time()
        s.put(b'x 1 1\n')
        gevent.sleep(0)          # the sender starts its connect
        s.put(b'x 1 2\n')
        assert time.time() - t0 < 0.05
        gevent.sleep(0.5)
        note = s.close()
        assert note is not None and ('timed out' in note or 'refused' in note), note
    finally:
        for f in fillers:
            f.close()
        full.close()


def test_a_collector_that_comes_back_gets_the_later_payloads(monkeypatch):
    monkeypatch.setattr(live_send, 'RETRY_FIRST', 0.05)
    c = Collector()
    port = c.port
    s = live_send.Sender('graphite', _endpoint('tcp', port))
    s.put(b'a 1 1\n')
    assert _wait_for(lambda: c.lines() == ['a 1 1'])
    c.stop()
    gevent.sleep(0.05)
    for i in range(3):   # the first sends after the restart may land in the old socket
        s.put(b'b %d 1\n' % i)
        gevent.sleep(0.05)
    c2 = Collector.__new__(Collector)
    c2.data, c2.connections = b'', 0
    c2.server = StreamServer(('127.0.0.1', port), c2._stream, spawn=Pool(8))
    c2.server.start()
    try:
        gevent.sleep(0.3)    # past the back-off
        s.put(b'c 1 1\n')
        assert _wait_for(lambda: 'c 1 1' in c2.lines())
        s.close()
        assert sum(s.dropped.values()) >= 1 and s.sent >= 2
    finally:
        c2.stop()


# -- whole runs -----------------------------------------------------------------------


def http_get(port, path='/metrics', accept=None):
    """(status line, headers text, body) of one HTTP/1.0 GET on loopback, cooperatively."""
    sock = gsocket.create_connection(('127.0.0.1', port), timeout=2)
    try:
        head = 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n' % path
        if accept:
            head += 'Accept: %s\r\n' % accept
        sock.sendall((head + '\r\n').encode('ascii'))
        data = b''
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    head, body = data.split(b'\r\n\r\n', 1)
    status, headers = head.decode('latin-1').split('\r\n', 1)
    return status, headers, body.decode('utf-8')


def graphite_series(lines, prefix):
    """{path under prefix: [values in the order sent]}."""
    out = {}
    for l in lines:
        path, value, _ts = l.split(' ')
        assert path.startswith(prefix + '.'), l
        out.setdefault(path[len(prefix) + 1:], []).append(float(value))
    return out


def test_a_run_feeds_graphite_and_prometheus_the_rows_of_its_timeline(tmpdir, capsys):
    graphite = Collector()
    port = _free_port()
    scrapes = []

    def scraper():
        # two scrapes, ~0.4 s apart while the mix phase runs
        while len(scrapes) < 2:
            gevent.sleep(0.05 if not scrapes else 0.4)
            try:
                got = http_get(port)
            except gsocket.error:   # not listening yet
                continue
            if 'phase="mix"' in got[2]:
                scrapes.append(got)
    out = str(tmpdir.join('r.json'))
    s = gevent.spawn(scraper)
    try:
        rc = cli.main(['--backend', 'memory', '--greenlets', '4', '--op-sleep', '0.001',
                       '--load', '--keys', '1200', '--mix', 'select=3,update=1', '--ops', '0',
                       '--duration', '1.3', '--fail-every', '25', '--progress', '0',
                       '--interval', '0.2', '--json', out,
                       '--graphite', '127.0.0.1:%d' % graphite.port,
                       '--prometheus-port', '127.0.0.1:%d' % port, '--metrics-prefix', 'lt'])
    finally:
        s.kill()
        graphite.stop()
    assert rc == 1   # the injected failures
    with open(out) as f:
        res = result_schema.read(f)
    load, mix = res['phases']
    series = graphite_series(graphite.lines(), 'lt')
    for p in (load, mix):
        op = 'insert' if p['name'] == 'load' else 'all'
        rows = p['timeline']
        sent = series.get('%s.client.%s.attempted' % (p['name'], op), [])
        # every interval the ticker closed went out, but for the last ones: the ticker is
        # stopped as the phase ends, maybe between closing a row and sending it, and the
        # last, partial interval is in the JSON only
        assert len(rows) - 2 <= len(sent) <= len(rows)
        for key in ('attempted', 'ok', 'errors', 'ops_per_sec'):
            assert series.get('%s.client.%s.%s' % (p['name'], op, key), []) == \
                [r[key] for r in rows[:len(sent)]], key
        assert series.get('%s.client.%s.latency_us.p99' % (p['name'], op), []) == \
            [r['latency_us']['p99'] for r in rows[:len(sent)] if r['ok']]
    assert len(mix['timeline']) >= 5
    sent = len(series['mix.client.all.attempted'])
    for op in ('select', 'update'):
        assert series['mix.client.%s.attempted' % op] == \
            [r['by_op'][op]['attempted'] for r in mix['timeline'][:sent]]
    assert series['mix.client.all.errors_by_kind.injected'] == \
        [r.get('errors_by_kind', {}).get('injected', 0) for r in mix['timeline'][:sent]]
    assert sum(series['mix.client.all.errors_by_kind.injected']) > 0
    # the scrapes: each shows one row of the mix's timeline, and they saw two of them
    assert len(scrapes) == 2
    seen = []
    for status, headers, body in scrapes:
        assert status.endswith('200 OK') and 'text/plain' in headers
        m = parse_prometheus(body)
        t = m[('lt_phase_elapsed_seconds', (('phase', 'mix'),))]
        (row,) = [r for r in mix['timeline'] if r['t'] == t]
        lab = (('op', 'all'), ('phase', 'mix'))
        assert m[('lt_client_ops_per_second', lab)] == row['ops_per_sec']
        p99 = m.get(('lt_client_latency_seconds', lab + (('quantile', '0.99'),)))
        if row['ok']:
            assert p99 * 1e6 == pytest.approx(row['latency_us']['p99'])
        else:   # a stalled interval (a loaded machine): no op ended well, no latency
            assert p99 is None, p99
        upto = [r for r in mix['timeline'] if r['t'] <= t]
        assert m[('lt_client_ops_total', lab)] == sum(r['attempted'] for r in upto)
        assert m[('lt_client_ops_total', (('op', 'update'), ('phase', 'mix')))] == \
            sum(r['by_op']['update']['attempted'] for r in upto)
        seen.append(t)
    assert seen[0] < seen[1]
    assert 'dropped' not in capsys.readouterr().err


def test_the_endpoint_speaks_openmetrics_when_asked(tmpdir):
    port = _free_port()
    got = []

    def scraper():
        gevent.sleep(0.45)
        got.append(http_get(port, accept='application/openmetrics-text; version=1.0.0'))
    g = gevent.spawn(scraper)
    rc = cli.main(['--backend', 'memory', '--op-sleep', '0.001', '--phases', 'insert',
                   '--ops', '0', '--duration', '0.7', '--progress', '0', '--interval', '0.2',
                   '--prometheus-port', '127.0.0.1:%d' % port])
    g.join(1)
    assert rc == 0
    (status, headers, body), = got
    assert 'application/openmetrics-text' in headers and body.rstrip().endswith('# EOF')
    assert 'gloaddriver_client_ops_total{' in body and \
        '# TYPE gloaddriver_client_ops counter' in body


def test_a_run_with_dead_collectors_completes_and_says_what_was_dropped(tmpdir, capsys):
    gport, sport = _free_port(), _free_port(gsocket.SOCK_DGRAM)
    out = str(tmpdir.join('r.json'))
    t0 = time.time()
    rc = cli.main(['--backend', 'memory', '--op-sleep', '0.001', '--phases', 'insert,select',
                   '--ops', '0', '--duration', '0.5', '--progress', '0', '--interval', '0.1',
                   '--json', out, '--graphite', '127.0.0.1:%d' % gport,
                   '--statsd', '127.0.0.1:%d' % sport])
    took = time.time() - t0
    assert rc == 0 and took < 2.5
    with open(out) as f:
        res = result_schema.read(f)
    ticked = sum(len(p['timeline']) for p in res['phases'])
    err = capsys.readouterr().err
    m = re.search(r'note: graphite tcp://127\.0\.0\.1:%d: (\d+) of (\d+) sends dropped '
                  r'\(connection refused\)' % gport, err)
    assert m and m.group(1) == m.group(2) and ticked - 4 <= int(m.group(2)) <= ticked, err
    # a TCP collector that is down is said at the start too, not only at the end
    assert err.startswith('gloaddriver: note: graphite tcp://127.0.0.1:%d: connection refused; '
                          'the run goes on, and what cannot be sent is counted\n' % gport), err
    assert re.search(r'note: statsd udp://127\.0\.0\.1:%d: \d+ of \d+ sends dropped '
                     r'\(connection refused\)' % sport, err), err
    assert 'Traceback' not in err
    # and the JSON keeps what was dropped
    assert len(res['live']) == 2 and all('sends dropped' in n for n in res['live']), res['live']
