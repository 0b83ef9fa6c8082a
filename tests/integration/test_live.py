"""Live metrics out of real runs against a real Tarantool (``python -m gloaddriver`` as a
user runs it): a Graphite listener and a StatsD listener of the test's own, the Prometheus
endpoint scraped over HTTP while the run goes, and what each saw checked against the run's
JSON timeline, client and server figures alike; --processes pushes per shard and serves an
endpoint per process."""
from __future__ import absolute_import, division, print_function

import random
import re
import socket
import threading
import time

try:
    from urllib.request import urlopen
except ImportError:  # pragma: no cover - Python 2
    from urllib2 import urlopen

from tests.integration.conftest import assert_accounted, run_cli
from tests.unit.test_live import graphite_series, parse_prometheus


class Listener(object):
    """A Graphite (TCP) or StatsD (UDP) collector on a free loopback port, in a thread."""

    def __init__(self, udp=False):
        self.data = b''
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
        self.sock.bind(('127.0.0.1', 0))
        self.port = self.sock.getsockname()[1]
        self.sock.settimeout(0.2)
        self.stopped = False
        self.readers = []
        if not udp:
            self.sock.listen(8)
        self.thread = threading.Thread(target=self._datagrams if udp else self._accept)
        self.thread.daemon = True
        self.thread.start()

    def _add(self, data):
        with self.lock:
            self.data += data if data.endswith(b'\n') else data + b'\n'

    def _datagrams(self):
        while True:
            try:
                self._add(self.sock.recv(65536))
            except socket.timeout:   # quiet for 0.2 s: done when told to stop
                if self.stopped:
                    return

    def _accept(self):
        while not self.stopped:
            try:
                conn, _addr = self.sock.accept()
            except socket.timeout:
                continue
            t = threading.Thread(target=self._read, args=(conn,))
            t.daemon = True
            t.start()
            self.readers.append(t)

    def _read(self, conn):
        conn.settimeout(0.2)
        buf = b''
        while True:
            try:
                chunk = conn.recv(65536)
            except socket.timeout:   # read to the end of what was sent before stopping
                if self.stopped:
                    break
                continue
            if not chunk:
                break
            buf += chunk
            whole, _sep, buf = buf.rpartition(b'\n')
            if whole:
                self._add(whole + b'\n')
        conn.close()

    def lines(self):
        with self.lock:
            return self.data.decode('utf-8').splitlines()

    def stop(self):
        self.stopped = True
        self.thread.join(2)
        for t in self.readers:
            t.join(2)
        self.sock.close()


def free_ports(n):
    """A first port of n free consecutive loopback ports, below the kernel's ephemeral
    range: a port of that range can be taken, between this check and the driver's
    listen, by any connection the machine opens meanwhile (the suites of two interpreters
    run side by side, with their servers and clients)."""
    try:
        with open('/proc/sys/net/ipv4/ip_local_port_range') as f:
            low = int(f.read().split()[0])
    except (IOError, OSError, ValueError, IndexError):
        low = 32768
    rnd = random.Random()
    for _try in range(200):
        first = rnd.randrange(10000, max(low, 10000 + 2 * n) - n)
        socks = []
        try:
            for p in range(first, first + n):
                t = socket.socket()
                t.bind(('127.0.0.1', p))
                socks.append(t)
            return first
        except socket.error:
            continue
        finally:
            for t in socks:
                t.close()
    raise AssertionError('no %d free consecutive ports' % n)


class Scraper(threading.Thread):
    """Scrapes http://127.0.0.1:PORT/metrics while the run goes: ``want`` bodies that show
    ``needle``, ``gap`` seconds apart."""

    def __init__(self, port, needle, want=2, gap=0.5, limit=20):
        threading.Thread.__init__(self)
        self.daemon = True
        self.port, self.needle, self.want, self.gap, self.limit = port, needle, want, gap, limit
        self.bodies = []
        self.start()

    def run(self):
        deadline = time.time() + self.limit
        while len(self.bodies) < self.want and time.time() < deadline:
            time.sleep(0.1 if not self.bodies else self.gap)
            try:
                body = urlopen('http://127.0.0.1:%d/metrics' % self.port, timeout=2).read()
            except Exception:   # not listening yet, or already gone
                continue
            body = body.decode('utf-8')
            if self.needle in body:
                self.bodies.append(body)


