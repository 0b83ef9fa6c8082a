"""pgbench's tables and ``gloaddriver pgbench``, against a private PostgreSQL and the real
pgbench binary beside it: the tables gloaddriver makes are the ones ``pgbench -i`` makes
(pgbench itself runs on them), and ``gloaddriver pgbench`` prints what a pgbench output
parser reads, with figures that agree with gloaddriver's own result."""
from __future__ import absolute_import, division, print_function

import os
import re
import subprocess
import sys

import pytest

from gloaddriver.backends.postgres import pgbench_tables
from gloaddriver.backends.postgres.server import PostgresServer
from tests import result_schema
from tests.integration.conftest import ROOT, pg_query


@pytest.fixture(scope='module')
def pg():
    server = PostgresServer().start()
    yield server
    server.stop()


def libpq_env(server):
    """The server as libpq's environment names it (what pgbench and libpq read)."""
    return dict(os.environ, PGHOST=server.host, PGPORT=str(server.port), PGUSER=server.user,
                PGDATABASE=server.database, PGPASSWORD=server.password)


def real_pgbench(server, *args):
    """The real pgbench (of the server's own binaries): (exit code, stdout + stderr)."""
    p = subprocess.Popen([os.path.join(server.bindir, 'pgbench')] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=libpq_env(server))
    out, _err = p.communicate()
    return p.returncode, out.decode('utf-8', 'replace')


def gloaddriver_pgbench(server, *args):
    """``python -m gloaddriver pgbench ARGS``, connection by pgbench's own flags (the
    password from $PGPASSWORD, as pgbench takes it): (exit code, stdout, stderr)."""
    argv = [sys.executable, '-m', 'gloaddriver', 'pgbench', '-h', server.host,
            '-p', str(server.port), '-U', server.user, server.database] + list(args)
    env = dict(os.environ, PYTHONPATH=ROOT, PGPASSWORD=server.password)
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    out, err = p.communicate()
    return p.returncode, out.decode('utf-8', 'replace'), err.decode('utf-8', 'replace')


def table_made(server, steps='dtGvp', scale=1, **kw):
    """pgbench's tables made by pgbench_tables.create; its progress lines."""
    said = []
    conn = pgbench_tables.connect(server.dsn)
    try:
        pgbench_tables.create(conn.cursor(), scale, steps=steps, say=said.append, **kw)
    finally:
        conn.close()
    return said


def counts(server):
    return tuple(pg_query(server.dsn, 'SELECT count(*) FROM %s' % t)[0][0] for t in (
        'pgbench_branches', 'pgbench_tellers', 'pgbench_accounts', 'pgbench_history'))


def shape(server):
    """Columns (type, not null), persistence, options, constraints and a digest of the
    rows of pgbench's four tables: what must be equal whoever made them."""
    columns = pg_query(server.dsn, """
        SELECT c.relname, c.relpersistence, coalesce(array_to_string(c.reloptions, ','), ''),
               a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
        WHERE c.relname LIKE 'pgbench\\_%' AND c.relkind = 'r' AND a.attnum > 0
              AND NOT a.attisdropped ORDER BY 1, a.attnum""")
    constraints = pg_query(server.dsn, """
        SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
        WHERE conrelid::regclass::text LIKE 'pgbench\\_%' ORDER BY 1, 2""")
    rows = [pg_query(server.dsn, sql)[0] for sql in (
        'SELECT count(*), sum(bid), sum(bbalance), count(filler) FROM pgbench_branches',
        'SELECT count(*), sum(tid), sum(bid), sum(tbalance), count(filler) FROM pgbench_tellers',
        "SELECT count(*), sum(aid), sum(bid), sum(abalance), count(filler), "
        "count(*) FILTER (WHERE filler = '') FROM pgbench_accounts",
        'SELECT count(*) FROM pgbench_history')]
    return columns, constraints, rows


# -- the tables ---------------------------------------------------------------------------

@pytest.mark.parametrize('steps', ['dtGvp', 'dtgvp'])
def test_tables_at_scale_2_run_under_the_real_pgbench(pg, steps):
    said = table_made(pg, steps, scale=2)
    assert counts(pg) == (2, 20, 200000, 0)
    assert said[0] == 'dropping old tables...' and said[-1].startswith('done in ')
    if steps == 'dtgvp':   # a progress line per 100,000 accounts, as pgbench's
        assert '200000 of 200000 tuples (100%) done' in ' '.join(said)
    rc, out = real_pgbench(pg, '-t', '10', '-c', '2')
    assert rc == 0, out
    assert 'scaling factor: 2' in out and 'actually processed: 20/20' in out, out


