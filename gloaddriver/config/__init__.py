"""argv -> one immutable Config: flags > environment > profile > defaults.

The Config follows the flag groups: ``target`` (which server, spawned or not),
``load`` (concurrency and workload), ``limits``, ``output``, ``profiling``,
and ``opts``, the options of the chosen server kind, made and checked by its
backend (``gloaddriver.backends``). Every check here is made on parsed values,
so ``--flag X``, ``--flag=X`` and a profile's ``flag = X`` are judged alike.
"""
from __future__ import absolute_import, division, print_function

import os
import re
import sys
from collections import namedtuple

from gloaddriver import backends, converters, errors, workload
from gloaddriver.secrets import mask_dsn
from gloaddriver.config import fail_if, find_max, keep
from gloaddriver.config.flags import (DEFAULT_GREENLETS, PASSWORD_ENV, CheckingParser,
                                      build_parser, value_flags)

Target = namedtuple('Target', 'spawn wal_mode user password spawn_init faults replicas '
                               'replication read_from')
Load = namedtuple('Load', [
    'greenlets', 'processes', 'phases', 'ops', 'duration', 'warmup', 'keys', 'distribution',
    'value_size', 'seed', 'checksum', 'rate', 'arrival', 'latency_limit', 'shard',
    'workload_file', 'start_at', 'verify', 'stages', 'repeat', 'find_max'])
Limits = namedtuple('Limits', 'timeout connect_timeout outage_limit')
Output = namedtuple('Output', 'json html csv progress interval syscalls fail_if live debug web '
                               'junit percentiles abort_window abort_grace hlog journal '
                               'journal_default store label tags baseline scenario')
Web = namedtuple('Web', 'host port keep')   # --web: where the live dashboard listens
# Live metrics out (report.live), or None: where each goes and the names' first element.
Live = namedtuple('Live', 'graphite statsd prometheus prefix push')
Endpoint = namedtuple('Endpoint', 'proto host port')
Profiling = namedtuple('Profiling', 'callgrind pstats clock profiler flamegraph '
                                     'server_flamegraph server_pid flamegraph_rate')
# --flamegraph-rate: 99 Hz, as perf's users pick, never in lockstep with a 100 Hz timer;
# py-spy's reads cost the driver nothing, but above 1000 Hz perf's interrupts would.
FLAMEGRAPH_RATE = 99
MAX_FLAMEGRAPH_RATE = 1000
Config = namedtuple('Config', 'backend target load limits output profiling opts profile argv')

__all__ = ['Config', 'Target', 'Load', 'Limits', 'Output', 'Live', 'Web', 'Endpoint', 'Profiling',
           'parse', 'mask_argv', 'PASSWORD_ENV']


def check_output(flag, path):
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
    # Opened for real (and a file made here removed again): os.access says yes to places
    # no file can be made (/proc, a read-only mount as root), which a run found only
    # after the whole load, with a traceback.
    existed = os.path.exists(path)
    try:
        with open(path, 'a'):
            pass
    except (IOError, OSError) as e:
        raise errors.ConfigError('%s %s: cannot be written: %s'
                                 % (flag, path, getattr(e, 'strerror', None) or e))
    if not existed:
        os.remove(path)


def check_folder(flag, path):
    """Refuse an output folder (made when missing) that cannot take a file, before the run."""
    if not path:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise errors.ConfigError('%s %s is a file; give a folder' % (flag, path))
    probe = os.path.join(path, '.gloaddriver-write-check')
    try:
        if not os.path.isdir(path):
            os.makedirs(path)
        with open(probe, 'a'):
            pass
        os.remove(probe)
    except (IOError, OSError) as e:
        raise errors.ConfigError('%s %s: cannot write there: %s'
                                 % (flag, path, getattr(e, 'strerror', None) or e))


