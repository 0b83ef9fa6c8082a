"""The user's own workload, four ways, against real servers set up by the shipped
examples: --call/--eval/--sql (Tarantool), --script (PostgreSQL), --workload-file
(both). Every run is accounted for, and the server's own counters agree with the
client's counts."""
from __future__ import absolute_import, division, print_function

import os
import time

import pytest

from gloaddriver import workload
from gloaddriver.backends.postgres.server import PostgresServer
from gloaddriver.backends.tarantool.server import TarantoolServer
from tests.integration.conftest import ROOT, assert_accounted, connect, run_cli
from tests import result_schema

EXAMPLES = os.path.join(ROOT, 'examples')


def example(name):
    return os.path.join(EXAMPLES, name)


@pytest.fixture(scope='module')
def orders():
    server = TarantoolServer(init_file=example('orders.lua')).start()
    yield server
    server.stop()


@pytest.fixture(scope='module')
def bank():
    server = PostgresServer(init_file=example('bank.sql')).start()
    yield server
    server.stop()


def box_stat(server):
    conn = connect(server)
    try:
        (stat,) = conn.eval(u"""local s = box.stat()
            return {call = s.CALL.total, eval = s.EVAL.total, execute = s.EXECUTE.total,
                    select = s.SELECT.total, prepare = s.PREPARE.total}""")
        return stat
    finally:
        conn.close()


def tnt_eval(server, expr, *args):
    conn = connect(server)
    try:
        return conn.eval(expr, *args)
    finally:
        conn.close()


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_call_a_stored_procedure(orders, connector):
    before = box_stat(orders)
    rc, out, err, res = run_cli(['--connector', connector, '--greenlets', '20', '--ops', '3000',
                                 '--call', 'place_order',
                                 '--args', '[{key}, "customer-{random:1:50}", {random:1:5}]'],
                                server=orders)
    assert rc == 0, err
    (phase,) = res['phases']
    assert_accounted(res)
    assert (phase['name'], phase['ok'], phase['misses']) == ('call', 3000, 0)
    calls = box_stat(orders)['call'] - before['call']
    assert calls == phase['attempted'] == 3000    # the server counted every one
    # what the procedure stored is what the template sent: key, customer-N, qty
    rows = tnt_eval(orders, u"return box.space.orders:select({2999}, "
                            u"{iterator = 'LE', limit = 3})")[0]
    assert [r[0] for r in rows] == [2999, 2998, 2997]
    for r in rows:
        assert r[1].startswith(u'customer-') and 1 <= int(r[1].split(u'-')[1]) <= 50
        assert 1 <= r[2] <= 5 and r[3] == u'new'
    assert res['manifest']['request'] == {'kind': 'call', 'target': 'place_order',
                                          'args': '[{key}, "customer-{random:1:50}", '
                                                  '{random:1:5}]'}


