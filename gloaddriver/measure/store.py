"""The history of runs (``--store``): one table of runs, their tags, their phases and
their outages, in SQLite (the standard library's sqlite3, a file) or PostgreSQL
(psycopg2, a database a team shares). The same SQL runs on both; only the placeholders,
the id column and how a connection opens differ.

A run is written in one transaction, as the rows ``measure.run_record`` makes of its
result; ``gloaddriver history``, ``trend`` and ``--baseline history`` read them back.
The tables and their columns are documented in docs/keeping-results.md; SCHEMA_VERSION
is stored in ``gloaddriver_schema`` and a store made by another version is refused with
one line rather than read wrongly.
"""
from __future__ import absolute_import, division, print_function

import os
import re

from gloaddriver import errors
from gloaddriver.secrets import mask_dsn

SCHEMA_VERSION = 1
ENV = 'GLOADDRIVER_STORE'   # the store when no --store is given

# Columns of each table, in order: (name, SQL type). The run's own id comes first.
RUN_COLUMNS = (
    ('started', 'TEXT'), ('started_unix', 'DOUBLE PRECISION'), ('scenario', 'TEXT'),
    ('scenario_flags', 'TEXT'), ('label', 'TEXT'), ('git_commit', 'TEXT'),
    ('git_dirty', 'INTEGER'), ('backend', 'TEXT'), ('connector', 'TEXT'),
    ('server_version', 'TEXT'), ('interpreter', 'TEXT'), ('gloaddriver', 'TEXT'),
    ('hostname', 'TEXT'), ('phases', 'INTEGER'), ('attempted', 'BIGINT'), ('ok', 'BIGINT'),
    ('failed', 'BIGINT'), ('seconds', 'DOUBLE PRECISION'),
    ('ops_per_sec', 'DOUBLE PRECISION'), ('p99_us', 'DOUBLE PRECISION'),
    ('syscalls_per_op', 'DOUBLE PRECISION'), ('cpu_us_per_op', 'DOUBLE PRECISION'),
    ('outage_seconds', 'DOUBLE PRECISION'), ('aborted', 'TEXT'), ('exit_code', 'INTEGER'),
    ('manifest', 'TEXT'))
PHASE_COLUMNS = (
    ('run_id', 'BIGINT NOT NULL'), ('seq', 'INTEGER NOT NULL'), ('name', 'TEXT'),
    ('round', 'INTEGER'), ('step', 'INTEGER'), ('attempted', 'BIGINT'), ('ok', 'BIGINT'),
    ('failed', 'BIGINT'), ('timed_out', 'BIGINT'), ('misses', 'BIGINT'),
    ('seconds', 'DOUBLE PRECISION'), ('ops_per_sec', 'DOUBLE PRECISION'),
    ('ok_per_sec', 'DOUBLE PRECISION'), ('p50_us', 'DOUBLE PRECISION'),
    ('p90_us', 'DOUBLE PRECISION'), ('p95_us', 'DOUBLE PRECISION'),
    ('p99_us', 'DOUBLE PRECISION'), ('p999_us', 'DOUBLE PRECISION'),
    ('max_us', 'DOUBLE PRECISION'), ('mean_us', 'DOUBLE PRECISION'),
    ('cpu_us_per_op', 'DOUBLE PRECISION'), ('syscalls_per_op', 'DOUBLE PRECISION'),
    ('network_per_op', 'DOUBLE PRECISION'), ('outage_seconds', 'DOUBLE PRECISION'),
    ('latency', 'TEXT'), ('errors', 'TEXT'), ('server', 'TEXT'))
TAG_COLUMNS = (('run_id', 'BIGINT NOT NULL'), ('name', 'TEXT NOT NULL'), ('value', 'TEXT'))
OUTAGE_COLUMNS = (
    ('run_id', 'BIGINT NOT NULL'), ('phase_seq', 'INTEGER NOT NULL'),
    ('seq', 'INTEGER NOT NULL'), ('start_s', 'DOUBLE PRECISION'),
    ('end_s', 'DOUBLE PRECISION'), ('duration_s', 'DOUBLE PRECISION'), ('open', 'INTEGER'),
    ('failed', 'BIGINT'), ('timed_out', 'BIGINT'), ('detail', 'TEXT'))