def _check_outputs(args):
    """Every file and folder the run will write, checked before the first op."""
    from gloaddriver.report import csvfiles
    csv_files = sorted(csvfiles.paths(args.csv).values()) if args.csv else []
    if args.junit and not (args.fail_if or args.baseline):
        raise errors.ConfigError('--junit writes one test case per --fail-if threshold: give '
                                 '--fail-if too, e.g. --fail-if p99<5ms,errors<0.1%')
    for flag, path in [('--json', args.json), ('--html', args.html),
                       ('--junit', args.junit)] + \
            [('--csv', f) for f in csv_files]:
        check_output(flag, path)
    check_folder('--callgrind', args.callgrind)
    check_folder('--pstats', args.pstats)


def _foreign_flags(args, kind):
    """Refuse a flag of another server kind, however it was spelled; of a flag both
    declare (one argparse flag with the union of their choices), a value that is not
    the chosen kind's."""
    own = kind.flag_choices()
    for other in backends.kinds():
        if other.name == kind.name:
            continue
        theirs = other.flag_choices()
        for dest, flag in other.flag_dests():
            value = getattr(args, dest, None)
            if value is None:
                continue
            if dest not in own:
                raise errors.ConfigError('%s is for --backend %s' % (flag, other.name))
            if own[dest] and value not in own[dest] and value in (theirs[dest] or ()):
                raise errors.ConfigError('%s %s is for --backend %s; --backend %s takes %s'
                                         % (flag, value, other.name, kind.name,
                                            ' or '.join(own[dest])))


SHARDS_ENV = 'GLOADDRIVER_SHARDS'
INDEX_ENV = 'JOB_COMPLETION_INDEX'
# Docker Swarm has no shard index of its own; a replicated job passes its task's slot and
# node id through these (deploy/swarm/). A replicated job's slots count from 0, and Docker's
# {{.Task.Slot}} template gives the node id in place of a 0 slot (as for a global service,
# whose tasks have slot 0), so 3 replicas render as <node id>, 1 and 2.
SLOT_ENV = 'GLOADDRIVER_TASK_SLOT'
NODE_ENV = 'GLOADDRIVER_NODE_ID'


def _auto_index(environ):
    """This shard's index from the orchestrator: Kubernetes' $JOB_COMPLETION_INDEX, else a
    Swarm replicated job's slot; None when neither is set."""
    index = environ.get(INDEX_ENV)
    if index is not None:
        return index
    slot = environ.get(SLOT_ENV)
    if slot is None:
        return None
    if slot and slot == environ.get(NODE_ENV):   # slot 0, rendered as the node id
        return '0'
    if not slot.isdigit():
        raise errors.ConfigError('--shard auto: $%s is %r, neither a slot number nor $%s '
                                 '(%r)' % (SLOT_ENV, slot, NODE_ENV, environ.get(NODE_ENV)))
    return slot


def _shard(text, environ):
    if not text:
        return None
    if text == 'auto':
        index, count = _auto_index(environ), environ.get(SHARDS_ENV)
        if not (index or '').isdigit() or not (count or '').isdigit():
            raise errors.ConfigError('--shard auto needs $%s (this shard, from 0; or a Swarm '
                                     "task's $%s and $%s) and $%s (how many) in the "
                                     'environment; got %r and %r'
                                     % (INDEX_ENV, SLOT_ENV, NODE_ENV, SHARDS_ENV, index, count))
        text = '%s/%s' % (index, count)
    m = re.match(r'^(\d+)/(\d+)$', text)
    if not m or not int(m.group(1)) < int(m.group(2)):
        raise errors.ConfigError('--shard takes I/N with 0 <= I < N, e.g. 0/4; got %r' % text)
    return int(m.group(1)), int(m.group(2))


def _keys(args, shard):
    """--keys, or its default: --ops (100000 when the phases have no op limit). A shard
    runs --ops of its own on its own part of the key space, so for shard I/N the default
    is N x --ops: each shard's part is then --ops keys, and its inserts fill it exactly
    (with --keys equal to --ops, a shard owned --ops/N keys and ran --ops inserts: the
    rest failed as duplicates). --processes splits one --ops among its children and
    gives them --keys, so their shares agree the same way."""
    if args.keys:
        return args.keys
    if args.ops and shard:
        return args.ops * shard[1]
    return args.ops or 100000