def test_eval_counts_and_server_errors_by_code(orders):
    before = box_stat(orders)
    rc, out, err, res = run_cli(['--ops', '500', '--eval', 'return ...',
                                 '--args', '[{key}, "{value}"]', '--value-size', '16'],
                                server=orders)
    assert rc == 0, err
    assert res['phases'][0]['ok'] == 500
    evals = box_stat(orders)['eval'] - before['eval']
    # the run's own server-metrics sampler evals too, a few times per phase
    assert 500 <= evals <= 520, evals
    # (a function that does not exist is refused before the run: see below)
    rc, out, err, res = run_cli(['--ops', '200', '--call', 'error', '--args',
                                 '["no_such_procedure"]'], server=orders)
    assert rc == 1
    (phase,) = res['phases']
    assert_accounted(res)
    assert phase['errors'] == {'server:32': 200}     # ER_PROC_LUA, counted by code
    assert "no_such_procedure" in out and 'Traceback' not in err


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_sql_over_iproto(orders, connector):
    before = box_stat(orders)
    rc, out, err, res = run_cli(['--connector', connector, '--ops', '2000', '--greenlets', '10',
                                 '--sql', 'INSERT OR REPLACE INTO customers VALUES (?, ?, ?)',
                                 '--args', '[{key}, "{string:12}", {random:1:100}]'],
                                server=orders)
    assert rc == 0, err
    assert_accounted(res)
    assert res['phases'][0]['ok'] == 2000
    after = box_stat(orders)
    assert after['execute'] - before['execute'] == 2000
    (n,) = tnt_eval(orders, u"return box.execute('SELECT count(*) FROM customers').rows[1][1]")
    assert n >= 2000
    if connector == 'buffered':
        # prepared once per connection, then executed by id
        assert after['prepare'] - before['prepare'] == 1
        assert 'prepared' in res['manifest']['connector_detail']
    # a query that finds no row is a miss, not an error
    rc, out, err, res = run_cli(['--connector', connector, '--ops', '300',
                                 '--sql', 'SELECT * FROM customers WHERE id = ?',
                                 '--args', '[{key}]', '--keys', '4000'], server=orders)
    assert rc == 0, err
    (phase,) = res['phases']
    assert phase['ok'] == 300 and phase['misses'] == 0   # keys 0..299 exist
    rc, out, err, res = run_cli(['--connector', connector, '--ops', '300',
                                 '--sql', 'SELECT * FROM customers WHERE id = ? + 100000',
                                 '--args', '[{key}]'], server=orders)
    assert rc == 0, err
    assert res['phases'][0]['misses'] == 300


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_python_workload_file_on_tarantool(orders, connector):
    before = box_stat(orders)
    rc, out, err, res = run_cli(['--connector', connector, '--greenlets', '20', '--ops', '4000',
                                 '--workload-file', example('tarantool_workload.py')],
                                server=orders)
    assert rc == 0, err
    assert_accounted(res)
    (phase,) = res['phases']
    ops = phase['ops']
    assert sorted(ops) == ['browse', 'place', 'ship']
    assert phase['ok'] == 4000 and phase['misses'] == 0
    # WEIGHTS 6:3:1 over 4000 seeded draws
    assert abs(ops['browse']['attempted'] / 4000.0 - 0.6) < 0.04
    after = box_stat(orders)
    # setup() replaced 1000 orders with the connection's replace, not a call: the calls
    # on the server are exactly the place and ship ops.
    assert after['call'] - before['call'] == ops['place']['attempted'] + ops['ship']['attempted']
    assert after['select'] - before['select'] >= ops['browse']['attempted']
    assert res['manifest']['workload_file'].endswith('tarantool_workload.py')


def test_spawned_server_runs_the_users_init(tmpdir):
    rc, out, err, res = run_cli(['--spawn', '--spawn-init', example('orders.lua'),
                                 '--call', 'place_order', '--args', '[{key}, "c", 1]',
                                 '--ops', '1000'])
    assert rc == 0, err
    assert res['phases'][0]['ok'] == 1000
    assert res['manifest']['server']['init_file'] == example('orders.lua')


# -- PostgreSQL ----------------------------------------------------------------------

def pg_query(server, sql):
    import psycopg2
    conn = psycopg2.connect(server.dsn)
    try:
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchall()
    finally:
        conn.close()


def run_pg(server, args):
    dsn = 'host=127.0.0.1 port=%d dbname=%s user=%s sslmode=disable' % (
        server.port, server.database, server.user)
    return run_cli(['--backend', 'postgres', '--dsn', dsn] + args,
                   env={'GLOADDRIVER_PASSWORD': server.password})


def inserted_into_history(server, expected, timeout=10.0):
    """n_tup_ins of history as the server counts it (flushed about once a second)."""
    deadline = time.time() + timeout
    while True:
        ((n,),) = pg_query(server, "SELECT n_tup_ins FROM pg_stat_user_tables "
                                   "WHERE relname = 'history'")
        if n >= expected or time.time() > deadline:
            return n
        time.sleep(0.2)


@pytest.mark.parametrize('prepared', [False, True])
def test_pgbench_style_scripts(bank, prepared):
    ((before,),) = pg_query(bank, 'SELECT count(*) FROM history')
    stat0 = inserted_into_history(bank, 0)
    args = ['--greenlets', '8', '--ops', '2000', '--script',
            '%s@1,%s@4' % (example('transfer.sql'), example('balance.sql'))]
    rc, out, err, res = run_pg(bank, args + (['--prepared'] if prepared else []))
    assert rc == 0, err
    assert_accounted(res)
    (phase,) = res['phases']
    assert phase['name'] == 'mix' and sorted(phase['ops']) == ['balance', 'transfer']
    transfers = phase['ops']['transfer']['ok']
    assert abs(transfers / 2000.0 - 0.2) < 0.04      # weights 1:4
    ((after,),) = pg_query(bank, 'SELECT count(*) FROM history')
    assert after - before == transfers               # one history row per transfer
    # the server's own counter of inserted rows agrees
    assert inserted_into_history(bank, stat0 + transfers) - stat0 == transfers
    ((total,),) = pg_query(bank, 'SELECT sum(abalance) FROM accounts')
    ((logged,),) = pg_query(bank, 'SELECT coalesce(sum(delta), 0) FROM history')
    assert total == logged      # every transfer committed whole: balances match the log


