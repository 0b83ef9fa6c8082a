"""Live metrics into the collectors users run, not into sockets of the test's own: a
real Prometheus server (Debian's prometheus) scrapes --prometheus-port while a run goes,
and its HTTP query API gives back series that match the run's JSON; a real carbon-cache
(Debian's graphite-carbon) receives --graphite, and the whisper points it stored
(read back with whisper-fetch, the whisper module's own reader) match the JSON's
timeline rows too.
Each collector gets a temporary config and data folder and free loopback ports; a
machine without one skips its test, saying which (scripts/test installs both)."""
from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import subprocess
import tempfile
import time

import pytest

try:
    from urllib.parse import urlencode
    from urllib.request import urlopen
except ImportError:  # pragma: no cover - Python 2
    from urllib import urlencode
    from urllib2 import urlopen

from gloaddriver.backends.spawn import free_port, which
from tests.integration.conftest import assert_accounted, run_cli

KEYS = ('attempted', 'ok', 'errors', 'ops_per_sec')
# Seconds of inserts on a quiet machine (over 100,000 a second) with the default
# 1,536-byte values would fill the shared server's 1 GiB of memtx: small ones.
VALUE_SIZE = '100'


def _have(tool):
    try:
        return which(tool)
    except Exception:
        return None


def _wait(what, ready, proc, log, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            break
        try:
            if ready():
                return
        except Exception:   # not up yet
            pass
        time.sleep(0.2)
    with open(log) as f:
        tail = f.read()[-2000:]
    raise AssertionError('%s did not come up: %s' % (what, tail))


class Collector(object):
    """A collector process in a temp folder, stopped and removed at the end."""

    def __init__(self, name):
        self.dir = tempfile.mkdtemp(prefix='gloaddriver-%s-' % name)
        self.name, self.proc = name, None
        self.log = os.path.join(self.dir, 'out.log')

    def start(self, argv):
        with open(self.log, 'w') as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                         cwd=self.dir)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20) if hasattr(subprocess, 'TimeoutExpired') else \
                    self.proc.wait()
            except Exception:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.mark.skipif(not _have('prometheus'), reason='no prometheus server on this machine '
                    '(apt-get install prometheus)')
def test_a_prometheus_server_scrapes_the_run_and_its_series_match_the_json(tarantool, space):
    prom = Collector('prometheus')
    target, port = free_port(), free_port()
    with open(os.path.join(prom.dir, 'prometheus.yml'), 'w') as f:
        f.write('global: {scrape_interval: 500ms, scrape_timeout: 400ms}\n'
                'scrape_configs:\n'
                '- job_name: gloaddriver\n'
                "  static_configs: [{targets: ['127.0.0.1:%d']}]\n" % target)
    api = 'http://127.0.0.1:%d' % port
    try:
        prom.start([_have('prometheus'), '--config.file=prometheus.yml',
                    '--storage.tsdb.path=data', '--web.listen-address=127.0.0.1:%d' % port])
        _wait('prometheus', lambda: urlopen(api + '/-/ready', timeout=2).getcode() == 200,
              prom.proc, prom.log)
        # Ready is not yet scraping: the scrape manager takes its targets up a few
        # seconds later. Start the run once the target is listed (down until it runs).
        _wait('the scrape target', lambda: json.loads(urlopen(
            api + '/api/v1/targets', timeout=2).read().decode('utf-8'))['data']['activeTargets'],
            prom.proc, prom.log)
        t0 = time.time()
        rc, _out, err, res = run_cli(
            ['--space', space, '--ops', '0', '--duration', '4', '--phases', 'insert,select',
             '--greenlets', '10', '--progress', '1', '--value-size', VALUE_SIZE,
             '--prometheus-port', '127.0.0.1:%d' % target], tarantool)
        assert rc == 0, err
        assert_accounted(res)

        def samples(query):
            """{labels: [(timestamp, value), ...]} of a range selector, raw samples."""
            url = api + '/api/v1/query?' + urlencode({'query': query, 'time': time.time()})
            body = json.loads(urlopen(url, timeout=10).read().decode('utf-8'))
            assert body['status'] == 'success', body
            return dict((tuple(sorted((k, v) for k, v in r['metric'].items()
                                      if k not in ('__name__', 'job', 'instance'))),
                         [(float(t), float(v)) for t, v in r['values']])
                        for r in body['data']['result'])
        span = '[%ds]' % (time.time() - t0 + 60)
        rate = samples('gloaddriver_client_ops_per_second' + span)
        total = samples('gloaddriver_client_ops_total' + span)
        elapsed = samples('gloaddriver_phase_elapsed_seconds' + span)
        names = json.loads(urlopen(api + '/api/v1/label/__name__/values',
                                   timeout=10).read().decode('utf-8'))['data']
    finally:
        prom.stop()
    for p in res['phases']:
        name, rows = p['name'], p['timeline']
        lab = (('op', name), ('phase', name))
        by_time = dict(elapsed[(('phase', name),)])   # scrape time -> the interval's end
        seen = set()
        for ts, v in rate[lab]:
            (row,) = [r for r in rows if r['t'] == by_time[ts]]   # the same scrape
            assert v == row['ops_per_sec'], (name, row)
            seen.add(row['t'])
        for ts, v in total[lab]:   # the counter: the phase's attempted ops so far
            assert v == sum(r['attempted'] for r in rows if r['t'] <= by_time[ts])
        # Scraped every 0.5 s through 4 intervals of 1 s: at least 2 distinct intervals.
        assert len(seen) >= 2, (name, sorted(seen))
    # Every metric the shipped Grafana dashboard queries is one this server scraped.
    from tests.unit.test_grafana_dashboard import dashboard_metrics
    _dash, used = dashboard_metrics()
    missing = set(used) - set(names)
    if not any(p['failed'] or p['timed_out'] for p in res['phases']):
        # Errors by kind is a series only once an op failed; this run had none.
        missing.discard('gloaddriver_client_errors_by_kind_total')
    assert not missing, sorted(missing)


