"""The kv workload on the pipelined connection (``--connector pipelined``).

The same ops, keys and values as the psycopg2 kv workload (``workloads``), as
prepared statements on ``--pool-size`` pipelined connections (``pipelined``), the
greenlets spread over them (worker % N): the statements of one connection's
greenlets travel together, one send per loop pass. Results have the psycopg2
path's shape (a selected row, a row count, scanned (id, value) rows), so
``--checksum`` compares the two connectors.

The connection's target comes from the same DSN as psycopg2's, read by libpq's own
parser, with the PG* environment variables where the DSN says nothing, as libpq
would. TCP only: a unix socket is refused with one line; TLS as the DSN's sslmode says
(``tls``).
The server metrics sampler still uses psycopg2: it is one query a second.
"""
from __future__ import absolute_import, division, print_function

import getpass
import os

import gevent

from gloaddriver import errors, workload
from gloaddriver.py23 import clock
from gloaddriver.backends import base
from gloaddriver.backends.postgres import tls
from gloaddriver.backends.postgres.pipelined import PipelinedConnection
from gloaddriver.backends.postgres.workloads import (SCHEMA_KV, missing_tables, through_pooler,
                                                   value_state)
from gloaddriver.backends.shared_socket import connect_when_up, summed_stats

STATEMENTS = (
    ('gl_insert', 'INSERT INTO {t} (id, value) VALUES ($1, $2)'),
    ('gl_select', 'SELECT value FROM {t} WHERE id = $1'),
    ('gl_update', 'UPDATE {t} SET value = $1 WHERE id = $2'),
    ('gl_delete', 'DELETE FROM {t} WHERE id = $1'),
    ('gl_scan', 'SELECT id, value FROM {t} WHERE id >= $1 ORDER BY id LIMIT $2'),
)
VERIFY = ('gl_verify', 'SELECT id, value FROM {t} WHERE id = ANY($1::bigint[])')


# libpq's target_session_attrs -> what a pipelined connection with several hosts wants
# (shared_socket.WANTS). A standby wanted and none up: libpq's standby fails, ours reads
# from the primary (prefer-standby).
_SESSION_ATTRS = {'any': 'any', 'read-write': 'leader', 'primary': 'leader',
                  'read-only': 'replica', 'standby': 'replica', 'prefer-standby': 'replica'}


def target(dsn, password, environ=None):
    """(addresses, user, database, password, want, tls) of a libpq DSN, the PG* variables
    filling what it leaves out: ``addresses`` [(host, port)] of each host it names
    (libpq's multi-host syntax), ``want`` from its target_session_attrs, ``tls`` the
    tls.Spec of its sslmode (None: plain); ConfigError for what this connector cannot
    reach."""
    import psycopg2.extensions
    env = os.environ if environ is None else environ
    try:
        parsed = psycopg2.extensions.parse_dsn(dsn) if dsn else {}
    except Exception as e:
        raise errors.ConfigError('--dsn is not a valid connection string: %s'
                                 % str(e).strip().splitlines()[0])

    def get(key, var, default=None):
        return parsed.get(key) or env.get(var) or default
    host = get('hostaddr', 'PGHOSTADDR') or get('host', 'PGHOST', '')
    hosts = [h.strip() for h in host.split(',')]
    sockets = [h for h in hosts if not h or h.startswith('/') or h.startswith('@')]
    if not host or sockets:
        raise errors.ConfigError('--connector pipelined connects over TCP only: give the '
                                 'server\'s address as host= in --dsn (%s); or use --connector '
                                 'psycopg2' % ('%s is a unix socket' % sockets[0] if host else
                                               'libpq\'s default is the local unix socket'))
    ports = [p.strip() for p in get('port', 'PGPORT', '5432').split(',')]
    if len(ports) == 1:
        ports = ports * len(hosts)
    if len(ports) != len(hosts) or not all(p.isdigit() for p in ports):
        raise errors.ConfigError('--dsn names %d host%s and ports %s: give one port, or one '
                                 'per host' % (len(hosts), '' if len(hosts) == 1 else 's',
                                               ','.join(ports)))
    attrs = get('target_session_attrs', 'PGTARGETSESSIONATTRS', 'any')
    if attrs not in _SESSION_ATTRS:
        raise errors.ConfigError('--dsn: target_session_attrs=%s is none of %s'
                                 % (attrs, ', '.join(sorted(_SESSION_ATTRS))))
    user = get('user', 'PGUSER') or getpass.getuser()
    return ([(h, int(p)) for h, p in zip(hosts, ports)], user, get('dbname', 'PGDATABASE', user),
            password or parsed.get('password') or env.get('PGPASSWORD'), _SESSION_ATTRS[attrs],
            tls.spec_of(get))