def _check_shard(shard, keys):
    if shard and keys < shard[1]:
        raise errors.ConfigError('--shard %d/%d needs --keys of at least %d, or shards would '
                                 'share keys; got %d' % (shard + (shard[1], keys)))


def parse(argv=None, environ=None):
    """argv -> Config; raises ConfigError for values argparse cannot judge alone."""
    environ = os.environ if environ is None else environ
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    profile_name = _profile_name(argv)
    if profile_name:
        argv = _profile_argv(parser, profile_name) + argv
    args = parser.parse_args(argv)
    kind = backends.get(args.backend)
    _foreign_flags(args, kind)
    find_max.check_flags(args)
    stages = _stages(args, kind)
    if args.greenlets is None:     # (--stages of greenlets have made it their peak)
        args.greenlets = DEFAULT_GREENLETS

    if args.mix and args.phases:
        raise errors.ConfigError('--phases and --mix exclude each other: a mix is one phase')
    if args.spawn_init and not args.spawn:
        raise errors.ConfigError('--spawn-init goes with --spawn')
    _check_replicas(args)
    if args.spawn_init and not os.path.isfile(args.spawn_init):
        raise errors.ConfigError('--spawn-init %s: no such file' % args.spawn_init)
    if args.ops == 0 and args.duration == 0 and stages is None and args.find_max is None:
        raise errors.ConfigError('--ops 0 needs a --duration, or the phase never ends')
    if args.timeout <= 0:
        raise errors.ConfigError('--timeout must be above 0')
    if not (args.callgrind or args.pstats) and (args.profile_clock or args.profiler):
        raise errors.ConfigError('--profile-clock and --profiler need --callgrind DIR or '
                                 '--pstats DIR')
    _check_flamegraphs(args)
    if args.rate is not None and args.rate <= 0:
        raise errors.ConfigError('--rate must be above 0 ops/s')
    if args.rate is None and args.find_max is None and (args.arrival is not None or
                                                        args.latency_limit is not None):
        raise errors.ConfigError('--arrival and --latency-limit need --rate')
    _check_outputs(args)
    if args.interval is not None and (args.interval <= 0 or (
            args.progress > 0 and args.interval != args.progress)):
        raise errors.ConfigError('--interval must be above 0, and it goes with --progress 0 '
                                 '(with progress lines on, the timeline follows --progress)')
    opts = kind.options(args)
    keep.check_store(args, environ, parser)
    shard = _shard(args.shard, environ)
    phases = _phases(args, kind, opts, shard)
    percentiles, fail_conditions = _thresholds(args, kind, opts, phases)
    load = Load(
        greenlets=args.greenlets, processes=args.processes, phases=phases, ops=args.ops,
        duration=args.duration, warmup=args.warmup, keys=_keys(args, shard),
        distribution=args.distribution, value_size=args.value_size, seed=args.seed,
        checksum=args.checksum, rate=args.rate, arrival=args.arrival or 'constant',
        latency_limit=args.latency_limit / 1000.0 if args.latency_limit else None,
        shard=shard, workload_file=args.workload_file,
        start_at=args.start_at, verify=args.verify, stages=stages, repeat=args.repeat,
        find_max=find_max.build(args, kind.judged_phases(opts, phases), percentiles))
    _check_shard(load.shard, load.keys)
    _check_repeat(args, kind.judged_phases(opts, phases))
    keep.check(args, kind.judged_phases(opts, phases), check_output, len(phases))
    password = args.password if args.password is not None else environ.get(PASSWORD_ENV)
    return Config(
        backend=kind.name,
        target=Target(spawn=args.spawn, wal_mode=args.wal_mode, user=args.user,
                      password=password, spawn_init=args.spawn_init,
                      faults=_faults(args.fault, args.spawn, args.replicas),
                      replicas=args.replicas, replication=args.replication or 'async',
                      read_from=args.read_from or 'leader'),
        load=load,
        limits=Limits(timeout=args.timeout, connect_timeout=args.connect_timeout,
                      outage_limit=args.outage_limit),
        output=_output(args, percentiles, fail_conditions),
        profiling=Profiling(callgrind=args.callgrind, pstats=args.pstats,
                            clock=args.profile_clock or 'wall',
                            profiler=args.profiler or 'yappi',
                            flamegraph=args.flamegraph,
                            server_flamegraph=args.server_flamegraph,
                            server_pid=args.server_pid,
                            flamegraph_rate=args.flamegraph_rate or FLAMEGRAPH_RATE),
        opts=opts, profile=args.profile, argv=tuple(mask_argv(argv)))


