"""pgbench's scripts, unchanged, on a real server: its built-in scripts as its own binary
prints them (``pgbench --show-script``), its tables, retries of serialization failures,
per-statement figures, the per-transaction log, a connection per transaction, and the
language's commands end to end, on both connectors. The benchmark's own consistency
(TPC-B: every delta in the history is in the balances) is the judge of every run."""
from __future__ import absolute_import, division, print_function

import os
import subprocess

import pytest

from gloaddriver.backends.postgres.server import PostgresServer
from tests.integration.conftest import assert_accounted, pg_query, run_cli
from tests import result_schema

PGBENCH = '/usr/lib/postgresql/15/bin/pgbench'
BUILTINS = ('tpcb-like', 'simple-update', 'select-only')
CONNECTORS = ('psycopg2', 'pipelined')


@pytest.fixture(scope='module')
def server():
    s = PostgresServer().start()
    yield s
    s.stop()


def dsn(server):
    return 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
        server.port, server.database, server.user)


def run_pg(server, args, timeout=300):
    return run_cli(['--backend', 'postgres', '--dsn', dsn(server)] + args,
                   env={'GLOADDRIVER_PASSWORD': server.password}, timeout=timeout)


def q(server, sql):
    return pg_query(server.dsn, sql)


def show_script(name, tmpdir):
    """pgbench's own text of a built-in script, in a file (skipped without pgbench)."""
    if not os.path.exists(PGBENCH):
        pytest.skip('no pgbench binary at %s' % PGBENCH)
    text = subprocess.check_output([PGBENCH, '--show-script=%s' % name],
                                   stderr=subprocess.STDOUT).decode('utf-8')
    path = tmpdir.join('%s.sql' % name)
    path.write(text)
    return str(path)


def write(tmpdir, name, text):
    path = tmpdir.join(name)
    path.write(text)
    return str(path)


def sums(server):
    """(history rows, sum of history's deltas, of abalance, of tbalance, of bbalance)."""
    ((n, history),) = q(server, 'SELECT count(*), coalesce(sum(delta), 0) FROM pgbench_history')
    ((a,),) = q(server, 'SELECT sum(abalance) FROM pgbench_accounts')
    ((t,),) = q(server, 'SELECT sum(tbalance) FROM pgbench_tellers')
    ((b,),) = q(server, 'SELECT sum(bbalance) FROM pgbench_branches')
    return n, history, a, t, b


def drop_pgbench_tables(server):
    """So that the next run's --init makes them anew (and TPC-B's check starts at 0)."""
    q(server, 'DROP TABLE IF EXISTS pgbench_accounts, pgbench_branches, pgbench_tellers, '
              'pgbench_history')


def consistent(server):
    """TPC-B's own check on tables only tpcb-like has written: the history's deltas are in
    every balance. Returns the history's rows."""
    n, history, a, t, b = sums(server)
    assert history == a == t == b, (history, a, t, b)
    return n


@pytest.mark.parametrize('connector', CONNECTORS)
def test_every_builtin_script_of_pgbench_runs_unchanged(server, tmpdir, connector):
    files = [show_script(name, tmpdir) for name in BUILTINS]
    drop_pgbench_tables(server)
    before = (0, 0, 0, 0, 0)
    for name, path in zip(BUILTINS, files):
        rc, out, err, res = run_pg(server, ['--script', path, '--init', '--scale', '2',
                                            '--connector', connector, '--greenlets', '8',
                                            '--ops', '1500'])
        assert rc == 0, err
        assert_accounted(res)
        result_schema.validate(res)
        (phase,) = res['phases']
        assert phase['ok'] == 1500 and phase['script']['scale'] == 2
        after = sums(server)
        rows, history, a, t, b = [y - x for x, y in zip(before, after)]
        if name == 'tpcb-like':     # every delta logged is in every balance
            assert history == a == t == b and after[1:] == (history, a, t, b)
        elif name == 'simple-update':   # accounts and the history only
            assert history == a and t == b == 0
        else:
            assert (rows, history, a, t, b) == (0, 0, 0, 0, 0)
        if name != 'select-only':  # one history row per transaction: the ok count exactly
            assert rows == phase['ok'], name
        before = after
    # the tables were made once, at --scale 2, as pgbench -i makes them
    assert q(server, 'SELECT count(*) FROM pgbench_branches') == [(2,)]
    assert q(server, 'SELECT count(*) FROM pgbench_accounts') == [(200000,)]


