"""The PostgreSQL workloads that run through the runner: kv, relational, toolbench.

kv mirrors the Tarantool workload op for op (same keys, same values) on a
table ``(id bigint primary key, value text)``, so the two backends compare
directly. relational is a parent/child family workload: 50 % "create" (one
transaction: 3 parents with 2, 1 and 2 children) and 50 % "read" (10 parents
with their children), each a single statement: one round trip per op. Single
statements run in autocommit: an explicit BEGIN/COMMIT would add two round
trips. toolbench is the queries of asyncpg's driver benchmark: what it costs
the client to decode rows (many small types, many ints, 1 KB bytea, int
arrays), the server doing little.
"""
from __future__ import absolute_import, division, print_function

import psycopg2.extensions

import gevent
import psycopg2

from gloaddriver import errors, workload
from gloaddriver.backends import base
from gloaddriver.backends.postgres import kv_statements, pool as pgpool
from gloaddriver.py23 import clock, spawn_named

SCHEMA_KV = """CREATE TABLE IF NOT EXISTS {t} (id bigint PRIMARY KEY, value text NOT NULL)"""
SCHEMA_RELATIONAL = """
CREATE TABLE IF NOT EXISTS rel_parent (id bigserial PRIMARY KEY, name text NOT NULL,
                                       created timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS rel_child (id bigserial PRIMARY KEY,
                                      parent_id bigint NOT NULL REFERENCES rel_parent (id),
                                      name text NOT NULL);
CREATE INDEX IF NOT EXISTS rel_child_parent ON rel_child (parent_id)"""

# One statement = one round trip = one transaction (autocommit).
CREATE_FAMILY = """
WITH p AS (INSERT INTO rel_parent (name) VALUES (%s), (%s), (%s) RETURNING id),
     n AS (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM p)
INSERT INTO rel_child (parent_id, name)
SELECT n.id, c.name FROM n JOIN (VALUES (1, %s), (1, %s), (2, %s), (3, %s), (3, %s))
    AS c (rn, name) ON c.rn = n.rn
RETURNING parent_id"""
# LATERAL (with OFFSET 0, so it is not flattened into a join): each parent's children by the parent_id index, whatever the table
# statistics say. A plain LEFT JOIN planned on a young, never-analyzed table
# hashes a full scan of rel_child per read (measured: 2.9 ms at 30k children
# against 0.03 ms), and the workload slows down as the tables grow.
READ_FAMILIES = """
SELECT p.id, p.name, c.id, c.name
FROM (SELECT id, name FROM rel_parent WHERE id >= %s ORDER BY id LIMIT 10) AS p
LEFT JOIN LATERAL (SELECT id, name FROM rel_child WHERE parent_id = p.id OFFSET 0) AS c ON true"""


def family_names(key):
    """CREATE_FAMILY's parameters for ``key``: its three parents' and five children's
    names (both connectors make the same families)."""
    return [u'parent-%d-%d' % (key, i) for i in range(3)] + \
        [u'child-%d-%d' % (key, i) for i in range(5)]


def top_parent(rows, top):
    """The largest parent id so far, ``top`` or one of the ids CREATE_FAMILY returned in
    ``rows``: READ_FAMILIES reads from below it."""
    return max(top, max(r[0] for r in rows))

# Two tables of fixed content, filled once by --init.
SCHEMA_TOOLBENCH = """
CREATE TABLE IF NOT EXISTS gloaddriver_tb_bytea (id int PRIMARY KEY, data bytea NOT NULL);
INSERT INTO gloaddriver_tb_bytea
SELECT i, convert_to(repeat(chr(65 + i % 26), 1024), 'UTF8') FROM generate_series(1, 100) AS i
ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS gloaddriver_tb_arrays (id int PRIMARY KEY, a int[] NOT NULL);
INSERT INTO gloaddriver_tb_arrays
SELECT i, array(SELECT i * 1000 + j FROM generate_series(1, 100) AS j)
FROM generate_series(1, 100) AS i
ON CONFLICT DO NOTHING"""
TOOLBENCH_TABLES = ('gloaddriver_tb_bytea', 'gloaddriver_tb_arrays')
TOOLBENCH_QUERIES = {
    'pg_type': ("SELECT typname, typnamespace, typowner, typlen, typbyval, typcategory, "
                "typispreferred, typisdefined, typdelim, typrelid, typelem, typarray "
                "FROM pg_type WHERE typtypmod = %s AND typisdefined = %s", (-1, True)),
    'series': ('SELECT i FROM generate_series(1, %s) AS i', (1000,)),
    'bytea': ('SELECT data FROM gloaddriver_tb_bytea', None),
    'arrays': ('SELECT a FROM gloaddriver_tb_arrays', None),
}