@pytest.mark.parametrize('connector', ['psycopg2', 'pipelined'])
def test_python_workload_file_on_postgres(bank, connector):
    ((before,),) = pg_query(bank, 'SELECT count(*) FROM history')
    rc, out, err, res = run_pg(bank, ['--greenlets', '10', '--ops', '3000', '--workload-file',
                                      example('postgres_workload.py'), '--connector', connector])
    assert rc == 0, err
    assert_accounted(res)
    assert res['manifest']['connector'] == connector
    ops = res['phases'][0]['ops']
    assert sorted(ops) == ['balance', 'transfer']
    assert ops['balance']['misses'] == 0
    ((after,),) = pg_query(bank, 'SELECT count(*) FROM history')
    assert after - before == 2 * ops['transfer']['ok']   # two history rows per transfer
    ((total,),) = pg_query(bank, 'SELECT sum(abalance) FROM accounts')
    ((logged,),) = pg_query(bank, 'SELECT coalesce(sum(delta), 0) FROM history')
    assert total == logged


@pytest.mark.parametrize('connector', ['psycopg2', 'pipelined'])
def test_sql_on_postgres(bank, connector):
    ((before,),) = pg_query(bank, 'SELECT count(*) FROM history')
    rc, out, err, res = run_pg(bank, ['--connector', connector, '--ops', '300', '--greenlets',
                                      '4', '--sql', 'INSERT INTO history (aid, delta) '
                                      'VALUES (?, ?)', '--args', '[{key}, 7]'])
    assert rc == 0, err
    assert_accounted(res)
    assert [(p['name'], p['ok']) for p in res['phases']] == [('sql', 300)]
    assert res['manifest']['request'] == {'kind': 'sql', 'args': '[{key}, 7]', 'target':
                                          'INSERT INTO history (aid, delta) VALUES (?, ?)'}
    ((after, sevens),) = pg_query(bank, 'SELECT count(*), count(*) FILTER (WHERE delta = 7) '
                                        'FROM history')
    assert after - before == 300 and sevens >= 300
    # $n in any order, a % and a ? inside strings (text, not placeholders), rows read
    rc, out, err, res = run_pg(bank, ['--connector', connector, '--ops', '200', '--sql',
                                      "SELECT abalance, '50%?', $2::text FROM accounts "
                                      "WHERE aid = $1", '--args', '[{random:1:100}, "k{key}"]',
                                      '--checksum'])
    assert rc == 0, err
    (phase,) = res['phases']
    assert phase['ok'] == 200 and phase['misses'] == 0
    if connector == 'pipelined':
        assert phase['rows'] == 200 and 'rows/s' in out


@pytest.mark.parametrize('connector', ['psycopg2', 'pipelined'])
def test_sql_the_server_cannot_run_fails_before_the_first_op(bank, connector):
    rc, out, err, res = run_pg(bank, ['--connector', connector, '--ops', '10', '--sql',
                                      'SELEC aid FROM accounts'])
    assert rc == 3 and res is None, err
    assert err.count('\n') == 1 and 'SELEC' in err and 'Traceback' not in err, err


# -- bad input: one line naming the file, line or placeholder; exit 2 -----------------

def write(tmpdir, name, text):
    path = tmpdir.join(name)
    path.write(text)
    return str(path)