TABLES = (('gloaddriver_phases', PHASE_COLUMNS, 'PRIMARY KEY (run_id, seq)'),
          ('gloaddriver_tags', TAG_COLUMNS, 'PRIMARY KEY (run_id, name)'),
          ('gloaddriver_outages', OUTAGE_COLUMNS, 'PRIMARY KEY (run_id, phase_seq, seq)'))
INDEXES = ('CREATE INDEX IF NOT EXISTS gloaddriver_runs_scenario '
           'ON gloaddriver_runs (scenario, id)',
           'CREATE INDEX IF NOT EXISTS gloaddriver_tags_name '
           'ON gloaddriver_tags (name, value, run_id)')
# What `history` lists of a run, in this order.
LISTED = ('id', 'started', 'label', 'scenario', 'ops_per_sec', 'p99_us', 'syscalls_per_op',
          'failed', 'aborted', 'exit_code', 'git_commit', 'scenario_flags')


def parse_url(text):
    """('sqlite', path) or ('postgresql', url) of a --store value; ConfigError else."""
    if text.startswith('sqlite:'):
        path = text[len('sqlite:'):]
        if not path:
            raise errors.ConfigError('--store sqlite:PATH needs a file, e.g. sqlite:runs.db')
        return 'sqlite', os.path.expanduser(path)
    if re.match(r'^postgres(ql)?://', text):
        return 'postgresql', text
    raise errors.ConfigError('--store takes sqlite:PATH (a file, made if missing) or '
                             'postgresql://USER@HOST/DB; got %r' % text)


def masked(url):
    """A store's URL as it may be printed: a password in it replaced by ***."""
    return mask_dsn(url)


def _text(value):
    """A value as the store takes it: on Python 2.7 a byte string (argv's, a label's) is
    text, decoded as UTF-8; sqlite3 refuses 8-bit byte strings."""
    if bytes is str and isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    return value


