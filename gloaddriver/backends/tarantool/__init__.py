"""Tarantool: IPROTO framing (``protocol``), the buffered connection (``connection``),
its workload (``buffered``), the tarantool-python baseline (``sync``), the base class
both share (``backend_base``), a private server (``server``), its metrics
(``metrics``) and its side of the two-interpreter cross-check of ``gloaddriver
compat`` (``crosscheck``).

This module is the kind itself: its flags and how they make a backend.
"""
from __future__ import absolute_import, division, print_function

from collections import namedtuple

from gloaddriver import errors, workload
from gloaddriver.backends import base
from gloaddriver.converters import positive_int

Options = namedtuple('Options', 'addresses space connector connections max_pending overlap '
                                'by_name request args fill index')
DEFAULT_URI = '127.0.0.1:3301'


class Tarantool(base.Kind):
    name = 'tarantool'
    title = 'Tarantool'
    flags = (
        (('--uri',), dict(metavar='HOST:PORT[,HOST:PORT...]',
                          help='tarantool: server address, HOST:PORT or tarantool://HOST:PORT '
                               '(default %s; not with --spawn); '
                               'several, comma-separated, are the members of a replica set: '
                               'writes go to the writable one (box.info.ro), found again '
                               'when it changes' % DEFAULT_URI)),
        (('--space',), dict(help='tarantool: the space of the built-in ops, any format: keys '
                                 'and tuples follow its format and indexes (default '
                                 'gloaddriver)')),
        (('--connector',), dict(choices=['buffered', 'sync'],
                                help='tarantool: buffered (ours, shared socket; the default) or '
                                     'sync (tarantool-python, one connection per greenlet)')),
        (('--connections',), dict(type=positive_int, metavar='K',
                                  help='buffered: spread greenlets over K connections '
                                       '(default: 1)')),
        (('--max-pending',), dict(type=positive_int, metavar='N',
                                  help='buffered: requests in flight per connection before '
                                       'callers wait (default 10000)')),
        (('--no-overlap',), dict(dest='overlap', action='store_false',
                                 help='buffered: send each batch whole, one send per loop '
                                      'pass, instead of flushing half of it early so client '
                                      'and server work overlap')),
        (('--by-name',), dict(action='store_true',
                              help='tarantool: name the space on every op (through the schema '
                                   'cache) instead of resolving it once')),
        (('--index',), dict(metavar='NAME|ID',
                            help='tarantool: the index of the built-in select and scan '
                                 '(default: the primary key)')),
        (('--call',), dict(metavar='FUNC',
                           help='tarantool: each op calls this stored procedure with --args')),
        (('--eval',), dict(metavar='EXPR', help='tarantool: each op evaluates this Lua with '
                                                '--args as its ...')),
        (('--sql',), dict(metavar='STATEMENT',
                          help='tarantool: each op executes this SQL (prepared where the '
                               'server can) with --args bound to its ?')),
        (('--args',), dict(metavar='JSON',
                           help='tarantool: the arguments of --call/--eval/--sql, a JSON array '
                                'with placeholders {key}, {value}, {random:A:B}, {string:N}, '
                                '{float}, {worker} filled per op (default [])')),
    )

    def options(self, args):
        if args.uri and args.spawn:
            # Said, not ignored: a run meant for a server at --uri would measure another.
            raise errors.ConfigError('--uri and --spawn exclude each other: --spawn starts a '
                                     'private server and loads it; --uri %s points at one '
                                     'already running. Give one of them' % args.uri)
        addresses = _addresses(args.uri or DEFAULT_URI)
        if args.replication == 'remote_apply':
            raise errors.ConfigError('--replication remote_apply is PostgreSQL\'s; Tarantool '
                                     'replicates async or sync')
        connector = args.connector or 'buffered'
        if args.read_from not in (None, 'leader') and len(addresses) < 2 and not args.replicas:
            raise errors.ConfigError('--read-from %s needs a replica set: several --uri '
                                     'addresses, or --spawn --replicas N' % args.read_from)
        if (len(addresses) > 1 or args.replicas) and connector == 'sync':
            raise errors.ConfigError('a replica set (several --uri addresses, --replicas) is '
                                     'followed by the buffered connector; tarantool-python '
                                     '(--connector sync) takes one address')
        if args.connections is not None and connector == 'sync':
            raise errors.ConfigError('--connections is for the buffered connector; the sync '
                                     'connector opens one connection per greenlet')
        connections = args.connections or 1
        if connections > args.greenlets:
            raise errors.ConfigError('--connections %d exceeds --greenlets %d: a connection '
                                     'would have no greenlet' % (connections, args.greenlets))
        request, fill = _request(args)
        if args.verify and (request is not None or args.workload_file):
            raise errors.ConfigError('--verify reads back what the built-in ops wrote; %s '
                                     'writes what the driver cannot predict' % (
                                         '--' + request[0] if request else 'a workload file'))
        return Options(addresses=addresses, space=args.space or 'gloaddriver',
                       connector=connector, connections=connections,
                       max_pending=args.max_pending or 10000, overlap=args.overlap is not False,
                       by_name=bool(args.by_name), request=request, args=args.args, fill=fill,
                       index=int(args.index) if (args.index or '').isdigit() else args.index)

    def phases(self, opts, phases, mix, load):
        if opts.request is None:
            return base.Kind.phases(self, opts, phases, mix, load)
        if phases or mix or load:
            raise errors.ConfigError('--%s is the op of one phase: --phases, --mix and --load '
                                     'do not go with it' % opts.request[0])
        return (workload.Phase(opts.request[0], ((opts.request[0], 1),)),)

    def spawn(self, config):
        t = config.target
        if t.replicas:
            from gloaddriver.backends.tarantool.replicaset import TarantoolReplicaSet
            return TarantoolReplicaSet(t.replicas, t.replication, space=config.opts.space,
                                       wal_mode=t.wal_mode, init_file=t.spawn_init).start()
        from gloaddriver.backends.tarantool.server import TarantoolServer
        return TarantoolServer(space=config.opts.space, wal_mode=t.wal_mode,
                               init_file=t.spawn_init).start()

    def target(self, config, server):
        return config._replace(
            opts=config.opts._replace(addresses=_addresses(_uris(server))),
            target=config.target._replace(user=server.user, password=server.password))

    def server_argv(self, server):
        return ['--uri', _uris(server), '--user', server.user], {}

    def backend(self, config, counter):
        if config.opts.connector == 'sync':
            from gloaddriver.backends.tarantool.sync import SyncBackend
            return SyncBackend(config)
        from gloaddriver.backends.tarantool.buffered import BufferedBackend
        return BufferedBackend(config)

    def manifest(self, config):
        opts = config.opts
        buffered = opts.connector == 'buffered'
        return dict(base.Kind.manifest(self, config), connector=opts.connector,
                    connections=opts.connections if buffered else config.load.greenlets,
                    overlap=opts.overlap if buffered else None,
                    reply_reader=_reply_reader() if buffered else None,
                    request={'kind': opts.request[0], 'target': opts.request[1],
                             'args': opts.args or '[]'} if opts.request else None)

    @property
    def crosscheck(self):
        from gloaddriver.backends.tarantool import crosscheck
        return crosscheck