@pytest.mark.parametrize('args,words', [
    (['--call', 'f', '--args', '[{kee}]'], ['{kee}', 'unknown placeholder']),
    (['--call', 'f', '--args', '[{random:5:1}]'], ['{random:5:1}', 'A <= B']),
    (['--call', 'f', '--args', '[{key}'], ['--args is not JSON']),
    (['--call', 'f', '--sql', 'SELECT 1'], ['exclude each other']),
    (['--args', '[1]'], ['--args goes with']),
    (['--call', 'f', '--phases', 'insert'], ['one phase']),
    (['--backend', 'postgres', '--call', 'f'], ['--call is for --backend tarantool']),
    (['--script', 'x.sql'], ['--script is for --backend postgres']),
    (['--sql', 'SELECT * FROM t WHERE id = ?'], ['1 placeholder', '--args gives 0']),
    (['--sql', 'SELECT $1, \'?\' FROM t WHERE a = $2', '--args', '[{key}]'],
     ['2 placeholders', '--args gives 1']),
    (['--backend', 'postgres', '--sql', 'SELECT $1, \'?\' FROM t WHERE a = $2', '--args',
      '[{key}]'], ['--sql has 2 parameters', '--args gives 1']),
    (['--backend', 'postgres', '--sql', 'SELECT $1, ?', '--args', '[1, 2]'], ['mixes ? and $n']),
    (['--backend', 'postgres', '--args', '[1]'], ['--args goes with --sql']),
    (['--backend', 'postgres', '--sql', 'SELECT 1', '--workload', 'kv'], ['excludes --workload']),
    (['--backend', 'postgres', '--sql', 'SELECT 1', '--phases', 'sql'], ['one phase']),
    (['--backend', 'postgres', '--sql', 'SELECT 1', '--verify'], ['--sql writes what']),
])
def test_bad_requests_are_one_line(args, words):
    rc, out, err, res = run_cli(args + ['--ops', '10'])
    assert rc == 2, err
    assert err.count('\n') == 1 and 'Traceback' not in err
    for w in words:
        assert w in err, err


def test_a_script_on_a_missing_table_fails_before_the_run(bank, tmpdir):
    path = write(tmpdir, 'typo.sql', u'SELECT 1;\n\nSELECT * FROM acounts WHERE aid = :key;\n')
    rc, out, err, res = run_pg(bank, ['--script', path, '--prepared', '--ops', '10'])
    assert rc == 3, err
    assert 'line 3' in err and 'acounts' in err and 'Traceback' not in err


@pytest.mark.parametrize('text,words', [
    (u'def op_a(db, key):\n    return 1\n\ndef op_b(db:\n', ['line 4', 'bad.py']),
    (u'import no_such_module_here\n', ['line 1', 'cannot import', 'no_such_module_here']),
    (u'X = 1\n', ['defines no op']),
    (u'def op_a(db):\n    pass\n', ['line 1', 'op_a must take (db, key)']),
    (u'WEIGHTS = {"b": 1}\ndef op_a(db, key):\n    pass\n', ["WEIGHTS names 'b'"]),
    (u'WEIGHTS = {"a": "x"}\ndef op_a(db, key):\n    pass\n', ["WEIGHTS['a']"]),
    (u'def setup():\n    pass\ndef op_a(db, key):\n    pass\n', ['setup must be']),
])
def test_bad_workload_files_are_one_line(tmpdir, text, words):
    path = write(tmpdir, 'bad.py', text)
    rc, out, err, res = run_cli(['--workload-file', path, '--ops', '10'])
    assert rc == 2, err
    assert err.count('\n') == 1 and 'Traceback' not in err and path in err
    for w in words:
        assert w in err, err


def test_a_failing_op_in_a_workload_file_is_counted_by_kind(orders, tmpdir):
    path = write(tmpdir, 'flaky.py', u'def op_flaky(db, key):\n'
                                     u'    if key % 10 == 0:\n'
                                     u'        raise ValueError("not this one")\n'
                                     u'    return db.call("tostring", key)\n')
    rc, out, err, res = run_cli(['--workload-file', path, '--ops', '1000'], server=orders)
    assert rc == 1
    (phase,) = res['phases']
    assert_accounted(res)
    assert phase['errors'] == {'client:ValueError': 100} and phase['ok'] == 900
    assert 'not this one' in out


@pytest.mark.parametrize('loop', [[], ['--rate', '100000']])
def test_ops_that_never_block_still_end_on_time_with_their_rows(orders, tmpdir, loop):
    # Pure Python ops never give the event loop a turn by themselves: the runner does,
    # or no timer, progress row or signal would run and the phase would never end.
    path = write(tmpdir, 'cpu.py', u'def op_cpu(db, key):\n'
                                   u'    return sum(i * i for i in range(200))\n')
    rc, out, err, res = run_cli(['--workload-file', path, '--ops', '0', '--duration', '2',
                                 '--greenlets', '4', '--interval', '0.5'] + loop,
                                server=orders, timeout=120)
    assert rc == 0, err
    assert_accounted(res)
    (phase,) = res['phases']
    assert phase['ok'] > 1000 and phase['failed'] == 0
    assert 2.0 <= phase['seconds'] < 4.0, phase['seconds']     # the timer ran
    assert len(phase['timeline']) >= 3, phase['timeline']


