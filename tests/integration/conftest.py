"""A private Tarantool per test session, a fresh space per test, CLI helpers."""
from __future__ import absolute_import, division, print_function

import itertools
import json
import os
import subprocess
import sys
import tempfile

import pytest

from gloaddriver.backends.tarantool.connection import Connection
from gloaddriver.backends.tarantool.server import TarantoolServer
from tests import result_schema

_names = itertools.count(1)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope='session')
def tarantool():
    server = TarantoolServer().start()
    yield server
    server.stop()


@pytest.fixture
def tarantool_own():
    """A server of the test's own, for tests that kill or pause it."""
    server = TarantoolServer().start()
    yield server
    server.stop()


def connect(server, **kw):
    return Connection(server.host, server.port, server.user, server.password, **kw).connect()


def create_space(server, name=None):
    name = name or 'space_%d_%d' % (os.getpid(), next(_names))
    conn = connect(server)
    try:
        conn.eval(u"""
            local s = box.schema.space.create(..., {format = {{'id', 'unsigned'}, {'value', 'string'}}})
            s:create_index('primary', {parts = {1, 'unsigned'}})""", name)
    finally:
        conn.close()
    return name


@pytest.fixture
def space(tarantool):
    name = create_space(tarantool)
    yield name
    # Dropped after the test: the session's server is shared by the whole suite, and
    # time-bounded runs on a fast machine would fill its memory with their inserts.
    conn = connect(tarantool)
    try:
        conn.eval(u"box.space[...]:drop()", name)
    finally:
        conn.close()


def run_cli(args, server=None, env=None, timeout=300):
    """Run ``python -m gloaddriver`` as a user would; return (rc, stdout, stderr, json)."""
    out = tempfile.NamedTemporaryFile(suffix='.json', delete=False)
    out.close()
    os.unlink(out.name)
    argv = [sys.executable, '-m', 'gloaddriver', '--progress', '0', '--json', out.name] + args
    e = dict(os.environ, PYTHONPATH=ROOT)
    if server is not None:
        argv += ['--uri', server.uri, '--user', server.user]
        e['GLOADDRIVER_PASSWORD'] = server.password
    e.update(env or {})
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=ROOT)
    stdout, stderr = p.communicate()   # the driver bounds itself; CI bounds the suite
    result = None
    if os.path.exists(out.name):
        with open(out.name) as f:
            result = result_schema.read(f)
        os.unlink(out.name)
    if os.path.exists(out.name + '.journal'):   # a run of over a minute keeps one by default
        os.unlink(out.name + '.journal')
    return p.returncode, stdout.decode('utf-8', 'replace'), stderr.decode('utf-8', 'replace'), result


def started_driver(argv, env):
    """``python -m gloaddriver ARGV`` (with ``--progress 0.5``), returned once its
    phase has run 0.5 s (its first progress line): a fault timed from there hits the
    phase, however long the process took to start, connect and --init on a loaded
    machine. What it wrote on stderr so far is in ``p.stderr_before``."""
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', '--progress', '0.5'] + argv,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=ROOT, **env), cwd=ROOT)
    lines = []
    while True:
        line = p.stderr.readline().decode('utf-8', 'replace')
        lines.append(line)
        if not line or ' ops/s ' in line:
            break
    p.stderr_before = ''.join(lines)
    return p


def assert_restart_outage(outage, faults, phase_seconds):
    """The outage of a ``kill@..,start@..`` fault, judged by what the driver saw.

    Found again within the phase (the outage closed): it lasted from the kill until the
    server was back (the start's ``t + took``: when it accepted logins again, seen by
    the injector's polling, so a little late), within 0.5 s. Still open at the
    phase's end: only if the server came back in the phase's last second, or after it
    (a start with crash recovery took over 4 s on a loaded machine); a driver that
    missed a server back for longer is a defect. Returns whether it was found again."""
    ev = dict((f['action'], f) for f in faults)
    down, back = ev['kill']['t'], ev['start']['t'] + ev['start']['took']
    if not outage['open']:
        assert outage['reconnects'] >= 1, (outage, ev)
        assert abs(outage['duration'] - (back - down)) <= 0.5, (outage, ev)
        return True
    assert back > phase_seconds - 1.0, (outage, ev)
    assert outage['duration'] >= phase_seconds - down - 0.5, (outage, ev)
    return False