@pytest.mark.parametrize('connector', CONNECTORS)
@pytest.mark.parametrize('protocol', ['simple', 'extended', 'prepared'])
def test_the_builtin_tpcb_on_every_protocol(server, connector, protocol):
    drop_pgbench_tables(server)
    rc, out, err, res = run_pg(server, ['--builtin', 'tpcb-like', '--init', '--protocol',
                                        protocol, '--connector', connector, '--greenlets', '6',
                                        '--ops', '900', '--per-statement'])
    assert rc == 0, err
    (phase,) = res['phases']
    assert phase['ok'] == 900 and phase['script']['protocol'] == protocol
    assert consistent(server) == 900
    rows = phase['script']['statements']
    assert [r["line"] for r in rows] == list(range(1, 12))    # \set and SQL lines alike
    assert all(r['count'] == 900 and r['failures'] == 0 for r in rows), rows
    assert 'per statement' in out and 'UPDATE pgbench_accounts' in out


def test_the_per_statement_table_keeps_its_columns_and_req_send_is_explained(server):
    # From tpcb-like:10 on, the commands were pushed one column right; and req/send
    # showed 0.1 with no word that an op here is a transaction of several statements.
    drop_pgbench_tables(server)
    rc, out, err, res = run_pg(server, ['--builtin', 'tpcb-like', '--init', '--greenlets',
                                        '4', '--ops', '200', '--per-statement'])
    assert rc == 0, err
    lines = out.split('\n')
    at = lines.index('tpcb-like: per statement, latency in ms (simple protocol):')
    header, rows = lines[at + 1], lines[at + 2:at + 13]
    assert [r.split()[6] for r in rows] == ['tpcb-like:%d' % i for i in range(1, 12)]
    column = header.index('command')
    assert all(r[column - 2:column] == '  ' and r[column] != ' ' for r in rows), \
        '\n'.join([header] + rows)
    (phase,) = res['phases']
    per_send = phase['batching']['requests_per_send']
    assert 0 < per_send < 0.5     # several sends per transaction on psycopg2
    assert ('tpcb-like: req/send counts transactions (script runs) per send call: %.2f, '
            '%.1f sends per transaction' % (per_send, 1.0 / per_send)) in lines


# A REPEATABLE READ transaction on one row that sleeps between its snapshot and its
# update: whenever another commits in between, this one fails with a serialization
# failure, on any machine, however fast or busy.
HOT_ROW = u"""\\set delta random(-5, 5)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT n FROM hot WHERE id = 1;
SELECT pg_sleep(0.002);
UPDATE hot SET n = n + :delta WHERE id = 1;
UPDATE hot SET total = total + 1 WHERE id = 1;
END;
"""


@pytest.mark.parametrize('connector', CONNECTORS)
def test_serialization_failures_are_retried_to_none_with_max_tries(server, tmpdir, connector):
    q(server, 'DROP TABLE IF EXISTS hot; CREATE TABLE hot (id int PRIMARY KEY, n int, '
              'total int); INSERT INTO hot VALUES (1, 0, 0)')
    path = write(tmpdir, 'hot.sql', HOT_ROW)
    # 4 clients, each on a connection of its own. Which try wins is not fair (the one
    # whose reply the loop reads first tends to win again), so a client can lose many
    # times in a row: --max-tries 0 retries without a count, bounded by the op timeout.
    load = ['--script', path, '--greenlets', '4', '--pool-size', '4', '--ops', '1000',
            '--connector', connector, '--timeout', '60']
    rc, out, err, res = run_pg(server, load + ['--max-tries', '0', '--per-statement'])
    assert rc == 0, (err, res and res['phases'][0]['error_samples'])
    (phase,) = res['phases']
    sc = phase['script']
    assert phase['ok'] == 1000 and phase['failed'] == 0, phase['errors']
    assert sc['retried'] > 0 and sc['retries'] >= sc['retried'], sc
    assert sum(r['retries'] for r in sc['statements']) == sc['retries']
    assert q(server, 'SELECT total FROM hot') == [(1000,)]     # each committed exactly once
    assert 'transactions retried' in out
    # --max-tries 2: a transaction is tried twice at most, then fails as it failed
    rc, out, err, res = run_pg(server, load + ['--max-tries', '2'])
    (phase,) = res['phases']
    sc = phase['script']
    assert sc['retries'] == sc['retried'] > 0, sc      # one retry each, no more
    assert set(phase['errors']) <= set(['server:40001']), phase['errors']
    assert rc == (1 if phase['failed'] else 0), err
    ok2 = phase['ok']
    assert q(server, 'SELECT total FROM hot') == [(1000 + ok2,)]
    # without retries the same contention fails, each failure a serialization failure
    rc, out, err, res = run_pg(server, load)
    assert rc == 1, err
    (phase,) = res['phases']
    sc = phase['script']
    assert phase['failed'] > 0 and sc['retries'] == 0
    assert sc['failures'] == {'serialization': phase['failed'], 'deadlock': 0, 'other': 0}
    assert phase['errors'] == {'server:40001': phase['failed']}
    assert q(server, 'SELECT total FROM hot') == [(1000 + ok2 + phase['ok'],)]


