"""The kv statements the psycopg2 path writes itself are the bytes psycopg2 would send."""
from __future__ import absolute_import, division, print_function

import pytest

from gloaddriver import workload
from gloaddriver.backends.postgres import kv_statements
from gloaddriver.backends.postgres.server import PostgresServer

psycopg2 = pytest.importorskip('psycopg2')
import psycopg2.extensions  # noqa: E402

# The statements as execute(sql, params) takes them, written here apart from the module,
# with each op's parameters from (key, value table).
REFERENCE = {
    'insert': ('EXECUTE gl_insert (%s, %s)', 'INSERT INTO {t} (id, value) VALUES (%s, %s)',
               lambda k, v: (k, v[k % len(v)])),
    'select': ('EXECUTE gl_select (%s)', 'SELECT value FROM {t} WHERE id = %s',
               lambda k, v: (k,)),
    'update': ('EXECUTE gl_update (%s, %s)', 'UPDATE {t} SET value = %s WHERE id = %s',
               lambda k, v: (v[(k + 1) % len(v)], k)),
    'delete': ('EXECUTE gl_delete (%s)', 'DELETE FROM {t} WHERE id = %s', lambda k, v: (k,)),
    'scan': ('EXECUTE gl_scan (%s, %s)',
             'SELECT id, value FROM {t} WHERE id >= %s ORDER BY id LIMIT %s',
             lambda k, v: (k, workload.scan_length(k))),
}
KEYS = [0, 1, 7, 99, 100, 12345, 2 ** 31 - 1, 2 ** 31, 2 ** 62 + 3]
# What quoting must get right: quotes, backslashes (E'' strings when the session's strings
# are not standard), text beyond ASCII, and the run's own value table.
ODD = [u"it's", u'back\\slash', u'caf\u00e9 \u043a\u0438\u0442', u'%s %d %%', u'']


@pytest.fixture(scope='module')
def pg():
    server = PostgresServer().start()
    yield server
    server.stop()


def recorder(calls):
    def run(sql, params, fetch):
        calls.append((sql, params, fetch))
        return 1
    return run


@pytest.mark.parametrize('standard_strings', ['on', 'off'])
@pytest.mark.parametrize('prepared', [True, False])
def test_the_ops_send_what_execute_with_parameters_sends(pg, prepared, standard_strings):
    conn = psycopg2.connect(pg.dsn)
    try:
        cur = conn.cursor()
        cur.execute('SET standard_conforming_strings = ' + standard_strings)
        values = ODD + list(workload.values(64, 1))
        calls = []
        ops = kv_statements.ops(recorder(calls), recorder(calls),
                                kv_statements.templates('kv_x', prepared),
                                kv_statements.quoted(cur, values), workload.scan_length)
        for name, (execute_sql, plain_sql, params) in sorted(REFERENCE.items()):
            sql = execute_sql if prepared else plain_sql.format(t='kv_x')
            for key in KEYS + list(range(len(values))):
                del calls[:]
                ops[name](key)
                assert calls[0][1] is None     # no parameters: psycopg2 sends it as it is
                assert calls[0][0] == cur.mogrify(sql, params(key, values)), (name, key)
        del calls[:]
        ops['rmw'](5)
        assert [c[0] for c in calls] == [
            cur.mogrify(REFERENCE['select'][0 if prepared else 1].format(t='kv_x'), (5,)),
            cur.mogrify(REFERENCE['update'][0 if prepared else 1].format(t='kv_x'),
                        (values[7 % len(values)], 5))]
    finally:
        conn.close()


def test_prepared_statements_run_and_read_back_the_values(pg):
    conn = psycopg2.connect(pg.dsn)
    conn.autocommit = True
    try:
        cur = conn.cursor()
        psycopg2.extensions.register_type(psycopg2.extensions.UNICODE, cur)   # 2.7: text
        cur.execute('CREATE TABLE kv_y (id bigint PRIMARY KEY, value text NOT NULL)')
        kv_statements.prepare(cur, 'kv_y')
        forms = kv_statements.templates('kv_y', True)
        quoted = kv_statements.quoted(cur, ODD)
        for key in range(len(ODD)):
            cur.execute(forms['insert'] % (key, quoted[key]))
        cur.execute(forms['select'] % 2)
        assert cur.fetchone()[0] == ODD[2]
        cur.execute(forms['scan'] % (0, 100))
        assert [v for _k, v in cur.fetchall()] == ODD
    finally:
        conn.close()
