"""PostgreSQL: psycopg2 made cooperative and a LIFO pool (``pool``), the workloads the
runner drives (``workloads``: kv, relational, toolbench), the bulk loader that drives
itself (``bulk``), the pipelined connection (``pipelined``) and the kv workload on it
(``kv_pipelined``, --connector pipelined), a private cluster (``server``), its metrics
(``metrics``) and its side of the two-interpreter cross-check of ``gloaddriver compat``
(``crosscheck``).

This module is the kind itself: its flags and how they make a backend.
"""
from __future__ import absolute_import, division, print_function

import os
import re
from collections import namedtuple

from gloaddriver import converters, errors, workload
from gloaddriver.backends import base
from gloaddriver.converters import count, positive_int

Options = namedtuple('Options', 'dsn table workload init prepared pool_size bulk_methods rows '
                                'wait_callback scripts connector script_run session_init decode '
                                'sql fill pooler pool_mode pooler_settings proxy direct_dsn '
                                'pooler_admin ha ha_settings')
# How scripts run (pgbench's flags): --protocol, --max-tries, --per-statement, --define,
# --scale, --connect-per-op, --tx-log, --sampling-rate.
ScriptRun = namedtuple('ScriptRun', 'protocol max_tries per_statement defines scale '
                                    'connect_per_op tx_log sampling_rate')
PROTOCOLS = ('simple', 'extended', 'prepared')
WORKLOADS = ('kv', 'relational', 'orm', 'bulk', 'toolbench')
RELATIONAL_OPS = ('create', 'read')
RELATIONAL_MIX = 'create=50,read=50'
# --workload orm (orm_workload.py, which imports SQLAlchemy: named here so the flags are
# judged without it): relational's two ops, and the ORM comparison's 35,000 by default.
ORM_DEFAULT_OPS = 35000
# --wait-callback: how psycopg2 yields to gevent (pool.install takes one of these).
WAIT_CALLBACKS = ('cached', 'psycogreen')
# The queries of asyncpg's driver benchmark: each is a phase of its own.
TOOLBENCH_OPS = ('pg_type', 'series', 'bytea', 'arrays')
BULK_METHODS = ('row-connect', 'row', 'executemany', 'execute-values', 'unnest', 'copy')
CONNECTORS = ('psycopg2', 'pipelined')
# --decode: the rows of a query decoded only when something reads them, or every one.
DECODES = ('lazy', 'full')
# --connector pipelined: greenlets per connection when --pool-size is not given. Several
# statements in flight per socket is the point of it; a few connections keep the
# server's backends (one CPU each) busy when there are cores for them.
PIPELINED_PER_CONNECTION = 8
# --pooler, --pool-mode (backends/postgres/pgbouncer.py).
POOLERS = ('pgbouncer',)
PROXIES = ('haproxy',)   # --proxy (backends/postgres/haproxy.py)
HA = ('patroni',)        # --ha (backends/postgres/patroni.py)
HA_PRESETS = ('fast', 'normal', 'safe')
POOL_MODES = ('session', 'transaction')
# What the private pgbouncer must have as gloaddriver writes it: where it listens, whom it
# lets in, its files.
OWN_POOLER_SETTINGS = ('listen_addr', 'listen_port', 'unix_socket_dir', 'auth_type',
                       'auth_file', 'auth_query', 'auth_user', 'admin_users', 'pidfile',
                       'logfile', 'user')
_IDENT = re.compile(r'^[A-Za-z_][A-Za-z0-9_]{0,62}$')