def _phases(args, kind, opts, shard):
    """The phases to run: a --workload-file's, or the kind's of --phases/--mix (a load
    first where _load_first or --find-max's choice of a phase puts one)."""
    before = find_max.searched(args, kind, opts, _percentiles(args.percentiles))
    if args.workload_file:
        return find_max.mixed(args, _user_phases(args))
    return before + _load_first(args, kind, opts, kind.phases(
        opts, args.phases, args.mix, args.load), _keys(args, shard))


def _output(args, percentiles, fail_conditions):
    return Output(json=args.json, html=args.html, csv=args.csv, progress=args.progress,
                  interval=args.interval or (args.progress if args.progress > 0 else 1.0),
                  syscalls=args.syscalls, fail_if=fail_conditions, live=_live(args),
                  debug=args.debug, web=_web(args), junit=args.junit, percentiles=percentiles,
                  abort_window=args.abort_window, abort_grace=args.abort_grace,
                  hlog=args.hlog, journal=args.journal or None,
                  journal_default=getattr(args, 'journal_default', False),
                  store=args.store, label=args.label, tags=args.tags, baseline=args.baseline,
                  scenario=args.scenario)


def _stages(args, kind):
    """--stages, checked against the flags it meets. It changes three defaults: --ops
    (no limit: the stages end the phase), --greenlets (the highest target of a closed
    loop) and, for targets in ops/s, --rate (the highest target: the open loop runs
    as under --rate, on a schedule that follows the stages). Without --stages, --ops
    defaults to 100000 (or the workload's own size, ``Kind.default_ops``) unless
    --duration is given: then the time ends each phase (a default op limit that came
    first would cut the asked-for time short, silently)."""
    if args.stages is None:
        if args.ops is None:
            args.ops = 0 if args.duration else (kind.default_ops(args) or 100000)
        return None
    try:
        stages = converters.stages(args.stages)
    except ValueError as e:
        raise errors.ConfigError(str(e))
    total = sum(s.seconds for s in stages.stages)
    peak = max([stages.start] + [s.target for s in stages.stages])
    if args.duration:
        raise errors.ConfigError('--stages and --duration exclude each other: a phase lasts '
                                 'the sum of the stages (%g s)' % total)
    if args.rate is not None:
        raise errors.ConfigError('--stages and --rate exclude each other: for an open loop, '
                                 'write the targets as rates, e.g. --stages 10s:%g/s,30s:%g/s'
                                 % (args.rate, args.rate))
    if args.processes > 1:
        raise errors.ConfigError('--stages does not split among --processes: run one process, '
                                 'or one per host with --shard I/N and --start-at')
    if stages.unit == 'greenlets':
        if args.greenlets is None:
            args.greenlets = int(peak)
        elif args.greenlets < peak:
            raise errors.ConfigError('--greenlets %d is below the highest --stages target, %d '
                                     'greenlets: raise it, or leave it out (it is then the '
                                     'highest target)' % (args.greenlets, peak))
    else:
        args.rate = float(peak)
    if args.ops is None:
        args.ops = 0
    return stages


