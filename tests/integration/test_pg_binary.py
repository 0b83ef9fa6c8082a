"""Binary results and lazy rows on the pipelined connection against a real private
server: every type it reads in binary (and some it reads as text) decodes to the values
psycopg2 gives for the same rows; ``--connector pipelined --workload toolbench`` runs
lazy and ``--decode full``, its checksums the psycopg2 connector's; relational makes
and reads its families; errors and a reconnect on a lazy connection."""
from __future__ import absolute_import, division, print_function

import time

import gevent
import psycopg2
import psycopg2.extensions
import pytest

from gloaddriver import errors
from gloaddriver.backends.postgres import row_values
from gloaddriver.backends.postgres.pipelined import PipelinedConnection
from gloaddriver.backends.postgres.replies import Rows
from gloaddriver.backends.postgres.server import PostgresServer
from gloaddriver.report import dashboard
from tests.integration.conftest import assert_accounted, run_cli

# (type, a value as SQL): one column each, and a row of NULLs.
COLUMNS = [
    ('int2', '-32768'), ('int4', '2147483647'), ('int8', '-9223372036854775808'),
    ('oid', '4294967295'), ('float8', '0.1'), ('float4', '1.1'), ('bool', 'true'),
    ('bytea', "'\\x00ff41'::bytea"), ('uuid', "'12345678-1234-5678-1234-567812345678'"),
    ('date', "'1999-12-31'"), ('timestamp', "'2026-11-26 10:11:12.345678'"),
    ('timestamptz', "'2026-11-26 10:11:12.345678+05:30'"),
    ('timestamp', "'infinity'"), ('timestamptz', "'-infinity'"), ('date', "'infinity'"),
    ('int4[]', "'{1,NULL,3}'"), ('int4[]', "'{{1,2},{3,4}}'"), ('int8[]', "'{}'"),
    ('int2[]', "'{7}'"), ('float8[]', "'{1.5,NULL}'"),
    ('numeric', '2.50'), ('text', "'caf\u00e9'"), ('name', "'pg_type'"), ('"char"', "'c'"),
    ('text[]', "'{a,\"b c\"}'"), ('json', "'{\"a\": [1, 2]}'"), ('interval', "'1 day 2 hours'"),
]
SELECT = 'SELECT %s FROM gl_types ORDER BY k' % ', '.join(
    'c%d' % i for i in range(len(COLUMNS)))


@pytest.fixture(scope='module')
def pg():
    server = PostgresServer().start()
    conn = psycopg2.connect(server.dsn)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute('SET TimeZone = \'Europe/Berlin\'')
    cur.execute('CREATE TABLE gl_types (k int, %s)' % ', '.join(
        'c%d %s' % (i, t) for i, (t, _v) in enumerate(COLUMNS)))
    cur.execute(u'INSERT INTO gl_types VALUES (1, %s), (2, %s)' % (
        ', '.join(v for _t, v in COLUMNS), ', '.join('NULL' for _c in COLUMNS)))
    conn.close()
    yield server
    server.stop()


def psycopg2_rows(pg, sql):
    psycopg2.extensions.register_type(psycopg2.extensions.UNICODE)    # as the product does
    psycopg2.extensions.register_type(psycopg2.extensions.UNICODEARRAY)
    conn = psycopg2.connect(pg.dsn)
    try:
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize('reader', ['compiled', 'python'])
def test_every_column_decodes_to_psycopg2s_value(pg, reader, monkeypatch):
    monkeypatch.setattr(row_values, 'decode_rows', getattr(row_values, 'decode_rows_' + reader))
    assert row_values.decode_rows is not None, 'the compiled reader is not built here'
    want = psycopg2_rows(pg, SELECT)
    conn = PipelinedConnection('127.0.0.1', pg.port, pg.user, pg.password, pg.database,
                               statements=[('types', SELECT)], lazy_rows=True).connect()
    try:
        got = conn.rows(b'types')
        assert isinstance(got, Rows) and len(got) == 2 and got.size > 0
        assert got._rows is None             # counted, not decoded
        rows = list(got)
    finally:
        conn.close()
    assert len(rows) == len(want) == 2
    for (t, v), a, b in zip(COLUMNS, rows[0], want[0]):
        if t == 'bytea':
            a, b = bytes(a), bytes(b)
        assert a == b, (t, v, a, b)
    assert rows[1] == want[1] == tuple(None for _c in COLUMNS)


def test_toolbench_on_the_pipelined_connector_counts_rows_and_matches_psycopg2(pg):
    dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s password=%s sslmode=disable' % (
        pg.port, pg.database, pg.user, pg.password)
    runs = {}
    for extra, env in ((['--connector', 'psycopg2'], None), (['--connector', 'pipelined'], None),
                       (['--connector', 'pipelined', '--decode', 'full'], None),
                       (['--connector', 'pipelined', '--decode', 'full', 'python'],
                        {'GLOADDRIVER_PURE_PYTHON': '1'})):
        rc, out, err, res = run_cli(['--backend', 'postgres', '--dsn', dsn, '--init',
                                     '--workload', 'toolbench', '--ops', '40', '--greenlets', '4',
                                     '--checksum'] + extra[:4], env=env)
        assert rc == 0, err
        assert_accounted(res)
        runs[' '.join(extra[1:])] = res
    sums = dict((k, [p['checksum'] for p in r['phases']]) for k, r in runs.items())
    assert sums['psycopg2'] == sums['pipelined'] == sums['pipelined --decode full'] == \
        sums['pipelined --decode full python'], sums
    assert runs['psycopg2']['manifest']['decode'] == 'full'
    assert runs['pipelined --decode full']['manifest']['row_reader'] == 'compiled'
    assert runs['pipelined --decode full python']['manifest']['row_reader'] == 'python'
    for key, decode in (('pipelined', 'lazy'), ('pipelined --decode full', 'full')):
        res = runs[key]
        assert res['manifest']['decode'] == decode
        rows = dict((p['name'], p['rows']) for p in res['phases'])
        assert rows['series'] == 40 * 1000 and rows['bytea'] == rows['arrays'] == 40 * 100
        assert rows['pg_type'] > 40 * 100
        for p in res['phases']:
            assert p['result_bytes'] > p['rows'] * 7     # a DataRow's header alone is 7
        bytea = [p for p in res['phases'] if p['name'] == 'bytea'][0]
        assert bytea['result_bytes'] > 40 * 100 * 1024
        # the page (live and offline) shows them in the phase's notes
        notes = [n['text'] for n in dashboard.phase_view(bytea, 0.0)['notes']]
        assert [n for n in notes if n.startswith('bytea: 4,000 rows read') and 'rows/s' in n and
                'MB/s' in n], notes