# pg_stat_activity's rows, read from the function the view is built on: the view joins two
# catalogs, and planning that join made a sample cost the server under test 300 us of
# CPU; this costs 120 (measured on PostgreSQL 15). Twenty samples a second.
PEAK_SAMPLE = ("SELECT count(*) FROM pg_stat_get_activity(NULL) WHERE datid = "
               "(SELECT oid FROM pg_database WHERE datname = current_database()) "
               "AND backend_type = 'client backend' AND pid <> pg_backend_pid() "
               "AND application_name <> %s")


class PeakMonitor(object):
    """Samples this database's client backends (pg_stat_activity) every 50 ms, and the
    pool's connections checked out at that moment (in use by ops: open, and not free):
    the phase's peak of each, and of the second since the server metrics last asked."""

    def __init__(self, pool, direct=None):
        self.pool = pool
        self.direct = direct or pool    # where its own connection goes: the server
        self.peak = 0
        self.checked_out_peak = 0
        self._recent_out = 0       # the peak checked out since take_checked_out()
        self._item = None
        self._greenlet = None

    def _checked_out(self):
        pool = self.pool
        n = pool.created - len(pool._idle)
        if n > self.checked_out_peak:
            self.checked_out_peak = n
        if n > self._recent_out:
            self._recent_out = n

    def take_checked_out(self):
        """The most connections checked out at once since the last call (sampled)."""
        self._checked_out()
        n, self._recent_out = self._recent_out, 0
        return n

    def start(self):
        """Begin sampling. Never fails: when its connection (its own, outside the pool)
        cannot be made now, its greenlet retries, so a server that is down or a
        network cut between phases costs samples, not the run."""
        self.peak = self.checked_out_peak = 0
        self._connect_once()   # here when it can: not inside the measured window
        self._greenlet = spawn_named('pg-monitor', self._loop)

    def _loop(self):
        while True:
            self._checked_out()
            if self._item is None and not self._connect_once():
                gevent.sleep(0.2)
                continue
            try:
                self._item.cur.execute(PEAK_SAMPLE, (pgpool.MONITOR_NAME,))
                n = self._item.cur.fetchone()[0]
                if n > self.peak:
                    self.peak = n
            except psycopg2.Error:
                # Its connection was killed (or the server restarted): keep
                # sampling on a new one rather than go blind for the phase.
                self._drop()
            gevent.sleep(0.05)

    def _connect_once(self):
        """A named connection of its own in ``_item``; False when it cannot be had now."""
        try:
            self._item = self.direct.connect(setup=False, name=pgpool.MONITOR_NAME)
        except errors.OpError:
            return False
        return True

    def _drop(self):
        item, self._item = self._item, None
        pgpool.forget(item.fd)
        try:
            item.conn.close()
        except psycopg2.Error:
            pass

    def stop(self):
        if self._greenlet is not None:
            self._greenlet.kill()
            self._greenlet = None
        if self._item is not None:
            self._drop()
        return self.peak