LANGUAGE = u"""-- the language's commands, each leaving a trace in the row it writes
\\set a 7 * 6
\\set d abs(-1) * 0 + :a / 4.0
\\set g random_gaussian(1, 10, 2.5)
\\set z random_zipfian(1, 100, 1.5)
\\set e random_exponential(1, 10, 2.0)
\\set p permute(3, 10)
\\set h hash(:a)
SELECT :a AS got, 2 * :a AS twice \\gset r_
\\if :r_got = 42 AND :r_twice = 84
  \\set branch 1
\\elif :a IS NULL
  \\set branch 2
\\else
  \\set branch 3
\\endif
\\sleep 1 ms
\\setshell shelled echo 5
SELECT 1 \\; SELECT :shelled AS s5 \\aset
\\startpipeline
INSERT INTO trace (client, a, branch, s5, word, g, z, e, p)
    VALUES (:client_id, :a, :branch, :s5, :word, :g, :z, :e, :p);
\\endpipeline
"""


@pytest.mark.parametrize('connector', CONNECTORS)
def test_the_language_end_to_end(server, tmpdir, connector):
    q(server, 'DROP TABLE IF EXISTS trace; CREATE TABLE trace (client int, a int, branch int, '
              's5 int, word text, g int, z int, e int, p int)')
    text = LANGUAGE
    if connector == 'pipelined':   # a batch holds no \aset: the same trace without it
        text = text.replace('SELECT 1 \\; SELECT :shelled AS s5 \\aset',
                            'SELECT :shelled AS s5 \\gset')
    path = write(tmpdir, 'lang.sql', text)
    rc, out, err, res = run_pg(server, ['--script', path, '--greenlets', '4', '--ops', '200',
                                        '--define', "word='hello'",
                                        '--connector', connector])
    assert rc == 0, err
    assert res['phases'][0]['ok'] == 200
    rows = q(server, 'SELECT DISTINCT a, branch, s5, word FROM trace')
    assert rows == [(42, 1, 5, 'hello')]
    assert q(server, 'SELECT count(DISTINCT client), min(client), max(client) FROM trace') == \
        [(4, 0, 3)]
    ((g0, g1, z0, z1, e0, e1, p0, p1),) = q(
        server, 'SELECT min(g), max(g), min(z), max(z), min(e), max(e), min(p), max(p) '
                'FROM trace')
    assert 1 <= g0 <= g1 <= 10 and 1 <= z0 <= z1 <= 100 and 1 <= e0 <= e1 <= 10
    assert p0 == p1 and 0 <= p0 < 10          # one permutation for one seed


def test_the_same_seed_draws_the_same_keys(server, tmpdir):
    path = write(tmpdir, 'draws.sql', u'\\set k random(1, 1000000)\n'
                                      u'INSERT INTO draws VALUES (:client_id, :k);\n')
    seen = []
    for _ in range(2):
        q(server, 'DROP TABLE IF EXISTS draws; CREATE TABLE draws (c int, k int)')
        rc, out, err, res = run_pg(server, ['--script', path, '--greenlets', '1', '--ops', '50',
                                            '--seed', '9'])
        assert rc == 0, err
        seen.append(q(server, 'SELECT k FROM draws ORDER BY ctid'))
    assert seen[0] == seen[1] and len(set(seen[0])) > 45


