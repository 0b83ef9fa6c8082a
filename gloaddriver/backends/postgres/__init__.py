"""PostgreSQL: psycopg2 made cooperative and a LIFO pool (``pool``), the workloads the
runner drives (``workloads``: kv, relational, toolbench), the bulk loader that drives
itself (``bulk``), the pipelined connection (``pipelined``) and the kv workload on it
(``kv_pipelined``, --connector pipelined), a private cluster (``server``), its metrics
(``metrics``) and its side of the two-interpreter cross-check of ``gloaddriver compat``
(``crosscheck``).

This module is the kind itself: its flags and how they make a backend.
"""
from __future__ import absolute_import, division, print_function

import re
from collections import namedtuple

from gloaddriver import errors, workload
from gloaddriver.backends import base
from gloaddriver.converters import positive_int

Options = namedtuple('Options', 'dsn table workload init prepared pool_size bulk_methods rows '
                                'wait_callback scripts connector')
WORKLOADS = ('kv', 'relational', 'bulk', 'toolbench')
RELATIONAL_OPS = ('create', 'read')
RELATIONAL_MIX = 'create=50,read=50'
# --wait-callback: how psycopg2 yields to gevent (pool.install takes one of these).
WAIT_CALLBACKS = ('cached', 'psycogreen')
# The queries of asyncpg's driver benchmark: each is a phase of its own.
TOOLBENCH_OPS = ('pg_type', 'series', 'bytea', 'arrays')
BULK_METHODS = ('row-connect', 'row', 'executemany', 'execute-values', 'unnest', 'copy')
CONNECTORS = ('psycopg2', 'pipelined')
# --connector pipelined: greenlets per connection when --pool-size is not given. Several
# statements in flight per socket is the point of it; a few connections keep the
# server's backends (one CPU each) busy when there are cores for them.
PIPELINED_PER_CONNECTION = 8
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
                                    'create and read), bulk (load rows six ways), toolbench '
                                    '(pg_type, series, bytea, arrays reads)')),
        (('--table',), dict(help='postgres: kv table (default gloaddriver)')),
        (('--init',), dict(action='store_true',
                           help='postgres: create the workload\'s tables if they are missing')),
        (('--prepared',), dict(action='store_true',
                               help='postgres kv: server-side prepared statements '
                                    '(PREPARE/EXECUTE)')),
        (('--connector',), dict(choices=list(CONNECTORS),
                                help='postgres: psycopg2 (the default; one statement per '
                                     'connection at a time) or pipelined (ours: the extended '
                                     'protocol, the statements of several greenlets in flight '
                                     'on one socket; --workload kv only)')),
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
                             help='postgres: a pgbench-style script run whole as one op; '
                                  'several (a.sql@9,b.sql@1, or the flag again) make a weighted '
                                  'mix (see docs/workloads.md)')),
        (('--wait-callback',), dict(choices=list(WAIT_CALLBACKS),
                                    help='postgres: how psycopg2 yields to gevent: one io '
                                         'watcher per connection (cached, the default), or '
                                         'psycogreen\'s new watcher per wait')),
    )

    def options(self, args):
        kind = args.workload or 'kv'
        scripts = ()
        if args.script or args.workload_file:
            if args.workload:
                raise errors.ConfigError('--workload %s and --%s exclude each other' % (
                    args.workload, 'script' if args.script else 'workload-file'))
            if args.script and args.workload_file:
                raise errors.ConfigError('--script and --workload-file exclude each other')
            if args.script:
                from gloaddriver.backends.postgres import script
                scripts = script.parse_all(args.script)
            kind = 'script' if args.script else 'file'
        table = args.table or 'gloaddriver'
        if not _IDENT.match(table):
            raise errors.ConfigError('--table must be a plain SQL identifier, got %r' % table)
        if args.prepared and kind not in ('kv', 'script'):
            raise errors.ConfigError('--prepared applies to --workload kv and --script')
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
        if args.verify and kind in ('relational', 'toolbench', 'script', 'file'):
            raise errors.ConfigError('--verify reads back what the kv workload wrote; %s writes '
                                     'what the driver cannot predict' % (
                                         {'script': '--script', 'file': 'a workload file'}.get(
                                             kind, '--workload ' + kind)))
        _check_read_from(args, kind, connector)
        return Options(dsn=args.dsn or '', table=table, workload=kind, init=bool(args.init),
                       prepared=bool(args.prepared), pool_size=pool_size,
                       bulk_methods=methods, rows=args.rows or 100000,
                       wait_callback=args.wait_callback or 'cached', scripts=scripts,
                       connector=connector)

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
            if opts.workload == 'relational':
                if phases:
                    raise ValueError('--workload relational is one mix phase; use '
                                     '--mix create=W,read=W')
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
        if t.replicas:
            from gloaddriver.backends.postgres.replicaset import PostgresReplicaSet
            return PostgresReplicaSet(t.replicas, t.replication, wal_mode=t.wal_mode,
                                      init_file=t.spawn_init).start()
        return PostgresServer(wal_mode=t.wal_mode, init_file=t.spawn_init).start()

    def target(self, config, server):
        return config._replace(opts=config.opts._replace(dsn=server.dsn, init=True),
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
        if config.opts.connector == 'pipelined':
            from gloaddriver.backends.postgres.kv_pipelined import PipelinedBackend
            return PipelinedBackend(config, dsn, password)
        from gloaddriver.backends.postgres.workloads import PostgresBackend
        return PostgresBackend(config, dsn, password)

    def manifest(self, config):
        opts = config.opts
        if opts.connector == 'pipelined':
            return dict(base.Kind.manifest(self, config), connector=opts.connector,
                        connections=opts.pool_size, workload=opts.workload,
                        pool_size=opts.pool_size, prepared=True)
        return dict(base.Kind.manifest(self, config), connector=opts.connector,
                    connections=config.load.greenlets, workload=opts.workload,
                    pool_size=opts.pool_size, prepared=opts.prepared,
                    wait_callback=opts.wait_callback)

    def with_processes(self, config):
        if config.opts.workload == 'bulk':
            raise errors.ConfigError('--processes does not apply to --workload bulk')

    @property
    def crosscheck(self):
        from gloaddriver.backends.postgres import crosscheck
        return crosscheck


def _check_pipelined(args, kind, pool_size):
    """What --connector pipelined does not do, refused before the run."""
    if kind != 'kv':
        raise errors.ConfigError('--connector pipelined runs --workload kv only; %s needs the '
                                 'psycopg2 connector' % {
                                     'script': '--script', 'file': 'a --workload-file'}.get(
                                         kind, '--workload ' + kind))
    if args.wait_callback:
        raise errors.ConfigError('--wait-callback is for the psycopg2 connector; the pipelined '
                                 'one reads its socket from the hub itself')
    if pool_size > args.greenlets:
        raise errors.ConfigError('--pool-size %d exceeds --greenlets %d: with --connector '
                                 'pipelined a connection would have no greenlet'
                                 % (pool_size, args.greenlets))


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