def test_ops_that_raise_before_sending_are_no_requests_per_send(orders, tmpdir):
    # The sync connector keeps no counts of its own: requests per send come from the
    # send syscalls, and an op that raised sent nothing.
    path = write(tmpdir, 'boom.py', u'def op_boom(db, key):\n    raise ValueError("boom")\n')
    rc, out, err, res = run_cli(['--workload-file', path, '--ops', '3000', '--connector',
                                 'sync'], server=orders)
    (phase,) = res['phases']
    assert rc == 1 and phase['errors'] == {'client:ValueError': 3000}
    assert phase['batching']['requests_per_send'] is None, phase['batching']
    row = [l for l in out.splitlines() if l.startswith('boom')][0]
    assert ' 3000.0' not in row and '3,000' in row


@pytest.mark.parametrize('name', sorted(f for f in os.listdir(EXAMPLES) if f.endswith('.ini')))
def test_every_example_profile_runs_from_anywhere(name, tmpdir):
    """Profiles name their files relative to themselves: run them from another folder."""
    import subprocess
    import sys
    out = str(tmpdir.join('r.json'))
    p = subprocess.Popen([sys.executable, '-m', 'gloaddriver', '--profile', example(name),
                          '--ops', '300', '--progress', '0', '--json', out],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmpdir),
                         env=dict(os.environ, PYTHONPATH=ROOT))
    _out, err = p.communicate()
    assert p.returncode == 0, err
    with open(out) as f:
        res = result_schema.read(f)
    assert_accounted(res)
    assert sum(ph['ok'] for ph in res['phases']) == sum(ph['attempted'] for ph in res['phases'])


# -- the built-in ops on a space of the user's own format --------------------------------

# tarantool-python 0.7 on 2.7 cannot send msgpack bin: the sync runs leave varbinary out.
RICH = u"""local name, blob = ...
local s = box.schema.space.create(name, {format = {
    {name = 'name', type = 'string'}, {name = 'n', type = 'unsigned'},
    {name = 'score', type = 'double'}, {name = 'tags', type = 'array'},
    {name = 'blob', type = blob and 'varbinary' or 'any'}, {name = 'note', type = 'string'}}})
s:create_index('pk', {parts = {{'name', 'string'}, {'n', 'unsigned'}}})
s:create_index('by_score', {parts = {{'score', 'double'}}})"""


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_builtin_ops_follow_the_spaces_format_and_indexes(orders, connector):
    name = 'rich_%s' % connector
    tnt_eval(orders, RICH, name, connector == 'buffered')
    rc, out, err, res = run_cli(['--connector', connector, '--space', name, '--index',
                                 'by_score', '--ops', '500', '--value-size', '8',
                                 '--phases', 'insert,select,update,scan,rmw'], server=orders)
    assert rc == 0, err
    assert_accounted(res)
    for phase in res['phases']:
        assert phase['ok'] == 500 and phase['misses'] == 0, phase
    (row,) = tnt_eval(orders, u"return box.space[...]:get({'7', 7})", name)
    # key-derived where an index covers the field; the value (after rmw: key + 2) in 'note'
    assert row[:4] == [u'7', 7, 7.0, [7]]
    values = workload.values(8)
    if connector == 'buffered':
        assert bytes(row[4]) == values[7].encode('utf-8')
        assert row[5] == values[9]   # values[(7 + 2) % 100]: written by the rmw phase
    else:
        # 'any' takes text, and as the first text field no index covers, the updates
        assert (row[4], row[5]) == (values[9], values[7])
    rc, out, err, res = run_cli(['--connector', connector, '--space', name, '--ops', '500',
                                 '--phases', 'delete'], server=orders)
    assert rc == 0 and res['phases'][0]['ok'] == 500 and res['phases'][0]['misses'] == 0
    assert tnt_eval(orders, u'return box.space[...]:len()', name) == [0]


