"""Live metrics into the collectors users run, not into sockets of the test's own: a
real Prometheus server (Debian's prometheus) scrapes --prometheus-port while a run goes,
and its HTTP query API gives back series that match the run's JSON; a real carbon-cache
(Debian's graphite-carbon) receives --graphite, and the whisper points it stored
(read back with whisper-fetch, the whisper module's own reader) match the JSON too.
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
        t0 = time.time()
        rc, _out, err, res = run_cli(
            ['--space', space, '--ops', '0', '--duration', '4', '--phases', 'insert,select',
             '--greenlets', '10', '--progress', '1',
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
        path = os.path.join(d, 'whisper', *metric.split('.')) + '.wsp'
        if not os.path.exists(path):
            return None
        out = subprocess.check_output([_have('whisper-fetch'), '--json',
                                       '--from=%d' % (t0 - 10), path])
        return [v for v in json.loads(out.decode('utf-8'))['values'] if v is not None]

    try:
        import socket
        carbon.start([_have('carbon-cache'), '--config=%s/carbon.conf' % d, '--nodaemon',
                      '--pidfile=%s/carbon.pid' % d, 'start'])
        _wait('carbon-cache', lambda: socket.create_connection(('127.0.0.1', line), 1).close()
              or True, carbon.proc, carbon.log)
        t0 = time.time()
        rc, _out, err, res = run_cli(
            ['--space', space, '--ops', '0', '--duration', '8', '--phases', 'insert,select',
             '--greenlets', '10', '--progress', '2', '--graphite', '127.0.0.1:%d' % line],
            tarantool)
        assert rc == 0, err
        assert 'dropped' not in err
        assert_accounted(res)
        # carbon writes its cache to whisper files in the background: wait until the
        # last phase's points are all there (bounded).
        last = res['phases'][-1]
        name = last['name']
        deadline = time.time() + 60
        while time.time() < deadline:
            got = fetch('gloaddriver.%s.client.%s.attempted' % (name, name))
            if got is not None and len(got) >= len(last['timeline']) - 1:
                break
            time.sleep(0.5)
        stored = {}
        for p in res['phases']:
            name = p['name']
            for key in ('attempted', 'ok', 'errors', 'ops_per_sec'):
                stored[(name, key)] = fetch('gloaddriver.%s.client.%s.%s' % (name, name, key))
    finally:
        carbon.stop()
    for p in res['phases']:
        rows = p['timeline']
        sent = stored[(p['name'], 'attempted')]
        assert sent and len(rows) - 1 <= len(sent) <= len(rows), (p['name'], sent, rows)
        for key in ('attempted', 'ok', 'errors', 'ops_per_sec'):
            assert stored[(p['name'], key)] == [r[key] for r in rows[:len(sent)]], key