def pg_query(dsn, sql, params=None):
    """The rows of one statement (or its row count), autocommitted, on a connection of
    its own to ``dsn``, made with the driver's psycopg2 setup (text as unicode on 2.7)."""
    import psycopg2
    from gloaddriver.backends.postgres import pool
    pool.install('cached')
    conn = psycopg2.connect(dsn)
    try:
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute(sql, params)
        return cur.fetchall() if cur.description else cur.rowcount
    finally:
        conn.close()


class ReplicaSets(object):
    """``sets(replicas, mode, **kw)``: a replica set of the test's own (``make``'s), started;
    ``stop_all()`` after the test stops each and checks it left no process or folder."""

    def __init__(self, make, timeout):
        self.make = make
        self.timeout = timeout
        self.sets = []

    def __call__(self, replicas, mode, **kw):
        rs = self.make(replicas, mode, **kw)
        self.sets.append(rs)
        return rs.start(timeout=self.timeout)

    def stop_all(self):
        for rs in self.sets:
            dirs = [m.work_dir for m in rs.members]
            rs.stop()
            assert all(m.work_dir is None and m.proc is None for m in rs.members)
            assert dirs and not any(os.path.exists(d) for d in dirs if d)


def wait_for(what, check, seconds=30, expected=Exception):
    """Poll ``check`` until it is true (an ``expected`` exception counts as not yet);
    fail the test, naming ``what`` and the last error, when it is not within ``seconds``."""
    import time
    import gevent
    deadline = time.time() + seconds
    last = None
    while time.time() < deadline:
        try:
            if check():
                return
        except expected as e:
            last = e
        gevent.sleep(0.05)
    pytest.fail('%s: not within %d s (%s)' % (what, seconds, last))


def assert_accounted(result):
    """ok + failed + timed_out == attempted, in every phase and every op of a mix; and
    the result has the shape of the shipped schema."""
    result_schema.validate(result)
    for phase in result['phases']:
        parts = [phase] + list(phase.get('ops', {}).values())
        for p in parts:
            assert p['ok'] + p['failed'] + p['timed_out'] == p['attempted'], p
            assert sum(p['errors'].values()) == p['failed'] + p['timed_out'], p
        if 'ops' in phase:
            assert sum(o['attempted'] for o in phase['ops'].values()) == phase['attempted']
        rows = phase.get('timeline')
        if rows is not None:   # the rows over time add up to the phase
            assert sum(r['attempted'] for r in rows) == phase['attempted']
            assert sum(r['ok'] for r in rows) == phase['ok']
            assert sum(r['errors'] for r in rows) == phase['failed'] + phase['timed_out']


def page_view(path):
    """The view an --html page embeds (what its script draws), read back from the file."""
    import io
    import re
    with io.open(path, encoding='utf-8') as f:
        m = re.search(r'<script type="application/json" id="gl-data">(.*?)</script>', f.read())
    return json.loads(m.group(1))


@pytest.fixture(scope='module')
def chromium():
    """Headless Chromium over WebDriver (tests/integration/browser.py), one per module."""
    from tests.integration import browser
    why = browser.missing()
    if why:
        pytest.fail(why)   # CI installs it: a missing browser is a broken setup, not a skip
    b = browser.Browser()
    yield b
    b.close()


def ended(p, errf):
    """A driver's stderr (a file it wrote to), once it has ended: killed if a failed
    check left it running."""
    if p.poll() is None:
        p.kill()
        p.wait()
    errf.seek(0)
    err = errf.read()
    errf.close()
    return err
