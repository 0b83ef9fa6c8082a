"""The backend contract: the one interface between the driver and a server kind.

A backend is a package under ``gloaddriver/backends/`` whose ``KIND`` is a
:class:`Kind`, named by one line in the registry (``backends/__init__.py``).
Nothing outside ``backends/`` knows which server it talks to: the run, the
manifest, the reports, ``--processes`` and ``gloaddriver compat`` all go
through these two classes.

:class:`Kind` is the server kind as a whole, known before anything connects:

* ``flags``: its own flag group. Every default is ``None`` so that a flag
  given on the command line, in any spelling (``--dsn X``, ``--dsn=X``) or in
  a profile, can be told from one left alone. A flag that belongs to another
  kind is refused with one line (exit 2).
* ``options(args)``: the parsed flags of its group, validated, as an
  immutable options tuple (``config.opts``).
* ``phases(opts, phases, mix, load)``: the phases this workload runs.
* ``spawn(config)``: a private server (started, removed by ``stop()``), and
  ``target(config, server)``: the config pointed at it.
* ``backend(config, counter)``: a :class:`Backend` for one run, not yet open.
* ``manifest(config)``: what the JSON manifest says about the connector.
* ``server_argv(server)``: flags that point a child process at a server.
* ``crosscheck``: the module behind ``gloaddriver compat`` for this kind: the
  server both interpreters load, the digest of what they stored, the probe each runs.

:class:`Backend` is one run's connection(s) and ops. The runner calls
``open()``, then per phase ``phase_started()``, ``worker_ops(w)`` once per
worker (or, for a --workload-file, ``client(w)``: the ``db`` its functions
get), ``io_counts()`` around the measured window, ``phase_extra()``; at the
end ``close()``. Its rules:

* An op is ``fn(key) -> result``. A falsy result other than None (an empty
  list, 0, False) is a *miss* (the key was not there): counted, not an error.
  None is success with nothing to report (a stored procedure that returns
  nothing, a user's function without a return).
* A failed op raises an :class:`gloaddriver.errors.OpError` whose ``kind``
  keys the error counts (``network``, ``timeout``, ``server:<code>``); any
  other exception is counted as ``client:<class name>``, unless ``op_error``
  finds the OpError it wraps (a library's error around the server's). Nothing
  escapes the count.
* A result must be packable by msgpack (list, tuple, int, text, bytes, None;
  or iterable) for ``--checksum``.
* A backend whose work is not one op per key (a bulk loader) returns its own
  phase results from ``run_phases()``, made by
  ``gloaddriver.measure.phase_result``; every other backend returns None there and
  the runner drives it.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors, workload


class Kind(object):
    """A server kind: its flags, its workloads, its private server, its manifest."""

    name = None        # --backend NAME
    title = None       # how reports name the server, e.g. 'Tarantool'
    # Its own flags: ((option strings), argparse keyword arguments) pairs. Their
    # defaults are always None: "not given" must be told apart from any value.
    flags = ()

    def add_flags(self, parser, shared=None):
        """Add this kind's argparse group (titled with its name). ``shared`` ({option:
        action}, filled here) lets kinds declare the same flag (--connector): the first
        adds it, the others widen its choices and its help; the parsed value is then held
        to the chosen kind's own choices (gloaddriver.config)."""
        group = parser.add_argument_group(self.name)
        shared = {} if shared is None else shared
        for names, kwargs in self.flags:
            action = shared.get(names[0])
            if action is None:
                shared[names[0]] = group.add_argument(*names, **dict(kwargs, default=None))
                continue
            if action.choices is not None:      # (a free-form flag stays free-form)
                more = [c for c in kwargs.get('choices') or () if c not in action.choices]
                action.choices = list(action.choices) + more
            action.help = '%s; %s' % (action.help, kwargs.get('help'))

    def flag_dests(self):
        """(argparse dest, first option string) of each of its flags."""
        return [(kw.get('dest') or names[0].lstrip('-').replace('-', '_'), names[0])
                for names, kw in self.flags]

    def flag_choices(self):
        """{argparse dest: its choices, or None} of each of its flags."""
        return dict((dest, kw.get('choices')) for (dest, _flag), (_names, kw)
                    in zip(self.flag_dests(), self.flags))

    def options(self, args):
        """This kind's options from the parsed flags (all groups, so that checks
        spanning both can be made); raise ConfigError when wrong."""
        return None

    def default_ops(self, args):
        """Ops per phase when neither --ops nor --duration is given, for a workload of
        a set size; None: the driver's default."""
        return None

    def phases(self, opts, phases, mix, load):
        """The phases to run from --phases/--mix/--load (text or None)."""
        try:
            return workload.phases_from(phases, mix, load)
        except ValueError as e:
            raise errors.ConfigError(str(e))

    def judged_phases(self, opts, phases):
        """The phases whose names a result of this run holds, for --fail-if's names
        checked before the first op; None when the backend drives itself and names its
        own (PostgreSQL's bulk loader: ``bulk:METHOD``), so they cannot be told before.
        Here, rather than in the postgres kind, to keep that kind's package as it is."""
        if getattr(opts, 'workload', None) == 'bulk':
            return None
        return phases

    def spawn(self, config):
        """Start a private server for --spawn; the caller stops it."""
        raise errors.ConfigError('--spawn is not available for --backend %s' % self.name)

    def target(self, config, server):
        """The config pointed at a spawned server."""
        return config

    def server_argv(self, server):
        """(argv, environment) that point a child driver process at ``server``."""
        return [], {}

    def backend(self, config, counter):
        """A Backend for this run (not yet open)."""
        raise NotImplementedError

    def manifest(self, config):
        """Connector fields of the JSON manifest (same keys for every kind)."""
        return {'connector': None, 'connections': None, 'overlap': None, 'workload': None,
                'pool_size': None, 'prepared': None, 'wait_callback': None, 'request': None}

    def with_processes(self, config):
        """Raise ConfigError when this configuration cannot run as --processes P."""

    @property
    def crosscheck(self):
        """This kind's ``crosscheck`` module, for ``gloaddriver compat`` (see compat/check.py)."""
        raise errors.ConfigError('gloaddriver compat does not support --backend %s' % self.name)