def _faults(text, spawn, replicas):
    if not text:
        return ()
    if not spawn:
        raise errors.ConfigError('--fault needs --spawn: gloaddriver kills, pauses and starts '
                                 'only a server it started itself')
    try:
        return converters.faults(text, replica_set=bool(replicas))
    except ValueError as e:
        raise errors.ConfigError(str(e))


def _check_replicas(args):
    """--replicas and --replication go with --spawn; the processes of --processes each
    spawn nothing of their own."""
    if args.replicas is not None and not args.spawn:
        raise errors.ConfigError('--replicas goes with --spawn; for a replica set of your own, '
                                 'give every member\'s address (--uri a,b,c or a multi-host '
                                 '--dsn)')
    if args.replication is not None and args.replicas is None:
        raise errors.ConfigError('--replication goes with --replicas N')


_HOST_PORT = re.compile(r'^(?:([a-z]+)://)?(\[[0-9A-Fa-f:.]+\]|[^:/\s\[\]]+):([0-9]+)$')
_LISTEN = re.compile(r'^(?:(\[[0-9A-Fa-f:.]+\]|[^:/\s\[\]]+):)?([0-9]+)$')
_PREFIX = re.compile(r'^[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$')


def _listen(flag, text, default_host, examples):
    """(host, port) of a PORT or HOST:PORT to listen on; one line when it is neither."""
    m = _LISTEN.match(text)
    if not m:
        raise errors.ConfigError('%s takes PORT or HOST:PORT, e.g. %s; got %r'
                                 % (flag, examples, text))
    return (m.group(1) or default_host).strip('[]'), _port(flag, text, m.group(2))


def _port(flag, text, digits):
    port = int(digits)
    if not 1 <= port <= 65535:
        raise errors.ConfigError('%s %s: port %d is out of range (1-65535)' % (flag, text, port))
    return port


def _endpoint(flag, text, protos):
    """[PROTO://]HOST:PORT -> Endpoint; the first of ``protos`` is the default."""
    m = _HOST_PORT.match(text)
    if not m:
        raise errors.ConfigError('%s takes HOST:PORT, e.g. 127.0.0.1:%s; got %r'
                                 % (flag, {'--statsd': 8125}.get(flag, 2003), text))
    proto = m.group(1) or protos[0]
    if proto not in protos:
        raise errors.ConfigError('%s sends over %s; got %s://' % (
            flag, ' or '.join('%s (%s://)' % (p.upper(), p) for p in protos), proto))
    return Endpoint(proto, m.group(2).strip('[]'), _port(flag, text, m.group(3)))


def _check_free(flag, text, host, port):
    """Refuse a listening port that is taken before the run, not after it. A SetupError
    (exit 3), as a server that cannot be reached: the value is good, the machine does not
    give what it names."""
    import socket
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
    except (socket.error, OSError) as e:
        raise errors.SetupError('%s %s: cannot listen on port %d: %s' % (
            flag, text, port, getattr(e, 'strerror', None) or e))
    finally:
        s.close()


def _live(args):
    """The live-metrics flags, checked: Live, or None when none was given."""
    if not (args.graphite or args.statsd or args.prometheus_port or args.prometheus_push):
        if args.metrics_prefix:
            raise errors.ConfigError('--metrics-prefix goes with --graphite, --statsd, '
                                     '--prometheus-port or --prometheus-push')
        return None
    prefix = args.metrics_prefix or 'gloaddriver'
    if not _PREFIX.match(prefix):
        raise errors.ConfigError('--metrics-prefix takes dot-separated names of letters, digits, '
                                 '_ and -, starting with a letter, e.g. loadtest.gloaddriver; '
                                 'got %r' % prefix)
    prometheus = None
    if args.prometheus_port:
        text = args.prometheus_port
        host, port = _listen('--prometheus-port', text, '', '9100 or 127.0.0.1:9100')
        # --processes P serves one endpoint per process, on PORT .. PORT+P-1.
        last = port + args.processes - 1
        if last > 65535:
            raise errors.ConfigError('--prometheus-port %s with --processes %d needs ports %d-%d; '
                                     'the last is out of range' % (text, args.processes, port,
                                                                   last))
        for p in range(port, last + 1):
            _check_free('--prometheus-port', text, host or '0.0.0.0', p)
        prometheus = Endpoint('http', host, port)
    return Live(
        graphite=_endpoint('--graphite', args.graphite, ('tcp', 'udp')) if args.graphite else None,
        statsd=_endpoint('--statsd', args.statsd, ('udp',)) if args.statsd else None,
        prometheus=prometheus, prefix=prefix, push=_push_url(args.prometheus_push))