def test_a_field_the_builtin_ops_cannot_fill_is_one_line(orders):
    tnt_eval(orders, u"""local s = box.schema.space.create(..., {format = {
        {name = 'id', type = 'unsigned'}, {name = 'u', type = 'uuid'}}})
        s:create_index('pk')""", 'has_uuid')
    rc, out, err, res = run_cli(['--space', 'has_uuid', '--ops', '10'], server=orders)
    assert rc == 3 and err.count('\n') == 1 and "'u'" in err and 'uuid' in err, err
    rc, out, err, res = run_cli(['--space', 'has_uuid', '--index', 'nosuch', '--ops', '10'],
                                server=orders)
    assert rc == 3 and 'no index' in err and 'pk (0)' in err, err


def test_prepared_sql_goes_on_after_the_server_restarts():
    """A prepared statement belongs to its session: after a reconnect the op prepares it
    again instead of failing with "no such statement" for the rest of the run."""
    import random
    import gevent
    from gloaddriver import errors
    from gloaddriver.backends.tarantool import requests
    from gloaddriver.workload.template import compile_args
    sql = u'INSERT OR REPLACE INTO customers VALUES (?, ?, ?)'
    server = TarantoolServer(init_file=example('orders.lua')).start()
    try:
        conn = connect(server, timeout=2.0)
        stmt = requests.prepare(conn, sql)
        assert isinstance(stmt, int)
        op = requests.buffered_op(conn, 'sql', stmt, compile_args('[{key}, "x", 1]', [u'v']),
                                  random.Random(1), 0, sql=sql)
        assert op(1) == 1
        server.restart()
        seen = []
        for key in range(2, 200):
            try:
                assert op(key) == 1
                break
            except errors.OpError as e:   # while it reconnects: network errors only
                seen.append(e.kind)
                gevent.sleep(0.05)
        else:
            raise AssertionError('no op succeeded after the restart: %s' % seen)
        assert 'server:%d' % requests.ER_WRONG_QUERY_ID not in seen
        assert op(500) == 1 and conn.stats()['reconnects'] >= 1
        assert box_stat(server)['prepare'] == 1     # prepared again on the new server
        conn.close()
    finally:
        server.stop()


@pytest.mark.parametrize('connector', ['psycopg2', 'pipelined'])
def test_a_statement_on_db_inside_a_transaction_is_refused_per_op(bank, tmpdir, connector):
    path = write(tmpdir, 'nested.py', u'def op_nested(db, key):\n'
                                      u'    with db.transaction() as tx:\n'
                                      u'        tx.execute("SELECT 1")\n'
                                      u'        db.execute("SELECT 2")\n'
                                      u'def op_after(db, key):\n'
                                      u'    return db.fetchone("SELECT 1")\n')
    rc, out, err, res = run_pg(bank, ['--workload-file', path, '--ops', '50',
                                      '--connector', connector])
    assert rc == 1
    nested, after = res['phases']
    assert nested['errors'] == {'client:RuntimeError': 50}
    assert 'use tx.execute()' in out
    assert after['ok'] == 50      # no transaction was left open on any connection
    if connector == 'psycopg2':
        # every connection went back to the pool, none left in a transaction
        assert nested['pool']['discarded'] == 0


TYPED = u'''from __future__ import division
import datetime, decimal

def setup(db):
    db.execute("CREATE TABLE IF NOT EXISTS gl_file_types (k bigint PRIMARY KEY, n int, "
               "f float8, b bool, t text, d numeric, y bytea, ts timestamp, a int[])")

def op_roundtrip(db, key):
    want = (key, key % 7, key / 4.0, key % 2 == 0, u'caf\\xe9 %d' % key,
            decimal.Decimal('%d.25' % key), bytearray(b'\\x00\\xff'),
            datetime.datetime(2026, 11, 26, 10, 0, key % 60), [key, None, 3])
    db.execute("INSERT INTO gl_file_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
               "ON CONFLICT (k) DO NOTHING", want)
    row = db.fetchone("SELECT k, n, f, b, t, d, y, ts, a FROM gl_file_types "
                      "WHERE k = %(k)s AND n = %(n)s", {'k': key, 'n': key % 7})
    got = row[:6] + (bytearray(row[6]),) + row[7:]
    if got != want:
        raise AssertionError('%r != %r' % (got, want))
    if db.fetchone("SELECT %s || '%%', %s", (u'50', key)) != (u'50%', key):
        raise AssertionError('placeholders')
    if db.execute("UPDATE gl_file_types SET n = n WHERE k = %s", (key,)) != 1:
        raise AssertionError('row count')
    if db.execute("SELECT k FROM gl_file_types WHERE k = -1") != []:
        raise AssertionError('no rows')

def op_rollback(db, key):
    try:
        with db.transaction() as tx:
            tx.execute("INSERT INTO gl_file_types (k) VALUES (%s)", (-1 - key,))
            raise KeyError('undo')
    except KeyError:
        pass
    return db.fetchone("SELECT count(*) FROM gl_file_types WHERE k < 0") == (0,)
'''


