"""``gloaddriver pgbench ...``: pgbench 15's command line, mapped onto gloaddriver's own
flags (``parse`` -> a Plan: the gloaddriver argv of the run, or what ``-i`` makes).

Spelling is pgbench's (getopt's): ``-c8`` and ``-c 8``, ``--client=8``, bundled short
flags (``-nS``), unique prefixes of long ones, the database name anywhere. Every flag
of pgbench 15 is either mapped (its help says onto what) or refused with one line
naming it (exit 2): none is dropped in silence. Flags after ``--`` are gloaddriver's
own and go to the run as given, after the mapped ones (so they win): ``gloaddriver
pgbench -c 8 -T 30 -S -- --spawn --html report.html``.

Where pgbench and gloaddriver differ, the choices made here:

* ``-j J``: J processes of ``-c C`` / J greenlets each. pgbench shares clients out
  unevenly when J does not divide C; gloaddriver's processes run equal shares, so
  that is refused. J above C is cut to C, as pgbench does.
* ``-t N``: ``--ops`` N x C for the run, shared by the greenlets as they come (pgbench
  gives each client exactly N). Neither -t nor -T: pgbench's 10 per client.
* ``-R``: ``--rate`` with ``--arrival poisson`` (pgbench's schedule is Poisson).
  ``-L`` with -R: ``--latency-limit`` (late transactions skipped); without -R, pgbench
  only counts the late ones, and so does the summary (from the latency histogram).
* ``--random-seed``: an integer is ``--seed``; ``time`` (also pgbench's default, and
  $PGBENCH_RANDOM_SEED's) the current time in microseconds, ``rand`` 63 bits from
  os.urandom. The seed used is in the result's manifest either way.
* Connection: ``-h -p -U dbname`` make ``--dsn`` of what was given (a dbname that is a
  connection string or URI is used whole); nothing given, no ``--dsn``: libpq reads
  $PGHOST, $PGPORT, $PGUSER, $PGDATABASE and $PGPASSWORD itself.
"""
from __future__ import absolute_import, division, print_function

import argparse
import os
import re
import struct
import sys
import time
from collections import namedtuple

from gloaddriver import __version__, converters, errors
from gloaddriver.config.flags import PASSWORD_ENV
from gloaddriver.report.pgbench_summary import Script, Settings, builtin_label
from gloaddriver.workload.script.builtin import NAMES

BACKEND = 'postgres'
VERSION_LINE = 'pgbench (15 (gloaddriver %s))' % __version__
DEFAULT_TRANSACTIONS = 10      # per client, when neither -t nor -T is given
DEFAULT_INIT_STEPS = 'dtgvp'   # pgbench 15's -I default
INIT_STEPS = 'dtgGvpf'
DEFAULT_LOG_PREFIX = 'pgbench_log'
SEED_ENV = 'PGBENCH_RANDOM_SEED'

# mode: 'init' (-i) or 'run'. A run: the gloaddriver argv, the DSN and password for the
# vacuum before it ('default', 'all' for -v, None for -n), whether gloaddriver spawns the
# server, the --json given after --, the summary's Settings. -i: init (an Init).
Plan = namedtuple('Plan', 'mode argv dsn password vacuum spawn json settings init')
Init = namedtuple('Init', 'scale steps fillfactor unlogged quiet')

# Flags of -i only, and of a run only (pgbench refuses each in the other mode).
_INIT_ONLY = (('init_steps', '-I'), ('fillfactor', '-F'), ('quiet', '-q'),
              ('foreign_keys', '--foreign-keys'), ('unlogged_tables', '--unlogged-tables'))
_RUN_ONLY = (('builtins', '-b/-N/-S'), ('files', '-f'), ('client', '-c'), ('connect', '-C'),
             ('define', '-D'), ('jobs', '-j'), ('log', '-l'), ('latency_limit', '-L'),
             ('protocol', '-M'), ('progress', '-P'), ('report', '-r'), ('rate', '-R'),
             ('transactions', '-t'), ('time', '-T'), ('vacuum_all', '-v'),
             ('failures_detailed', '--failures-detailed'), ('log_prefix', '--log-prefix'),
             ('max_tries', '--max-tries'), ('random_seed', '--random-seed'),
             ('sampling_rate', '--sampling-rate'))