def _push_url(text):
    """--prometheus-push http[s]://HOST:PORT[/PATH] (HOST:PORT alone is http://), or None."""
    if not text:
        return None
    url = text if '://' in text else 'http://' + text
    if not re.match(r'^https?://(\[[0-9A-Fa-f:.]+\]|[^:/\s\[\]]+)(:[0-9]+)?(/\S*)?$', url):
        raise errors.ConfigError('--prometheus-push takes the URL of a Pushgateway, e.g. '
                                 'http://127.0.0.1:9091; got %r' % text)
    return url.rstrip('/')


def _web(args):
    """--web [HOST:]PORT (and --web-keep), checked before the run: a bad value is a
    usage error, a port that cannot be had a setup error."""
    if not args.web:
        if args.web_keep:
            raise errors.ConfigError('--web-keep goes with --web [HOST:]PORT')
        return None
    text = args.web
    host, port = _listen('--web', text, '127.0.0.1', '8090 or 0.0.0.0:8090')
    if args.processes > 1:
        raise errors.ConfigError('--web serves one process: run it without --processes')
    _check_free('--web', text, host, port)
    return Web(host, port, bool(args.web_keep))


def _thresholds(args, kind, opts, phases):
    """(--percentiles, --fail-if conditions): the conditions' metrics, values and the
    phases and ops they name, all judged before the first op."""
    percentiles = _percentiles(args.percentiles)
    conditions = keep.baseline_conditions(
        fail_if.parse(args.fail_if, percentiles) if args.fail_if is not None else None,
        args.baseline, lambda text: fail_if.parse(text, percentiles))
    if conditions is None:
        return percentiles, None
    if args.abort_window <= 0:
        raise errors.ConfigError('--abort-window must be above 0 seconds')
    if args.processes > 1 and any(c['abort'] for c in conditions):
        raise errors.ConfigError('@abort judges one process\'s timeline as it goes: not with '
                                 '--processes yet (run one process, or leave @abort out)')
    judged = kind.judged_phases(opts, phases)
    if judged is not None:
        fail_if.check_names(conditions, judged)
    return percentiles, conditions


def _check_repeat(args, judged):
    """--repeat N runs the runner's phases N times in this process."""
    if args.repeat == 1:
        return
    if args.processes > 1:
        raise errors.ConfigError('--repeat does not go with --processes yet: repeat the '
                                 'command, or run one process with --repeat')
    if judged is None:
        raise errors.ConfigError('--repeat repeats the phases the runner drives; this '
                                 'workload drives itself (run the command again instead)')


def _percentiles(text):
    """--percentiles 50,90,99,99.9,99.99 -> ascending floats (the defaults without it)."""
    from gloaddriver.measure import stats
    if text is None:
        return stats.DEFAULT_PERCENTILES
    out = []
    for part in [p.strip() for p in text.split(',') if p.strip()]:
        try:
            pct = float(part.lstrip('pP'))
        except ValueError:
            pct = None
        if pct is None or not 0 < pct < 100:
            raise errors.ConfigError('--percentiles takes numbers above 0 and below 100, e.g. '
                                     '50,90,99,99.9,99.99 (max is always shown); got %r' % part)
        out.append(pct)
    if not out:
        raise errors.ConfigError('--percentiles needs at least one, e.g. 50,90,99,99.9')
    keys = {}
    for pct in sorted(set(out) | set(stats.DEFAULT_PERCENTILES)):
        other = keys.setdefault(stats.percentile_key(pct), pct)
        if other != pct:
            raise errors.ConfigError('--percentiles: %g and %g would both be named %s in the '
                                     'result; leave one out' % (min(pct, other), max(pct, other),
                                                                stats.percentile_key(pct)))
    return tuple(sorted(set(out)))