@pytest.mark.skipif(not (_have('carbon-cache') and _have('whisper-fetch')),
                    reason='no carbon-cache and whisper-fetch on this machine '
                    '(apt-get install graphite-carbon)')
def test_carbon_stores_the_graphite_lines_and_whisper_gives_back_the_json(tarantool, space):
    carbon = Collector('carbon')
    d = carbon.dir
    line, pickle, query = free_port(), free_port(), free_port()
    for sub in ('whisper', 'lists', 'log'):
        os.mkdir(os.path.join(d, sub))
    with open(os.path.join(d, 'carbon.conf'), 'w') as f:
        f.write('[cache]\nSTORAGE_DIR = %(d)s/\nLOCAL_DATA_DIR = %(d)s/whisper/\n'
                'WHITELISTS_DIR = %(d)s/lists/\nCONF_DIR = %(d)s/\nLOG_DIR = %(d)s/log/\n'
                'PID_DIR = %(d)s/\nENABLE_LOGROTATION = False\nUSER =\n'
                'MAX_CACHE_SIZE = inf\nMAX_UPDATES_PER_SECOND = inf\n'
                'MAX_CREATES_PER_MINUTE = inf\n'
                'LINE_RECEIVER_INTERFACE = 127.0.0.1\nLINE_RECEIVER_PORT = %(line)d\n'
                'ENABLE_UDP_LISTENER = False\n'
                'PICKLE_RECEIVER_INTERFACE = 127.0.0.1\nPICKLE_RECEIVER_PORT = %(pickle)d\n'
                'CACHE_QUERY_INTERFACE = 127.0.0.1\nCACHE_QUERY_PORT = %(query)d\n'
                'LOG_LISTENER_CONN_SUCCESS = False\n'
                % dict(d=d, line=line, pickle=pickle, query=query))
    # One point a second kept for an hour; the driver sends one line per figure every
    # 2 s (--progress 2), so no two intervals share a second.
    with open(os.path.join(d, 'storage-schemas.conf'), 'w') as f:
        f.write('[all]\npattern = .*\nretentions = 1s:1h\n')

    def fetch(metric):
        """{timestamp: value} of the points carbon stored for a metric."""
        path = os.path.join(d, 'whisper', *metric.split('.')) + '.wsp'
        if not os.path.exists(path):
            return {}
        out = json.loads(subprocess.check_output([_have('whisper-fetch'), '--json',
                                                  '--from=%d' % (t0 - 10), path]).decode('utf-8'))
        start, step = out['start'], out['step']
        return dict((start + i * step, v) for i, v in enumerate(out['values']) if v is not None)

    try:
        import socket
        carbon.start([_have('carbon-cache'), '--config=%s/carbon.conf' % d, '--nodaemon',
                      '--pidfile=%s/carbon.pid' % d, 'start'])
        _wait('carbon-cache', lambda: socket.create_connection(('127.0.0.1', line), 1).close()
              or True, carbon.proc, carbon.log)
        t0 = time.time()
        rc, _out, err, res = run_cli(
            ['--space', space, '--ops', '0', '--duration', '8', '--phases', 'insert,select',
             '--greenlets', '10', '--progress', '2', '--value-size', VALUE_SIZE,
             '--graphite', '127.0.0.1:%d' % line],
            tarantool)
        assert rc == 0, err
        assert 'dropped' not in err
        assert_accounted(res)
        # carbon writes its cache to whisper files in the background, a metric at a
        # time and in no set order: wait until every figure of every phase has its
        # points there and they stay the same for a second (bounded).
        def everything():
            return dict(((p['name'], key), fetch('gloaddriver.%s.client.%s.%s'
                                                 % (p['name'], p['name'], key)))
                        for p in res['phases'] for key in KEYS)

        def complete(got):
            # every figure of a phase at the same seconds, and most rows there
            return all(sorted(got[(p['name'], key)]) == sorted(got[(p['name'], KEYS[0])])
                       and len(got[(p['name'], key)]) >= len(p['timeline']) // 2
                       for p in res['phases'] for key in KEYS)
        deadline, before = time.time() + 90, None
        while True:
            stored = everything()
            if (complete(stored) and stored == before) or time.time() > deadline:
                break
            before = stored
            time.sleep(1)
    finally:
        carbon.stop()
    for p in res['phases']:
        rows = [tuple(r[k] for k in KEYS) for r in p['timeline']]
        times = sorted(stored[(p['name'], 'attempted')])
        points = [tuple(stored[(p['name'], k)].get(ts) for k in KEYS) for ts in times]
        # Each stored second is one row of the timeline, all four figures of the same
        # row, in the order of the rows. Whisper keeps one point a second: a row sent
        # within the same second as the one before takes its place (the last, partial
        # row; or, on a loaded machine, a row whose tick came late), so some rows may
        # be missing; most are there.
        i = 0
        for pt in points:
            while i < len(rows) and rows[i] != pt:
                i += 1
            assert i < len(rows), (p['name'], pt, 'not a row, or out of order', rows)
            i += 1
        assert len(points) >= max(2, len(rows) // 2), (p['name'], points, rows)


@pytest.mark.skipif(not _have('prometheus-pushgateway'), reason='no Pushgateway on this machine '
                    '(apt-get install prometheus-pushgateway)')
def test_a_pushgateway_keeps_each_phases_last_interval_after_a_short_run(tarantool, space):
    from prometheus_client.parser import text_string_to_metric_families
    gw = Collector('pushgateway')
    port = free_port()
    url = 'http://127.0.0.1:%d' % port
    try:
        gw.start([_have('prometheus-pushgateway'), '--web.listen-address=127.0.0.1:%d' % port])
        _wait('pushgateway', lambda: urlopen(url + '/-/ready', timeout=2).getcode() == 200,
              gw.proc, gw.log)
        rc, _out, err, res = run_cli(
            ['--space', space, '--ops', '0', '--duration', '2', '--phases', 'insert,select',
             '--greenlets', '10', '--progress', '0.5', '--metrics-prefix', 'ci.load',
             '--prometheus-push', url], tarantool)
        assert rc == 0, err
        assert 'pushes failed' not in err
        assert_accounted(res)
        text = urlopen(url + '/metrics', timeout=10).read().decode('utf-8')
    finally:
        gw.stop()
    totals, pushed = {}, {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.labels.get('job') != 'ci_load':
                continue
            if s.name == 'ci_load_client_ops_total':
                totals[s.labels['phase']] = s.value
            if s.name == 'ci_load_phase_elapsed_seconds':
                pushed[s.labels['phase']] = s.value
    # One group per phase, kept after the run: its last interval is the phase's end, and
    # its counter holds every op the phase attempted.
    assert sorted(totals) == ['insert', 'select'], text[-3000:]
    for p in res['phases']:
        rows = p['timeline']
        assert pushed[p['name']] == rows[-1]['t']
        assert totals[p['name']] == sum(r['attempted'] for r in rows) == p['attempted']


def test_a_pushgateway_that_is_not_there_costs_the_run_nothing(tarantool, space):
    port = free_port()     # nobody listens
    rc, _out, err, res = run_cli(
        ['--space', space, '--ops', '2000', '--phases', 'insert', '--progress', '0.2',
         '--prometheus-push', '127.0.0.1:%d' % port], tarantool)
    assert rc == 0, err
    assert_accounted(res)
    assert 'prometheus push http://127.0.0.1:%d: ' % port in err and 'pushes failed' in err