class PostgresBackend(base.Backend):
    connector = 'psycopg2'

    def __init__(self, config, dsn, password):
        base.Backend.__init__(self, config)
        self.opts = config.opts
        self.dsn = dsn
        self.password = password
        self.pool = pgpool.Pool(dsn, self.opts.pool_size, password=password,
                                connect_timeout=config.limits.connect_timeout,
                                timeout=config.limits.timeout, setup=self._setup_connection)
        self.read_pool = None     # --read-from replica|any: the reads' own pool
        if config.target.read_from != 'leader':
            self.read_pool = pgpool.Pool(
                read_dsn(dsn, config.target.read_from), self.opts.pool_size, password=password,
                connect_timeout=config.limits.connect_timeout, timeout=config.limits.timeout,
                setup=self._setup_connection)
        # The driver's own looks at the server (its metrics, pg_stat_activity): straight
        # to it when the ops go through a pooler, whose few server connections they
        # would otherwise see.
        self.direct_pool = self.pool
        if self.opts.direct_dsn:
            self.direct_pool = pgpool.Pool(self.opts.direct_dsn, 1, password=password,
                                           connect_timeout=config.limits.connect_timeout,
                                           timeout=config.limits.timeout)
        self.monitor = PeakMonitor(self.pool, self.direct_pool)
        from gloaddriver.backends.postgres.pgbouncer import PhaseNote
        self.pooler_note = PhaseNote(self.opts)
        self.deadlines = pgpool.Deadlines(config.limits.timeout)
        self.values = workload.values(config.load.value_size, config.load.seed)
        self.max_parent = 0
        self._ops = None
        self._version = None
        self._address = None
        self._io0 = None
        self._several_hosts = ',' in (dsn_address(dsn) or '')   # a multi-host DSN
        self.engine = None         # SQLAlchemy's Engine on self.pool (orm, workload files)
        self.scale = None          # scripts: pgbench's :scale
        self.figures = None        # scripts: retries, failures, --per-statement
        self.tx_log = None         # scripts: --tx-log

    def describe(self):
        c = self.opts
        return ('psycopg2 %s, %d greenlets on a pool of %d, %s wait callback%s%s'
                % (psycopg2.__version__.split()[0], self.config.load.greenlets, c.pool_size,
                   c.wait_callback, ', prepared statements' if c.prepared else '',
                   through_pooler(c)))

    def server_version(self):
        return self._version

    def address(self):
        return self._address or 'libpq default'

    def server_metrics(self, pid):
        from gloaddriver.backends.postgres import metrics
        return metrics.sampler(self.direct_pool, pid, self.monitor)

    # -- setup ------------------------------------------------------------------

    def open(self):
        try:
            item = self.pool.connect(setup=False)   # the tables may not exist yet
        except errors.NotConnected as e:
            raise setup_error(str(e), dsn_address(self.dsn))
        bound = None
        try:
            conn = item.conn
            v = conn.server_version
            self._version = '%d.%d' % (v // 10000, v % 10000) if v >= 100000 else str(v)
            info = getattr(conn, 'info', None)
            if info is not None:
                self._address = '%s:%s' % (info.host, info.port)
            self._session_init(item)
            if self.opts.workload == 'script':
                self._check_scripts(item)
            elif self.opts.workload == 'sql':
                self._check_sql(item)
            elif self.opts.workload not in ('file', 'orm'):   # a file brings its own schema
                self._check_schema(item)
                bound = self._bind(item.cur)
        finally:
            # Not handed to the pool: it has no prepared statements and is not
            # counted in the pool's size.
            pgpool.forget(item.fd)
            item.conn.close()
        if self.opts.workload == 'orm' or self.opts.workload == 'file' and _file_uses_orm(
                self.config.load.workload_file):
            self._open_engine()
        self._ops = self._make_ops(bound)
        for pool in (self.pool, self.read_pool):
            if pool is not None:
                pool.fill(self.config.load.greenlets)
        if self.engine is not None:
            from gloaddriver.backends.postgres import sqla
            sqla.warm(self.engine)

    def _open_engine(self):
        """SQLAlchemy's Engine on the pool; for --workload orm, its tables checked (made by
        --init through the models' metadata) before the first op."""
        from gloaddriver.backends.postgres import sqla
        self.deadlines.start()
        self.engine = sqla.engine(self.pool, self.deadlines)
        if self.opts.workload != 'orm':
            return
        from gloaddriver.backends.postgres import orm_workload
        try:
            missing = orm_workload.missing(self.engine)
            if missing and self.opts.init:
                orm_workload.create_tables(self.engine)
                missing = []
        except Exception as e:
            raise errors.SchemaError('--workload orm cannot check its tables: %s'
                                     % pgpool.scrub(sqla.op_error(e, self.password), self.password))
        if missing:
            raise missing_tables(missing, orm_workload.schema_sql(self.engine))
        orm_workload.prime(self.engine)

    def _bind(self, cur):
        """What the ops' statements take from the run, quoted once by psycopg2 on a
        connection of the run (``kv_statements``): kv's values, or each toolbench query
        with its constant parameters written in."""
        if self.opts.workload == 'kv':
            return kv_statements.quoted(cur, self.values)
        if self.opts.workload == 'toolbench':
            return dict((name, cur.mogrify(sql, params))
                        for name, (sql, params) in TOOLBENCH_QUERIES.items())
        return None

    def _session_init(self, item):
        """--session-init tried once before the first op (and the tables checked in the
        session it sets): an SQL error is the run's setup error, not every op's."""
        if self.opts.session_init:
            try:
                item.cur.execute(self.opts.session_init)
            except psycopg2.Error as e:
                raise errors.SchemaError('--session-init failed: %s'
                                         % pgpool.scrub(e, self.password))

    def _check_schema(self, item):
        c = self.opts
        cur = item.cur
        tables, schema = {
            'kv': ([c.table], SCHEMA_KV.format(t=c.table)),
            'relational': (['rel_parent', 'rel_child'], SCHEMA_RELATIONAL),
            'toolbench': (TOOLBENCH_TABLES, SCHEMA_TOOLBENCH)}[c.workload]
        missing = []
        for t in tables:
            cur.execute('SELECT to_regclass(%s)', (t,))
            if cur.fetchone()[0] is None:
                missing.append(t)
        if missing and c.init:
            cur.execute(schema)
            missing = []
        if missing:
            raise missing_tables(missing, schema)
        if c.workload == 'relational':
            cur.execute('SELECT coalesce(max(id), 0) FROM rel_parent')
            self.max_parent = cur.fetchone()[0]

    def _check_sql(self, item):
        """--sql PREPAREd once before the first op (then let go): a statement the server
        cannot run is the run's setup error, not every op's."""
        try:
            # One string, one implicit transaction: through pgbouncer in transaction mode
            # both reach the same server connection.
            item.cur.execute('PREPARE gloaddriver_sql_check AS %s; '
                             'DEALLOCATE gloaddriver_sql_check' % self.opts.sql.text)
        except psycopg2.Error as e:
            raise errors.SchemaError('--sql cannot run on PostgreSQL at %s: %s'
                                     % (self._address or dsn_address(self.dsn),
                                        pgpool.scrub(e, self.password)))

    def _check_scripts(self, item):
        from gloaddriver.backends.postgres import script_run
        self.scale = script_run.setup(item.cur, self.opts.scripts, self.opts.script_run,
                                      self.opts.init)
        if self.opts.script_run.protocol == 'prepared':
            script_run.prepare_scripts(item.cur, self.opts.scripts)   # proven as they run

    def _setup_connection(self, item):
        if self.opts.session_init:
            # First, so the statements prepared below see the session it sets.
            item.cur.execute(self.opts.session_init)
        if self.opts.workload == 'script':
            if self.opts.script_run.protocol == 'prepared':
                from gloaddriver.backends.postgres import script_run
                script_run.prepare_scripts(item.cur, self.opts.scripts)
                item.prepared = True
            return
        if not self.opts.prepared or self.opts.workload != 'kv':
            return
        kv_statements.prepare(item.cur, self.opts.table)
        item.prepared = True

    # -- ops --------------------------------------------------------------------

    def _make_ops(self, bound):
        """The ops of the workload; ``bound`` is ``_bind``'s, made on the first connection."""
        c = self.opts
        run = pgpool.statement_runner(self.pool, self.deadlines, self.password)
        self.deadlines.start()
        if c.workload == 'sql':
            self._run = run
            return None
        if c.workload in ('script', 'file'):
            from gloaddriver.backends.postgres import user
            self._held = user.holder(self.pool, self.deadlines, self.password)
            if c.workload == 'script':
                self._script_runner()
            return None
        if c.workload == 'relational':
            return self._relational_ops(run)
        if c.workload == 'orm':
            from gloaddriver.backends.postgres import orm_workload
            return orm_workload.ops(self.engine)
        if c.workload == 'toolbench':
            return dict((name, _fetch_all(run, sql)) for name, sql in bound.items())
        reads = run if self.read_pool is None else pgpool.statement_runner(
            self.read_pool, self.deadlines, self.password)
        return kv_statements.ops(run, reads, kv_statements.templates(c.table, c.prepared),
                                 bound, workload.scan_length)

    def _relational_ops(self, run):
        def op_create(key):
            rows = run(CREATE_FAMILY, family_names(key), 'all')
            self.max_parent = top_parent(rows, self.max_parent)
            return rows

        def op_read(key):
            start = 1 + key % max(self.max_parent, 1)
            return run(READ_FAMILIES, (start,), 'all')
        return {'create': op_create, 'read': op_read}

    def _script_runner(self):
        from gloaddriver.backends.postgres import script_run
        from gloaddriver.measure.script_figures import ScriptFigures
        from gloaddriver.workload import keys as keygen
        run, load = self.opts.script_run, self.config.load
        self.figures = ScriptFigures(self.opts.scripts, run.protocol, run.max_tries,
                                     run.per_statement)
        self.figures.scale = self.scale
        self.tx_log = None
        if run.tx_log is not None:
            self.tx_log = script_run.TxLog(run.tx_log, run.sampling_rate, run.max_tries != 1,
                                           keygen.make_rng(load.seed, 'tx-log', load.shard))
        self.runner = script_run.Runner(
            self.opts.scripts, run.protocol, run.max_tries, self.figures, self._held,
            dict(scale=self.scale, seed=load.seed, defines=run.defines),
            connect_per_op=run.connect_per_op, tx_log=self.tx_log,
            lender=(self.pool, self.deadlines, self.password))

    def worker_ops(self, worker):
        if self.opts.workload not in ('script', 'sql'):
            return self._ops
        from gloaddriver.workload import keys as keygen
        load = self.config.load
        if self.opts.workload == 'sql':
            from gloaddriver.backends.postgres.sql_request import psycopg2_op
            rnd = keygen.make_rng(load.seed, 'sql', load.shard, worker)
            return {'sql': psycopg2_op(self._run, self.opts.sql, self.opts.fill, rnd, worker)}
        rnd = keygen.make_rng(load.seed, 'script', load.shard, worker)
        # pgbench's client_id: unique across the processes of a run (shards of one size).
        first = load.shard[0] * load.greenlets if load.shard else 0
        return self.runner.worker_ops(first + worker, rnd)

    def client(self, worker):
        from gloaddriver.backends.postgres import user
        return user.Client(self._held, self._file_engine)

    def _file_engine(self):
        """A workload file's ``db.engine``: made before the run when its code names it,
        else here, at its first use."""
        if self.engine is None:
            self._open_engine()
        return self.engine

    def op_error(self, exc):
        from gloaddriver.backends.postgres import sqla
        return sqla.op_error(exc, self.password, self.engine, self.config.limits.timeout)

    def io_counts(self):
        return None

    def verify_reader(self):
        """--verify for kv: the keys read back a thousand at a time (id = ANY), on a
        connection of its own, each value matched against what each write leaves."""
        if self.opts.workload != 'kv':
            return None
        deadline = clock() + self.config.limits.outage_limit
        while True:
            try:
                item = self.pool.connect(setup=False)
                break
            except errors.NotConnected:
                if clock() > deadline:
                    raise
                gevent.sleep(0.25)
        sql = 'SELECT id, value FROM %s WHERE id = ANY(%%s)' % self.opts.table
        state = value_state(self.values)

        def read(keys):
            out = []
            for i in range(0, len(keys), 1000):
                part = keys[i:i + 1000]
                item.cur.execute(sql, (part,))
                got = dict(item.cur.fetchall())
                out.extend(state(k, got.get(k)) for k in part)
            return out

        def close():
            pgpool.forget(item.fd)
            item.conn.close()
        read.close = close
        return read

    def reconnects(self):
        # Made during an outage: each one a reconnect.
        return self.pool.connects + (self.read_pool.connects if self.read_pool else 0)

    def member(self):
        return self.pool.member if self._several_hosts else None

    def phase_started(self):
        self.pooler_note.start()
        self.monitor.start()
        if self.figures is not None:
            self.figures.start()

    def phase_extra(self):
        peak = self.monitor.stop()
        out = self.monitor.checked_out_peak
        extra = {} if self.figures is None else {'script': self.figures.block()}
        return dict(extra, **{'server_connections_peak': peak,
                'pool': {'size': self.pool.size, 'peak_open': self.pool.peak,
                         'checked_out_peak': out,
                         'connects': self.pool.connects, 'discarded': self.pool.discarded},
                'notes': ['connections used: at most %d checked out of a pool of %d at once, '
                          'peak server connections %d (pg_stat_activity; both sampled every '
                          '50 ms)' % (out, self.pool.size, peak)] + self.pooler_note.notes()})

    def close(self):
        if self.tx_log is not None:
            self.tx_log.close()
        self.monitor.stop()
        self.deadlines.stop()
        self.pool.close()
        if self.read_pool is not None:
            self.read_pool.close()


def through_pooler(opts):
    """What the header says of a private pooler the ops go through (or nothing)."""
    if not opts.pooler:
        return ''
    return ', through %s (%s pool mode)' % (opts.pooler, opts.pool_mode)


def _file_uses_orm(path):
    """True when the workload file's code reads db.engine or db.session (its SQLAlchemy
    is then needed before the run, not found missing by every op)."""
    from gloaddriver.backends.postgres import sqla
    from gloaddriver.workload import userfile
    return sqla.uses_sqlalchemy(userfile.load(path).module)


def _fetch_all(run, sql):
    def op(_key):   # the same rows every time: the key does not matter
        return run(sql, None, 'all')
    return op


def missing_tables(missing, schema):
    """The SchemaError of tables the workload needs that are not there."""
    return errors.SchemaError('table %s missing in the database; rerun with --init to create '
                              'it, or create it yourself: %s'
                              % (', '.join(missing), ' '.join(schema.split())))


def value_state(values):
    """state(key, value) for --verify of kv: which write's value a row holds (the
    gloaddriver.measure.ledger codes), GONE when there is no row, else CORRUPT."""
    from gloaddriver.measure import ledger
    nv = len(values)
    states = ((0, ledger.INSERTED), (1, ledger.UPDATED), (2, ledger.RMW))

    def state(key, value):
        if value is None:
            return ledger.GONE
        for shift, code in states:
            if value == values[(key + shift) % nv]:
                return code
        return ledger.CORRUPT
    return state


# --read-from -> libpq's target_session_attrs of the reads' pool (prefer-standby: libpq 14
# and later; Kind.options refuses it on an older one).
_READ_ATTRS = {'replica': 'prefer-standby', 'any': 'any'}


def read_dsn(dsn, read_from):
    """The DSN of the reads' pool: the same hosts, the session --read-from wants."""
    return psycopg2.extensions.make_dsn(dsn, target_session_attrs=_READ_ATTRS[read_from])


def dsn_address(dsn):
    """host:port a DSN points at, for messages (libpq defaults where unset)."""
    try:
        parts = psycopg2.extensions.parse_dsn(dsn) if dsn else {}
    except psycopg2.Error:
        return None
    return '%s:%s' % (parts.get('host') or 'the local socket', parts.get('port') or 5432)


def setup_error(message, address=None):
    """Turn a failed first connection into the SetupError a user can act on."""
    low = message.lower()
    if 'password authentication failed' in low or 'no password supplied' in low:
        return errors.AuthError('PostgreSQL refused the login: %s; check the user and password '
                                'in --dsn (or PGPASSWORD)' % message)
    if 'does not exist' in low:
        return errors.SchemaError('%s; create it (createdb) or name another in --dsn' % message)
    if 'invalid dsn' in low or 'invalid connection option' in low or 'missing "="' in low:
        return errors.SetupError('--dsn is not a valid connection string: %s' % message)
    return errors.ConnectError('cannot connect to PostgreSQL at %s: %s. Start a server there, '
                               'point --dsn at one, or use --spawn for a private one'
                               % (address or 'the --dsn address', message))
