"""pgbench scripts on the pipelined connector (``--connector pipelined --script``): a
transaction is one batch on a shared socket.

Several greenlets share each connection, so a transaction cannot stay open across
round trips on it: the statements between ``BEGIN`` and ``END`` (or ``COMMIT``) go as
one batch with one Sync, which the server runs as one implicit transaction, committed
at the Sync and rolled back whole by an error anywhere in it (so a retry starts
clean). BEGIN's options (``ISOLATION LEVEL REPEATABLE READ``...) become a ``SET
TRANSACTION`` at the head of the batch. A ``\\startpipeline`` ... ``\\endpipeline``
block is a batch the same way (``\\syncpipeline`` sends what is queued and starts the
next). A statement outside both is a batch of its own.

Protocols: ``prepared`` binds statements parsed once per socket (again after a
reconnect); ``extended`` parses each as the unnamed statement with its values apart;
``simple`` sends a lone statement as a Query message and, inside a batch, the text with
its values in it as the unnamed statement (a Query message would end the batch).

What a batch cannot hold is refused before the run, naming the script and line: a
``\\gset``/``\\aset``, ``\\sleep`` or ``\\shell`` between BEGIN and END (their results
or pauses would split the transaction over round trips), ROLLBACK and savepoints, and
a BEGIN with no END. The psycopg2 connector runs such scripts.
"""
from __future__ import absolute_import, division, print_function

import re

from gloaddriver import errors
from gloaddriver.py23 import clock
from gloaddriver.backends.postgres import pipelined, script_run
from gloaddriver.workload.script import to_text
from gloaddriver.backends.postgres.kv_pipelined import PipelinedBackend

_REFUSED = re.compile(r'^\s*(ROLLBACK|ABORT|SAVEPOINT|RELEASE|PREPARE\s+TRANSACTION|'
                      r'COMMIT\s+PREPARED|COMMIT\s+AND\s+CHAIN|END\s+AND\s+CHAIN)\b', re.I)
_NOT_IN_BATCH = ('sleep', 'shell', 'setshell')


def check(script):
    """Refuse, before the run, what a transaction sent as one batch cannot do."""
    opened = None          # the line of the BEGIN or \startpipeline of the open batch

    def refuse(c, what):
        raise errors.ConfigError(
            'script %s, line %d: %s; --connector pipelined sends a transaction as one batch '
            '(use --connector psycopg2 for this script)' % (script.path, c.line, what))
    for c in script.commands:
        if c.kind == 'sql' and _REFUSED.match(c.queries[0].sql):
            refuse(c, '%s is not supported' % c.queries[0].sql.split()[0].upper())
        kind, _options = script_run.control(c)
        if kind == 'begin' or c.kind == 'startpipeline':
            if opened is not None and c.kind == 'startpipeline':
                refuse(c, '\\startpipeline inside a transaction')
            opened = opened or c.line
        elif kind == 'end' or c.kind == 'endpipeline':
            opened = None
        elif opened is not None:
            if c.kind in _NOT_IN_BATCH:
                refuse(c, '\\%s inside a transaction' % c.kind)
            if c.kind == 'sql' and (c.gset is not None or c.aset is not None):
                refuse(c, '\\gset or \\aset inside a transaction')
            if c.kind == 'sql' and len(c.queries) > 1:
                refuse(c, 'a \\; compound inside a transaction')


