"""The flags: the common groups here, one more group per server kind from its backend.

Only argparse lives here: what a flag is called, what it accepts, its help.
What combinations make sense is judged on the parsed values by
``gloaddriver.config.parse``.
"""
from __future__ import absolute_import, division, print_function

import argparse
import sys

from gloaddriver import __version__, backends, converters, errors
from gloaddriver.converters import count, positive_int, seconds
from gloaddriver.measure import profiler, store
from gloaddriver.workload import keys, sizes

# --find-max's defaults: a low first rate doubled, steps long enough for a stable p99.
FIND_MAX_START = 100.0
FIND_MAX_STEP = 5.0
FIND_MAX_WARMUP = 1.0
FIND_MAX_RESOLUTION = 5.0
FIND_MAX_STEPS = 20

PASSWORD_ENV = 'GLOADDRIVER_PASSWORD'
STORE_ENV = store.ENV
# --baseline history: how many stored runs, and what is judged when --fail-if has no
# relative condition of its own: ops/s and the median latency (a slower server shows in
# both in a closed loop, in the latency under --rate), by asv's default factor (10 %);
# and failed ops, which a run judged by thresholds no longer counts by themselves. Not
# p99 by default: one stall of a shared machine moves the p99 of a short run far
# beyond the spread of calm runs before it (an unchanged 2 s run measured +39 %).
BASELINE_RUNS = 5
BASELINE_DEFAULT = 'ops_per_sec>-10%,p50<+10%,errors<0.1%'
REPLICATION_MODES = ('async', 'sync', 'remote_apply')
READ_FROM = ('leader', 'replica', 'any')
DEFAULT_GREENLETS = 10


# The subcommands, each with its line in --help: the one list that gloaddriver.cli
# dispatches and that docs/cli.md and README.md show (scripts/docsgen.py writes it there;
# tests/unit/test_docs.py fails when a page or the dispatch says otherwise).
SUBCOMMANDS = (
    ('compat', 'the same seeded run on two interpreters, side by side, with checks'),
    ('compare', 'result JSON files side by side: ops/s, p50 to p99.9, syscalls/op and '
                'requests per send per phase, each ratio to the first file, and the '
                'manifest fields that differ'),
    ('merge', 'join the result JSON files of shards that ran together into one'),
    ('html', 'a self-contained HTML report from a result JSON file'),
    ('schema', 'print the JSON Schema of a result file'),
    ('report', "a run's result rebuilt from its --journal"),
    ('history', 'the runs a --store holds, one line each: time, id, label, scenario, '
                'ops/s, p99, failed'),
    ('trend', 'an HTML page of ops/s, p99 and syscalls/op over the stored runs of one '
              'scenario, step changes marked'),
    ('pgbench', "pgbench 15's flags and summary, run by gloaddriver on PostgreSQL "
                '(pgbench -i makes the tables)'),
)