class Store(object):
    """One open store. ``open(text)`` makes it; the tables are made where missing."""

    def __init__(self, kind, conn, where):
        self.kind, self.conn, self.where = kind, conn, where

    def _sql(self, sql):
        return sql.replace('?', '%s') if self.kind == 'postgresql' else sql

    def execute(self, sql, params=()):
        cur = self.conn.cursor()
        cur.execute(self._sql(sql), tuple(params))
        return cur

    def query(self, sql, params=()):
        """The rows of a SELECT, as dicts by column name."""
        cur = self.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def _create(self):
        key = ('id BIGSERIAL PRIMARY KEY' if self.kind == 'postgresql'
               else 'id INTEGER PRIMARY KEY AUTOINCREMENT')
        self.execute('CREATE TABLE IF NOT EXISTS gloaddriver_schema (version INTEGER NOT NULL)')
        self.execute('CREATE TABLE IF NOT EXISTS gloaddriver_runs (%s, %s)' % (
            key, ', '.join('%s %s' % c for c in RUN_COLUMNS)))
        for name, columns, primary in TABLES:
            self.execute('CREATE TABLE IF NOT EXISTS %s (%s, %s)' % (
                name, ', '.join('%s %s' % c for c in columns), primary))
        for sql in INDEXES:
            self.execute(sql)
        found = self.query('SELECT version FROM gloaddriver_schema')
        if not found:
            self.execute('INSERT INTO gloaddriver_schema (version) VALUES (?)',
                         (SCHEMA_VERSION,))
        elif found[0]['version'] != SCHEMA_VERSION:
            raise errors.SetupError('--store %s holds schema version %s; this gloaddriver '
                                    'reads version %d' % (self.where, found[0]['version'],
                                                          SCHEMA_VERSION))
        self.conn.commit()

    def write(self, run, phases, tags, outages):
        """One run's rows (measure.run_record's), in one transaction: its new id."""
        try:
            names = [c for c, _t in RUN_COLUMNS]
            values = [_text(run.get(c)) for c in names]
            sql = 'INSERT INTO gloaddriver_runs (%s) VALUES (%s)' % (
                ', '.join(names), ', '.join('?' * len(names)))
            if self.kind == 'postgresql':
                run_id = self.execute(sql + ' RETURNING id', values).fetchone()[0]
            else:
                run_id = self.execute(sql, values).lastrowid
            for table, columns, rows in (('gloaddriver_phases', PHASE_COLUMNS, phases),
                                         ('gloaddriver_tags', TAG_COLUMNS, tags),
                                         ('gloaddriver_outages', OUTAGE_COLUMNS, outages)):
                self._rows(table, columns, run_id, rows)
            self.conn.commit()
            return run_id
        except Exception:
            self.conn.rollback()
            raise

    def _rows(self, table, columns, run_id, rows):
        if not rows:
            return
        names = [c for c, _t in columns]
        sql = self._sql('INSERT INTO %s (%s) VALUES (%s)' % (
            table, ', '.join(names), ', '.join('?' * len(names))))
        self.conn.cursor().executemany(sql, [tuple(_text(dict(r, run_id=run_id).get(c))
                                                   for c in names) for r in rows])

    def runs(self, where=(), last=None, scenario=None, columns=LISTED, ok_only=False):
        """Runs, oldest first: the ``last`` N of those that have every (name, value) of
        ``where`` (a tag; ``label`` and ``commit`` are the run's own), of a scenario
        (a key or its first characters); ``ok_only`` leaves out runs cut short."""
        cond, params = [], []
        for name, value in where:
            if name in ('label', 'commit'):
                cond.append('%s = ?' % ('git_commit' if name == 'commit' else name))
            else:
                cond.append('id IN (SELECT run_id FROM gloaddriver_tags WHERE name = ? '
                            'AND value = ?)')
                params.append(name)
            params.append(value)
        if scenario:
            cond.append('scenario LIKE ?')
            params.append(scenario.replace('%', '').replace('_', '') + '%')
        if ok_only:
            cond.append('aborted IS NULL')
        sql = 'SELECT %s FROM gloaddriver_runs%s ORDER BY id DESC' % (
            ', '.join(columns), ' WHERE ' + ' AND '.join(cond) if cond else '')
        if last:
            sql += ' LIMIT %d' % int(last)
        return list(reversed(self.query(sql, params)))

    def phases(self, run_ids):
        """The phase rows of these runs, by run id then order."""
        if not run_ids:
            return []
        return self.query('SELECT * FROM gloaddriver_phases WHERE run_id IN (%s) ORDER BY '
                          'run_id, seq' % ', '.join('?' * len(run_ids)), list(run_ids))

    def tags(self, run_ids):
        """{run id: {name: value}}."""
        out = dict((i, {}) for i in run_ids)
        if run_ids:
            for r in self.query('SELECT run_id, name, value FROM gloaddriver_tags WHERE run_id '
                                'IN (%s)' % ', '.join('?' * len(run_ids)), list(run_ids)):
                out[r['run_id']][r['name']] = r['value']
        return out

    def close(self):
        self.conn.close()


def open_store(text):
    """The store a --store value names, its tables made where missing. ConfigError for
    a value that names none; SetupError (exit 3) for one that cannot be opened."""
    kind, where = parse_url(text)
    try:
        if kind == 'sqlite':
            import sqlite3
            folder = os.path.dirname(os.path.abspath(where))
            if not os.path.isdir(folder):
                raise errors.ConfigError('--store sqlite:%s: folder %s does not exist'
                                         % (where, folder))
            conn = sqlite3.connect(where, timeout=30)
        else:
            import psycopg2
            conn = psycopg2.connect(where, connect_timeout=10)
    except errors.GloadError:
        raise
    except Exception as e:
        raise errors.SetupError('--store %s: cannot open it: %s' % (
            masked(text), str(e).strip().splitlines()[0] if str(e).strip() else e))
    store = Store(kind, conn, masked(text))
    try:
        store._create()
    except errors.GloadError:
        store.close()
        raise
    except Exception as e:
        store.close()
        raise errors.SetupError('--store %s: cannot make its tables: %s'
                                % (masked(text), str(e).strip().splitlines()[0]))
    return store
