"""The workloads that read rows, on the pipelined connection (``--connector pipelined
--workload toolbench|relational``): the psycopg2 path's statements, results read the
cheap way.

The same statements as the psycopg2 path (``workloads``: asyncpg's driver benchmark
queries, the relational families), prepared on every connection and described there,
so that each column is asked in the format cheaper to read (``row_values``). Rows are
not decoded unless something reads them (``--checksum``, relational's create reading
the parent ids it made): an op counts its rows and their bytes from the reply's
messages (``replies.Rows``). ``--decode full`` decodes every row inside the op, to the
values psycopg2 gives, which is what a Python application that uses them pays. The
phase's result has its rows and result bytes (``rows``, ``result_bytes``), whichever
the mode.
"""
from __future__ import absolute_import, division, print_function

import re

from gloaddriver import errors
from gloaddriver.backends.postgres.kv_pipelined import PipelinedBackend
from gloaddriver.backends.postgres.replies import Rows
from gloaddriver.backends.postgres.workloads import (CREATE_FAMILY, READ_FAMILIES,
                                                     SCHEMA_RELATIONAL, SCHEMA_TOOLBENCH,
                                                     TOOLBENCH_QUERIES, TOOLBENCH_TABLES,
                                                     family_names, missing_tables, top_parent)

_PLACEHOLDER = re.compile(r'%s')
RELATIONAL_TABLES = ('rel_parent', 'rel_child')


def numbered(sql):
    """psycopg2's ``%s`` placeholders as the protocol's ``$1``, ``$2``..."""
    counter = iter(range(1, 1 + sql.count('%s')))
    return _PLACEHOLDER.sub(lambda _m: '$%d' % next(counter), sql)


class Tally(object):
    """The rows and result bytes the ops of a phase read (every connection's ops add
    here: greenlets of one process, no lock needed), and relational's newest parent."""
    __slots__ = ('rows', 'size', 'max_parent')

    def __init__(self):
        self.rows = self.size = self.max_parent = 0


def _reader(rows, tally, full):
    """read(name, params): the statement's rows, counted (and decoded when ``full``), or
    the row count of one that returned none (DML)."""
    def read(name, params):
        r = rows(name, params)
        if r.__class__ is not Rows:
            return r
        tally.rows += r.count
        tally.size += r.size
        return r.decoded() if full else r
    return read


def toolbench_ops(conn, tally, full):
    """The toolbench ops on one lazy pipelined connection; ``full``: decode every row."""
    read = _reader(conn.rows, tally, full)
    return dict((name, _query(read, name.encode('ascii'), tuple(params or ())))
                for name, (_sql, params) in TOOLBENCH_QUERIES.items())


def _query(read, name, params):
    def op(_key):   # the same rows every time: the key does not matter
        return read(name, params)
    return op


def relational_ops(conn, tally, full):
    """create and read, as the psycopg2 path's (workloads.PostgresBackend)."""
    read = _reader(conn.rows, tally, full)

    def op_create(key):
        rows = read(b'rel_create', family_names(key))
        tally.max_parent = top_parent(rows, tally.max_parent)   # reads them: the ids made
        return rows

    def op_read(key):
        return read(b'rel_read', (1 + key % max(tally.max_parent, 1),))
    return {'create': op_create, 'read': op_read}


SQL = 'gloaddriver_sql'     # --sql's statement on every connection


def sql_op(conn, tally, full, fill, rnd, worker):
    """--sql on one lazy pipelined connection: the statement with this op's values
    (``fill``), its rows counted (decoded when ``full``) or its row count."""
    read = _reader(conn.rows, tally, full)
    name = SQL.encode('ascii')

    def op(key):
        return read(name, fill(key, rnd, worker))
    return op


# --workload -> (its statements, the tables it needs, their schema, its ops)
WORKLOADS = {
    'toolbench': ([(name, sql) for name, (sql, _p) in TOOLBENCH_QUERIES.items()],
                  TOOLBENCH_TABLES, SCHEMA_TOOLBENCH, toolbench_ops),
    'relational': ([('rel_create', CREATE_FAMILY), ('rel_read', READ_FAMILIES)],
                   RELATIONAL_TABLES, SCHEMA_RELATIONAL, relational_ops),
}


class RowsPipelinedBackend(PipelinedBackend):
    """toolbench or relational on --pool-size lazy pipelined connections, the greenlets
    spread over them as the kv workload's are."""

    lazy_rows = True

    def __init__(self, config, dsn, password):
        PipelinedBackend.__init__(self, config, dsn, password)
        self.full = self.opts.decode == 'full'
        self.tally = Tally()
        if self.opts.workload == 'sql':     # --sql: its statement, no tables of ours
            self.statements, self.tables, self.schema, self.make_ops = \
                [(SQL, self.opts.sql.text)], (), '', None
        else:
            self.statements, self.tables, self.schema, self.make_ops = \
                WORKLOADS[self.opts.workload]

    def describe(self):
        return PipelinedBackend.describe(self).replace(
            'prepared statements', 'prepared statements, columns binary where cheaper, '
            'rows decoded %s' % ('every time (--decode full)' if self.full else
                                 'only when read'))

    def open(self):
        if self.make_ops is None:
            # --sql: prepared on every connection (a statement the server cannot run is
            # refused there, before the first op); $n placeholders already.
            self._open_connections(lambda _conn: None, self.statements)
            return
        self._open_connections(self._check_tables,
                               [(name, numbered(sql)) for name, sql in self.statements])
        self._ops = [self.make_ops(conn, self.tally, self.full) for conn in self.conns]

    def worker_ops(self, worker):
        if self.make_ops is not None:
            return PipelinedBackend.worker_ops(self, worker)
        from gloaddriver.workload import keys as keygen
        load = self.config.load
        rnd = keygen.make_rng(load.seed, 'sql', load.shard, worker)
        return {'sql': sql_op(self.conns[worker % len(self.conns)], self.tally, self.full,
                              self.opts.fill, rnd, worker)}

    def _check_tables(self, conn):
        try:
            missing = [t for t in self.tables
                       if conn.query('SELECT to_regclass($1)', (t,))[0][0] is None]
            if missing and self.opts.init:
                for statement in self.schema.split(';'):
                    conn.query(statement)
                missing = []
            if not missing and self.opts.workload == 'relational':
                self.tally.max_parent = int(conn.query(
                    'SELECT coalesce(max(id), 0) FROM rel_parent')[0][0])
        except errors.OpError as e:
            raise errors.SetupError('cannot check the %s tables on PostgreSQL at %s: %s'
                                    % (self.opts.workload, conn.address, e))
        if missing:
            raise missing_tables(missing, self.schema)

    def phase_started(self):
        PipelinedBackend.phase_started(self)
        self.tally.rows = self.tally.size = 0

    def phase_extra(self):
        return dict(PipelinedBackend.phase_extra(self), rows=self.tally.rows,
                    result_bytes=self.tally.size)