@pytest.mark.parametrize('connector', ['psycopg2', 'pipelined'])
def test_a_workload_file_reads_the_same_values_on_both_connectors(bank, tmpdir, connector):
    """The values psycopg2 would read, parameters of many Python types, named and
    positional placeholders, %%, row counts and a rolled-back transaction, each checked
    inside the op (a mismatch fails it)."""
    path = write(tmpdir, 'typed.py', TYPED)
    rc, out, err, res = run_pg(bank, ['--workload-file', path, '--ops', '200', '--greenlets',
                                      '8', '--connector', connector])
    assert rc == 0, out + err
    assert_accounted(res)
    assert [(p['name'], p['ok'], p['misses']) for p in res['phases']] == [
        ('roundtrip', 200, 0), ('rollback', 200, 0)]


def test_spawn_init_may_define_the_space_of_the_builtin_ops():
    rc, out, err, res = run_cli(['--spawn', '--spawn-init', example('orders.lua'), '--space',
                                 'orders', '--index', 'by_customer', '--ops', '500',
                                 '--phases', 'insert,select,delete'])
    assert rc == 0, err
    for phase in res['phases']:
        assert phase['ok'] == 500 and phase['misses'] == 0


def test_an_example_profile_runs_with_processes():
    rc, out, err, res = run_cli(['--profile', example('tarantool-call.ini'), '--processes', '2',
                                 '--ops', '2000'])
    assert rc == 0, err
    assert_accounted(res)
    assert res['phases'][0]['ok'] == 2000 and len(res['processes']) == 2


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
@pytest.mark.parametrize('args,words', [
    (['--call', 'nosuchfunc'], ["no function 'nosuchfunc'"]),
    (['--call', 'box.nosuch.fn'], ["no function 'box.nosuch.fn'"]),
    (['--eval', 'return return'], ['cannot compile --eval']),
    (['--sql', 'SELEC * FROM orders'], ['--sql', 'SELEC']),
])
def test_a_request_the_server_cannot_run_fails_before_the_first_op(orders, connector, args,
                                                                   words):
    before = box_stat(orders)
    rc, out, err, res = run_cli(args + ['--connector', connector, '--ops', '50'],
                                server=orders)
    after = box_stat(orders)
    assert rc == 3, err
    assert res is None and err.count('\n') == 1 and 'Traceback' not in err
    for w in words:
        assert w in err, err
    assert after['call'] == before['call']      # not one op was sent
    assert after['execute'] == before['execute']


def test_dotted_and_persistent_functions_pass_the_check(orders):
    for name in ('place_order', 'box.info', 'string.format'):
        rc, out, err, res = run_cli(['--call', name, '--args', '["x"]', '--ops', '5'],
                                    server=orders)
        assert rc in (0, 1), err      # it ran (the function may refuse "x": counted per op)
        assert res['phases'][0]['attempted'] == 5, name


def test_a_script_that_does_not_parse_fails_before_the_first_op(bank, tmpdir):
    path = write(tmpdir, 'syntax.sql', u'SELECT 1;\n\nUPDATE accounts SETT abalance = 1 '
                                      u'WHERE aid = :key;\n')
    rc, out, err, res = run_pg(bank, ['--script', path, '--ops', '10'])   # no --prepared
    # The server refused it before the run: exit 3, as docs/workloads.md says (what
    # gloaddriver's own parser refuses is exit 2)
    assert rc == 3 and res is None, err
    assert path in err and 'line 3' in err and 'UPDATE accounts SETT' in err, err
    assert err.count('\n') == 1 and 'Traceback' not in err
    # a statement whose parameter types only its values tell still runs
    ok = write(tmpdir, 'ok.sql', u'SELECT :key + :key;\nSET application_name = \'x\';\n')
    rc, out, err, res = run_pg(bank, ['--script', ok, '--ops', '10'])
    assert rc == 0, err
    assert res['phases'][0]['ok'] == 10