def test_lazy_rows_without_checksum_are_not_decoded(pg):
    rc, out, err, res = run_cli(['--backend', 'postgres', '--dsn',
                                 'host=127.0.0.1 port=%d dbname=%s user=%s password=%s '
                                 'sslmode=disable' % (pg.port, pg.database, pg.user, pg.password),
                                 '--init', '--workload', 'toolbench', '--phases', 'series',
                                 '--ops', '50', '--connector', 'pipelined'])
    assert rc == 0, err
    assert_accounted(res)
    assert 'rows decoded only when read' in out
    assert 'rows/s' in out and res['phases'][0]['rows'] == 50 * 1000


@pytest.mark.parametrize('decode', ['lazy', 'full'])
def test_relational_on_the_pipelined_connector_makes_and_reads_families(pg, decode):
    dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s password=%s sslmode=disable' % (
        pg.port, pg.database, pg.user, pg.password)
    before = psycopg2_rows(pg, 'SELECT to_regclass(\'rel_parent\')')[0][0] and \
        psycopg2_rows(pg, 'SELECT count(*) FROM rel_parent')[0][0] or 0
    rc, out, err, res = run_cli(['--backend', 'postgres', '--dsn', dsn, '--init', '--workload',
                                 'relational', '--ops', '400', '--greenlets', '8',
                                 '--connector', 'pipelined', '--decode', decode, '--seed', '3'])
    assert rc == 0, err
    assert_accounted(res)
    [mix] = res['phases']
    creates = mix['ops']['create']['ok']
    assert creates > 0 and mix['ok'] == 400
    parents = psycopg2_rows(pg, 'SELECT count(*) FROM rel_parent')[0][0]
    assert parents - before == 3 * creates
    # a create returns its 5 children's parent ids; a read up to 10 families' rows
    assert mix['rows'] >= 5 * creates + (400 - creates)
    assert res['manifest']['decode'] == decode


def test_a_lazy_connection_describes_its_statements_again_after_a_reconnect(pg):
    conn = PipelinedConnection('127.0.0.1', pg.port, pg.user, pg.password, pg.database,
                               statements=[('sq', 'SELECT i, i::float8 / 2 FROM '
                                                  'generate_series(1, $1::int) AS i'),
                                           ('div', 'SELECT 1 / $1::int')],
                               lazy_rows=True).connect()
    other = PipelinedConnection('127.0.0.1', pg.port, pg.user, pg.password,
                                pg.database).connect()
    try:
        assert list(conn.rows(b'sq', (3,))) == [(1, 0.5), (2, 1.0), (3, 1.5)]
        # a server error fails its own statement only, as on a text connection
        with pytest.raises(errors.ServerError) as e:
            conn.rows(b'div', (0,))
        assert e.value.code == '22012'
        assert len(conn.rows(b'sq', (50,))) == 50
        pid = int(conn.query('SELECT pg_backend_pid()')[0][0])
        other.query('SELECT pg_terminate_backend($1)', (pid,))
        deadline = time.time() + 5
        while time.time() < deadline:
            try:
                got = conn.rows(b'sq', (2,))
                break
            except errors.OpError:
                gevent.sleep(0.05)
        assert conn.reconnects == 1
        assert list(got) == [(1, 0.5), (2, 1.0)]       # binary, decoded as before
    finally:
        conn.close()
        other.close()


@pytest.mark.parametrize('lazy', [False, True])
def test_number_parameters_go_binary_and_others_as_the_server_reads_text(pg, lazy):
    conn = PipelinedConnection('127.0.0.1', pg.port, pg.user, pg.password, pg.database,
                               statements=[('p', 'SELECT $1::int8 + 1, $2::int4 * 2, '
                                                 '$3::float8 / 2, $4::text')],
                               lazy_rows=lazy).connect()
    try:
        assert conn._params[b'p'] is not None       # its numbers are bound binary

        def run(*params):
            r = conn.rows(b'p', params) if lazy else conn.execute(b'p', params)
            return tuple(r[0])
        want = (6, 14, 0.75, u'x') if lazy else (u'6', u'14', u'0.75', u'x')
        assert run(5, 7, 1.5, u'x') == want
        assert run(u'5', 7, 1.5, u'x') == want      # a string: the whole Bind as text
        assert run(5, 7, 1.5, u'x') == want
        assert run(None, 7, 1.5, u'x') == (None,) + want[1:]     # NULL in a binary Bind
        for params in ((2 ** 63, 7, 1.5, u'x'), (5, 2 ** 31, 1.5, u'x')):
            with pytest.raises(errors.ServerError) as e:
                run(*params)
            assert e.value.code == '22003'          # out of range, as the server says
        assert run(5, 7, 1.5, u'x') == want
    finally:
        conn.close()
