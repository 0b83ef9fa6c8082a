"""PostgreSQL's side of ``gloaddriver compat``: the server both interpreters load, the
flags that point a run at it, the digest of what they stored, and the probe each
interpreter runs (mogrified wire bytes, typed columns, deliberate errors, reading
the other side's rows)."""
from __future__ import absolute_import, division, print_function

import binascii
import os

from gloaddriver import workload
from gloaddriver.py23 import binary_type, text_type
from gloaddriver.backends.crosscheck_values import CANONICAL

GREENLETS = 10
# {workload: (greenlets, ops per phase)} by default. The orm workload runs on one
# greenlet: with several, which create commits first is the machine's choice, and the
# two sides would store the same families under other ids.
WORKLOADS = {'kv': (GREENLETS, 50000), 'orm': (1, 3000)}
NOT_APPLICABLE = {
    '6 requests per op': 'psycopg2 sends one statement per op and looks nothing up by name: '
                         'there is no connector-side count to compare',
    '8 batching (req/send, resp/recv)': 'psycopg2 runs one statement per round trip per '
                                        'connection: nothing is batched',
}


def _plain_connect(dsn, password=None):
    """A blocking psycopg2 connection (no greenlets needed), autocommit."""
    import psycopg2
    psycopg2.extensions.set_wait_callback(None)
    conn = psycopg2.connect(dsn, password=password) if password else psycopg2.connect(dsn)
    conn.autocommit = True
    return conn


class Target(object):
    """A private cluster with one kv table per side (and for the orm workload a schema of
    the same name, where its --init makes the models' tables); ``close()`` removes it."""

    def __init__(self, names, workload='kv'):
        from gloaddriver.backends.postgres.server import PostgresServer
        from gloaddriver.backends.postgres.workloads import SCHEMA_KV
        self.server = PostgresServer().start()
        try:
            conn = _plain_connect(self.server.dsn)
            try:
                for name in names:
                    conn.cursor().execute(SCHEMA_KV.format(t=name))
                    if workload == 'orm':
                        conn.cursor().execute('CREATE SCHEMA %s' % name)
            finally:
                conn.close()
        except BaseException:
            self.server.stop()
            raise
        self.workload = workload
        self.password = self.server.password
        s = self.server
        self.dsn = 'host=%s port=%d dbname=%s user=%s sslmode=disable' % (
            s.host, s.port, s.database, s.user)

    def target_argv(self, name):
        if self.workload == 'orm':
            return ['--backend', 'postgres', '--dsn', self.dsn, '--workload', 'orm', '--init',
                    '--session-init', 'SET search_path TO %s' % name]
        return ['--backend', 'postgres', '--dsn', self.dsn, '--table', name]

    def probe_args(self):
        return {'backend': 'postgres', 'dsn': self.dsn}

    def digest(self, name):
        """(rows, md5 of id:value in key order) of what a side stored; for the orm
        workload, (A rows, md5 of each A's id, data and its B's ids and data)."""
        conn = _plain_connect(self.server.dsn)
        try:
            cur = conn.cursor()
            if self.workload == 'orm':
                cur.execute(ORM_DIGEST.format(s=name))
                return tuple(cur.fetchone())
            cur.execute("SELECT count(*), md5(coalesce(string_agg(id::text || ':' || value, ',' "
                        "ORDER BY id), '')) FROM %s" % name)
            return tuple(cur.fetchone())
        finally:
            conn.close()

    def close(self):
        self.server.stop()


ORM_DIGEST = """SELECT count(*), md5(coalesce(string_agg(a.id || ':' || a.data || '[' ||
    coalesce((SELECT string_agg(b.id || ':' || b.data, ',' ORDER BY b.id) FROM {s}.orm_b b
              WHERE b.a_id = a.id), '') || ']', ',' ORDER BY a.id), '')) FROM {s}.orm_a a"""


def connect(a):
    from gloaddriver.backends.postgres import pool
    pool.install('cached')       # the driver's own setup (text as unicode on 2.7)
    return _plain_connect(a['dsn'], os.environ.get('GLOADDRIVER_PASSWORD'))


def _pg_canonical():
    from psycopg2 import Binary
    skip = ('map', 'nested list')   # no plain SQL literal for these
    out = []
    for label, value in CANONICAL:
        if label in skip:
            continue
        if isinstance(value, binary_type):
            value = Binary(value)   # the model: binary goes as bytea, explicitly
        out.append((label, value))
    out.append(('int array', [1, 2, 3]))
    out.append(('text array', [u'a', u'caf\xe9']))
    return out


def pg_wire(conn):
    cur = conn.cursor()
    return [[label, binascii.hexlify(cur.mogrify('SELECT %s', (value,))).decode('ascii')]
            for label, value in _pg_canonical()]