def _duration(text):
    """A time written as --stages and --fault write it: 5s, 500ms, 2m or plain seconds."""
    try:
        return converters.duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def _distribution(text):
    """--distribution NAME[:P[:Q]], checked here and kept as given (keys.generator reads
    it per worker)."""
    try:
        keys.parse_distribution(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    return text


def _value_size(text):
    """One size as the int it always was; a range or a list as its sizes.ValueSize."""
    try:
        spec = sizes.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    return sizes.constant(spec) or spec


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows a default only where it says something (not None/flags/already said);
    keeps the epilog's lines (the subcommand list) as written."""

    def _get_help_string(self, action):
        text = action.help or ''
        if action.default is None or isinstance(action.default, bool) or "default" in text:
            return text
        return argparse.ArgumentDefaultsHelpFormatter._get_help_string(self, action)


class Parser(converters.WholeFlags, argparse.ArgumentParser):
    """Refuses abbreviated flags (converters.WholeFlags) and says what is wrong in one
    line."""

    def error(self, message):
        # One line, no usage dump: what is wrong and where to look.
        sys.stderr.write('gloaddriver: error: %s (see --help)\n' % message)
        sys.exit(errors.EXIT_USAGE)


class _Version(argparse.Action):
    """--version on stdout: 2.7's argparse prints it to stderr."""

    def __init__(self, option_strings, version=None, dest=argparse.SUPPRESS,
                 default=argparse.SUPPRESS, help='print the version and exit'):
        argparse.Action.__init__(self, option_strings=option_strings, dest=dest,
                                 default=default, nargs=0, help=help)
        self.version = version

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(self.version + '\n')
        sys.stdout.flush()
        parser.exit(0)


def _epilog():
    width = max(len(name) for name, _text in SUBCOMMANDS)
    return ('subcommands (gloaddriver SUBCOMMAND --help for their flags):\n' + '\n'.join(
        '  %-*s  %s' % (width, name, _wrapped(text, width + 4)) for name, text in SUBCOMMANDS) +
        '\n\nexit codes:\n' + '\n'.join(
            '  %3d  %s' % (code, _wrapped(text.replace('`', ''), 7))
            for code, text in errors.EXIT_CODES))


def _wrapped(text, indent, width=88):
    """A long line of the epilog folded under its own start (the epilog is kept as
    written, so argparse does not fold it)."""
    import textwrap
    return ('\n' + ' ' * indent).join(textwrap.wrap(text, width - indent,
                                                     break_on_hyphens=False))


class CheckingParser(Parser):
    """Raises instead of exiting: used to judge one profile value at a time."""

    def error(self, message):
        raise ValueError(message)


def build_parser(cls=None):
    p = (cls or Parser)(prog='gloaddriver',
                        description='Push a workload into Tarantool or PostgreSQL from many '
                                    'gevent greenlets and report ops/s,\nlatency percentiles, '
                                    'errors and syscalls per op.',
                        epilog=_epilog(), formatter_class=_Formatter)
    p.add_argument('--version', action=_Version, version='gloaddriver ' + __version__)
    p.add_argument('--profile', default=None, metavar='NAME|PATH',
                   help='a workload file (a shipped profile NAME, or a path); flags given '
                        'here win')
    g = p.add_argument_group('target')
    g.add_argument('--backend', choices=backends.names(), default=backends.DEFAULT,
                   help='server kind')
    g.add_argument('--user', default='guest', help='user name')
    g.add_argument('--password', default=None,
                   help='password; also read from $%s; never printed' % PASSWORD_ENV)
    g.add_argument('--spawn', action='store_true',
                   help='start a private server (temp dir, free port, space or tables '
                        'created), removed afterwards')
    g.add_argument('--no-spawn', dest='spawn', action='store_false',
                   help='use --uri/--dsn even if a profile says spawn = true')
    g.add_argument('--spawn-init', default=None, metavar='FILE',
                   help='with --spawn: your schema and procedures, run in the private server '
                        'first (Lua for Tarantool, at every start; SQL for PostgreSQL, once)')
    g.add_argument('--wal-mode', choices=['none', 'write', 'fsync'], default='none',
                   help='durability of the --spawn server: Tarantool wal_mode; for PostgreSQL '
                        'none = fsync, synchronous_commit and full_page_writes off, write = '
                        'synchronous_commit off, fsync = defaults')
    g.add_argument('--replicas', type=positive_int, default=None, metavar='N',
                   help='with --spawn: a replica set, a leader and N replicas on free loopback '
                        'ports (see docs/replication.md)')
    g.add_argument('--replication', choices=list(REPLICATION_MODES), default=None,
                   help='with --replicas: async (the default), sync (Tarantool: synchronous '
                        'space, quorum of a majority; PostgreSQL: a synchronous standby, '
                        'synchronous_commit on) or remote_apply (PostgreSQL)')
    g.add_argument('--read-from', choices=list(READ_FROM), default=None,
                   help='with a replica set (--replicas, several --uri addresses, a multi-host '
                        '--dsn): where reads (select, scan) go: leader (the default), replica '
                        '(a read-only member, the leader when none is up) or any')
    g.add_argument('--fault', default=None, metavar='SPEC',
                   help='with --spawn: do this to the server during the run, times from the '
                        'start of the first phase: ACTION@TIME[:DURATION], comma-separated, '
                        'ACTION one of kill (SIGKILL), start, stop (SIGSTOP, for DURATION if '
                        'given), cont, restart (kill and start; after DURATION if given); '
                        'e.g. kill@5s,start@8s or stop@10s:3s. With --replicas an action names '
                        'its target (kill-leader, stop-replica; the leader if none) and promote '
                        'makes the most advanced replica the leader: kill-leader@3s,promote@4s. '
                        'Marked in the timeline')
    g = p.add_argument_group('concurrency')
    g.add_argument('--greenlets', type=positive_int, default=None, metavar='N',
                   help='worker greenlets in a closed loop (default %d; with --stages of '
                        'greenlets, the highest target)' % DEFAULT_GREENLETS)
    g.add_argument('--processes', type=positive_int, default=1, metavar='P',
                   help='P driver processes (one hub each, disjoint keys, --ops split among '
                        'them), started together; results merged exactly')
    g = p.add_argument_group('workload')
    g.add_argument('--phases', default=None,
                   help='ops to run one after another, each a phase (default: '
                        'insert,select,update,delete)')
    g.add_argument('--mix', default=None, metavar='OP=W,...',
                   help='one phase of weighted random ops, e.g. select=50,insert=50 '
                        '(inserts use new keys above --keys)')
    g.add_argument('--rate', type=float, default=None, metavar='OPS_PER_SEC',
                   help='open loop: start ops on this schedule (workers are the concurrency '
                        'cap); latency is measured from the intended start (coordinated '
                        'omission corrected), service time too. Default: closed loop')
    g.add_argument('--arrival', choices=['constant', 'poisson'], default=None,
                   help='with --rate: evenly spaced (the default) or Poisson arrivals (seeded)')
    g.add_argument('--latency-limit', type=float, default=None, metavar='MS',
                   help='with --rate: skip ops already this far behind schedule and count them '
                        'as dropped (pgbench -R -L); default: send every op, however late')
    g.add_argument('--shard', default=None, metavar='I/N|auto',
                   help='run shard I of N (0-based): keys [I*K/N, (I+1)*K/N) of --keys K '
                        '(default N x --ops: --ops is each shard\'s, and so many keys its '
                        'own), so hosts can share one key space; join the results with '
                        '"gloaddriver merge". auto: I from $JOB_COMPLETION_INDEX (a Kubernetes Indexed '
                        'Job) or a Swarm job\'s $GLOADDRIVER_TASK_SLOT, N from '
                        '$GLOADDRIVER_SHARDS')
    g.add_argument('--start-at', type=float, default=None, metavar='UNIX_TIME',
                   help='after connecting, wait until this time to start, so shards on '
                        'several hosts start together and their timelines line up')
    g.add_argument('--workload-file', default=None, metavar='FILE.py',
                   help='your own workload: a Python file whose op_NAME(db, key[, rnd]) functions '
                        'are the ops (see docs/workloads.md)')
    g.add_argument('--load', action='store_true',
                   help='before a --mix, insert keys [0, --keys) in a phase named load (with '
                        '--spawn, a mix that reads keys gets one unless --no-load)')
    g.add_argument('--no-load', action='store_true',
                   help='with --spawn: run a --mix on the empty server, without the load '
                        'phase it otherwise gets first')
    g.add_argument('--ops', type=count, default=None, metavar='N',
                   help='ops per phase (default 100000, or no limit with --duration or '
                        '--stages; 0 = no limit; then --duration ends a phase)')
    g.add_argument('--duration', type=seconds, default=0, metavar='SECONDS',
                   help='time limit per phase (0 = none); alone, it ends every phase; with '
                        '--ops, whichever comes first ends the phase')
    g.add_argument('--stages', default=None, metavar='DURATION:TARGET,...',
                   help='ramp each phase through these stages, each linear from the previous '
                        'target (the first from 0, or from a leading bare TARGET) to its own: '
                        'greenlets (10s:10,30s:100,10s:0) or, open loop, ops/s '
                        '(10s:1000/s,30s:5000/s); the phase lasts their sum (see '
                        'docs/load.md)')
    g.add_argument('--warmup', type=seconds, default=0, metavar='SECONDS',
                   help='unrecorded select load before the first phase')
    g.add_argument('--keys', type=positive_int, default=None, metavar='N',
                   help='key space [0, N) (default: --ops, or 100000; with --shard I/N, '
                        'N x --ops)')
    g.add_argument('--distribution', type=_distribution, default='sequential',
                   metavar='NAME[:P[:Q]]',
                   help='key choice for select/update/delete (insert phases are always '
                        'sequential): %s; gaussian:STDDEV (a fraction of the key range, '
                        '1/6), hotspot:KEYS:OPS (fractions, 0.2:0.8), '
                        'exponential:PERCENTILE:FRACTION (95:0.8571), as YCSB and memtier '
                        '(see docs/workloads.md)' % ', '.join(keys.DISTRIBUTIONS))
    g.add_argument('--value-size', type=_value_size, default='1536',
                   metavar='BYTES|LOW-HIGH|SIZE:WEIGHT,...',
                   help='characters per value (string.printable[i %% 100] * BYTES), or '
                        'sizes drawn per key by --seed: uniform in LOW-HIGH (100-4000), or '
                        'a weighted list (100:8,4000:2)')
    g.add_argument('--seed', type=int, default=1, help='seed of the random key choices')
    g.add_argument('--checksum', action='store_true',
                   help='sum a crc32 of every op\'s result per op type (order-independent; '
                        'for comparing runs, e.g. by "gloaddriver compat")')
    g.add_argument('--verify', action='store_true',
                   help='after the phases, read back every key the run wrote and compare it '
                        'with what the server acknowledged: acknowledged writes lost, failed '
                        'writes that landed, wrong bytes; exit 1 when an acknowledged write '
                        'was lost')
    g.add_argument('--repeat', type=positive_int, default=1, metavar='N',
                   help='run the phases N times, one round after another (as memtier\'s '
                        '--run-count), and report each round, then the median, best and '
                        'worst of each figure with their spread')
    g = p.add_argument_group('find the knee (see docs/find-max.md)')
    g.add_argument('--find-max', default=None, metavar='CONDITIONS',
                   help='search for the highest arrival rate that holds these --fail-if '
                        'conditions (e.g. p99<5ms,errors<0.1%%): open-loop steps of one '
                        'phase or mix, doubling the rate until a step breaks them, then '
                        'bisecting; exit 0 with a knee, 4 when no rate held, 5 when the '
                        'client could not keep a rate')
    g.add_argument('--find-max-start', type=float, default=None, metavar='OPS_PER_SEC',
                   help='the first step\'s rate (default %g)' % FIND_MAX_START)
    g.add_argument('--find-max-step', type=_duration, default=None, metavar='SECONDS',
                   help='each step\'s measured window (default %g)' % FIND_MAX_STEP)
    g.add_argument('--find-max-warmup', type=_duration, default=None, metavar='SECONDS',
                   help='unrecorded load at the step\'s rate before its window (default %g)'
                        % FIND_MAX_WARMUP)
    g.add_argument('--find-max-resolution', default=None, metavar='PERCENT',
                   help='stop when the highest rate held and the lowest broken are this '
                        'close (default %g%%%%)' % FIND_MAX_RESOLUTION)
    g.add_argument('--find-max-steps', type=positive_int, default=None, metavar='N',
                   help='at most N steps (default %d)' % FIND_MAX_STEPS)
    g = p.add_argument_group('limits')
    g.add_argument('--timeout', type=seconds, default=5.0, metavar='SECONDS',
                   help='per-request timeout')
    g.add_argument('--connect-timeout', type=seconds, default=3.0, metavar='SECONDS',
                   help='limit for connecting, greeting and auth')
    g.add_argument('--outage-limit', type=seconds, default=30.0, metavar='SECONDS',
                   help='abort the run when the server stays unreachable this long')
    g = p.add_argument_group('output')
    g.add_argument('--json', default=None, metavar='FILE', help='write the result as JSON')
    g.add_argument('--html', default=None, metavar='FILE',
                   help='write a self-contained HTML report (charts over time, latency '
                        'distributions, syscalls, server metrics)')
    g.add_argument('--csv', default=None, metavar='PREFIX',
                   help='write PREFIX_stats.csv, PREFIX_history.csv (the timeline) and '
                        'PREFIX_failures.csv')
    g.add_argument('--hlog', default=None, metavar='PREFIX',
                   help="write each phase's latencies per interval as PREFIX.PHASE.hlog, "
                        "HdrHistogram's interval log (a line per interval, and one per op "
                        'tagged with its name), as the run goes')
    g.add_argument('--journal', default=None, metavar='FILE',
                   help='append every interval, event and finished phase to FILE as the run '
                        'goes, flushed (gloaddriver report FILE rebuilds the result of a run '
                        'that was killed); on by default as JSON.journal beside --json for '
                        'runs of over a minute')
    g.add_argument('--no-journal', dest='journal', action='store_false',
                   help='no journal, not even the default one beside --json')
    g.add_argument('--store', default=None, metavar='sqlite:PATH|postgresql://...',
                   help='record the finished run in a history of runs: a SQLite file or a '
                        'PostgreSQL database (tables made where missing); default $%s; see '
                        '"gloaddriver history" and "gloaddriver trend"' % STORE_ENV)
    g.add_argument('--label', default=None, metavar='TEXT',
                   help='a name for this run in the --store (e.g. a release or a branch)')
    g.add_argument('--tag', action='append', default=None, metavar='NAME=VALUE',
                   help='a tag of this run in the --store, repeatable (--tag branch=main '
                        '--tag ci=nightly); "gloaddriver history --where NAME=VALUE" finds it')
    g.add_argument('--baseline', default=None, metavar='history[:N]',
                   help='judge this run against the last N (default %d) stored runs of its '
                        'scenario in the --store, with the spread they had: a change inside '
                        'their noise is no regression; --fail-if conditions may then be '
                        'relative (ops_per_sec>-5%%%%, p99<+10%%%%); without any, '
                        '%s; exit 4 on a regression' % (BASELINE_RUNS,
                                                         BASELINE_DEFAULT.replace('%', '%%')))
    g.add_argument('--progress', type=seconds, default=1.0, metavar='SECONDS',
                   help='progress line to stderr every SECONDS (0 = off)')
    g.add_argument('--interval', type=seconds, default=None, metavar='SECONDS',
                   help='timeline resolution (JSON, HTML, server metrics) when --progress is '
                        '0; otherwise it is the --progress period (default 1)')
    g.add_argument('--fail-if', default=None, metavar='CONDITIONS',
                   help='pass/fail thresholds, e.g. p95<2,p99<5ms,errors<0.1%%,'
                        'ops_per_sec>50000 (a bare latency is in ms; PHASE:p99<5ms for one '
                        'phase); exit 4 when one fails')
    g.add_argument('--percentiles', default=None, metavar='LIST',
                   help='the latency percentiles the table, CSV, live metrics and --fail-if '
                        'show, e.g. 50,90,99,99.9,99.99 (default 50,90,95,99,99.9, which '
                        'the JSON always holds)')
    g.add_argument('--abort-window', type=seconds, default=5.0, metavar='SECONDS',
                   help='a --fail-if condition marked @abort (p99<50ms@abort) is judged '
                        'each interval on the last SECONDS of the phase; when it breaks, '
                        'the run stops, keeps what it measured and exits 4 (default 5)')
    g.add_argument('--abort-grace', type=seconds, default=0.0, metavar='SECONDS',
                   help='judge @abort conditions only from SECONDS into each phase (as '
                        "k6's delayAbortEval; never before one full --abort-window)")
    g.add_argument('--junit', default=None, metavar='FILE',
                   help='write the --fail-if verdicts as JUnit XML, one test case per '
                        'threshold and phase, for CI systems that read JUnit reports')
    g.add_argument('--debug', action='store_true',
                   help='print the traceback of the first failed op of each error kind to '
                        'stderr (the report gives each kind with where it was raised)')
    g.add_argument('--no-syscalls', dest='syscalls', action='store_false',
                   help='do not open the perf_event syscall counters')
    g = p.add_argument_group('live metrics (each interval, while the run goes; see '
                             'docs/live-metrics.md)')
    g.add_argument('--graphite', default=None, metavar='[tcp://|udp://]HOST:PORT',
                   help='send each interval to Graphite (carbon plaintext lines), over TCP '
                        'unless udp:// is given')
    g.add_argument('--statsd', default=None, metavar='HOST:PORT',
                   help='send each interval to StatsD over UDP (gauges and counters)')
    g.add_argument('--prometheus-port', default=None, metavar='[HOST:]PORT',
                   help='serve the last interval as Prometheus/OpenMetrics text over HTTP on '
                        'this port (all interfaces unless HOST is given)')
    g.add_argument('--prometheus-push', default=None, metavar='URL',
                   help='push each interval to a Prometheus Pushgateway at URL (e.g. '
                        'http://127.0.0.1:9091), one group per phase (job: --metrics-prefix), '
                        'for runs too short for a scraper')
    g.add_argument('--web', default=None, metavar='[HOST:]PORT',
                   help='serve a live dashboard of the run on this port (host 127.0.0.1 unless '
                        'given): the --html page, updated each interval; the URL is printed at '
                        'the start')
    g.add_argument('--web-keep', action='store_true',
                   help='with --web: after the run, keep serving the final report until Ctrl-C')
    g.add_argument('--metrics-prefix', default=None, metavar='NAME',
                   help='first element of every metric name (default: gloaddriver)')
    shared = {}
    for kind in backends.kinds():
        kind.add_flags(p, shared)
    g = p.add_argument_group('profiling (where the client CPU goes; see docs/profiling.md)')
    g.add_argument('--callgrind', default=None, metavar='DIR',
                   help='profile each phase; write DIR/callgrind.out.<phase>.<pid> for kcachegrind')
    g.add_argument('--pstats', default=None, metavar='DIR',
                   help='profile each phase; write DIR/pstats.<phase>.<pid> (pstats format)')
    g.add_argument('--profile-clock', choices=list(profiler.CLOCKS), default=None,
                   help='wall (the default), or cpu (several times dearer per call; its '
                        'clock_gettime calls are left out of syscalls/op)')
    g.add_argument('--profiler', choices=list(profiler.PROFILERS), default=None,
                   help='yappi (the default); greenletprofiler: Python 2.7 only, when installed')
    g.add_argument('--flamegraph', default=None, metavar='DIR',
                   help='sample each phase with py-spy from outside; write '
                        'DIR/flamegraph.<phase>.<pid>.folded (flamegraph.pl) and '
                        '.speedscope.json')
    g.add_argument('--server-flamegraph', default=None, metavar='DIR',
                   help='record the server with perf (cpu-clock, call graphs) each phase; '
                        'write DIR/server-flamegraph.<phase>.<pid>.folded and .speedscope.json')
    g.add_argument('--server-pid', type=positive_int, default=None, metavar='PID',
                   help='the local server --server-flamegraph records, when not --spawn')
    g.add_argument('--flamegraph-rate', type=positive_int, default=None, metavar='HZ',
                   help='samples per second of both flame graphs (default 99: never in step '
                        'with a 100 Hz timer)')
    return p


def value_flags(parser):
    """{--flag: takes a value} for every long flag a profile may set."""
    flags = {}
    for action in parser._actions:
        for opt in action.option_strings:
            if opt.startswith('--') and opt not in ('--help', '--version', '--profile'):
                flags[opt] = action.nargs != 0
    return flags
