"""Command line: flags > environment > defaults, turned into one immutable Config.

Exit codes: 0 every op succeeded; 1 some ops failed or timed out, or the run
was aborted; 2 bad flags; 3 the run could not start (server unreachable, auth,
missing space); 130 interrupted.
"""
from __future__ import absolute_import, division, print_function

import argparse
import os
import re
import sys
from collections import namedtuple

from gloaddriver import __version__, errors, keys, workload

PASSWORD_ENV = 'GLOADDRIVER_PASSWORD'
EXIT_OK, EXIT_OPS_FAILED, EXIT_USAGE, EXIT_SETUP, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

Config = namedtuple('Config', [
    'backend', 'connector', 'greenlets', 'connections', 'host', 'port', 'user', 'password',
    'space', 'spawn', 'wal_mode', 'ops', 'duration', 'warmup', 'phases', 'keys',
    'distribution', 'value_size', 'seed', 'json', 'progress', 'timeout', 'connect_timeout',
    'outage_limit', 'max_pending', 'overlap', 'syscalls', 'callgrind', 'pstats',
    'profile_clock', 'profiler', 'dsn', 'table', 'workload', 'prepared', 'pool_size',
    'bulk_methods', 'rows', 'wait_callback', 'init', 'checksum', 'by_name', 'profile', 'shard',
    'rate', 'arrival', 'latency_limit', 'processes', 'html', 'interval', 'argv'])


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default only where it says something (not None/flags/already said)."""

    def _get_help_string(self, action):
        text = action.help or ''
        if action.default is None or isinstance(action.default, bool) or "default" in text:
            return text
        return argparse.ArgumentDefaultsHelpFormatter._get_help_string(self, action)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line, no usage dump: what is wrong and where to look.
        sys.stderr.write('gloaddriver: error: %s (see --help)\n' % message)
        sys.exit(EXIT_USAGE)


class _CheckingParser(_Parser):
    """Raises instead of exiting: used to judge one profile value at a time."""

    def error(self, message):
        raise ValueError(message)


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not a whole number' % text)
    if value < 1:
        raise argparse.ArgumentTypeError('must be at least 1, got %s' % text)
    return value


def _count(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not a whole number' % text)
    if value < 0:
        raise argparse.ArgumentTypeError('must not be negative, got %s' % text)
    return value


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not a number of seconds' % text)
    if value < 0:
        raise argparse.ArgumentTypeError('must not be negative, got %s' % text)
    return value


def _check_output(flag, path):
    """Refuse an output file that cannot be written before the run, not after it."""
    if not path:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise errors.ConfigError('%s %s is a directory; give a file name' % (flag, path))
    if not os.path.isdir(folder):
        raise errors.ConfigError('%s %s: folder %s does not exist; create it or choose another'
                                 % (flag, path, folder))
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise errors.ConfigError('%s %s: not writable by this user' % (flag, path))


def build_parser(cls=None):
    p = (cls or _Parser)(prog='gloaddriver',
                description='Push a workload into Tarantool or PostgreSQL from many gevent '
                            'greenlets and report ops/s, latency percentiles, errors and '
                            'syscalls per op.',
                formatter_class=_Formatter)
    p.add_argument('--version', action='version', version='gloaddriver ' + __version__)
    p.add_argument('--profile', default=None, metavar='NAME|PATH',
                   help='a workload file (profiles/NAME.ini or a path); flags given here win')
    g = p.add_argument_group('target')
    g.add_argument('--backend', choices=['tarantool', 'postgres'], default='tarantool',
                   help='server kind')
    g.add_argument('--uri', default='127.0.0.1:3301', metavar='HOST:PORT',
                   help='server address (ignored with --spawn)')
    g.add_argument('--user', default='guest', help='user name')
    g.add_argument('--password', default=None,
                   help='password; also read from $%s; never printed' % PASSWORD_ENV)
    g.add_argument('--space', default='gloaddriver',
                   help='space with an unsigned primary key and a string value field')
    g.add_argument('--spawn', action='store_true',
                   help='start a private server (temp dir, free port, space or tables '
                        'created), removed afterwards')
    g.add_argument('--no-spawn', dest='spawn', action='store_false',
                   help='use --uri/--dsn even if a profile says spawn = true')
    g.add_argument('--wal-mode', choices=['none', 'write', 'fsync'], default='none',
                   help='durability of the --spawn server: Tarantool wal_mode; for PostgreSQL '
                        'none = fsync, synchronous_commit and full_page_writes off, write = '
                        'synchronous_commit off, fsync = defaults')
    g = p.add_argument_group('concurrency')
    g.add_argument('--connector', choices=['buffered', 'sync'], default=None,
                   help='tarantool: buffered (ours, shared socket; the default) or sync '
                        '(tarantool-python, one connection per greenlet)')
    g.add_argument('--greenlets', type=_positive_int, default=10, metavar='N',
                   help='worker greenlets in a closed loop')
    g.add_argument('--processes', type=_positive_int, default=1, metavar='P',
                   help='P driver processes (one hub each, disjoint keys, --ops split among '
                        'them), started together; results merged exactly')
    g.add_argument('--connections', type=_positive_int, default=None, metavar='K',
                   help='buffered: spread greenlets over K connections (default: 1)')
    g = p.add_argument_group('workload')
    g.add_argument('--phases', default=None,
                   help='ops to run one after another, each a phase (default: %s)'
                        % ','.join(workload.DEFAULT_PHASES))
    g.add_argument('--mix', default=None, metavar='OP=W,...',
                   help='one phase of weighted random ops, e.g. select=50,insert=50 '
                        '(inserts use new keys above --keys)')
    g.add_argument('--rate', type=float, default=None, metavar='OPS_PER_SEC',
                   help='open loop: start ops on this schedule (workers are the concurrency '
                        'cap); latency is measured from the intended start (coordinated '
                        'omission corrected), service time too. Default: closed loop')
    g.add_argument('--arrival', choices=['constant', 'poisson'], default='constant',
                   help='with --rate: evenly spaced or Poisson arrivals (seeded)')
    g.add_argument('--latency-limit', type=float, default=None, metavar='MS',
                   help='with --rate: skip ops already this far behind schedule and count them '
                        'as dropped (pgbench -R -L); default: send every op, however late')
    g.add_argument('--shard', default=None, metavar='I/N',
                   help='run shard I of N (0-based): keys [I*K/N, (I+1)*K/N) of --keys K, so '
                        'hosts can share one key space; join the results with "gloaddriver merge"')
    g.add_argument('--load', action='store_true',
                   help='before a --mix, insert keys [0, --keys) in a phase named load')
    g.add_argument('--ops', type=_count, default=100000, metavar='N',
                   help='ops per phase (0 = no limit; then --duration ends a phase)')
    g.add_argument('--duration', type=_seconds, default=0, metavar='SECONDS',
                   help='time limit per phase (0 = none); whichever of --ops/--duration '
                        'comes first ends the phase')
    g.add_argument('--warmup', type=_seconds, default=0, metavar='SECONDS',
                   help='unrecorded select load before the first phase')
    g.add_argument('--keys', type=_positive_int, default=None, metavar='N',
                   help='key space [0, N) (default: --ops, or 100000)')
    g.add_argument('--distribution', choices=keys.DISTRIBUTIONS, default='sequential',
                   help='key choice for select/update/delete (insert phases are '
                        'always sequential)')
    g.add_argument('--value-size', type=_positive_int, default=1536, metavar='BYTES',
                   help='characters per value (string.printable[i %% 100] * BYTES)')
    g.add_argument('--seed', type=int, default=1, help='seed of the random key choices')
    g.add_argument('--checksum', action='store_true',
                   help='sum a crc32 of every op\'s result per op type (order-independent; '
                        'for comparing runs, e.g. by "gloaddriver compat")')
    g.add_argument('--by-name', action='store_true',
                   help='tarantool: name the space on every op (through the schema cache) '
                        'instead of resolving it once')
    g = p.add_argument_group('limits')
    g.add_argument('--timeout', type=_seconds, default=5.0, metavar='SECONDS',
                   help='per-request timeout')
    g.add_argument('--connect-timeout', type=_seconds, default=3.0, metavar='SECONDS',
                   help='limit for connecting, greeting and auth')
    g.add_argument('--outage-limit', type=_seconds, default=30.0, metavar='SECONDS',
                   help='abort the run when the server stays unreachable this long')
    g.add_argument('--max-pending', type=_positive_int, default=10000, metavar='N',
                   help='buffered: requests in flight per connection before callers wait')
    g.add_argument('--no-overlap', dest='overlap', action='store_false',
                   help='buffered: send each batch whole, one send per loop pass, instead of '
                        'flushing half of it early so client and server work overlap')
    g = p.add_argument_group('output')
    g.add_argument('--json', default=None, metavar='FILE', help='write the result as JSON')
    g.add_argument('--html', default=None, metavar='FILE',
                   help='write a self-contained HTML report (charts over time, latency '
                        'distributions, syscalls, server metrics)')
    g.add_argument('--progress', type=_seconds, default=1.0, metavar='SECONDS',
                   help='progress line to stderr every SECONDS (0 = off)')
    g.add_argument('--interval', type=_seconds, default=None, metavar='SECONDS',
                   help='timeline resolution (JSON, HTML, server metrics) when --progress is '
                        '0; otherwise it is the --progress period (default 1)')
    g.add_argument('--no-syscalls', dest='syscalls', action='store_false',
                   help='do not open the perf_event syscall counters')
    g = p.add_argument_group('postgres')
    g.add_argument('--dsn', default=None,
                   help='libpq connection string or URI (ignored with --spawn); its password '
                        'is never printed')
    g.add_argument('--workload', choices=['kv', 'relational', 'bulk', 'toolbench'], default='kv',
                   help='kv: the Tarantool ops on a (id bigint, value text) table; relational: '
                        'seed scenario 2 (create/read families); bulk: seed scenario 3; '
                        'toolbench: seed scenario 4 (pg_type, series, bytea, arrays reads)')
    g.add_argument('--table', default='gloaddriver', help='kv table')
    g.add_argument('--init', action='store_true',
                   help='create the workload\'s tables if they are missing')
    g.add_argument('--prepared', action='store_true',
                   help='kv: server-side prepared statements (PREPARE/EXECUTE)')
    g.add_argument('--pool-size', type=_positive_int, default=None, metavar='N',
                   help='connections in the pool (default: --greenlets)')
    g.add_argument('--method', default='all',
                   help='bulk: row-connect, row, executemany, execute-values, unnest, copy, '
                        'or all (comma-separated list allowed)')
    g.add_argument('--rows', type=_positive_int, default=100000, metavar='N',
                   help='bulk: rows per method')
    g.add_argument('--wait-callback', choices=['cached', 'psycogreen'], default='cached',
                   help='how psycopg2 yields to gevent: one io watcher per connection, or '
                        'psycogreen\'s new watcher per wait')
    g = p.add_argument_group('profiling (where the client CPU goes; see README "Profiling")')
    g.add_argument('--callgrind', default=None, metavar='DIR',
                   help='profile each phase; write DIR/callgrind.out.<phase>.<pid> for kcachegrind')
    g.add_argument('--pstats', default=None, metavar='DIR',
                   help='profile each phase; write DIR/pstats.<phase>.<pid> (pstats format)')
    g.add_argument('--profile-clock', choices=['wall', 'cpu'], default='wall',
                   help='wall, or cpu (design.md: 4-16x dearer; its clock_gettime calls are left out '
                        'of syscalls/op)')
    g.add_argument('--profiler', choices=['yappi', 'greenletprofiler'], default='yappi',
                   help='greenletprofiler: Python 2.7 only, when installed')
    return p


def parse(argv=None, environ=None):
    """argv -> Config; raises ConfigError for values argparse cannot judge alone."""
    environ = os.environ if environ is None else environ
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    profile_name = _profile_name(argv)
    if profile_name:
        argv = _profile_argv(parser, profile_name) + argv
    args = parser.parse_args(argv)

    if args.backend == 'postgres':
        for flag in ('--connector', '--connections', '--uri', '--space', '--max-pending',
                     '--no-overlap'):
            if flag in argv:
                raise errors.ConfigError('%s is for --backend tarantool' % flag)
        args.connector = 'psycopg2'
    else:
        for flag in ('--dsn', '--workload', '--table', '--prepared', '--pool-size', '--method',
                     '--rows', '--wait-callback', '--init'):
            if flag in argv or any(a.startswith(flag + '=') for a in argv):
                raise errors.ConfigError('%s is for --backend postgres' % flag)
        args.connector = args.connector or 'buffered'
    if args.prepared and args.workload != 'kv':
        raise errors.ConfigError('--prepared applies to --workload kv')
    methods = ()
    if args.workload == 'bulk':
        from gloaddriver.backends.postgres.bulk import METHODS
        methods = METHODS if args.method == 'all' else tuple(
            m.strip() for m in args.method.split(',') if m.strip())
        bad = [m for m in methods if m not in METHODS]
        if bad or not methods:
            raise errors.ConfigError('unknown --method %s; use %s or all'
                                     % (','.join(bad) or '(none)', ', '.join(METHODS)))
    host, sep, port = args.uri.rpartition(':')
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise errors.ConfigError('--uri must be HOST:PORT, got %r' % args.uri)
    if args.mix and args.phases:
        raise errors.ConfigError('--phases and --mix exclude each other: a mix is one phase')
    try:
        if args.workload == 'relational':
            if args.phases:
                raise ValueError('--workload relational is one mix phase; use --mix create=W,read=W')
            phases = workload.parse_mix(args.mix or workload.RELATIONAL_MIX,
                                        workload.RELATIONAL_OPS)
        elif args.workload == 'toolbench':
            if args.load:
                raise ValueError('--load does not apply to --workload toolbench (read-only)')
            ops = workload.TOOLBENCH_OPS
            phases = (workload.parse_mix(args.mix, ops) if args.mix else
                      workload.parse_phases(args.phases or ','.join(ops), ops))
        else:
            phases = (workload.parse_mix(args.mix) if args.mix else
                      workload.parse_phases(args.phases or ','.join(workload.DEFAULT_PHASES)))
            if args.load:
                if not args.mix:
                    raise ValueError('--load goes with --mix (with --phases, start with insert)')
                phases = (workload.Phase('load', (('insert', 1),)),) + phases
    except ValueError as e:
        raise errors.ConfigError(str(e))
    if args.connections is not None and args.connector == 'sync':
        raise errors.ConfigError('--connections is for the buffered connector; the sync '
                                 'connector opens one connection per greenlet')
    connections = args.connections or 1
    if connections > args.greenlets:
        raise errors.ConfigError('--connections %d exceeds --greenlets %d: a connection '
                                 'would have no greenlet' % (connections, args.greenlets))
    if args.ops == 0 and args.duration == 0:
        raise errors.ConfigError('--ops 0 needs a --duration, or the phase never ends')
    if args.timeout <= 0:
        raise errors.ConfigError('--timeout must be above 0')
    profiling = args.callgrind or args.pstats
    if not profiling and ('--profile-clock' in argv or '--profiler' in argv):
        raise errors.ConfigError('--profile-clock and --profiler need --callgrind DIR or '
                                 '--pstats DIR')
    if args.rate is not None and args.rate <= 0:
        raise errors.ConfigError('--rate must be above 0 ops/s')
    if args.rate is None and ('--arrival' in argv or args.latency_limit is not None):
        raise errors.ConfigError('--arrival and --latency-limit need --rate')
    if args.workload == 'bulk' and args.rate:
        raise errors.ConfigError('--rate does not apply to --workload bulk')
    shard = None
    if args.shard:
        m = re.match(r'^(\d+)/(\d+)$', args.shard)
        if not m or not int(m.group(1)) < int(m.group(2)):
            raise errors.ConfigError('--shard takes I/N with 0 <= I < N, e.g. 0/4; got %r'
                                     % args.shard)
        shard = (int(m.group(1)), int(m.group(2)))
    for flag, path in (('--json', args.json), ('--html', args.html)):
        _check_output(flag, path)
    interval = args.interval or (args.progress if args.progress > 0 else 1.0)
    if args.interval is not None and (args.interval <= 0 or (
            args.progress > 0 and args.interval != args.progress)):
        raise errors.ConfigError('--interval must be above 0, and it goes with --progress 0 '
                                 '(with progress lines on, the timeline follows --progress)')
    password = args.password if args.password is not None else environ.get(PASSWORD_ENV)
    return Config(
        backend=args.backend, connector=args.connector, greenlets=args.greenlets,
        connections=connections, host=host, port=int(port), user=args.user,
        password=password, space=args.space, spawn=args.spawn, wal_mode=args.wal_mode,
        ops=args.ops, duration=args.duration, warmup=args.warmup, phases=phases,
        keys=args.keys or args.ops or 100000, distribution=args.distribution,
        value_size=args.value_size, seed=args.seed, json=args.json, progress=args.progress,
        timeout=args.timeout, connect_timeout=args.connect_timeout,
        outage_limit=args.outage_limit, max_pending=args.max_pending, overlap=args.overlap,
        syscalls=args.syscalls, callgrind=args.callgrind, pstats=args.pstats,
        profile_clock=args.profile_clock, profiler=args.profiler, dsn=args.dsn or '',
        table=args.table, workload=args.workload if args.backend == 'postgres' else None,
        prepared=args.prepared, pool_size=args.pool_size or args.greenlets,
        bulk_methods=methods, rows=args.rows, wait_callback=args.wait_callback,
        init=args.init, checksum=args.checksum, by_name=args.by_name, profile=args.profile,
        shard=shard, rate=args.rate, arrival=args.arrival, processes=args.processes,
        html=args.html, interval=interval,
        latency_limit=args.latency_limit / 1000.0 if args.latency_limit else None, argv=tuple(mask_argv(argv)))


def _profile_name(argv):
    for i, a in enumerate(argv):
        if a == '--profile' and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith('--profile='):
            return a.split('=', 1)[1]
    return None


def _profile_argv(parser, name):
    from gloaddriver import profile
    flags = {}
    for action in parser._actions:
        for opt in action.option_strings:
            if opt.startswith('--') and opt not in ('--help', '--version', '--profile'):
                flags[opt] = action.nargs != 0
    checker = build_parser(_CheckingParser)

    def check(part):
        if part:
            checker.parse_args(part)
    return profile.to_argv(name, flags, check)


_DSN_SECRETS = (re.compile(r'(password\s*=\s*)(\'(?:[^\'\\\\]|\\\\.)*\'|\S+)'),
                re.compile(r'(://[^:/@\s]*:)([^@\s]*)(@)'))


def mask_dsn(dsn):
    """A DSN (keyword or URI form) with its password replaced by ***."""
    dsn = _DSN_SECRETS[0].sub(lambda m: m.group(1) + '***', dsn)
    return _DSN_SECRETS[1].sub(lambda m: m.group(1) + '***' + m.group(3), dsn)


def mask_argv(argv):
    """argv with every password value (flag or inside a DSN) replaced by ***."""
    out = []
    hide = None
    for a in argv:
        if hide == 'password':
            out.append('***')
        elif hide == 'dsn':
            out.append(mask_dsn(a))
        elif a.startswith('--password='):
            out.append('--password=***')
        elif a.startswith('--dsn='):
            out.append('--dsn=' + mask_dsn(a[6:]))
        else:
            out.append(a)
        hide = {'--password': 'password', '--dsn': 'dsn'}.get(a) if hide is None else None
    return out


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ['compat']:
        from gloaddriver import compat_check
        return compat_check.main(argv[1:])
    if argv[:1] in (['compare'], ['merge'], ['html']):
        from gloaddriver import results
        return results.main(argv[0], argv[1:])
    from gloaddriver import app   # after monkey-patching (see __main__)
    try:
        config = parse(argv)
        if config.processes > 1:
            from gloaddriver import processes
            return processes.run(config, argv)
    except errors.ConfigError as e:
        sys.stderr.write('gloaddriver: error: %s\n' % e)
        return EXIT_USAGE
    except errors.SetupError as e:
        sys.stderr.write('gloaddriver: %s\n' % e)
        return EXIT_SETUP
    return app.run(config)