def test_a_run_sends_its_client_and_server_figures_interval_by_interval(tarantool, space):
    graphite, statsd = Listener(), Listener(udp=True)
    port = free_ports(1)
    scraper = Scraper(port, 'phase="select"')
    try:
        rc, _out, err, res = run_cli(
            ['--space', space, '--ops', '0', '--duration', '1.6', '--phases', 'insert,select',
             '--greenlets', '10', '--progress', '0.25',
             '--graphite', '127.0.0.1:%d' % graphite.port, '--statsd', '127.0.0.1:%d' % statsd.port,
             '--prometheus-port', '127.0.0.1:%d' % port],
            tarantool)
        scraper.join(5)
        time.sleep(0.3)   # the last UDP datagrams
    finally:
        graphite.stop()
        statsd.stop()
    assert rc == 0, err
    assert 'dropped' not in err and 'Traceback' not in err
    assert_accounted(res)
    series = graphite_series(graphite.lines(), 'gloaddriver')
    counted = {}
    for l in statsd.lines():
        m = re.match(r'^gloaddriver\.([a-z_.0-9]+):([0-9.]+)\|(c|g)$', l)
        assert m, l
        counted.setdefault(m.group(1), []).append(float(m.group(2)))
    for p in res['phases']:
        name, rows = p['name'], p['timeline']
        sent = series['%s.client.%s.attempted' % (name, name)]
        assert len(rows) - 2 <= len(sent) <= len(rows) and len(sent) >= 5
        for key in ('attempted', 'ok', 'errors', 'ops_per_sec'):
            assert series['%s.client.%s.%s' % (name, name, key)] == \
                [r[key] for r in rows[:len(sent)]]
        assert counted['%s.client.%s.attempted' % (name, name)] == sent
        syscalls = [round(r['syscalls'] / float(r['attempted']), 4) for r in rows[:len(sent)]
                    if r.get('syscalls') is not None and r['attempted']]
        assert series.get('%s.client.%s.syscalls_per_op' % (name, name), []) == syscalls
        # the server's own count of the same requests, beside the client's
        intervals = p['server_metrics']['intervals']
        server = series['%s.server.per_sec.%s' % (name, name)]
        # A late sample has no rate and sends none: skip those, then compare in order.
        assert server == [iv['rps'][name] for iv in intervals
                          if name in iv['rps']][:len(server)]
        assert len(server) >= len(sent) - 2 and max(server) > 0
        assert series['%s.server.sample_late' % name] == \
            [1.0 if iv.get('late') else 0.0 for iv in intervals[:len(series['%s.server.sample_late'
                                                                              % name])]]
    assert len(scraper.bodies) == 2
    select = res['phases'][1]
    seen = []
    for body in scraper.bodies:
        m = parse_prometheus(body)
        t = m[('gloaddriver_phase_elapsed_seconds', (('phase', 'select'),))]
        (row,) = [r for r in select['timeline'] if r['t'] == t]
        (iv,) = [i for i in select['server_metrics']['intervals'] if i['t'] == t]
        lab = (('op', 'select'), ('phase', 'select'))
        assert m[('gloaddriver_client_ops_per_second', lab)] == row['ops_per_sec']
        assert m[('gloaddriver_client_ok_per_second', lab)] == round(row['ok'] / row['seconds'], 1)
        assert m[('gloaddriver_server_per_second', (('counter', 'select'), ('phase', 'select')))] \
            == iv['rps']['select']
        seen.append(t)
    assert seen[0] < seen[1]


def test_processes_push_per_shard_and_serve_an_endpoint_each(tarantool, space):
    graphite = Listener()
    port = free_ports(2)
    scrapers = [Scraper(port + i, 'phase="insert"', want=1) for i in range(2)]
    dead = Listener(udp=True)
    dead.stop()   # a StatsD port nobody listens on: each process counts its drops
    try:
        rc, _out, err, res = run_cli(
            ['--space', space, '--processes', '2', '--ops', '400000', '--duration', '1.5',
             '--phases', 'insert', '--progress', '0.25', '--metrics-prefix', 'gd',
             '--graphite', '127.0.0.1:%d' % graphite.port, '--statsd', '127.0.0.1:%d' % dead.port,
             '--prometheus-port', '127.0.0.1:%d' % port], tarantool)
        for s in scrapers:
            s.join(5)
    finally:
        graphite.stop()
    assert rc == 0, err
    assert_accounted(res)
    series = graphite_series(graphite.lines(), 'gd')
    for i, part in enumerate(res['processes']):
        rows = part['phases'][0]['timeline']
        sent = series['shard_%d.insert.client.insert.attempted' % i]
        assert len(rows) - 2 <= len(sent) <= len(rows), err
        assert sent == [r['attempted'] for r in rows[:len(sent)]]
        (body,) = scrapers[i].bodies
        m = parse_prometheus(body)
        assert ('gd_client_ops_total', (('op', 'insert'), ('phase', 'insert'),
                                        ('shard', str(i)))) in m
    notes = re.findall(r'note: statsd udp://127\.0\.0\.1:%d: (\d+) of (\d+) sends dropped '
                       r'\(connection refused\)' % dead.port, err)
    assert len(notes) == 2, err
