"""Bulk loading rows of (uuid default, timestamptz default, text, hstore), six ways.

Each method loads ``rows`` rows into a freshly truncated table and is timed
alone; an "op" is one row, so ops/s is rows/s and latency is per statement
(one row for row/row-connect, one page or chunk otherwise). The table is
counted afterwards: ok is the rows that are really there.

COPY cannot run under a psycopg2 wait callback (green mode). It runs with the
callback removed for its duration, blocking this process's hub meanwhile; the
result says so (``green: false``) rather than pretending otherwise.
"""
from __future__ import absolute_import, division, print_function

import io
import sys

import psycopg2
import psycopg2.extensions
import psycopg2.extras

from gloaddriver import errors
from gloaddriver.py23 import clock, text_type
from gloaddriver.backends import base
from gloaddriver.backends.postgres import pool as pgpool
from gloaddriver.measure import stats
from gloaddriver.measure.window import Window
from gloaddriver.measure.phase_result import Counts, PhaseResult

ROW_CONNECT_CAP = 1000    # with --method all: a new connection per row is ~100 rows/s
PAGE = 1000
CHUNK = 10000
TABLE = 'bulk_load'
SCHEMA = """CREATE TABLE IF NOT EXISTS bulk_load (
    id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    created timestamptz NOT NULL DEFAULT now(),
    name text NOT NULL,
    attrs hstore)"""
INSERT = 'INSERT INTO bulk_load (name, attrs) VALUES (%s, %s)'


def make_rows(n):
    return [(u'row-%d' % i, {u'n': u'%d' % i, u'kind': u'bulk'}) for i in range(n)]


def _copy_text(rows):
    out = []
    for name, attrs in rows:
        hs = u','.join(u'"%s"=>"%s"' % (k, v) for k, v in sorted(attrs.items()))
        out.append(u'%s\t%s\n' % (name, hs))
    return u''.join(out)


