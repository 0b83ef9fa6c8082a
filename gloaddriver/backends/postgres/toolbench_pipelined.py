"""The toolbench workload on the pipelined connection (``--connector pipelined
--workload toolbench``): asyncpg's driver benchmark queries, read the cheap way.

The same four queries as the psycopg2 path (``workloads.TOOLBENCH_QUERIES``), prepared
on every connection and described there, so that each column is asked in the format
cheaper to read (``row_values``). The rows are not decoded unless something reads
them (``--checksum``, a workload reading a row): an op counts its rows and their bytes
from the reply's messages (``replies.Rows``). ``--decode full`` decodes every row
inside the op, to the values psycopg2 gives, which is what a Python application that
uses them pays. The phase's result has its rows and result bytes (``rows``,
``result_bytes``), whichever the mode.
"""
from __future__ import absolute_import, division, print_function

import re

from gloaddriver import errors
from gloaddriver.backends.postgres.kv_pipelined import PipelinedBackend
from gloaddriver.backends.postgres.workloads import (SCHEMA_TOOLBENCH, TOOLBENCH_QUERIES,
                                                     TOOLBENCH_TABLES, missing_tables)

_PLACEHOLDER = re.compile(r'%s')


def numbered(sql):
    """psycopg2's ``%s`` placeholders as the protocol's ``$1``, ``$2``..."""
    counter = iter(range(1, 1 + sql.count('%s')))
    return _PLACEHOLDER.sub(lambda _m: '$%d' % next(counter), sql)


class Tally(object):
    """The rows and result bytes the ops of a phase read (every connection's ops add
    here: greenlets of one process, no lock needed)."""
    __slots__ = ('rows', 'size')

    def __init__(self):
        self.rows = self.size = 0


def make_ops(conn, tally, full):
    """The toolbench ops on one lazy pipelined connection; ``full``: decode every row."""
    rows = conn.rows
    ops = {}
    for name, (_sql, params) in TOOLBENCH_QUERIES.items():
        ops[name] = _op(rows, name.encode('ascii'), tuple(params or ()), tally, full)
    return ops


def _op(rows, name, params, tally, full):
    def op(_key):   # the same rows every time: the key does not matter
        r = rows(name, params)
        tally.rows += r.count
        tally.size += r.size
        return r.decoded() if full else r
    return op


class ToolbenchPipelinedBackend(PipelinedBackend):
    """toolbench on --pool-size lazy pipelined connections, the greenlets spread over
    them as the kv workload's are."""

    lazy_rows = True

    def __init__(self, config, dsn, password):
        PipelinedBackend.__init__(self, config, dsn, password)
        self.full = self.opts.decode == 'full'
        self.tally = Tally()

    def describe(self):
        return PipelinedBackend.describe(self).replace(
            'prepared statements', 'prepared statements, columns binary where cheaper, '
            'rows decoded %s' % ('every time (--decode full)' if self.full else
                                 'only when read'))

    def open(self):
        setup = self._connect(self._connection(name='pg-setup', reconnect=False))
        try:
            self._version = (setup.server_version or '').split(' ')[0] or None
            self._check_tables(setup)
        finally:
            setup.close()
        statements = [(name, numbered(sql)) for name, (sql, _p) in TOOLBENCH_QUERIES.items()]
        for i in range(self.opts.pool_size):
            self.conns.append(self._connect(self._connection(statements,
                                                             'pg-pipelined-%d' % i)))
        self._ops = [make_ops(conn, self.tally, self.full) for conn in self.conns]

    def _check_tables(self, conn):
        try:
            missing = [t for t in TOOLBENCH_TABLES
                       if conn.query('SELECT to_regclass($1)', (t,))[0][0] is None]
            if missing and self.opts.init:
                for statement in SCHEMA_TOOLBENCH.split(';'):
                    conn.query(statement)
                missing = []
        except errors.OpError as e:
            raise errors.SetupError('cannot check the toolbench tables on PostgreSQL at %s: %s'
                                    % (conn.address, e))
        if missing:
            raise missing_tables(missing, SCHEMA_TOOLBENCH)

    def phase_started(self):
        PipelinedBackend.phase_started(self)
        self.tally.rows = self.tally.size = 0

    def phase_extra(self):
        return dict(PipelinedBackend.phase_extra(self), rows=self.tally.rows,
                    result_bytes=self.tally.size)