def test_a_user_ops_exception_names_where_it_was_raised(orders, tmpdir):
    path = write(tmpdir, 'myops.py', u'def op_div(db, key):\n'
                                     u'    db.call("tostring", key)\n'
                                     u'    if key % 10 == 0:\n'
                                     u'        return 1 // 0\n'
                                     u'    if key % 10 == 1:\n'
                                     u'        return {}["missing"]\n')
    rc, out, err, res = run_cli(['--workload-file', path, '--ops', '500', '--debug'],
                                server=orders)
    assert rc == 1
    (phase,) = res['phases']
    assert_accounted(res)
    assert phase['errors'] == {'client:ZeroDivisionError': 50, 'client:KeyError': 50}
    assert phase['error_origins'] == {'client:ZeroDivisionError': path + ':4',
                                      'client:KeyError': path + ':6'}
    assert 'client:ZeroDivisionError at %s:4' % path in out
    # --debug: one traceback per kind, not one per failure
    assert err.count('Traceback (most recent call last)') == 2, err
    assert err.count('the first client:ZeroDivisionError in op div') == 1
    assert 'line 4, in op_div' in err
    rc, out, err, res = run_cli(['--workload-file', path, '--ops', '100'], server=orders)
    assert 'Traceback' not in err          # without --debug, the report alone


# One workload in tarantool-python's idioms: scalar keys, tuples, a tuple as the argument
# list of call and eval, dict parameters of execute, an index by name. Text values are
# u'' (on 2.7 a native str is bytes: msgpack bin for the buffered connector).
TARANTOOL_PYTHON_IDIOMS = u'''
import os

S = os.environ['IDIOMS_SPACE']


def setup(db):
    db.eval("""local name = ...
        local s = box.schema.space.create(name, {if_not_exists = true, format = {
            {'id', 'unsigned'}, {'n', 'unsigned'}, {'s', 'string'}}})
        s:create_index('primary', {if_not_exists = true})
        s:create_index('by_s', {parts = {3, 'string'}, unique = false, if_not_exists = true})
        rawset(_G, 'idioms_add', function(space, key, d)
            box.space[space]:update(key, {{'+', 2, d}}) end)""", S)


def op_idioms(db, key):
    db.insert(S, (key, 0, u'k%d' % key))
    db.update(S, key, [('+', 1, 5)])
    db.upsert(S, (key, 100, u'never'), [('+', 1, 1)])
    db.call('idioms_add', (S, key, 10))
    db.eval('local s, k, d = ... box.space[s]:update(k, {{"+", 2, d}})', [S, key, 100])
    db.execute('UPDATE "%s" SET "s" = :s WHERE "id" = :id' % S, {'s': u'q%d' % key, 'id': key})
    assert len(db.select(S, key)) == 1
    assert len(db.select(S, [key])) == 1
    assert len(db.select(S, u'q%d' % key, index='by_s')) == 1
    assert len(db.select(S, key, iterator=5, limit=1)) == 1     # box.index.GE
    db.replace(S, [key + 1000000, 7, u'r'])
    if key % 2:
        db.delete(S, key)
        db.delete(S, (key + 1000000,))
'''


@pytest.mark.parametrize('connector', ['buffered', 'sync'])
def test_a_workload_in_tarantool_python_idioms_means_the_same_on_both_connectors(
        orders, tmpdir, connector):
    path = write(tmpdir, 'idioms.py', TARANTOOL_PYTHON_IDIOMS)
    space = 'idioms_%s' % connector
    rc, out, err, res = run_cli(['--workload-file', path, '--ops', '100', '--keys', '100',
                                 '--greenlets', '4', '--connector', connector], server=orders,
                                env={'IDIOMS_SPACE': space})
    assert rc == 0, out + err
    assert res['phases'][0]['ok'] == 100
    rows = tnt_eval(orders, u"""local out = {}
        for _, t in box.space[...]:pairs() do out[#out + 1] = t:totable() end
        return out""", space)[0]
    expected = []
    for key in range(100):
        if key % 2 == 0:
            expected.append([key, 5 + 1 + 10 + 100, u'q%d' % key])
    expected += [[key + 1000000, 7, u'r'] for key in range(0, 100, 2)]
    assert sorted(rows) == sorted(expected)