def _addresses(text):
    """'h:1,h:2' -> [('h', 1), ('h', 2)]; ConfigError for anything else."""
    out = []
    for uri in text.split(','):
        uri = uri.strip()
        scheme, sep, rest = uri.partition('://')
        if sep:
            # tarantool://HOST:PORT, as Tarantool's own clients write it.
            if scheme != 'tarantool':
                raise errors.ConfigError('--uri takes HOST:PORT or tarantool://HOST:PORT, got '
                                         '%r' % uri)
            uri = rest.rstrip('/')
        if '@' in uri:
            raise errors.ConfigError('--uri %s: give the user as --user and the password in '
                                     '$GLOADDRIVER_PASSWORD (or --password), not in the '
                                     'address' % uri.rpartition('@')[2])
        host, sep, port = uri.rpartition(':')
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise errors.ConfigError('--uri must be HOST:PORT (or tarantool://HOST:PORT), or '
                                     'several comma-separated, got %r' % text)
        out.append((host.strip('[]'), int(port)))
    if len(set(out)) != len(out):
        raise errors.ConfigError('--uri names an address twice: %s' % text)
    return tuple(out)


def _uris(server):
    """The --uri of a spawned server or replica set."""
    return ','.join(getattr(server, 'uris', None) or [server.uri])


def _request(args):
    """(kind, target) of --call/--eval/--sql and its compiled --args, or (None, None)."""
    given = [(k, getattr(args, k)) for k in ('call', 'eval', 'sql') if getattr(args, k)]
    if len(given) > 1:
        raise errors.ConfigError('--call, --eval and --sql exclude each other: an op is one '
                                 'request')
    if not given:
        if args.args is not None:
            raise errors.ConfigError('--args goes with --call, --eval or --sql')
        return None, None
    if args.workload_file:
        raise errors.ConfigError('--%s and --workload-file exclude each other' % given[0][0])
    from gloaddriver.workload.template import compile_args
    fill = compile_args(args.args or '[]', workload.values(args.value_size, args.seed))
    kind, target = given[0]
    if kind == 'sql':
        _check_placeholders(target, fill)
    return (kind, target if isinstance(target, type(u'')) else target.decode('utf-8')), fill


def _check_placeholders(sql, fill):
    """--sql's placeholders against the values --args gives, before connecting."""
    import random
    from gloaddriver.backends.tarantool.requests import placeholders
    wanted, given = placeholders(sql), len(fill(0, random.Random(0), 0))
    if wanted != given:
        raise errors.ConfigError('--sql has %d placeholder%s (? or $n) but --args gives %d '
                                 'value%s: %s' % (wanted, '' if wanted == 1 else 's', given,
                                                  '' if given == 1 else 's', sql))


def _reply_reader():
    """What cuts the buffered connector's reply stream: ``compiled`` or ``msgpack``."""
    from gloaddriver.backends.tarantool.replies import CUT
    return 'msgpack' if CUT is None else 'compiled'


KIND = Tarantool()