class Postgres(base.Kind):
    name = 'postgres'
    title = 'PostgreSQL'
    flags = (
        (('--dsn',), dict(help='postgres: libpq connection string or URI (ignored with '
                               '--spawn); its password is never printed')),
        (('--workload',), dict(choices=WORKLOADS,
                               help='postgres: kv (the default; the Tarantool ops on a (id bigint, '
                                    'value text) table), relational (parent/child families: '
                                    'create and read), orm (the same families through '
                                    'SQLAlchemy\'s ORM, needs gloaddriver[sqlalchemy]), bulk '
                                    '(load rows six ways), toolbench '
                                    '(pg_type, series, bytea, arrays reads)')),
        (('--table',), dict(help='postgres: kv table (default gloaddriver)')),
        (('--init',), dict(action='store_true',
                           help='postgres: create the workload\'s tables if they are missing')),
        (('--prepared',), dict(action='store_true',
                               help='postgres --workload kv and --script/--builtin: '
                                    'server-side prepared statements (PREPARE/EXECUTE; for '
                                    'scripts the same as --protocol prepared)')),
        (('--connector',), dict(choices=list(CONNECTORS),
                                help='postgres: psycopg2 (the default; one statement per '
                                     'connection at a time) or pipelined (ours: the extended '
                                     'protocol, the statements of several greenlets in flight '
                                     'on one socket; every workload but bulk)')),
        (('--decode',), dict(choices=list(DECODES),
                             help='postgres --connector pipelined --workload toolbench or '
                                  'relational: rows '
                                  'decoded only when something reads them (lazy, the default: '
                                  'counted and measured) or every row in the op (full: what an '
                                  'application that uses them pays); psycopg2 decodes every '
                                  'row')),
        (('--pool-size',), dict(type=positive_int, metavar='N',
                                help='postgres: connections in the pool (default: --greenlets; '
                                     'with --connector pipelined one per %d greenlets)'
                                     % PIPELINED_PER_CONNECTION)),
        (('--method',), dict(help='postgres bulk: row-connect, row, executemany, '
                                  'execute-values, unnest, copy, or all (the default; a '
                                  'comma-separated list is allowed)')),
        (('--rows',), dict(type=positive_int, metavar='N',
                           help='postgres bulk: rows per method (default 100000)')),
        (('--script',), dict(action='append', metavar='FILE.sql[@W]',
                             help='postgres: a pgbench script (its whole language) run whole as '
                                  'one op; several (a.sql@9,b.sql@1, or the flag again) make a '
                                  'weighted mix (see docs/pgbench.md)')),
        (('--builtin',), dict(action='append', metavar='NAME[@W]',
                              help='postgres: one of pgbench\'s built-in scripts: tpcb-like, '
                                   'simple-update, select-only (a prefix will do); mixes with '
                                   '--script as another script')),
        (('--define',), dict(action='append', metavar='NAME=VALUE',
                             help='postgres scripts: set a variable before the first run, as '
                                  'pgbench -D')),
        (('--protocol',), dict(choices=list(PROTOCOLS),
                               help='postgres scripts: how statements go, as pgbench -M: simple '
                                    '(values in the text; the default), extended (values apart '
                                    'from the text), prepared (PREPARE once per connection; '
                                    '--prepared says the same)')),
        (('--scale',), dict(type=positive_int, metavar='N',
                            help='postgres scripts: pgbench\'s scale; with --init, pgbench\'s '
                                 'tables are made this large when missing; :scale is the row '
                                 'count of pgbench_branches when it exists, else this '
                                 '(default 1)')),
        (('--max-tries',), dict(type=count, metavar='N',
                                help='postgres scripts: run a transaction up to N times when it '
                                     'fails with a serialization failure or a deadlock, with '
                                     'the same random draws (pgbench --max-tries; default 1; 0: '
                                     'as often as --timeout allows)')),
        (('--per-statement',), dict(action='store_true',
                                    help='postgres scripts: latency, failures and retries per '
                                         'script command (pgbench -r)')),
        (('--connect-per-op',), dict(action='store_true',
                                     help='postgres scripts: a new connection for every run '
                                          '(pgbench -C)')),
        (('--tx-log',), dict(nargs='?', const='pgbench_log', metavar='PREFIX',
                             help='postgres scripts: a line per transaction in pgbench -l\'s '
                                  'format, in PREFIX.PID (prefix pgbench_log when not given)')),
        (('--sampling-rate',), dict(type=float, metavar='FRACTION',
                                    help='with --tx-log: the fraction of transactions logged '
                                         '(default 1)')),
        (('--sql',), dict(metavar='STATEMENT',
                          help='postgres: each op executes this statement (one phase, '
                               '"sql"; prepared on --connector pipelined) with --args bound '
                               'to its $1, $2... or ?')),
        (('--args',), dict(metavar='JSON',
                           help='postgres: the values of --sql, a JSON array with the same '
                                'placeholders')),
        (('--session-init',), dict(metavar='SQL',
                                   help='postgres: SQL run on every new connection before it '
                                        'carries an op, reconnects included (SET statements, '
                                        'search_path...; both connectors)')),
        (('--pooler',), dict(choices=list(POOLERS),
                             help='postgres --spawn: a private pgbouncer in front of the '
                                  'server (of a replica set\'s leader); the ops go through '
                                  'it, the server metrics straight to the server (see '
                                  'docs/pooler.md)')),
        (('--pool-mode',), dict(choices=list(POOL_MODES),
                                help='with --pooler: pgbouncer\'s pool_mode, session (the '
                                     'default: a server connection per client) or '
                                     'transaction (one per transaction; no named prepared '
                                     'statements)')),
        (('--pooler-setting',), dict(action='append', metavar='NAME=VALUE',
                                     help='with --pooler: a pgbouncer.ini setting of its '
                                          '[pgbouncer] section, e.g. server_login_retry=1 '
                                          '(again for more; the defaults are pgbouncer\'s)')),
        (('--proxy',), dict(choices=list(PROXIES),
                            help='postgres --spawn --replicas N: a private HAProxy in front of '
                                 'the set, leading to the writable member (checked every '
                                 '0.5 s); the ops go through it (and --pooler in front of '
                                 'it)')),
        (('--ha',), dict(choices=list(HA),
                         help='postgres --spawn --replicas N: Patroni elects the leader (one '
                              'etcd, a Patroni per member; see docs/patroni.md); with --proxy '
                              'haproxy the check asks Patroni\'s REST API')),
        (('--ha-preset',), dict(choices=list(HA_PRESETS),
                                help='with --ha patroni: ttl, loop_wait, retry_timeout, '
                                     'primary_start_timeout together: fast 10/1/3/10, normal '
                                     '(the default, Patroni\'s own) 30/10/10/300, safe '
                                     '60/10/20/300')),
        (('--ha-setting',), dict(action='append', metavar='NAME=VALUE',
                                 help='with --ha patroni: one of ttl, loop_wait, retry_timeout, '
                                      'primary_start_timeout (seconds), synchronous_mode, '
                                      'synchronous_mode_strict (on/off), over the preset\'s '
                                      '(again for more)')),
        (('--wait-callback',), dict(choices=list(WAIT_CALLBACKS),
                                    help='postgres: how psycopg2 yields to gevent: one io '
                                         'watcher per connection (cached, the default), or '
                                         'psycogreen\'s new watcher per wait')),
    )

    def options(self, args):
        kind = args.workload or 'kv'
        scripts = ()
        scripted = args.script or args.builtin
        if scripted or args.workload_file:
            if args.workload:
                raise errors.ConfigError('--workload %s and --%s exclude each other' % (
                    args.workload, 'script' if scripted else 'workload-file'))
            if scripted and args.workload_file:
                raise errors.ConfigError('--script and --workload-file exclude each other')
            if scripted:
                scripts = _scripts(args.script or (), args.builtin or ())
            kind = 'script' if scripted else 'file'
        from gloaddriver.backends.postgres.sql_request import compile_request
        sql, fill = compile_request(args)
        if sql is not None:
            if args.workload or scripted or args.workload_file:
                raise errors.ConfigError('--sql is the op of its own: it excludes --workload, '
                                         '--script and --workload-file')
            kind = 'sql'
        script_run = _script_run(args, kind)
        if kind == 'orm':
            from gloaddriver.backends.postgres import sqla
            sqla.need('--workload orm')
        if scripts:
            _check_variables(scripts, script_run.defines)
            from gloaddriver.backends.postgres import script_run as runs
            for s in scripts:
                runs.check_transactions(s)
                if args.connector == 'pipelined':
                    from gloaddriver.backends.postgres import script_pipelined
                    script_pipelined.check(s)
        table = args.table or 'gloaddriver'
        if not _IDENT.match(table):
            raise errors.ConfigError('--table must be a plain SQL identifier, got %r' % table)
        if args.prepared and kind not in ('kv', 'script'):
            raise errors.ConfigError('--prepared applies to --workload kv and --script')
        if args.connect_per_op and args.connector == 'pipelined':
            raise errors.ConfigError('--connect-per-op is for the psycopg2 connector: the '
                                     'pipelined one shares each connection between greenlets')
        methods = ()
        if kind == 'bulk':
            text = args.method or 'all'
            methods = BULK_METHODS if text == 'all' else tuple(
                m.strip() for m in text.split(',') if m.strip())
            bad = [m for m in methods if m not in BULK_METHODS]
            if bad or not methods:
                raise errors.ConfigError('unknown --method %s; use %s or all'
                                         % (','.join(bad) or '(none)', ', '.join(BULK_METHODS)))
            if args.stages:   # before --rate: rate stages set it
                raise errors.ConfigError('--stages does not apply to --workload bulk: it '
                                         'loads its rows by each method as fast as it can')
            if args.rate:
                raise errors.ConfigError('--rate does not apply to --workload bulk')
            if args.verify or args.fault:
                raise errors.ConfigError('--verify and --fault do not apply to --workload bulk: '
                                         'it measures loading methods, not a server\'s outages')
        elif args.method is not None or args.rows is not None:
            raise errors.ConfigError('--method and --rows are for --workload bulk')
        connector = args.connector or 'psycopg2'
        pool_size = args.pool_size or args.greenlets
        if connector == 'pipelined':
            pool_size = args.pool_size or -(-args.greenlets // PIPELINED_PER_CONNECTION)
            _check_pipelined(args, kind, pool_size)
        if args.verify and kind in ('relational', 'orm', 'toolbench', 'script', 'file', 'sql'):
            raise errors.ConfigError('--verify reads back what the kv workload wrote; %s writes '
                                     'what the driver cannot predict' % (
                                         {'script': '--script', 'file': 'a workload file',
                                          'sql': '--sql'}.get(kind, '--workload ' + kind)))
        _check_read_from(args, kind, connector)
        decode = _decode(args, kind, connector)
        return Options(dsn=args.dsn or '', table=table, workload=kind, init=bool(args.init),
                       prepared=bool(args.prepared), pool_size=pool_size,
                       bulk_methods=methods, rows=args.rows or 100000,
                       wait_callback=args.wait_callback or 'cached', scripts=scripts,
                       connector=connector, script_run=script_run,
                       session_init=args.session_init, decode=decode, sql=sql, fill=fill,
                       **_pooler_options(args, kind, connector, script_run))

    def default_ops(self, args):
        return ORM_DEFAULT_OPS if args.workload == 'orm' else None

    def phases(self, opts, phases, mix, load):
        try:
            if opts.workload == 'script':
                if load:
                    raise ValueError('--load does not go with --script: prepare the data in '
                                     'the database (--spawn-init FILE.sql)')
                names = tuple(s.name for s in opts.scripts)
                default_mix = ','.join('%s=%d' % (s.name, s.weight) for s in opts.scripts)
                if not (phases or mix) and len(names) > 1:
                    mix = default_mix
                return workload.phases_from(phases, mix, False, names, names)
            if opts.workload == 'sql':
                if phases or mix or load:
                    raise ValueError('--sql is the op of one phase: --phases, --mix and --load '
                                     'do not go with it')
                return (workload.Phase('sql', (('sql', 1),)),)
            if opts.workload in ('relational', 'orm'):
                if phases:
                    raise ValueError('--workload %s is one mix phase; use '
                                     '--mix create=W,read=W' % opts.workload)
                return workload.phases_from(None, mix or RELATIONAL_MIX, load, RELATIONAL_OPS)
            if opts.workload == 'toolbench':
                if load:
                    raise ValueError('--load does not apply to --workload toolbench (read-only)')
                return workload.phases_from(phases, mix, False, TOOLBENCH_OPS, TOOLBENCH_OPS)
        except ValueError as e:
            raise errors.ConfigError(str(e))
        return base.Kind.phases(self, opts, phases, mix, load)

    def spawn(self, config):
        from gloaddriver.backends.postgres import pool
        from gloaddriver.backends.postgres.server import PostgresServer
        pool.install(config.opts.wait_callback)     # before any connection
        t = config.target
        if t.replicas and config.opts.ha:
            from gloaddriver.backends.postgres.patroni import PatroniSet
            server = PatroniSet(t.replicas, t.replication or 'async', config.opts.ha_settings,
                                wal_mode=t.wal_mode, init_file=t.spawn_init).start(180.0)
        elif t.replicas:
            from gloaddriver.backends.postgres.replicaset import PostgresReplicaSet
            server = PostgresReplicaSet(t.replicas, t.replication, wal_mode=t.wal_mode,
                                        init_file=t.spawn_init).start()
        else:
            server = PostgresServer(wal_mode=t.wal_mode, init_file=t.spawn_init).start()
        opts = config.opts
        if opts.pooler or opts.proxy:
            from gloaddriver.backends.postgres.pooled import PooledServer
            return PooledServer.start(server, opts.pool_mode, opts.pool_size,
                                      opts.pooler_settings, proxy=bool(opts.proxy))
        return server

    def target(self, config, server):
        # Behind a pooler, the ops go to it and the driver's monitoring to the server.
        pooler = getattr(server, 'pooler', None)
        return config._replace(opts=config.opts._replace(
            dsn=server.dsn, init=True, direct_dsn=getattr(server, 'direct_dsn', None),
            pooler_admin=pooler and pooler.admin_dsn),
                               target=config.target._replace(password=server.password))

    def server_argv(self, server):
        members = getattr(server, 'members', None) or [server]
        return ['--dsn', 'host=%s port=%s dbname=%s user=%s sslmode=disable%s' % (
            ','.join(m.host for m in members), ','.join(str(m.port) for m in members),
            server.database, server.user,
            ' target_session_attrs=read-write' if len(members) > 1 else ''), '--init'], {}

    def backend(self, config, counter):
        from gloaddriver.backends.postgres import pool
        pool.install(config.opts.wait_callback)     # before any connection
        dsn, password = _dsn(config)
        if config.opts.workload == 'bulk':
            from gloaddriver.backends.postgres.bulk import BulkLoader
            return BulkLoader(config, dsn, password, counter)
        if config.opts.connector == 'pipelined' and config.opts.workload == 'script':
            from gloaddriver.backends.postgres.script_pipelined import ScriptPipelinedBackend
            return ScriptPipelinedBackend(config, dsn, password)
        if config.opts.connector == 'pipelined' and config.opts.workload in ('toolbench',
                                                                           'relational', 'sql'):
            from gloaddriver.backends.postgres.rows_pipelined import RowsPipelinedBackend
            return RowsPipelinedBackend(config, dsn, password)
        if config.opts.connector == 'pipelined' and config.opts.workload == 'file':
            from gloaddriver.backends.postgres.user_pipelined import FilePipelinedBackend
            return FilePipelinedBackend(config, dsn, password)
        if config.opts.connector == 'pipelined':
            from gloaddriver.backends.postgres.kv_pipelined import PipelinedBackend
            return PipelinedBackend(config, dsn, password)
        from gloaddriver.backends.postgres.workloads import PostgresBackend
        return PostgresBackend(config, dsn, password)

    def manifest(self, config):
        opts = config.opts
        extra = {}
        prepared = opts.prepared
        if opts.script_run is not None:
            prepared = opts.script_run.protocol == 'prepared'
            extra['protocol'] = opts.script_run.protocol
        if opts.sql is not None:
            extra['request'] = {'kind': 'sql', 'target': opts.sql.given, 'args': opts.sql.args}
        if opts.connector == 'pipelined':
            from gloaddriver.backends.postgres.row_values import READER
            return dict(base.Kind.manifest(self, config), connector=opts.connector,
                        connections=opts.pool_size, workload=opts.workload,
                        pool_size=opts.pool_size, decode=opts.decode, row_reader=READER,
                        prepared=prepared if opts.script_run is not None else True, **extra)
        return dict(base.Kind.manifest(self, config), connector=opts.connector,
                    connections=config.load.greenlets, workload=opts.workload,
                    pool_size=opts.pool_size, prepared=prepared, decode=opts.decode,
                    wait_callback=opts.wait_callback, **extra)

    def with_processes(self, config):
        if config.opts.workload == 'bulk':
            raise errors.ConfigError('--processes does not apply to --workload bulk')
        if config.opts.ha:
            raise errors.ConfigError('--ha with --processes is not supported yet: run one '
                                     'process (--greenlets)')
        if config.opts.pooler:
            raise errors.ConfigError('--pooler with --processes is not supported yet: run one '
                                     'process (--greenlets), or several against a pgbouncer '
                                     'of your own (--dsn)')

    @property
    def crosscheck(self):
        from gloaddriver.backends.postgres import crosscheck
        return crosscheck


def _scripts(files, builtins):
    """The scripts of --script (FILE[@W][,FILE[@W]...], given once or more) and --builtin
    (NAME[@W][,...]), in that order; two of one name are numbered apart."""
    from gloaddriver.workload import script
    specs = [s.strip() for part in files for s in part.split(',') if s.strip()]
    scripts = [script.load(s) for s in specs]
    scripts += [script.builtin(s.strip()) for part in builtins for s in part.split(',')
                if s.strip()]
    names = [s.name for s in scripts]
    for i, s in enumerate(scripts):
        if names.count(s.name) > 1:
            scripts[i] = s._replace(name='%s_%d' % (s.name, i + 1))
    if not any(s.weight for s in scripts):
        raise errors.ConfigError('--script: every script has weight 0')
    return tuple(scripts)


# Variables every run has (pgbench's automatic ones, and the op's key).
AUTOMATIC_VARIABLES = ('client_id', 'scale', 'random_seed', 'default_seed', 'key')


def _check_variables(scripts, defines):
    """A variable an SQL statement uses that nothing sets (no \\set or \\setshell in any
    script, no --define, not automatic) is a typo: said before the run. Variables persist
    across a client's scripts, so any script's \\set counts; a \\gset or \\aset can set
    names no one can know before the run, so a script with one is not judged."""
    commands = [(s, c) for s in scripts for c in s.commands]
    if any(c.kind == 'sql' and (c.gset is not None or c.aset is not None)
           for _s, c in commands):
        return
    known = set(AUTOMATIC_VARIABLES) | set(defines)
    known.update(c.name for _s, c in commands if c.kind in ('set', 'setshell'))
    for s, c in commands:
        if c.kind != 'sql':
            continue
        for query in c.queries:
            for name in query.names:
                if name not in known:
                    raise errors.ConfigError(
                        'script %s, line %d: variable :%s is never set (\\set it, '
                        '--define it, or use :%s)' % (s.path, c.line, name,
                                                      ', :'.join(AUTOMATIC_VARIABLES)))


def _script_run(args, kind):
    """How scripts run: pgbench's flags, refused where there is no script."""
    given = [flag for flag, value in (
        ('--builtin', args.builtin), ('--define', args.define), ('--protocol', args.protocol),
        ('--scale', args.scale), ('--max-tries', args.max_tries),
        ('--per-statement', args.per_statement), ('--connect-per-op', args.connect_per_op),
        ('--tx-log', args.tx_log), ('--sampling-rate', args.sampling_rate))
        if value not in (None, False)]
    if kind != 'script':
        if given:
            raise errors.ConfigError('%s %s for --script or --builtin' % (
                ', '.join(given), 'is' if len(given) == 1 else 'are'))
        return None
    protocol = args.protocol or ('prepared' if args.prepared else 'simple')
    if args.prepared and protocol != 'prepared':
        raise errors.ConfigError('--prepared and --protocol %s exclude each other' % protocol)
    defines = {}
    for item in args.define or ():
        name, sep, value = item.partition('=')
        if not sep or not re.match(r'^[A-Za-z0-9_]+$', name):
            raise errors.ConfigError('--define %s: write NAME=VALUE' % item)
        defines[name] = value
    rate = args.sampling_rate
    if rate is not None:
        if args.tx_log is None:
            raise errors.ConfigError('--sampling-rate goes with --tx-log')
        if not 0.0 < rate <= 1.0:
            raise errors.ConfigError('--sampling-rate must be above 0 and at most 1')
    if args.tx_log is not None:
        folder = os.path.dirname(os.path.abspath(args.tx_log))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise errors.ConfigError('--tx-log %s: cannot write in %s' % (args.tx_log, folder))
    return ScriptRun(protocol=protocol,
                     max_tries=1 if args.max_tries is None else args.max_tries,
                     per_statement=bool(args.per_statement), defines=defines,
                     scale=args.scale, connect_per_op=bool(args.connect_per_op),
                     tx_log=args.tx_log, sampling_rate=rate or 1.0)


def _check_pipelined(args, kind, pool_size):
    """What --connector pipelined does not do, refused before the run."""
    if kind not in ('kv', 'toolbench', 'relational', 'script', 'file', 'sql'):
        raise errors.ConfigError('--connector pipelined runs --workload kv, relational, '
                                 'toolbench, --script and --workload-file; --workload %s '
                                 'needs the psycopg2 connector' % kind)
    if args.wait_callback:
        raise errors.ConfigError('--wait-callback is for the psycopg2 connector; the pipelined '
                                 'one reads its socket from the hub itself')
    if pool_size > args.greenlets:
        raise errors.ConfigError('--pool-size %d exceeds --greenlets %d: with --connector '
                                 'pipelined a connection would have no greenlet'
                                 % (pool_size, args.greenlets))


def _check_pooler(args, kind, connector, script_run):
    """--pooler and --pool-mode checked before the run; what pgbouncer 1.18's transaction
    mode cannot carry (named prepared statements: the next transaction may get another
    server connection, which has never seen them) refused with what to use instead."""
    if args.pool_mode and not args.pooler:
        raise errors.ConfigError('--pool-mode goes with --pooler pgbouncer')
    if not args.pooler:
        hit = [f for f in _faults_given(args) if f.target == converters.FAULT_POOLER]
        if hit:
            raise errors.ConfigError('--fault %s-pooler@%gs: there is no pooler; add --pooler '
                                     'pgbouncer (with --spawn)' % (hit[0].action, hit[0].at))
        return
    if not args.spawn:
        raise errors.ConfigError('--pooler goes with --spawn (gloaddriver starts pgbouncer in '
                                 'front of its private server); for a pgbouncer of your own, '
                                 'give its address in --dsn')
    if args.read_from not in (None, 'leader'):
        raise errors.ConfigError('--read-from %s does not go with --pooler: the private '
                                 'pgbouncer fronts the leader only' % args.read_from)
    if args.pool_mode != 'transaction':
        return
    named = None
    if script_run is not None and script_run.protocol == 'prepared':
        named = '--protocol prepared' if args.protocol else '--prepared'
        instead = 'use --protocol extended (values apart from the text, no named statement)'
    elif args.prepared:
        named, instead = '--prepared', 'leave out --prepared'
    elif connector == 'pipelined' and kind != 'script':
        named = '--connector pipelined'
        instead = ('use --connector psycopg2' + (
            ', or --script with --protocol simple or extended' if kind == 'script' else ''))
    if named:
        raise errors.ConfigError(
            '%s prepares named statements, which pgbouncer 1.18 in transaction mode does not '
            'carry (the next transaction may run on another server connection: "prepared '
            'statement ... does not exist"); %s, or --pool-mode session' % (named, instead))


def _pooler_options(args, kind, connector, script_run):
    """The Options of --pooler, checked (the DSNs come with the spawned pooler)."""
    _check_pooler(args, kind, connector, script_run)
    if args.proxy and not (args.spawn and args.replicas):
        raise errors.ConfigError('--proxy haproxy goes with --spawn --replicas N (it leads to '
                                 'the set\'s writable member); for a proxy of your own, give '
                                 'its address in --dsn')
    if args.proxy and args.read_from not in (None, 'leader'):
        raise errors.ConfigError('--read-from %s does not go with --proxy: the private '
                                 'HAProxy has no replica backend' % args.read_from)
    return dict(pooler=args.pooler, pool_mode=args.pool_mode or (
        'session' if args.pooler else None), pooler_settings=_pooler_settings(args),
        proxy=args.proxy, direct_dsn=None, pooler_admin=None, ha=args.ha,
        ha_settings=_ha_settings(args))


def _ha_settings(args):
    """--ha patroni's settings, checked (and the faults that need it, or that it
    refuses); None without --ha."""
    faults = _faults_given(args)
    own = [f for f in faults if f.action == converters.SWITCHOVER or
           f.target == converters.FAULT_DCS]
    if not args.ha:
        if args.ha_preset or args.ha_setting:
            raise errors.ConfigError('--ha-preset and --ha-setting go with --ha patroni')
        if own:
            raise errors.ConfigError('--fault %s: there is no Patroni cluster; add --ha '
                                     'patroni (with --spawn --replicas N)'
                                     % converters.fault_name(own[0]))
        if any(f.target == converters.FAULT_PROXY for f in faults) and not args.proxy:
            raise errors.ConfigError('--fault proxy-...: there is no proxy; add --proxy '
                                     'haproxy (with --spawn --replicas N)')
        return None
    from gloaddriver.backends.postgres import patroni
    if not (args.spawn and args.replicas):
        raise errors.ConfigError('--ha patroni goes with --spawn --replicas N (gloaddriver '
                                 'starts etcd and a Patroni per member); for a cluster of your '
                                 'own, give its HAProxy or members in --dsn')
    missing = patroni.missing_programs()
    if missing:
        raise errors.ConfigError('--ha patroni needs %s; install them (apt-get install -y %s)'
                                 % (' and '.join(missing), ' '.join(missing)))
    if any(f.action == converters.PROMOTE for f in faults):
        raise errors.ConfigError('--fault promote: under --ha patroni Patroni elects the '
                                 'leader itself; use kill-leader (it elects) or switchover')
    if any(f.target == converters.FAULT_PROXY for f in faults) and not args.proxy:
        raise errors.ConfigError('--fault proxy-...: there is no proxy; add --proxy haproxy')
    return patroni.choose_settings(args.ha_preset, args.ha_setting, args.replication)


def _pooler_settings(args):
    """--pooler-setting NAME=VALUE..., as ((name, value), ...); the settings the private
    pgbouncer needs as they are (its address, auth, admin) refused."""
    out = []
    for item in args.pooler_setting or ():
        name, sep, value = item.partition('=')
        name = name.strip().lower()
        if not args.pooler:
            raise errors.ConfigError('--pooler-setting goes with --pooler pgbouncer')
        if not sep or not re.match(r'^[a-z_]+$', name) or '\n' in value:
            raise errors.ConfigError('--pooler-setting %s: write NAME=VALUE, e.g. '
                                     'server_login_retry=1' % item)
        if name == 'pool_mode':
            raise errors.ConfigError('--pooler-setting pool_mode: use --pool-mode')
        if name in OWN_POOLER_SETTINGS:
            raise errors.ConfigError('--pooler-setting %s: gloaddriver sets it for its private '
                                     'pgbouncer (%s)' % (name, ', '.join(OWN_POOLER_SETTINGS)))
        out.append((name, value.strip()))
    return tuple(out)


def _faults_given(args):
    """--fault's actions, or none when it is missing or wrong (config says why)."""
    if not args.fault:
        return ()
    try:
        return converters.faults(args.fault, replica_set=bool(args.replicas))
    except ValueError:
        return ()


def _decode(args, kind, connector):
    """--decode as the run does it: lazy or full where rows can stay undecoded (pipelined
    toolbench and relational), else full (every row is built), which --decode lazy
    cannot change."""
    if connector == 'pipelined' and kind in ('toolbench', 'relational', 'sql'):
        return args.decode or 'lazy'
    if args.decode == 'lazy':
        raise errors.ConfigError('--decode lazy is for --connector pipelined --workload '
                                 'toolbench or relational, or --sql; %s decodes every row it '
                                 'reads'
                                 % ('psycopg2' if connector == 'psycopg2' else
                                    'this workload'))
    return 'full'


def _check_read_from(args, kind, connector):
    """--read-from other than the leader: a replica set, the kv workload, and for a standby
    through psycopg2 a libpq that knows target_session_attrs=prefer-standby (14)."""
    if args.read_from in (None, 'leader'):
        return
    import psycopg2.extensions as ext
    hosts = ''
    if args.dsn:
        try:
            hosts = ext.parse_dsn(args.dsn).get('host') or ''
        except Exception:
            pass     # said as the backend opens, with the DSN's own error
    if ',' not in hosts and not args.replicas:
        raise errors.ConfigError('--read-from %s needs a replica set: a multi-host --dsn, or '
                                 '--spawn --replicas N' % args.read_from)
    if kind != 'kv':
        raise errors.ConfigError('--read-from applies to --workload kv (its select and scan)')
    if args.read_from == 'replica' and connector == 'psycopg2' and \
            ext.libpq_version() < 140000:
        raise errors.ConfigError('--read-from replica through psycopg2 needs libpq 14 or later '
                                 '(target_session_attrs=prefer-standby); this psycopg2 has '
                                 'libpq %d; use --connector pipelined' % ext.libpq_version())


def _dsn(config):
    """(dsn, password): the DSN with --password merged in, and the secret to scrub."""
    import psycopg2.extensions as ext
    given, secret = config.opts.dsn, config.target.password
    try:
        parsed = ext.parse_dsn(given) if given else {}
    except Exception as e:
        from gloaddriver.backends.postgres.pool import scrub
        raise errors.SetupError('--dsn is not a valid connection string: %s' % scrub(e, secret))
    password = secret or parsed.get('password')
    dsn = ext.make_dsn(given, password=secret) if secret else given
    return dsn, password


KIND = Postgres()