def make_ops(conn, values, scan_length=workload.scan_length):
    """The kv ops on one pipelined connection; ``values`` as the psycopg2 path writes
    them (encoded once here: a 1.5 KB value is not encoded again per op)."""
    execute = conn.execute
    encoded = [v.encode('utf-8') for v in values]
    nv = len(encoded)

    def op_insert(key):
        return execute(b'gl_insert', (key, encoded[key % nv]))

    def op_select(key):
        rows = execute(b'gl_select', (key,))
        return rows[0] if rows else rows

    def op_update(key):
        return execute(b'gl_update', (encoded[(key + 1) % nv], key))

    def op_delete(key):
        return execute(b'gl_delete', (key,))

    def op_scan(key):
        return [(int(r[0]), r[1]) for r in execute(b'gl_scan', (key, scan_length(key)))]

    def op_rmw(key):
        # Two statements in autocommit, as YCSB's read-modify-write: not atomic.
        if not execute(b'gl_select', (key,)):
            return 0
        return execute(b'gl_update', (encoded[(key + 2) % nv], key))
    return {'insert': op_insert, 'select': op_select, 'update': op_update,
            'delete': op_delete, 'scan': op_scan, 'rmw': op_rmw}


class PipelinedBackend(base.Backend):
    connector = 'pipelined'
    lazy_rows = False       # PipelinedConnection's lazy_rows for this workload's connections

    def __init__(self, config, dsn, password):
        base.Backend.__init__(self, config)
        self.opts = config.opts
        self.dsn, self.password = dsn, password
        self.addresses, self.user, self.database, self._secret, self.want, self.tls = \
            target(dsn, password)
        self.values = workload.values(config.load.value_size, config.load.seed)
        self.conns = []
        self.read_conns = []      # --read-from replica|any: the reads' own connections
        self._ops = []
        self._version = None
        from gloaddriver.backends.postgres.pgbouncer import PhaseNote
        self.pooler_note = PhaseNote(self.opts)

    def phase_started(self):
        self.pooler_note.start()

    def phase_extra(self):
        notes = self.pooler_note.notes()
        return {'notes': notes} if notes else {}

    def _connection(self, statements=(), name='pg-pipelined', reconnect=True, want=None):
        c = self.config
        host, port = self.addresses[0]
        return PipelinedConnection(host, port, self.user, self._secret,
                                   self.database, timeout=c.limits.timeout,
                                   connect_timeout=c.limits.connect_timeout,
                                   statements=statements, reconnect=reconnect,
                                   outage_limit=c.limits.outage_limit, name=name,
                                   addresses=self.addresses, want=want or self.want,
                                   session_init=self.opts.session_init, tls=self.tls,
                                   lazy_rows=self.lazy_rows)

    def describe(self):
        n = self.opts.pool_size
        return ('pipelined connector (extended protocol, statements in flight together), '
                '%d greenlets on %d connection%s, prepared statements%s'
                % (self.config.load.greenlets, n, '' if n == 1 else 's',
                   through_pooler(self.opts)))

    def address(self):
        if self.conns:
            return self.conns[0].address     # the member it is connected to
        return ','.join('%s:%s' % a for a in self.addresses)

    def server_version(self):
        return self._version

    def member(self):
        if len(self.addresses) > 1 and self.conns:
            return self.conns[0].address
        return None

    def open(self):
        statements = [(name, sql.format(t=self.opts.table)) for name, sql in STATEMENTS]
        self._open_connections(self._check_schema, statements)
        self._ops = [make_ops(conn, self.values) for conn in self.conns]
        read_from = self.config.target.read_from
        if read_from != 'leader':
            # The reads on connections of their own, to a standby (or any member).
            for i, ops in enumerate(self._ops):
                conn = self._read_connection(statements, 'pg-read-%d' % i, read_from)
                self.read_conns.append(conn)
                reads = make_ops(conn, self.values)
                ops.update((op, reads[op]) for op in workload.READ_OPS)

    def _open_connections(self, check, statements):
        """The server's version and ``check(conn)`` (its tables) on a setup connection,
        then --pool-size connections with ``statements`` prepared on each."""
        setup = self._connect(self._connection(name='pg-setup', reconnect=False))
        try:
            self._version = (setup.server_version or '').split(' ')[0] or None
            check(setup)
        finally:
            setup.close()
        for i in range(self.opts.pool_size):
            self.conns.append(self._connect(self._connection(statements,
                                                             'pg-pipelined-%d' % i)))

    def _read_connection(self, statements, name, want, patience=10.0):
        """A connection for the reads, on a standby: a table --init has just made on the
        primary may take a moment to get there (its statements cannot be prepared)."""
        deadline = clock() + patience
        while True:
            try:
                return self._connect(self._connection(statements, name, want=want))
            except errors.SchemaError:
                if clock() > deadline:
                    raise
                gevent.sleep(0.1)

    def _connect(self, conn):
        """conn.connect(), its refusal told as the psycopg2 path tells it."""
        try:
            return conn.connect()
        except errors.AuthError as e:
            raise errors.AuthError('%s; check the user and password in --dsn (or PGPASSWORD)'
                                   % e)
        except errors.SchemaError as e:
            if 'database "' in str(e):   # 3D000 at the login, not a statement
                raise errors.SchemaError('%s; create it (createdb) or name another in --dsn'
                                         % e)
            raise
        except errors.ConnectError as e:
            raise errors.ConnectError('%s. Start a server there, point --dsn at one, or use '
                                      '--spawn for a private one' % e)

    def _check_schema(self, conn):
        table = self.opts.table
        schema = SCHEMA_KV.format(t=table)
        try:
            if conn.query('SELECT to_regclass($1)', (table,))[0][0] is None:
                if not self.opts.init:
                    raise missing_tables([table], schema)
                conn.query(schema)
        except errors.OpError as e:
            raise errors.SetupError('cannot check table %s on PostgreSQL at %s: %s'
                                    % (table, conn.address, e))

    def worker_ops(self, worker):
        return self._ops[worker % len(self._ops)]

    def io_counts(self):
        return summed_stats(self.conns + self.read_conns)

    def reconnects(self):
        return sum(conn.reconnects for conn in self.conns + self.read_conns)

    def server_metrics(self, pid):
        from gloaddriver.backends.postgres import metrics
        from gloaddriver.backends.postgres import pool as pgpool
        c = self.config
        # Straight to the server when the ops go through a pooler.
        return metrics.sampler(pgpool.Pool(c.opts.direct_dsn or self.dsn, 1,
                                           password=self.password,
                                           connect_timeout=c.limits.connect_timeout,
                                           timeout=c.limits.timeout), pid)

    def verify_reader(self):
        """--verify: the keys read back a thousand at a time (id = ANY) on a pipelined
        connection of its own, made once the server is back (it may be restarting)."""
        statement = (VERIFY[0], VERIFY[1].format(t=self.opts.table))
        conn = connect_when_up(lambda: self._connection(
            [statement], 'pg-verify', reconnect=False).connect(), self.config.limits.outage_limit)
        state = value_state(self.values)

        def read(keys):
            out = []
            for i in range(0, len(keys), 1000):
                part = keys[i:i + 1000]
                rows = conn.execute(statement[0], ('{%s}' % ','.join(str(k) for k in part),))
                got = dict((int(r[0]), r[1]) for r in rows)
                out.extend(state(k, got.get(k)) for k in part)
            return out
        read.close = conn.close
        return read

    def close(self):
        for conn in self.conns + self.read_conns:
            conn.close()
        self.conns, self.read_conns = [], []