@pytest.mark.parametrize('steps,flags,kw', [
    ('dtGvpf', [], {}),
    ('dtgp', ['-F', '90', '--unlogged-tables'], dict(fillfactor=90, unlogged=True)),
])
def test_the_same_tables_as_pgbench_i(pg, steps, flags, kw):
    rc, out = real_pgbench(pg, '-i', '-s', '1', '-I', steps, *flags)
    assert rc == 0, out
    theirs = shape(pg)
    table_made(pg, steps, **kw)
    assert shape(pg) == theirs


def test_scale_of_tables_pgbench_made(pg):
    rc, out = real_pgbench(pg, '-i', '-s', '3', '-I', 'dtG')
    assert rc == 0, out
    conn = pgbench_tables.connect(pg.dsn)
    try:
        cur = conn.cursor()
        assert pgbench_tables.scale_of(cur) == 3
        cur.execute('DROP TABLE pgbench_branches')
        assert pgbench_tables.scale_of(cur) is None
        # before a run: what cannot be done is said, the rest done
        failed = pgbench_tables.vacuum_before_run(cur)
        assert len(failed) == 1 and 'pgbench_branches' in failed[0]
    finally:
        conn.close()


def test_vacuum_before_a_run_empties_history(pg):
    table_made(pg, 'dtG')
    pg_query(pg.dsn, 'INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (1, 1, 1, 5)')
    conn = pgbench_tables.connect(pg.dsn)
    try:
        assert pgbench_tables.vacuum_before_run(conn.cursor(), all_tables=True) == []
    finally:
        conn.close()
    assert counts(pg)[3] == 0


# -- gloaddriver pgbench ------------------------------------------------------------------

def test_pgbench_i_makes_the_tables(pg):
    pg_query(pg.dsn, 'DROP TABLE IF EXISTS pgbench_branches, pgbench_tellers, '
                     'pgbench_accounts, pgbench_history')
    rc, out, err = gloaddriver_pgbench(pg, '-i', '-s', '1')
    assert rc == 0, err
    assert counts(pg) == (1, 10, 100000, 0)
    lines = err.splitlines()
    for words in ('dropping old tables...', 'creating tables...',
                  'generating data (client-side)...',
                  '100000 of 100000 tuples (100%) done', 'vacuuming...',
                  'creating primary keys...', 'done in '):
        assert any(l.startswith(words) for l in lines), err
    # pgbench's default steps: no foreign keys
    assert pg_query(pg.dsn, "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND "
                            "conrelid::regclass::text LIKE 'pgbench%'") == [(0,)]


# What parsers of pgbench's output read (pgbench-tools, benchmark harnesses, CI scripts).
PGBENCH_OUTPUT = {
    'type': r'^transaction type: (.+)$',
    'scale': r'^scaling factor: (\d+)$',
    'mode': r'^query mode: (\w+)$',
    'clients': r'^number of clients: (\d+)$',
    'threads': r'^number of threads: (\d+)$',
    'duration': r'^duration: (\d+) s$',
    'per_client': r'^number of transactions per client: (\d+)$',
    'processed': r'^number of transactions actually processed: (\d+)(?:/(\d+))?$',
    'failed': r'^number of failed transactions: (\d+) \(([\d.]+)%\)$',
    'latency': r'^latency average = ([\d.]+) ms$',
    'stddev': r'^latency stddev = ([\d.]+) ms$',
    'tps': r'^tps = ([\d.]+) \((?:without|excluding) initial connection time\)$',
}


def parse_pgbench(text):
    found = {}
    for key, pattern in PGBENCH_OUTPUT.items():
        m = re.search(pattern, text, re.M)
        if m:
            found[key] = m.groups() if len(m.groups()) > 1 else m.group(1)
    return found