def test_the_transaction_log_is_pgbench_format(server, tmpdir):
    prefix = str(tmpdir.join('txlog'))
    rc, out, err, res = run_pg(server, ['--builtin', 'select-only', '--init', '--greenlets',
                                        '3', '--ops', '600', '--tx-log', prefix,
                                        '--max-tries', '2'])
    assert rc == 0, err
    (path,) = [str(p) for p in tmpdir.listdir() if p.basename.startswith('txlog.')]
    lines = open(path).read().splitlines()
    assert len(lines) == 600
    numbers = {}
    for line in lines:
        client, number, latency, script_no, epoch, us, retries = line.split()
        assert 0 <= int(client) < 3 and script_no == '0' and retries == '0'
        assert int(latency) > 0 and len(us) == 6 and int(epoch) > 1.7e9
        numbers.setdefault(client, []).append(int(number))
    assert all(ns == list(range(1, len(ns) + 1)) for ns in numbers.values())
    # --sampling-rate keeps about that fraction
    prefix = str(tmpdir.join('sampled'))
    rc, out, err, res = run_pg(server, ['--builtin', 'select-only', '--greenlets', '3',
                                        '--ops', '2000', '--tx-log', prefix,
                                        '--sampling-rate', '0.1'])
    assert rc == 0, err
    (path,) = [str(p) for p in tmpdir.listdir() if p.basename.startswith('sampled.')]
    assert 100 < len(open(path).read().splitlines()) < 320


def test_a_connection_per_transaction(server):
    rc, out, err, res = run_pg(server, ['--builtin', 'select-only', '--init', '--greenlets', '4',
                                        '--ops', '300', '--connect-per-op'])
    assert rc == 0, err
    (phase,) = res['phases']
    assert phase['ok'] == 300
    assert phase['pool']['connects'] >= 300     # a login per run


def test_scripts_in_processes_merge_their_figures(server):
    drop_pgbench_tables(server)
    rc, out, err, res = run_pg(server, ['--builtin', 'tpcb-like', '--init', '--processes', '2',
                                        '--greenlets', '8', '--ops', '1000', '--per-statement'])
    assert rc == 0, err
    result_schema.validate(res)
    (phase,) = res['phases']
    assert phase['ok'] == 1000 and consistent(server) == 1000
    assert all(r['count'] == 1000 for r in phase['script']['statements'])


@pytest.mark.parametrize('text,words', [
    (u'\\set aid random(1, 10\nSELECT 1;\n', ['line 1']),
    (u'-- c\n\\set n nosuch(1)\nSELECT 1;\n', ['line 2', 'nosuch']),
    (u'SELECT :missing;\n', ['line 1', ':missing', 'never set']),
    (u'\\if 1\nSELECT 1;\n', ['line 1', 'endif']),
    (u'\\endif\n', ['line 1']),
    (u'\\nosuch 1\nSELECT 1;\n', ['line 1', 'nosuch']),
    (u'-- nothing\n', ['no']),
    (u'\\set a random(1)\nSELECT 1;\n', ['line 1', 'random']),
    (u'\\set z random_zipfian(1, 100, 1.0)\nSELECT 1;\n', ['line 1', 'zipfian parameter']),
    (u'\\set z 1 / 0\nSELECT 1;\n', ['line 1', 'division by zero']),
    (u'BEGIN;\nSELECT 1;\n', ['line 1', 'BEGIN with no END']),
])
def test_bad_scripts_name_file_and_line(tmpdir, text, words):
    path = write(tmpdir, 'bad.sql', text)
    rc, out, err, res = run_cli(['--backend', 'postgres', '--script', path, '--ops', '10'])
    assert rc == 2, err
    assert err.count('\n') == 1 and 'Traceback' not in err and path in err, err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize('text,words', [
    (u'BEGIN;\nSELECT 1 \\gset\nEND;\n', ['line 2', '\\gset']),
    (u'BEGIN;\n\\sleep 1 ms\nEND;\n', ['line 2', '\\sleep']),
    (u'BEGIN;\nSELECT 1;\n', ['line 1', 'no END']),
    (u'SELECT 1;\nROLLBACK;\n', ['line 2', 'ROLLBACK']),
])
def test_what_a_batch_cannot_hold_is_refused_before_the_run(server, tmpdir, text, words):
    path = write(tmpdir, 'nobatch.sql', text)
    rc, out, err, res = run_pg(server, ['--script', path, '--connector', 'pipelined',
                                        '--ops', '10'])
    assert rc == 2, err
    assert err.count('\n') == 1 and 'Traceback' not in err and path in err, err
    for w in words:
        assert w in err, err