# pgbench flags gloaddriver cannot honour, and why: refused by name.
REFUSED = (
    (('--index-tablespace',), 1, 'tablespaces are not supported by -i here'),
    (('--tablespace',), 1, 'tablespaces are not supported by -i here'),
    (('--partition-method',), 1, 'partitioned pgbench_accounts is not supported'),
    (('--partitions',), 1, 'partitioned pgbench_accounts is not supported'),
    (('--aggregate-interval',), 1, 'the transaction log has a line per transaction '
                                   '(-l), not aggregates'),
    (('--progress-timestamp',), 0, "progress lines are gloaddriver's own, timed from the "
                                   'start'),
    (('--show-script',), 1, 'not supported: the built-in scripts are listed by -b list'),
    (('--verbose-errors',), 0, "gloaddriver counts every error by kind in its table; "
                               "'-- --debug' prints the first of each"),
    (('-d', '--debug'), 0, "pgbench's protocol debugging has no counterpart; '-- --debug' "
                           'prints the first failure of each kind'),
)


class _Parser(argparse.ArgumentParser):
    """Errors are ConfigErrors (one line, exit 2), in pgbench's voice."""

    def error(self, message):
        raise errors.ConfigError('pgbench: %s' % message)


class _Refused(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        raise errors.ConfigError('pgbench %s: %s' % (option_string, self.help))


class _Print(argparse.Action):
    """-? / --help and -V / --version: print, exit 0 (stdout, on 2.7 too)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, text=None, help=None):
        argparse.Action.__init__(self, option_strings=option_strings, dest=dest,
                                 default=argparse.SUPPRESS, nargs=0, help=help)
        self.text = text

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(self.text or parser.format_help())
        sys.stdout.flush()
        parser.exit(0)


def _parser():
    p = _Parser(prog='gloaddriver pgbench', add_help=False,
                usage='gloaddriver pgbench [pgbench flags] [DBNAME] [-- gloaddriver flags]',
                description="pgbench 15's command line, run by gloaddriver: a transaction "
                            'is a script run, a client a greenlet, a thread a process. Each '
                            'flag says what it becomes; flags after -- are gloaddriver\'s '
                            'own (-- --spawn --html report.html). The summary is printed '
                            "as pgbench prints it, then gloaddriver's table.")
    _init_flags(p.add_argument_group('initialization (-i: drop, create and fill pgbench_*, '
                                      'then exit)'))
    _script_flags(p.add_argument_group('what to run'))
    _run_flags(p.add_argument_group('benchmarking'))
    g = p.add_argument_group('refused: gloaddriver cannot do what these ask (one line, '
                             'exit 2)')
    for names, nargs, why in REFUSED:
        g.add_argument(*names, action=_Refused, nargs=nargs or 0,
                       metavar='X' if nargs else None, help=why)
    g = p.add_argument_group('connection (none given: libpq reads $PGHOST and the rest)')
    g.add_argument('-h', '--host', help='host or socket folder, into --dsn')
    g.add_argument('-p', '--port', help='port, into --dsn')
    g.add_argument('-U', '--username', help='user, into --dsn')
    g.add_argument('dbname', nargs='?', help='database, or a whole connection string or URI')
    g.add_argument('more', nargs='*', help=argparse.SUPPRESS)
    g.add_argument('-V', '--version', action=_Print, text=VERSION_LINE + '\n',
                   help='print the version and exit')
    g.add_argument('-?', '--help', action=_Print, help='print this help and exit')
    return p


def _init_flags(g):
    g.add_argument('-i', '--initialize', action='store_true', default=None,
                   help="make pgbench's tables: no run")
    g.add_argument('-I', '--init-steps', metavar='STEPS',
                   help='steps of -i, letters of %s, in order (default %s)'
                        % (INIT_STEPS, DEFAULT_INIT_STEPS))
    g.add_argument('-F', '--fillfactor', type=int, metavar='NUM',
                   help='fillfactor of branches, tellers and accounts, 10..100 (default 100)')
    g.add_argument('-q', '--quiet', action='store_true', default=None,
                   help='a progress line each 5 s, not each 100,000 rows')
    g.add_argument('--foreign-keys', action='store_true', default=None,
                   help='add the foreign keys (step f)')
    g.add_argument('--unlogged-tables', action='store_true', default=None,
                   help='unlogged tables')


def _script_flags(g):
    g.add_argument('-b', '--builtin', dest='builtins', action='append', metavar='NAME[@W]',
                   help='--builtin: tpcb-like, simple-update, select-only, or a prefix; '
                        '"list" lists them')
    g.add_argument('-f', '--file', dest='files', action='append', metavar='FILE[@W]',
                   help='--script FILE[@W] (scripts are numbered files first, then '
                        'built-ins)')
    g.add_argument('-N', '--skip-some-updates', dest='builtins', action='append_const',
                   const='simple-update', help='--builtin simple-update')
    g.add_argument('-S', '--select-only', dest='builtins', action='append_const',
                   const='select-only', help='--builtin select-only')


def _run_flags(g):
    g.add_argument('-c', '--client', type=int, metavar='NUM',
                   help='clients: --greenlets NUM/J in each of -j J processes (default 1)')
    g.add_argument('-C', '--connect', action='store_true', default=None,
                   help='--connect-per-op')
    g.add_argument('-D', '--define', action='append', metavar='NAME=VALUE', help='--define')
    g.add_argument('-j', '--jobs', type=int, metavar='NUM',
                   help='--processes (must divide -c; default 1)')
    g.add_argument('-l', '--log', action='store_true', default=None,
                   help='--tx-log %s (or --log-prefix\'s)' % DEFAULT_LOG_PREFIX)
    g.add_argument('-L', '--latency-limit', type=float, metavar='MS',
                   help='with -R: --latency-limit (late transactions skipped); the summary '
                        'counts those over it')
    g.add_argument('-M', '--protocol', choices=('simple', 'extended', 'prepared'),
                   help='--protocol (default simple)')
    g.add_argument('-n', '--no-vacuum', action='store_true', default=None,
                   help='no vacuum before the run (with -i: no vacuum step)')
    g.add_argument('-P', '--progress', type=int, metavar='SEC',
                   help='--progress SEC (gloaddriver\'s lines); none without it')
    g.add_argument('-r', '--report-per-command', '--report-latencies', dest='report',
                   action='store_true', default=None, help='--per-statement')
    g.add_argument('-R', '--rate', type=float, metavar='TPS',
                   help='--rate TPS --arrival poisson')
    g.add_argument('-s', '--scale', type=int, metavar='NUM',
                   help='with -i: the scale made (default 1); else --scale (:scale of '
                        'your scripts when pgbench_branches is missing)')
    g.add_argument('-t', '--transactions', type=int, metavar='NUM',
                   help='per client: --ops NUM x clients (default %d)' % DEFAULT_TRANSACTIONS)
    g.add_argument('-T', '--time', type=int, metavar='SEC', help='--duration SEC')
    g.add_argument('-v', '--vacuum-all', action='store_true', default=None,
                   help='vacuum all four tables before the run')
    g.add_argument('--failures-detailed', action='store_true', default=None,
                   help='serialization and deadlock failures apart in the summary')
    g.add_argument('--log-prefix', metavar='PREFIX', help='with -l: --tx-log PREFIX')
    g.add_argument('--max-tries', type=int, metavar='NUM', help='--max-tries (default 1)')
    g.add_argument('--random-seed', metavar='SEED',
                   help='--seed: an integer, time (the default) or rand')
    g.add_argument('--sampling-rate', type=float, metavar='RATE',
                   help='with -l: --sampling-rate')


def parse(argv, environ=None):
    """pgbench's argv (and flags for gloaddriver after ``--``) -> a Plan; ConfigError
    (one line) for what pgbench or gloaddriver would refuse."""
    environ = os.environ if environ is None else environ
    argv = list(argv)
    own = []
    if '--' in argv:
        at = argv.index('--')
        argv, own = argv[:at], argv[at + 1:]
    args = _parser().parse_args(argv)
    if args.more:
        raise errors.ConfigError('pgbench: too many command-line arguments (first is "%s")'
                                 % args.more[0])
    if args.builtins and 'list' in args.builtins:
        width = max(len(name) for name in NAMES)
        sys.stdout.write('built-in scripts (-b NAME, or a prefix of it):\n' + ''.join(
            '  %*s: %s\n' % (width, name, builtin_label(name)) for name in NAMES))
        sys.stdout.flush()
        raise SystemExit(0)
    dsn = _dsn(args)
    password = environ.get(PASSWORD_ENV)
    if args.initialize:
        return _init_plan(args, own, dsn, password)
    return _run_plan(args, own, dsn, password, environ)


def _given(args, names):
    return [flag for dest, flag in names if getattr(args, dest) is not None]


def _init_plan(args, own, dsn, password):
    wrong = _given(args, _RUN_ONLY)
    if wrong:
        raise errors.ConfigError('pgbench: %s cannot be used with -i (it only makes the '
                                 'tables)' % ', '.join(wrong))
    if own:
        raise errors.ConfigError('pgbench -i takes no gloaddriver flags after --: it only '
                                 'makes the tables (give them to the run)')
    steps = ''.join((args.init_steps if args.init_steps is not None
                     else DEFAULT_INIT_STEPS).split())
    for c in steps:
        if c not in INIT_STEPS:
            raise errors.ConfigError('pgbench -I: unknown initialization step "%s" (steps are '
                                     'letters of %s)' % (c, INIT_STEPS))
    if not steps:
        raise errors.ConfigError('pgbench -I: no initialization step given')
    if args.no_vacuum:
        steps = steps.replace('v', '')
    if args.foreign_keys and 'f' not in steps:
        steps += 'f'
    fill = 100 if args.fillfactor is None else args.fillfactor
    if not 10 <= fill <= 100:
        raise errors.ConfigError('pgbench -F/--fillfactor must be in 10..100, got %d' % fill)
    scale = 1 if args.scale is None else args.scale
    _at_least('-s/--scale', scale, 1)
    return Plan(mode='init', argv=None, dsn=dsn, password=password, vacuum=None, spawn=False,
                json=None, settings=None,
                init=Init(scale=scale, steps=steps, fillfactor=fill,
                          unlogged=bool(args.unlogged_tables), quiet=bool(args.quiet)))


def _at_least(flag, value, low):
    if value is not None and value < low:
        raise errors.ConfigError('pgbench %s must be at least %d, got %s' % (flag, low, value))


def _run_plan(args, own, dsn, password, environ):
    wrong = _given(args, _INIT_ONLY)
    if wrong:
        raise errors.ConfigError('pgbench: %s go%s with -i only' % (
            ', '.join(wrong), 'es' if len(wrong) == 1 else ''))
    for flag, value in (('-c/--client', args.client), ('-j/--jobs', args.jobs),
                        ('-t/--transactions', args.transactions), ('-T/--time', args.time),
                        ('-P/--progress', args.progress), ('-s/--scale', args.scale)):
        _at_least(flag, value, 1)
    clients = args.client or 1
    threads = min(args.jobs or 1, clients)     # pgbench: no more threads than clients
    if clients % threads:
        raise errors.ConfigError(
            'pgbench -c %d is not a multiple of -j %d: gloaddriver runs the same number of '
            'greenlets in each process (pgbench would share them out unevenly); choose -c '
            'a multiple of -j' % (clients, threads))
    argv = ['--backend', BACKEND, '--greenlets', str(clients // threads)]
    if threads > 1:
        argv += ['--processes', str(threads)]
    if dsn:
        argv += ['--dsn', dsn]
    argv += _amount(args, clients)
    scripts, script_argv = _scripts(args)
    argv += script_argv
    argv += _timing(args)
    argv += _logging(args)
    argv += _seed(args.random_seed, environ)
    for item in args.define or ():
        if not re.match(r'^[A-Za-z0-9_]+=', item):
            raise errors.ConfigError('pgbench -D: write NAME=VALUE, got "%s"' % item)
        argv += ['--define', item]
    for flag, on in (('--per-statement', args.report), ('--connect-per-op', args.connect)):
        if on:
            argv.append(flag)
    if args.protocol:
        argv += ['--protocol', args.protocol]
    if args.scale is not None:
        argv += ['--scale', str(args.scale)]
    settings = Settings(scripts=scripts, clients=clients, threads=threads,
                        transactions=None if args.time else
                        (args.transactions or DEFAULT_TRANSACTIONS),
                        duration=args.time,
                        detailed=bool(args.progress or args.rate or args.latency_limit),
                        rate=args.rate is not None, latency_limit=args.latency_limit,
                        failures_detailed=bool(args.failures_detailed))
    vacuum = None if args.no_vacuum else ('all' if args.vacuum_all else 'default')
    return Plan(mode='run', argv=argv + own, dsn=_own_value(own, '--dsn', dsn),
                password=password, vacuum=vacuum, spawn=_own_flag(own, '--spawn'),
                json=_own_value(own, '--json', None), settings=settings, init=None)


def _amount(args, clients):
    """-t / -T / pgbench's default, and --max-tries (0 needs an end other than -t)."""
    if args.transactions is not None and args.time is not None:
        raise errors.ConfigError('pgbench: give a number of transactions (-t) or a duration '
                                 '(-T), not both')
    out = ['--duration', str(args.time)] if args.time else [
        '--ops', str((args.transactions or DEFAULT_TRANSACTIONS) * clients)]
    if args.max_tries is not None:
        _at_least('--max-tries', args.max_tries, 0)
        if args.max_tries == 0 and not (args.time or args.latency_limit):
            raise errors.ConfigError('pgbench --max-tries 0 (unlimited) needs -T or -L')
        out += ['--max-tries', str(args.max_tries)]
    return out


def _split_weight(flag, spec):
    """NAME@W -> (NAME, W or None); W a whole number."""
    if '@' not in spec:
        return spec, None
    name, weight = spec.rsplit('@', 1)
    if not weight.isdigit():
        raise errors.ConfigError('pgbench %s %s: the weight after @ must be a whole number'
                                 % (flag, spec))
    return name, int(weight)


def builtin_name(prefix):
    """The built-in script a -b name or prefix means; ConfigError when none or several."""
    names = NAMES
    if prefix in names:
        return prefix
    found = [n for n in names if n.startswith(prefix)]
    if len(found) != 1:
        raise errors.ConfigError('pgbench -b %s: %s built-in script; they are %s (-b list)' % (
            prefix, 'an ambiguous name of more than one' if found else 'no such',
            ', '.join(names)))
    return found[0]


def _scripts(args):
    """(the Settings' scripts, the --script/--builtin flags): files first, then the
    built-ins, as gloaddriver numbers them; tpcb-like only when no script at all is
    named (as pgbench: ``-f FILE`` runs FILE alone, ``-f FILE -S`` both). Each script's
    op name follows gloaddriver's rule: a file's base name, a built-in's name, a name
    twice numbered by position."""
    found, argv = [], []
    for spec in args.files or ():
        path, weight = _split_weight('-f', spec)
        if ',' in path or path == '-':
            raise errors.ConfigError('pgbench -f %s: gloaddriver reads scripts from files '
                                     'whose names have no comma' % spec)
        found.append((os.path.splitext(os.path.basename(path))[0], path, weight))
        argv += ['--script', spec]
    for spec in args.builtins or (() if args.files else ('tpcb-like',)):
        prefix, weight = _split_weight('-b', spec)
        name = builtin_name(prefix)
        found.append((name, builtin_label(name), weight))
        argv += ['--builtin', name if weight is None else '%s@%d' % (name, weight)]
    if not sum(1 if w is None else w for _n, _l, w in found):
        raise errors.ConfigError('pgbench: the scripts\' weights add up to zero')
    names = [n for n, _l, _w in found]
    scripts = tuple(Script(name='%s_%d' % (n, i) if names.count(n) > 1 else n, label=label,
                           weight=1 if w is None else w)
                    for i, (n, label, w) in enumerate(found, 1))
    return scripts, argv


def _timing(args):
    """-P, -R, -L."""
    out = ['--progress', str(args.progress or 0)]
    if args.rate is not None:
        if args.rate <= 0:
            raise errors.ConfigError('pgbench -R/--rate must be above 0, got %g' % args.rate)
        out += ['--rate', repr(args.rate), '--arrival', 'poisson']
    if args.latency_limit is not None:
        if args.latency_limit <= 0:
            raise errors.ConfigError('pgbench -L/--latency-limit must be above 0 ms, got %g'
                                     % args.latency_limit)
        if args.rate is not None:
            out += ['--latency-limit', repr(args.latency_limit)]
    return out


def _logging(args):
    """-l, --log-prefix, --sampling-rate."""
    if not args.log:
        for flag, value in (('--log-prefix', args.log_prefix),
                            ('--sampling-rate', args.sampling_rate)):
            if value is not None:
                raise errors.ConfigError('pgbench %s goes with -l (a log of transactions)'
                                         % flag)
        return []
    out = ['--tx-log', args.log_prefix or DEFAULT_LOG_PREFIX]
    if args.sampling_rate is not None:
        out += ['--sampling-rate', repr(args.sampling_rate)]
    return out


def _seed(text, environ):
    """--seed of --random-seed (or $PGBENCH_RANDOM_SEED): an integer, time or rand."""
    text = text if text is not None else environ.get(SEED_ENV) or 'time'
    if text == 'time':
        seed = int(time.time() * 1000000)
    elif text == 'rand':
        seed = struct.unpack('>Q', os.urandom(8))[0] >> 1
    elif text.isdigit():
        seed = int(text)
    else:
        raise errors.ConfigError('pgbench --random-seed takes an integer, time or rand; got '
                                 '"%s"' % text)
    return ['--seed', str(seed)]


def _quote(value):
    """A libpq connection-string value, quoted when it must be."""
    if value and not re.search(r"[\s'\\]", value):
        return value
    return "'%s'" % value.replace('\\', '\\\\').replace("'", "\\'")


def _dsn(args):
    """The DSN of the connection flags given ('' when none: libpq's environment)."""
    pairs = [(k, v) for k, v in (('host', args.host), ('port', args.port),
                                 ('user', args.username)) if v is not None]
    name = args.dbname
    if name and re.match(r'^postgres(ql)?://', name):
        if pairs:
            raise errors.ConfigError('pgbench: give the host, port and user inside the URI %s, '
                                     'not as -h, -p, -U' % name.split('@')[-1])
        return name
    text = ' '.join('%s=%s' % (k, _quote(v)) for k, v in pairs)
    if name and '=' in name:        # a connection string: its own keywords win
        return (text + ' ' + name).strip()
    if name:
        text = (text + ' dbname=' + _quote(name)).strip()
    return text


def _own_value(own, flag, default):
    """The value of a gloaddriver flag given after -- (the last), else ``default``."""
    value = converters.last_value(own, flag)
    return default if value is None else value


def _own_flag(own, flag):
    return flag in own