def test_a_select_only_run_reads_as_pgbench_output(pg, tmpdir):
    table_made(pg, 'dtGvp')
    pg_query(pg.dsn, 'INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (1, 1, 1, 5)')
    path = str(tmpdir.join('r.json'))
    rc, out, err = gloaddriver_pgbench(pg, '-c', '8', '-T', '3', '-S', '--', '--json', path)
    assert rc == 0, err
    assert 'starting vacuum...end.' in err and counts(pg)[3] == 0   # history emptied first
    got = parse_pgbench(out)
    assert out.startswith('pgbench (15 (gloaddriver ')
    assert (got['type'], got['scale'], got['mode'], got['clients'], got['threads'],
            got['duration']) == ('<builtin: select only>', '1', 'simple', '8', '1', '3')
    with open(path) as f:
        result = result_schema.read(f)      # the strict schema: every key described
    (phase,) = result['phases']
    assert int(got['processed'][0]) == phase['ok'] > 0 and got['processed'][1] is None
    assert got['failed'] == ('0', '0.000')
    # tps is gloaddriver's own ok/s; the latency its measured mean
    assert abs(float(got['tps']) - phase['ok_per_sec']) <= max(0.1, 1e-3 * phase['ok_per_sec'])
    assert abs(float(got['latency']) - phase['latency_us']['mean'] / 1000.0) < 0.002
    assert 'stddev' not in got          # as pgbench: only with -P, -R or -L
    # pgbench's summary first, then gloaddriver's own table
    assert out.index('tps = ') < re.search(r'^phase +attempted', out, re.M).start()


def test_threads_are_processes_and_r_reports_each_statement(pg):
    table_made(pg, 'dtGvp')
    rc, out, err = gloaddriver_pgbench(pg, '-c', '4', '-j', '2', '-t', '25', '-r', '-P', '1')
    assert rc == 0, err
    got = parse_pgbench(out)
    assert (got['type'], got['clients'], got['threads'], got['per_client']) == (
        '<builtin: TPC-B (sort of)>', '4', '2', '25')
    assert got['processed'] == ('100', '100') and 'stddev' in got
    table = out.split('statement latencies in milliseconds and failures:\n', 1)[1]
    rows = re.findall(r'^ +([\d.]+) +(\d+)  (\S.*)$', table, re.M)
    commands = [r[2] for r in rows]
    assert any(c.startswith('UPDATE pgbench_accounts') for c in commands), table
    assert any(c.startswith('\\set aid') for c in commands), table
    assert counts(pg)[3] == 100      # one history row per transaction


HOT_SQL = ('\\set aid random(1, 100000 * :scale)\n'
           'SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n')


def scripts_said(out):
    """The summary's "SQL script N: LABEL" lines, as (N, LABEL)."""
    return re.findall(r'^SQL script (\d+): (.+)$', out, re.M)


@pytest.mark.parametrize('weight', ['', '@1'])
def test_a_script_file_alone_runs_alone_as_under_pgbench(pg, tmpdir, weight):
    # The built-in default (TPC-B) applies only when no script is named: -f hot.sql ran
    # both, half the transactions each, under "transaction type: multiple scripts".
    table_made(pg, 'dtGvp')
    hot = tmpdir.join('hot.sql')
    hot.write(HOT_SQL)
    rc, real = real_pgbench(pg, '-n', '-c', '2', '-t', '5', '-f', str(hot) + weight)
    assert rc == 0, real
    rc, out, err = gloaddriver_pgbench(pg, '-n', '-c', '2', '-t', '5', '-f', str(hot) + weight)
    assert rc == 0, err
    got = parse_pgbench(out)
    assert got['type'] == parse_pgbench(real)['type'] == str(hot)
    assert got['processed'] == parse_pgbench(real)['processed'] == ('10', '10')
    assert not scripts_said(out) and not scripts_said(real)
    assert counts(pg)[3] == 0     # TPC-B's history insert never ran


def test_a_script_file_and_a_builtin_run_both_as_under_pgbench(pg, tmpdir):
    table_made(pg, 'dtGvp')
    hot = tmpdir.join('hot.sql')
    hot.write(HOT_SQL)
    args = ('-n', '-c', '2', '-t', '10', '-f', str(hot), '-b', 'select-only')
    rc, real = real_pgbench(pg, *args)
    assert rc == 0, real
    rc, out, err = gloaddriver_pgbench(pg, *args)
    assert rc == 0, err
    assert parse_pgbench(out)['type'] == parse_pgbench(real)['type'] == 'multiple scripts'
    assert scripts_said(out) == scripts_said(real) == [
        ('1', str(hot)), ('2', '<builtin: select only>')]


@pytest.mark.parametrize('args,words', [
    (['--partitions', '4'], ['--partitions']),
    (['-c', '3', '-j', '2'], ['-c 3', '-j 2']),
    (['-S', '--', '--no-such-flag'], ['--no-such-flag']),
])
def test_bad_flags_are_one_line_before_anything_runs(pg, args, words):
    rc, out, err = gloaddriver_pgbench(pg, *args)
    assert rc == 2, err
    assert err.count('\n') == 1 and 'Traceback' not in err and not out, (out, err)
    for w in words:
        assert w in err, err