def test_a_runtime_error_names_the_script_line(server, tmpdir):
    path = write(tmpdir, 'zero.sql', u'\\set z 0\n\\set bad 1 / :z\nSELECT :bad;\n')
    rc, out, err, res = run_pg(server, ['--script', path, '--ops', '20'])
    assert rc == 1, err
    (phase,) = res['phases']
    assert phase['errors'] == {'script': 20}
    assert 'line 2' in phase['error_samples']['script'] and path in \
        phase['error_samples']['script']
    assert phase['script']['failures']['other'] == 20


VALUES = u"""\\set i 5
\\set big 3000000000
\\set d 1.5 * 1
\\set b 1 = 1
\\set n NULL
INSERT INTO vals VALUES (:i, :big, :d, :b, :n::text, :word || '100%');
INSERT INTO vals (i, big, t) VALUES (:i, :big, '100%');
"""


@pytest.mark.parametrize('connector,protocol', [
    ('psycopg2', 'prepared'), ('psycopg2', 'extended'), ('pipelined', 'prepared'),
    ('pipelined', 'extended')])
def test_values_of_every_type_reach_the_server_as_their_text(server, tmpdir, connector,
                                                             protocol):
    # A run writes int values into its statements itself and leaves the others (double,
    # boolean, NULL, text) to the driver's quoting: both as pgbench sends them, as text
    # (NULL's is the word NULL, as pgbench's).
    q(server, 'DROP TABLE IF EXISTS vals; CREATE TABLE vals (i int, big bigint, d float8, '
              'b boolean, n text, t text)')
    path = write(tmpdir, 'vals.sql', VALUES)
    rc, out, err, res = run_pg(server, ['--script', path, '--ops', '6', '--greenlets', '2',
                                        '--protocol', protocol, '--connector', connector,
                                        '--define', "word=it's"])
    assert rc == 0, (err, res and res['phases'][0]['error_samples'])
    assert q(server, 'SELECT DISTINCT i, big, d, b, n, t FROM vals ORDER BY t') == [
        (5, 3000000000, None, None, None, '100%'),
        (5, 3000000000, 1.5, True, 'NULL', "it's100%")]
    assert q(server, 'SELECT count(*) FROM vals') == [(12,)]


@pytest.mark.parametrize('protocol', ['simple', 'prepared'])
def test_an_undefined_variable_in_sql_names_its_line(server, tmpdir, protocol):
    # (set in a branch never taken: a variable never set at all is refused before the run)
    path = write(tmpdir, 'undefined.sql', u'\\set a 1\n\\if :a = 2\n\\set nope 1\n\\endif\n'
                                          u'\\set b :a + 1\nSELECT :b::int, :nope::int;\n')
    rc, out, err, res = run_pg(server, ['--script', path, '--ops', '5', '--protocol', protocol])
    assert rc == 1, err
    (phase,) = res['phases']
    if protocol == 'simple':      # pgbench's simple protocol leaves an unknown :name as it is
        assert list(phase['errors']) == ['server:42601'], phase['errors']
    else:
        assert phase['errors'] == {'script': 5}
        assert 'line 6: undefined variable "nope"' in phase['error_samples']['script']


PIPELINE = u"""\\startpipeline
INSERT INTO pipe VALUES (1);
\\syncpipeline
INSERT INTO pipe VALUES (2);
SELECT 1 / (random() * 0)::int;
\\endpipeline
"""


@pytest.mark.parametrize('connector', CONNECTORS)
def test_a_pipeline_is_a_batch_on_the_pipelined_connector(server, tmpdir, connector):
    # A failure in a batch rolls the whole batch back (the pipelined connector sends a
    # \startpipeline block as batches, one per \syncpipeline); psycopg2 has no pipeline
    # mode: each statement is its own.
    q(server, 'DROP TABLE IF EXISTS pipe; CREATE TABLE pipe (n int)')
    path = write(tmpdir, 'pipe.sql', PIPELINE)
    rc, out, err, res = run_pg(server, ['--script', path, '--ops', '3', '--greenlets', '1',
                                        '--connector', connector])
    assert rc == 1, err
    (phase,) = res['phases']
    assert phase['errors'] == {'server:22012': 3}, phase['errors']
    kept = q(server, 'SELECT n, count(*) FROM pipe GROUP BY n ORDER BY n')
    assert kept == ([(1, 3)] if connector == 'pipelined' else [(1, 3), (2, 3)])