class BulkLoader(base.Backend):
    """A backend that drives itself (``run_phases``): one phase per load method."""
    connector = 'psycopg2'

    def __init__(self, config, dsn, password, counter):
        base.Backend.__init__(self, config)
        self.opts = config.opts
        self.dsn = dsn
        self.password = password
        self.counter = counter
        self.version = self._address = None
        self.pool = pgpool.Pool(dsn, 1, password=password,
                                connect_timeout=config.limits.connect_timeout,
                                timeout=config.limits.timeout, autocommit=False)

    def describe(self):
        return 'psycopg2 %s bulk load, methods %s, %d rows each' % (
            psycopg2.__version__.split()[0], ','.join(self.opts.bulk_methods), self.opts.rows)

    def address(self):
        return self._address or 'libpq default'

    def server_version(self):
        return self.version

    def open(self):
        from gloaddriver.backends.postgres.workloads import dsn_address, setup_error
        try:
            item = self.pool.connect()
        except errors.NotConnected as e:
            raise setup_error(str(e), dsn_address(self.dsn))
        conn = item.conn
        cur = item.cur
        cur.execute("SELECT oid, typarray FROM pg_type WHERE typname = 'hstore'")
        row = cur.fetchone()
        if row is None:
            if not self.opts.init:
                raise errors.SchemaError('the hstore extension is missing; rerun with --init '
                                         'or run CREATE EXTENSION hstore')
            cur.execute('CREATE EXTENSION IF NOT EXISTS hstore')
            cur.execute("SELECT oid, typarray FROM pg_type WHERE typname = 'hstore'")
            row = cur.fetchone()
        # Registered once, globally, with known oids: no look-up per new connection.
        psycopg2.extras.register_hstore(None, globally=True, unicode=True, oid=row[0],
                                        array_oid=row[1])
        cur.execute('SELECT to_regclass(%s)', (TABLE,))
        if cur.fetchone()[0] is None:
            if not self.opts.init:
                raise errors.SchemaError('table %s missing; rerun with --init or create it: %s'
                                         % (TABLE, ' '.join(SCHEMA.split())))
            cur.execute(SCHEMA)
        v = conn.server_version
        self.version = '%d.%d' % (v // 10000, v % 10000)
        info = getattr(conn, 'info', None)
        self._address = '%s:%s' % (info.host, info.port) if info is not None else None
        conn.commit()
        self.admin = item

    def run_phases(self):
        out = []
        for m in self.opts.bulk_methods:
            res = self._one(m, self.opts.rows)
            out.append(res)
            if self.config.output.progress > 0:
                sys.stderr.write('%s: %s rows in %.2f s, %s rows/s\n' % (
                    res['name'], '{:,}'.format(res['ok']), res['seconds'],
                    '{:,}'.format(int(res['rows_per_sec'] or 0))))
                sys.stderr.flush()
        return out

    def _one(self, method, rows):
        n = rows
        if method == 'row-connect' and len(self.opts.bulk_methods) > 1:
            n = min(rows, ROW_CONNECT_CAP)
        data = make_rows(n)
        cur = self.admin.cur
        cur.execute('TRUNCATE ' + TABLE)
        self.admin.conn.commit()
        st = stats.OpStats(method)
        st.attempted = n
        green = True
        error = None
        window = Window(self.counter).open()
        try:
            if method == 'copy':
                green = False
            statements = getattr(self, '_' + method.replace('-', '_'))(data, st)
        except (psycopg2.Error, errors.OpError) as e:
            error = e
            statements = None
        window.close()
        try:
            self.admin.conn.rollback()
            cur.execute('SELECT count(*) FROM ' + TABLE)
            loaded = cur.fetchone()[0]
            self.admin.conn.commit()
        except psycopg2.Error:
            loaded = 0
        st.drain()
        failed = n - loaded
        errs = {}
        samples = {}
        if failed:
            kind = getattr(error, 'kind', None) or (
                'server:%s' % error.pgcode if getattr(error, 'pgcode', None) else 'network')
            errs[kind] = failed
            samples[kind] = pgpool.scrub(error, self.password) if error else 'rows missing'
        # Latencies are per statement here; ok counts the rows found afterwards.
        counts = Counts(n, loaded, errs, 0, window.seconds, st.hist, st.sum_us, samples)
        res = PhaseResult.measured(
            'bulk:' + method, counts, window, self.counter.reason,
            batching_block={'source': 'workload', 'requests_per_send': None,
                            'responses_per_recv': None,
                            'rows_per_statement': round(n / statements, 1) if statements
                            else None})
        if not green:
            res['notes'] = ['ran outside green mode (psycopg2 cannot COPY with a wait '
                            'callback): this process\'s hub was blocked for %.2f s'
                            % window.seconds]
        res.update(latency_of='statement', statements=statements, green=green,
                   rows_per_sec=res['ok_per_sec'])
        return res.judge()

    # -- the methods: each returns the number of statements it sent ----------------

    def _timed(self, st, fn, *args):
        t = clock()
        fn(*args)
        st.lat[int((clock() - t) * 1e6)] += 1

    def _row_connect(self, data, st):
        for name, attrs in data:
            t = clock()
            item = self.pool.connect()
            try:
                item.cur.execute(INSERT, (name, attrs))
                item.conn.commit()
            finally:
                pgpool.forget(item.fd)
                item.conn.close()
            st.lat[int((clock() - t) * 1e6)] += 1
        return len(data)

    def _row(self, data, st):
        cur = self.admin.cur
        for row in data:
            self._timed(st, cur.execute, INSERT, row)
        self.admin.conn.commit()
        return len(data)

    def _executemany(self, data, st):
        # psycopg2's executemany is one execute per row underneath.
        self._timed(st, self.admin.cur.executemany, INSERT, data)
        self.admin.conn.commit()
        return len(data)

    def _execute_values(self, data, st):
        cur = self.admin.cur
        for i in range(0, len(data), PAGE):
            self._timed(st, psycopg2.extras.execute_values, cur,
                        'INSERT INTO bulk_load (name, attrs) VALUES %s', data[i:i + PAGE],
                        None, PAGE)
        self.admin.conn.commit()
        return (len(data) + PAGE - 1) // PAGE

    def _unnest(self, data, st):
        cur = self.admin.cur
        sql = ('INSERT INTO bulk_load (name, attrs) '
               'SELECT * FROM unnest(%s::text[], %s::hstore[])')
        for i in range(0, len(data), CHUNK):
            chunk = data[i:i + CHUNK]
            self._timed(st, cur.execute, sql, ([r[0] for r in chunk], [r[1] for r in chunk]))
        self.admin.conn.commit()
        return (len(data) + CHUNK - 1) // CHUNK

    def _copy(self, data, st):
        text = _copy_text(data)
        buf = io.StringIO(text if isinstance(text, text_type) else text.decode('utf-8'))
        previous = psycopg2.extensions.get_wait_callback()
        # COPY refuses to run in green mode: remove the callback, and use a
        # connection made without it (blocking, like the COPY itself).
        psycopg2.extensions.set_wait_callback(None)
        try:
            conn = psycopg2.connect(self.dsn)
            try:
                self._timed(st, conn.cursor().copy_expert,
                            'COPY bulk_load (name, attrs) FROM STDIN', buf)
                conn.commit()
            finally:
                conn.close()
        finally:
            psycopg2.extensions.set_wait_callback(previous)
        return 1

    def close(self):
        item = getattr(self, 'admin', None)
        if item is not None:
            pgpool.forget(item.fd)
            item.conn.close()
            self.admin = None