class Backend(object):
    """One run's connections and ops; see the module docstring for the rules."""

    connector = None

    def __init__(self, config):
        self.config = config

    def open(self):
        """Connect and check the schema; raise SetupError (ConnectError, AuthError,
        SchemaError) with a message that says what to do."""

    def close(self):
        """Release everything; safe to call twice and after a failed open()."""

    def describe(self):
        """One line about the connector, for the report's headline."""
        return self.connector or ''

    def address(self):
        """host:port of the server, for the manifest."""
        return None

    def server_version(self):
        return None

    def worker_ops(self, worker):
        """{op name: fn(key)} for worker number ``worker``."""
        raise NotImplementedError

    def client(self, worker):
        """What a --workload-file's functions get as ``db`` for worker ``worker``: the
        server's client as its users know it."""
        raise errors.ConfigError('--workload-file is not supported by --backend %s'
                                 % self.config.backend)

    def op_error(self, exc):
        """A failed op's exception that is not an OpError (one the client library the ops
        use raised: an ORM's) as the OpError it means, or ``exc`` itself. Called on the
        error path only, before the failure is counted."""
        return exc

    def io_counts(self):
        """Cumulative connector counters (sends, recvs, requests, responses,
        reconnects, ...), or None when the connector keeps none."""
        return None

    def member(self):
        """host:port of the member of a replica set (several --uri addresses, a multi-host
        --dsn) that the writes go to now, or None for a single server."""
        return None

    def reconnects(self):
        """A cumulative count of connections made (or made again after a loss), or None
        when the connector reconnects out of sight. Read during an outage only: an
        increase then is a reconnect, the server's return as the client sees it."""
        return None

    def phase_started(self):
        """Called before a phase's measured window opens."""

    def phase_extra(self):
        """Fields to add to the phase's result, read after its window closed."""
        return {}

    def server_metrics(self, pid):
        """A gloaddriver.measure.server_metrics.ServerMetrics sampling this server on a
        connection of its own, or None. ``pid`` is the spawned server's, or None."""
        return None

    def verify_reader(self):
        """For --verify: ``read(keys) -> [state]`` (gloaddriver.measure.ledger codes: which
        built-in write's value each key holds, GONE or CORRUPT), with ``read.close()``;
        or None when this workload's writes cannot be read back. Called after the phases;
        it may wait for a server that is coming back."""
        return None

    def run_phases(self):
        """Phase results for a backend that drives itself; None lets the runner drive."""
        return None