def _pg_outcome(cur, sql, params):
    import psycopg2
    try:
        cur.execute(sql, params)
        return 'ok'
    except psycopg2.Error as e:
        return 'server:%s' % e.pgcode


def pg_typed(conn, table):
    from psycopg2 import Binary
    cur = conn.cursor()
    cur.execute('CREATE TABLE IF NOT EXISTS %s (id int PRIMARY KEY, t text, b bytea, n integer)'
                % table)
    sql = 'INSERT INTO %s (id, t, b, n) VALUES (%%s, %%s, %%s, %%s)' % table
    rows = [('text, binary, int', (1, u'text', Binary(b'bin'), 1)),
            ('binary into text', (2, Binary(b'bin'), Binary(b'bin'), 1)),
            ('integer out of range', (3, u't', Binary(b'b'), 2 ** 40)),
            ('text into integer', (4, u't', Binary(b'b'), u'x')),
            ('non-ascii text, 00 ff binary', (5, u'caf\xe9', Binary(b'\x00\xff'), 5))]
    return [[label, _pg_outcome(cur, sql, params)] for label, params in rows]


def pg_errors(conn, table):
    cur = conn.cursor()
    key = 10 ** 12
    cur.execute('INSERT INTO %s (id, value) VALUES (%%s, %%s)' % table, (key, u'x'))
    attempts = ([('INSERT INTO %s (id, value) VALUES (%%s, %%s)' % table, (key, u'dup'))] * 10 +
                [('INSERT INTO %s (id, value) VALUES (%%s, %%s)' % table, (u'not a number', u'x'))]
                * 10 +
                [('SELECT value FROM %s WHERE id = %%s' % table, (u'x',))] * 5)
    counts = {}
    for sql, params in attempts:
        kind = _pg_outcome(cur, sql, params)
        counts[kind] = counts.get(kind, 0) + 1
    cur.execute('DELETE FROM %s WHERE id = %%s' % table, (key,))
    return counts


def pg_crossread(conn, a):
    if a.get('workload') == 'orm':
        return orm_crossread(conn, a)
    values = workload.values(a['value_size'])
    cur = conn.cursor()
    cur.execute('SELECT id, value FROM %s ORDER BY id' % a['space'])
    rows = cur.fetchall()
    mismatches = [r[0] for r in rows if r[1] != values[(r[0] + 1) % 100]]
    cur.execute('SELECT t, b FROM %s WHERE id = 1' % a['typed'])
    first = cur.fetchone()
    binary_ok = first is not None and isinstance(first[0], text_type) and \
        bytes(first[1]) == b'bin'

    def lookup(key):
        cur.execute('SELECT 1 FROM %s WHERE t = %%s' % a['typed'], (key,))
        return 'hit' if cur.fetchone() else 'miss'
    return {'rows': len(rows), 'mismatches': mismatches[:5], 'n_mismatches': len(mismatches),
            'text_ok': all(isinstance(r[1], text_type) for r in rows), 'binary_ok': binary_ok,
            'binary_type': type(first[1]).__name__ if first else None,
            'text_key': lookup(u'text'), 'native_str_key': lookup(str('text')),
            'native_str_is': 'text' if isinstance(str('x'), text_type) else 'binary'}


def orm_crossread(conn, a):
    """Read the other side's families through this interpreter's SQLAlchemy and models
    (1.4 reading what 2.x wrote, or the other way): each A with its B's, text as text."""
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session, selectinload
    from gloaddriver.backends.postgres.orm_workload import A

    def creator():
        return conn
    engine = create_engine('postgresql+psycopg2://', creator=creator)
    schema = a['space']
    with engine.connect() as c:
        c.exec_driver_sql('SET search_path TO %s' % schema)
        with Session(bind=c) as session:
            parents = session.execute(select(A).options(selectinload(A.bs))
                                      .order_by(A.id)).scalars().all()
            # a create's A's are a<key>-0..2 with 2, 1 and 2 B's named b<key>-0..4
            shapes = {u'0': 2, u'1': 1, u'2': 2}
            bad = [p.id for p in parents
                   if len(p.bs) != shapes.get(p.data.rpartition(u'-')[2])]
            texts = [p.data for p in parents] + [b.data for p in parents for b in p.bs]

            def lookup(key):
                return 'hit' if session.execute(select(A.id).where(A.data == key)).first() \
                    else 'miss'
            first = parents[0].data if parents else u''
            return {'rows': len(parents), 'mismatches': bad[:5], 'n_mismatches': len(bad),
                    'text_ok': all(isinstance(t, text_type) for t in texts),
                    'binary_ok': True, 'binary_type': None, 'text_key': lookup(first),
                    'native_str_key': lookup(str(first)),
                    'native_str_is': 'text' if isinstance(str('x'), text_type) else 'binary'}


def probe():
    return {'connect': connect, 'wire': pg_wire, 'typed': pg_typed, 'errors': pg_errors,
            'crossread': pg_crossread}