def _load_first(args, kind, opts, phases, keys):
    """A --mix of the built-in ops that reads keys, on a server --spawn has just made
    empty: a load phase first (YCSB's load), said, unless --load or --no-load was given
    or --spawn-init brings its own data. Otherwise every read would be a miss."""
    if args.no_load and args.load:
        raise errors.ConfigError('--load and --no-load exclude each other')
    if not (args.spawn and args.mix) or args.load or args.no_load or args.spawn_init or \
            len(phases) != 1:
        return phases
    ops = [op for op, _w in phases[0].weights]
    if not set(ops) <= set(workload.OPS) or set(ops) <= set(['insert']):
        return phases
    errors.say('note: the spawned server is empty: a load phase inserts the %d keys of '
               '--keys before the mix, as YCSB\'s load does (--no-load: run the mix on the '
               'empty server)' % keys)
    return kind.phases(opts, args.phases, args.mix, True)


def _user_phases(args):
    """The phases of a --workload-file: its WEIGHTS or PHASES, or --phases/--mix of its ops."""
    from gloaddriver import workload
    from gloaddriver.workload import userfile
    user = userfile.load(args.workload_file)
    if args.load:
        raise errors.ConfigError('--load inserts with the built-in ops; a --workload-file '
                                 'prepares its data in its setup(db)')
    phases, mix = (args.phases, args.mix) if (args.phases or args.mix) else user.default_phases()
    try:
        return workload.phases_from(phases, mix, False, user.names, user.names)
    except ValueError as e:
        raise errors.ConfigError('%s (the ops of %s)' % (e, args.workload_file))


def _check_flamegraphs(args):
    if args.flamegraph_rate is not None and not (args.flamegraph or args.server_flamegraph):
        raise errors.ConfigError('--flamegraph-rate needs --flamegraph DIR or '
                                 '--server-flamegraph DIR')
    if args.server_pid is not None and not args.server_flamegraph:
        raise errors.ConfigError('--server-pid goes with --server-flamegraph DIR')
    if args.server_flamegraph and not args.spawn and args.server_pid is None:
        raise errors.ConfigError('--server-flamegraph records a server this host runs: '
                                 '--spawn one, or name it with --server-pid PID')
    if args.server_flamegraph and args.spawn and args.server_pid is not None:
        raise errors.ConfigError('--server-pid names a server of your own; with --spawn the '
                                 'spawned one is recorded')
    if args.server_pid is not None and not os.path.exists('/proc/%d' % args.server_pid):
        raise errors.ConfigError('--server-pid %d: no such process on this host'
                                 % args.server_pid)
    if args.flamegraph_rate is not None and args.flamegraph_rate > MAX_FLAMEGRAPH_RATE:
        raise errors.ConfigError('--flamegraph-rate %d: at most %d samples per second'
                                 % (args.flamegraph_rate, MAX_FLAMEGRAPH_RATE))


def _profile_name(argv):
    for i, a in enumerate(argv):
        if a == '--profile' and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith('--profile='):
            return a.split('=', 1)[1]
    return None


def _profile_argv(parser, name):
    from gloaddriver.config import profile
    checker = build_parser(CheckingParser)

    def check(part):
        if part:
            checker.parse_args(part)
    return profile.to_argv(name, value_flags(parser), check)


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
        elif a.startswith('--dsn=') or a.startswith('--store='):
            flag, _eq, value = a.partition('=')
            out.append(flag + '=' + mask_dsn(value))
        else:
            out.append(a)
        hide = {'--password': 'password', '--dsn': 'dsn',
                '--store': 'dsn'}.get(a) if hide is None else None
    return out