class Session(object):
    """A worker's hold on its connection for one run: the run's ``cur``, with the batch
    being built (``frames``, None outside one). A run that failed leaves nothing: the
    server rolled its batch back, and what was queued is dropped here."""

    __slots__ = ('conn', 'frames', 'broken')

    def __init__(self, conn):
        self.conn = conn
        self.frames = None
        self.broken = False

    @property
    def cur(self):
        return self

    def __call__(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.frames = None
        return False


class PipelinedRunner(script_run.Runner):
    """script_run.Runner on a pipelined connection: SQL steps queue or send frames."""

    caught = (errors.ServerError,)

    def __init__(self, scripts, protocol, max_tries, figures, base_variables, columns,
                 tx_log=None):
        script_run.Runner.__init__(self, scripts, protocol, max_tries, figures, None,
                                   base_variables, tx_log=tx_log)
        self.columns = columns      # {(script, command): column names} for \gset, \aset

    @staticmethod
    def _alive(item):
        return True

    @staticmethod
    def _rollback(session):
        session.frames = None      # the server rolled the batch back at its Sync

    def _op_of(self, parts, held):
        """The op on its worker's Session (``held``): a batch a failure left queued is
        dropped when the op ends."""
        session = held
        v, rnd, run, failure, retrying = parts.v, parts.rnd, parts.run, parts.failure, \
            parts.retrying
        caught, ended, log = self.caught, self._tried(parts), self.tx_log
        script_error = errors.ScriptError

        def op(key):
            v['key'] = key
            state = rnd.getstate() if retrying else None
            tries = 1
            t0 = clock() if log is not None else 0
            ok = False
            try:
                while True:
                    try:
                        run(session)
                        break
                    except caught as e:
                        if not failure(e, session, tries):
                            raise
                        session.frames = None   # the server rolled the batch back
                        rnd.setstate(state)
                        tries += 1
                    except script_error as e:
                        failure(e, None, tries)
                        raise
                ok = True
            finally:
                session.frames = None
                if tries > 1 or log is not None:
                    ended(tries, ok, t0)
        return op

    def _sql_lines(self, w, si, j, c, indent):
        """The lines of a BEGIN, an END and a lone prepared statement (no \\gset, no
        $n of its own): queued as a frame inside a batch, else sent at once with its
        int values as they are (bound in binary where the statement's parameter is a
        number, as the kv ops bind theirs) and the others as their text. False: its
        step is called."""
        kind, options = script_run.control(c)
        if kind == 'begin':
            head = w.bind([pipelined.frame_query(options)] if options else [])
            w.line('if cur.frames is None: cur.frames = list(%s)' % head, indent)
            return True
        if kind == 'end':
            w.line('f = cur.frames', indent)
            w.line('cur.frames = None', indent)
            w.line('if f: cur.conn.batch(%s(f))' % w.bind(b''.join), indent)
            return True
        query = script_run.preparable(c)
        if c.gset is not None or c.aset is not None or len(c.queries) > 1 or \
                self.protocol != 'prepared' or query is None or \
                script_run.has_numbered(query.sql):
            return False
        name = script_run.statement_name(si, j)
        pairs, _tail = script_run.parse_pieces(query.sql)
        temps = script_run.read_variables(w, pairs, 'v[%s]', indent)
        values = [temps[n] for _lit, n in pairs]
        tt = w.bind(to_text, '_tt')
        w.line('f = cur.frames', indent)
        w.line('if f is None:', indent)
        w.line('cur.conn.execute(%s, [%s])' % (w.bind(name.encode('ascii')), ', '.join(
            '%s if %s.__class__ is int else %s(%s)' % (t, t, tt, t) for t in values)),
            indent + 1)
        w.line('else:', indent)
        w.line('f.append(%s(%s, [%s]))' % (w.bind(pipelined.frame_execute), w.bind(name),
                                          ', '.join("'%%d' %% %s if %s.__class__ is int else "
                                                    '%s(%s)' % (t, t, tt, t) for t in values)),
               indent + 1)
        return True

    def _pipeline_step(self, c, nxt):
        if c.kind == 'startpipeline':
            def step(session):
                session.frames = []
                return nxt
            return step
        keep = c.kind == 'syncpipeline'

        def send(session):
            frames = session.frames
            session.frames = [] if keep else None
            if frames:
                session.conn.batch(b''.join(frames))
            return nxt
        return send

    def _sql_step(self, si, j, c, v, nxt):
        kind, options = script_run.control(c)
        if kind == 'begin':
            head = [pipelined.frame_query(options)] if options else []

            def begin(session):
                if session.frames is None:
                    session.frames = list(head)
                return nxt
            return begin
        if kind == 'end':
            def end(session):
                frames = session.frames
                session.frames = None
                if frames:
                    session.conn.batch(b''.join(frames))
                return nxt
            return end
        frame, alone = self._frames(si, j, c, v)
        if c.gset is None and c.aset is None:
            def step(session):
                frames = session.frames
                if frames is None:
                    alone(session.conn)
                else:
                    frames.append(frame())
                return nxt
            return step
        names = self.columns[(si, j)]
        prefix = c.gset if c.gset is not None else c.aset
        exact = c.gset is not None
        where = 'script %s, line %d' % (self.scripts[si].path, c.line)

        def gset(session):
            rows = alone(session.conn)
            if not isinstance(rows, list):
                rows = []
            if exact and len(rows) != 1:
                raise errors.ScriptError('%s: \\gset expects one row, the query returned %d'
                                         % (where, len(rows)))
            if rows:
                for name, value in zip(names, rows[-1]):
                    v[prefix + name] = value
            return nxt
        return gset

    def _frames(self, si, j, c, v):
        """(frame() -> the command's frame in a batch, alone(conn) -> sent by itself)."""
        queries = c.queries
        query = script_run.preparable(c)
        if len(queries) > 1 or self.protocol == 'simple' or query is None:
            simples = [q.simple for q in queries]

            def text():
                return ';\n'.join([s(v) for s in simples])

            def frame():     # check() keeps compounds out of batches
                return pipelined.frame_query(text())

            def alone(conn):
                return conn.simple(text())
            return frame, alone
        params = query.params
        if self.protocol == 'extended':
            sql = query.param_sql

            def frame():
                return pipelined.frame_query(sql, params(v))
        else:
            name = script_run.statement_name(si, j)

            def frame():
                return pipelined.frame_execute(name, params(v))

        def alone(conn):
            return conn.batch(frame())
        return frame, alone


class ScriptPipelinedBackend(PipelinedBackend):
    """--connector pipelined with --script/--builtin: the setup on psycopg2 (pgbench's
    tables, :scale, every statement proven), then connections that carry batches."""

    def __init__(self, config, dsn, password):
        PipelinedBackend.__init__(self, config, dsn, password)
        self.figures = None
        self.tx_log = None
        self.runner = None
        self._sessions = {}

    def open(self):
        from gloaddriver.backends.postgres import pool as pgpool
        from gloaddriver.backends.postgres.workloads import setup_error, dsn_address
        from gloaddriver.measure.script_figures import ScriptFigures
        from gloaddriver.workload import keys as keygen
        opts, c, load = self.opts, self.config, self.config.load
        run = opts.script_run
        setup_pool = pgpool.Pool(self.dsn, 1, password=self.password,
                                 connect_timeout=c.limits.connect_timeout,
                                 timeout=c.limits.timeout)
        try:
            item = setup_pool.connect(setup=False)
        except errors.NotConnected as e:
            raise setup_error(str(e), dsn_address(self.dsn))
        try:
            scale = script_run.setup(item.cur, opts.scripts, run, opts.init)
        finally:
            pgpool.forget(item.fd)
            item.conn.close()
        statements = []
        if run.protocol == 'prepared':
            for i, s in enumerate(opts.scripts):
                for j, command in enumerate(s.commands):
                    query = script_run.preparable(command)
                    if query is not None and script_run.control(command)[0] is None:
                        statements.append((script_run.statement_name(i, j), query.param_sql))
        probe = self._connect(self._connection(name='pg-setup', reconnect=False))
        try:
            self._version = (probe.server_version or '').split(' ')[0] or None
            columns = {}
            for i, s in enumerate(opts.scripts):
                for j, command in enumerate(s.commands):
                    if command.kind == 'sql' and (command.gset is not None or
                                                  command.aset is not None):
                        columns[(i, j)] = probe.columns(command.queries[-1].param_sql)
        finally:
            probe.close()
        for i in range(opts.pool_size):
            self.conns.append(self._connect(self._connection(statements,
                                                             'pg-pipelined-%d' % i)))
        self.figures = ScriptFigures(opts.scripts, run.protocol, run.max_tries,
                                     run.per_statement)
        self.figures.scale = scale
        if run.tx_log is not None:
            self.tx_log = script_run.TxLog(run.tx_log, run.sampling_rate, run.max_tries != 1,
                                           keygen.make_rng(load.seed, 'tx-log', load.shard))
        self.runner = PipelinedRunner(opts.scripts, run.protocol, run.max_tries, self.figures,
                                      dict(scale=scale, seed=load.seed, defines=run.defines),
                                      columns, tx_log=self.tx_log)

    def describe(self):
        return PipelinedBackend.describe(self).replace(
            'prepared statements', '%s protocol, a transaction per batch'
            % self.opts.script_run.protocol)

    def worker_ops(self, worker):
        from gloaddriver.workload import keys as keygen
        load = self.config.load
        rnd = keygen.make_rng(load.seed, 'script', load.shard, worker)
        first = load.shard[0] * load.greenlets if load.shard else 0
        session = Session(self.conns[worker % len(self.conns)])
        return self.runner.worker_ops(first + worker, rnd, held=session)

    def phase_started(self):
        PipelinedBackend.phase_started(self)
        self.figures.start()

    def phase_extra(self):
        return dict(PipelinedBackend.phase_extra(self), script=self.figures.block())

    def close(self):
        if self.tx_log is not None:
            self.tx_log.close()
        PipelinedBackend.close(self)
