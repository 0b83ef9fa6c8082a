"""One run of a pgbench script on a pooled psycopg2 connection: the interpreter of the
commands ``gloaddriver.workload.script`` parses.

Each command is compiled once, per worker, into a step ``step(cur) -> index of the next
command``, so a run is a loop of calls with no dispatch on kinds. A run holds one
pooled connection (``user.holder``: the op timeout, error translation, rollback of
what a failure left open) for all its commands, retries included.

pgbench's rules, as its reference states them:

* **Variables** live per client (here: per worker greenlet) across runs and scripts:
  what ``\\gset`` set in one run is there in the next. The automatic ones are
  ``client_id``, ``scale``, ``random_seed``, ``default_seed``, then ``--define``'s
  (and ``key``, gloaddriver's own: the op's key from --keys/--distribution).
* **Protocols.** ``simple``: the variables' text put into the SQL. ``extended``:
  psycopg2 cannot send Parse/Bind itself, so the values are bound by psycopg2 (quoted
  literals in one Query message); the pipelined connector speaks the real thing.
  ``prepared``: PREPARE once per connection, EXECUTE per run. A ``\\;`` compound is
  always sent as one simple query, as pgbench sends it.
* **Retries** (``--max-tries N``; 0: no limit but the op timeout): a transaction that
  failed with a serialization failure (40001) or a deadlock (40P01) is rolled back and
  run again from its first command with the same random draws (the generator's state
  is restored). Other failures end the run; every failure is counted by class.
* **Pipelines.** psycopg2 has no pipeline mode: ``\\startpipeline`` ... ``\\endpipeline``
  run their statements one after another, with the same results.
* **Shell.** ``\\shell`` and ``\\setshell`` run their command (gevent's subprocess, so the
  other greenlets go on); ``\\setshell`` keeps its output as an integer.
"""
from __future__ import absolute_import, division, print_function

import hashlib
import os
import re
import time
from collections import namedtuple

import gevent
import psycopg2
import psycopg2.extensions

from gloaddriver import errors
from gloaddriver.py23 import clock
from gloaddriver.backends.postgres import pool as pgpool
from gloaddriver.backends.postgres.user import _end_transaction
from gloaddriver.measure.script_figures import RETRYABLE
from gloaddriver.workload.script import codegen, truthy
from gloaddriver.workload.script.parse import sql_pieces as parse_pieces

_NUMBERED = re.compile(r'\$(\d+)')
_IDLE = psycopg2.extensions.TRANSACTION_STATUS_IDLE
# What PREPARE takes; any other statement (BEGIN, SET, CREATE, VACUUM...) is sent as
# simple text whatever the protocol.
_PREPARABLE = re.compile(r'^\s*(SELECT|INSERT|UPDATE|DELETE|VALUES|WITH|TABLE|MERGE)\b', re.I)
# What a PREPARE without values may refuse of a statement that runs with them: a
# parameter whose type only its value tells ($1 + $2). Not a fault of the script.
_TYPE_UNKNOWN = ('42P18', '42725', '42883', '42804')
# A script's transaction control (the pipelined connector makes a batch of what is
# between them; a BEGIN left open is refused).
_BEGIN = re.compile(r'^\s*(?:BEGIN|START\s+TRANSACTION)(?:\s+(?:WORK|TRANSACTION)\b)?\s*(.*)$',
                    re.I | re.S)
_END = re.compile(r'^\s*(?:END|COMMIT)(?:\s+(?:WORK|TRANSACTION))?\s*$', re.I)


def control(command):
    """('begin', SET TRANSACTION text or None), ('end', None) or (None, None)."""
    if command.kind != 'sql' or len(command.queries) != 1:
        return None, None
    sql = command.queries[0].sql
    m = _BEGIN.match(sql)
    if m:
        options = m.group(1).strip().rstrip(';').strip()
        return 'begin', ('SET TRANSACTION ' + options) if options else None
    if _END.match(sql):
        return 'end', None
    return None, None


def check_transactions(script):
    """A BEGIN with no END or COMMIT after it would leave every run's transaction open
    (rolled back when the op ends): refused before the run, as pgbench refuses a script
    that ends inside a transaction."""
    opened = None
    for c in script.commands:
        kind, _options = control(c)
        if kind == 'begin':
            opened = opened or c.line
        elif kind == 'end':
            opened = None
    if opened is not None:
        raise errors.ConfigError('script %s, line %d: BEGIN with no END or COMMIT after it'
                                 % (script.path, opened))


def statement_name(script_index, command_index):
    return 'gl_script_%d_%d' % (script_index, command_index)


def preparable(command):
    """The one query of an SQL command that can go as a prepared statement, or None (a
    compound goes as one simple query, as pgbench sends it)."""
    if command.kind != 'sql' or len(command.queries) != 1:
        return None
    query = command.queries[0]
    return query if _PREPARABLE.match(query.param_sql) else None


def prepare_scripts(cur, scripts, keep=True):
    """PREPARE every statement of every script on this connection (--protocol prepared);
    a statement the server refuses is a SchemaError naming its script, line and
    statement. ``keep=False`` only proves them (each deallocated at once, and a
    parameter type the server cannot infer without a value let pass): the check
    before a run with another protocol."""
    for i, script in enumerate(scripts):
        for j, c in enumerate(script.commands):
            query = preparable(c)
            if query is None:
                continue
            name = statement_name(i, j)
            try:
                cur.execute('PREPARE %s AS %s' % (name, query.param_sql))
            except psycopg2.Error as e:
                if not keep and e.pgcode in _TYPE_UNKNOWN:
                    continue
                raise errors.SchemaError('script %s, line %d (%s): %s' % (
                    script.path, c.line, _first_words(query.sql),
                    ' '.join(str(e).split())))
            if not keep:
                cur.execute('DEALLOCATE %s' % name)


_SETUP_LOCK = 0x676c706762          # the advisory lock of the setup ('glpgb')
_PGBENCH_TABLE = re.compile(r'\bpgbench_(branches|tellers|accounts|history)\b', re.I)


def setup(cur, scripts, run, init):
    """Before the first run, on a psycopg2 cursor (autocommit): pgbench's tables made when
    asked (``init``: --init, --spawn) and missing, every statement proven by PREPARE (a
    syntax error or a wrong table or column is one line naming the script, line and
    statement, not an error per op). Returns pgbench's :scale: the row count of
    pgbench_branches when it exists, else --scale, else 1."""
    from gloaddriver.backends.postgres import pgbench_tables
    # --processes: every process sets up; one at a time, so that one makes the tables
    # and the others find them (a session lock, released when this block ends).
    cur.execute('SELECT pg_advisory_lock(%s)', (_SETUP_LOCK,))
    try:
        scale = pgbench_tables.scale_of(cur)
        if scale is None and init and _wants_pgbench_tables(scripts, run):
            pgbench_tables.create(cur, run.scale or 1)
            scale = pgbench_tables.scale_of(cur)
    finally:
        cur.execute('SELECT pg_advisory_unlock(%s)', (_SETUP_LOCK,))
    prepare_scripts(cur, scripts, keep=False)
    return (run.scale or 1) if scale is None else scale


def _wants_pgbench_tables(scripts, run):
    """Whether --init makes pgbench's tables: a built-in script, --scale, or a script that
    names one of them."""
    return run.scale is not None or any(
        s.path.startswith('<builtin') or any(_PGBENCH_TABLE.search(c.text)
                                             for c in s.commands if c.kind == 'sql')
        for s in scripts)


def _first_words(sql, most=60):
    text = ' '.join(sql.split())
    return text if len(text) <= most else text[:most - 3] + '...'


def default_seed(seed):
    """pgbench's :default_seed, the seed of hash() and permute(): from --seed, the same
    on 2.7 and 3.x."""
    digest = hashlib.sha1(('default_seed/%s' % seed).encode('ascii')).hexdigest()
    return int(digest[:15], 16)


def automatic_variables(worker, scale, seed, defines):
    v = {'client_id': worker, 'scale': scale, 'random_seed': seed,
         'default_seed': default_seed(seed)}
    v.update(defines)
    return v


def _python_value(value):
    """A result column as a variable: numbers, booleans and NULL as they are, the rest
    as text (pgbench keeps every column's text)."""
    if value is None or value.__class__ in (int, float, bool):
        return value
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    try:
        if isinstance(value, long):   # noqa: F821 (2.7's bigint)
            return int(value)
    except NameError:
        pass
    return u'%s' % (value,)


def _extended_sql(query):
    """psycopg2's form of a query's $1, $2... text (a parameter per use of a variable, in
    order): %s each, with a literal % doubled."""
    return _NUMBERED.sub('%s', query.param_sql.replace('%', '%%'))


class Runner(object):
    """Makes a worker's ops from the scripts; one per backend. This one runs them on
    psycopg2 (``lender``: the pool, the op deadlines and the password, the connection
    lent inline as the statement runner lends it; else ``held``: user.holder's
    lender); the pipelined connector's (script_pipelined.py) changes how a run holds
    its connection, sends its SQL and recovers from a failed try: ``_op_of``,
    ``_sql_step``, ``_sql_lines``, ``_rollback``.

    A script's commands become steps (``_step``); runs of them with no jump into or
    out of their middle are then written as one Python function each (``_program``,
    with ``codegen``), the SQL of each sent by lines of its own (``_sql_lines``) where
    the values are ints, else by its step's own code. -r keeps a step per command: each
    one is timed."""

    # What a failed statement raises, and whether the connection can take another try.
    caught = (psycopg2.Error,)

    def __init__(self, scripts, protocol, max_tries, figures, held, base_variables,
                 connect_per_op=False, tx_log=None, lender=None):
        self.scripts = scripts
        self.protocol = protocol
        self.max_tries = max_tries
        self.figures = figures
        self.held = held
        self.lender = lender
        self.base = base_variables
        self.connect_per_op = connect_per_op
        self.tx_log = tx_log
        self._written = {}      # (script, first command) -> a block's code and names

    def worker_ops(self, worker, rnd, held=None):
        """{script name: op} of a worker; ``held`` its own lender, if not the runner's."""
        v = automatic_variables(worker, **self.base)
        counter = [0]    # the worker's transactions, for the -l log
        return dict((s.name, self._op(i, s, v, rnd, worker, counter, held))
                    for i, s in enumerate(self.scripts))

    @staticmethod
    def _alive(item):
        return not item.conn.closed

    @staticmethod
    def _rollback(cur):
        cur.execute('ROLLBACK')

    # -- one script --------------------------------------------------------------

    def _op(self, index, script, v, rnd, worker, counter, held):
        at = [0]                       # the command that raised, for its counts
        run = self._program(index, script, v, rnd, at)
        parts = _OpParts(index, v, rnd, run, self._failure(index, at), self.max_tries != 1,
                         worker, counter)
        return self._op_of(parts, held)

    def _failure(self, index, at):
        """failure(exc, item, tries) -> whether to try again, the failure counted when
        not; called only when a try failed (None for a ScriptError: counted)."""
        figures = self.figures
        failed, retried_at = figures.failed[index], figures.retried_at[index]
        failures = figures.failures
        max_tries, alive = self.max_tries, self._alive

        def failure(e, item, tries):
            if item is None:       # the script's own error
                failed[at[0]] += 1
                failures['other'] += 1
                return False
            cls = RETRYABLE.get(getattr(e, 'pgcode', None) or getattr(e, 'code', None))
            if cls is None or not alive(item) or (max_tries and tries >= max_tries):
                failed[at[0]] += 1
                failures[cls or 'other'] += 1
                return False
            retried_at[at[0]] += 1
            return True
        return failure

    def _tried(self, parts):
        """ended(tries, ok, t0): a transaction's retries and its -l line, when it ends."""
        figures, log = self.figures, self.tx_log
        worker, counter, index = parts.worker, parts.counter, parts.index

        def ended(tries, ok, t0):
            if tries > 1:
                figures.retried += 1
                figures.retries += tries - 1
            if log is not None:
                counter[0] += 1
                log.write(worker, counter[0], t0, ok, index, tries - 1)
        return ended

    def _op_of(self, parts, held):
        if held is None and self.lender is not None:
            return self._pooled_op(parts)
        return self._held_op(parts, held or self.held)

    def _pooled_op(self, parts):
        """The op on a connection of the pool, lent and given back here as the
        statement runner does it (user.holder's rules: the op's deadline, errors
        translated, a transaction a failure left open rolled back), with no context
        manager's calls per transaction."""
        pool, deadlines, password = self.lender
        active, getcurrent = deadlines.active, gevent.getcurrent
        idle, waiting, get, put = pool._idle, pool._waiting, pool.get, pool.put
        translate = pgpool.translate
        v, rnd, run, failure, retrying = parts.v, parts.rnd, parts.run, parts.failure, \
            parts.retrying
        caught, rollback, ended = self.caught, self._rollback, self._tried(parts)
        connect_per_op, log = self.connect_per_op, self.tx_log
        script_error, timeout = errors.ScriptError, errors.RequestTimeout

        def op(key):
            v['key'] = key
            state = rnd.getstate() if retrying else None
            tries = 1
            t0 = clock() if log is not None else 0
            ok = False
            g = getcurrent()
            active[g] = clock()   # the op's start, and its ticket (Deadlines)
            item = None
            try:
                item = idle.pop() if idle else get()
                cur = item.cur
                while True:
                    try:
                        run(cur)
                        break
                    except caught as e:
                        if not failure(e, item, tries):
                            raise
                        rollback(cur)
                        rnd.setstate(state)
                        tries += 1
                    except script_error as e:
                        failure(e, None, tries)
                        raise
                ok = True
            except timeout:
                if item is not None:
                    item.broken = True   # psycopg2 closed it when the timeout was thrown in
                raise
            except psycopg2.Error as e:
                raise translate(e, item, password)
            finally:
                active.pop(g, None)      # the rollback below runs outside the op's deadline
                if item is not None:
                    if connect_per_op:
                        item.broken = True     # closed by the pool: -C's new login
                    conn = item.conn
                    if not ok or item.broken or conn.closed or \
                            conn.get_transaction_status() != _IDLE:
                        try:
                            _end_transaction(item)
                        finally:
                            put(item)
                    elif item.broken or waiting or conn.closed:
                        put(item)
                    else:
                        idle.append(item)
                if tries > 1 or log is not None:
                    ended(tries, ok, t0)
        return op

    def _held_op(self, parts, held):
        """The op on a connection ``held()`` lends (a context manager)."""
        v, rnd, run, failure, retrying = parts.v, parts.rnd, parts.run, parts.failure, \
            parts.retrying
        caught, rollback, ended = self.caught, self._rollback, self._tried(parts)
        connect_per_op, log = self.connect_per_op, self.tx_log

        def op(key):
            v['key'] = key
            state = rnd.getstate() if retrying else None
            tries = 1
            t0 = clock() if log is not None else 0
            ok = False
            try:
                with held() as item:
                    cur = item.cur
                    try:
                        while True:
                            try:
                                run(cur)
                                break
                            except caught as e:
                                if not failure(e, item, tries):
                                    raise
                                rollback(cur)
                                rnd.setstate(state)
                                tries += 1
                            except errors.ScriptError as e:
                                failure(e, None, tries)
                                raise
                    finally:
                        if connect_per_op:
                            item.broken = True     # closed by the pool: -C's new login
                ok = True
            finally:
                if tries > 1 or log is not None:
                    ended(tries, ok, t0)
        return op

    # -- the commands as code ----------------------------------------------------------

    def _program(self, si, script, v, rnd, at):
        """run(cur): the script's commands, once."""
        steps = [self._step(si, j, c, v, rnd) for j, c in enumerate(script.commands)]
        figures = self.figures
        if figures.per_statement:
            return _loop([_timed(s, figures.lat[si][j]) for j, s in enumerate(steps)], at)
        commands = script.commands
        blocks = {}
        for start, end in _straight_runs(commands):
            steps[start] = blocks[start] = self._block(si, start, end, steps, v, rnd, at)
        if list(blocks) == [0] and len(commands) == _straight_end(commands, 0):
            return blocks[0]       # no jumps: the whole script is one function
        return _loop(steps, at, blocks)

    def _block(self, si, start, end, steps, v, rnd, at):
        """Commands start..end-1 as one function: block(cur) -> end."""
        written = self._written.get((si, start))
        if written is None:
            written = self._written[(si, start)] = self._write_block(si, start, end)
        code, names, called = written
        names = dict(names, v=v, rnd=rnd, _random=rnd.random, at=at)
        for j in called:
            names['_s%d' % j] = steps[j]
        return codegen.make(code, 'block', names)

    def _write_block(self, si, start, end):
        """(code, names, commands called as their steps) of commands start..end-1."""
        script = self.scripts[si]
        w = codegen.Writer()
        wheres = tuple('script %s, line %d' % (script.path, c.line) for c in script.commands)
        called = []
        for j in range(start, end):
            c = script.commands[j]
            if j > start:
                w.line('pc = %d' % j, 1)
            if c.kind == 'set':
                w.line('v[%s] = %s' % (w.bind(c.name, '_n'),
                                       w.expression(c.expr.tree, c.expr.where, 1)), 1)
            elif c.kind != 'sql' or not self._sql_lines(w, si, j, c, 1):
                w.line('_s%d(cur)' % j, 1)
                called.append(j)
        w.names.update(_raise_at=codegen.raise_at, _wheres=wheres)
        lines = ['pc = %d' % start, 'try:'] + w.lines + [
            'except (_EvalError, KeyError) as e:',
            '    at[0] = pc',
            '    err = _raise_at(e, _wheres[pc])',
            'except BaseException:',
            '    at[0] = pc',
            '    raise',
            'else:',
            '    return %d' % end,
            'raise err']
        code, _source = codegen.function('block', 'cur', lines, w.names)
        return code, w.names, tuple(called)

    def _sql_lines(self, w, si, j, c, indent):
        """Write the lines that send SQL command ``c`` when they can be written (one
        query, no \\gset/\\aset): True; False to call its step. psycopg2 is sent text:
        the variables' text put in (simple), or quoted in as psycopg2 quotes text (the
        $n of extended, EXECUTE's values with prepared); that is done here when every
        value is an int, and by psycopg2 from the step's values otherwise."""
        if c.gset is not None or c.aset is not None or len(c.queries) > 1:
            return False
        q = c.queries[0]
        query = preparable(c)
        if self.protocol == 'simple' or query is None or \
                (self.protocol == 'extended' and not query.names):
            pairs, tail = parse_pieces(q.sql)
            marker, reads = '%d', 'v.get(%s)'
            fallback = 'cur.execute(%s(v))' % w.bind(q.simple, '_q')
        elif has_numbered(q.sql):
            return False       # $n of its own besides the variables: as the step sends it
        else:
            if self.protocol == 'extended':
                pairs, tail = parse_pieces(q.sql)
                sql = _extended_sql(query)
            else:
                pairs, tail = _execute_pieces(statement_name(si, j), q.sql)
                sql = _execute_sql(statement_name(si, j), len(pairs))
            marker, reads = "'%d'", 'v[%s]'
            fallback = 'cur.execute(%s, %s(v))' % (w.bind(sql), w.bind(query.params, '_p'))
        if not pairs:
            w.line('cur.execute(%s)' % w.bind(tail), indent)
            return True
        temps = read_variables(w, pairs, reads, indent)
        template = ''.join(lit.replace('%', '%%') + marker for lit, _n in pairs) + \
            tail.replace('%', '%%')
        values = [temps[n] for _lit, n in pairs]
        w.line('if %s:' % ' and '.join('%s.__class__ is int' % t for t in sorted(set(values))),
               indent)
        w.line('cur.execute(%s %% %s)' % (w.bind(template), values[0] if len(values) == 1
                                          else '(%s,)' % ', '.join(values)), indent + 1)
        w.line('else:', indent)
        w.line(fallback, indent + 1)
        return True

    def _step(self, si, j, c, v, rnd):
        """The step of command ``j``: step(cur) -> the index of the next command."""
        nxt = j + 1
        kind = c.kind
        if kind == 'sql':
            return self._sql_step(si, j, c, v, nxt)
        if kind == 'set':
            name, expr = c.name, c.expr

            def step(cur):
                v[name] = expr(v, rnd)
                return nxt
        elif kind == 'branch':
            expr, jump = c.expr, c.jump

            def step(cur):
                return nxt if truthy(expr(v, rnd)) else jump
        elif kind == 'goto':
            jump = c.jump

            def step(cur):
                return jump
        elif kind == 'sleep':
            seconds = c.seconds

            def step(cur):
                gevent.sleep(seconds(v))
                return nxt
        elif kind in ('shell', 'setshell'):
            return _shell_step(c, v, nxt, self.scripts[si].path)
        else:   # \startpipeline, \syncpipeline, \endpipeline
            return self._pipeline_step(c, nxt)
        return step

    def _pipeline_step(self, c, nxt):
        """psycopg2 has no pipeline mode: the markers do nothing (see the module's
        docstring)."""
        def step(cur):
            return nxt
        return step

    def _sql_step(self, si, j, c, v, nxt):
        queries = c.queries
        where = 'script %s, line %d' % (self.scripts[si].path, c.line)
        if c.aset is not None:
            return _aset_step(queries, c.aset, v, nxt, where)
        query = preparable(c)
        if len(queries) > 1:     # a compound: one simple query, as pgbench sends it
            simples = [q.simple for q in queries]

            def send(cur):
                cur.execute(';\n'.join([s(v) for s in simples]))
        elif self.protocol == 'simple' or query is None or \
                (self.protocol == 'extended' and not query.names):
            simple = queries[0].simple

            def send(cur):
                cur.execute(simple(v))
        elif self.protocol == 'extended':
            sql, params = _extended_sql(query), query.params

            def send(cur):
                cur.execute(sql, params(v))
        else:
            params = query.params
            sql = _execute_sql(statement_name(si, j), len(_NUMBERED.findall(query.param_sql)))

            def send(cur):
                cur.execute(sql, params(v))
        if c.gset is None:
            def step(cur):
                send(cur)
                return nxt
            return step
        prefix = c.gset

        def gset_step(cur):
            send(cur)
            rows = cur.fetchall() if cur.description is not None else ()
            if len(rows) != 1:
                raise errors.ScriptError('%s: \\gset expects one row, the query returned %d'
                                         % (where, len(rows)))
            _assign(v, prefix, cur.description, rows[0])
            return nxt
        return gset_step


def _assign(v, prefix, description, row):
    for col, value in zip(description, row):
        v[prefix + col[0]] = _python_value(value)


def _aset_step(queries, prefix, v, nxt, where):
    """\\aset: each query of the compound on its own, so that each one's columns can be
    kept (psycopg2 gives only the last result of a compound); a query without rows sets
    nothing, one with several keeps the last row."""
    simples = [q.simple for q in queries]

    def step(cur):
        for simple in simples:
            cur.execute(simple(v))
            if cur.description is not None:
                rows = cur.fetchall()
                if rows:
                    _assign(v, prefix, cur.description, rows[-1])
        return nxt
    return step


def _shell_step(c, v, nxt, path):
    import subprocess
    argv, name, where = c.argv, c.name, 'script %s, line %d' % (path, c.line)

    def step(cur):
        args = argv(v)
        try:
            if name is None:
                code = subprocess.call(args)
                if code != 0:
                    raise errors.ScriptError('%s: \\shell %s exited with %d'
                                             % (where, args[0], code))
                return nxt
            output = subprocess.check_output(args)
        except (OSError, subprocess.CalledProcessError) as e:
            raise errors.ScriptError('%s: \\%s %s failed: %s' % (where, c.kind, args[0], e))
        text = output.decode('utf-8', 'replace').strip()
        try:
            v[name] = int(text)
        except ValueError:
            raise errors.ScriptError('%s: \\setshell %s printed %r, not an integer'
                                     % (where, args[0], text[:40]))
        return nxt
    return step


def _timed(step, lat):
    """--per-statement: the step with its latency recorded (a clock read each side)."""
    def timed(cur):
        t = clock()
        try:
            return step(cur)
        finally:
            lat[int((clock() - t) * 1000000.0)] += 1
    return timed


class TxLog(object):
    """pgbench's per-transaction log (``-l``): ``PREFIX.<pid>``, a line per transaction
    (``--sampling-rate`` of them): client_id, transaction number, latency in
    microseconds (``failed`` for a failure), script number, the end as epoch seconds and
    microseconds, and with --max-tries other than 1 the retries."""

    def __init__(self, prefix, sampling_rate, with_retries, rnd):
        self.path = '%s.%d' % (prefix, os.getpid())
        self.file = open(self.path, 'w')
        self.rate = sampling_rate
        self.retries = with_retries
        self.rnd = rnd

    def write(self, worker, number, t0, ok, script_no, retries):
        if self.rate < 1.0 and self.rnd.random() >= self.rate:
            return
        now = time.time()
        latency = '%d' % ((clock() - t0) * 1000000.0) if ok else 'failed'
        line = '%d %d %s %d %d %06d' % (worker, number, latency, script_no, int(now),
                                        int((now - int(now)) * 1000000))
        self.file.write(line + (' %d\n' % retries if self.retries else '\n'))

    def close(self):
        self.file.close()


_OpParts = namedtuple('_OpParts', 'index v rnd run failure retrying worker counter')


def _loop(steps, at, blocks=()):
    """run(cur) of steps: step(cur) -> the index of the next one. A block (``blocks``,
    by its first command) says itself which of its commands raised."""
    n = len(steps)

    def run(cur):
        pc = 0
        try:
            while pc < n:
                pc = steps[pc](cur)
        except BaseException:
            if pc not in blocks:
                at[0] = pc
            raise
    return run


def _straight_end(commands, start):
    """The end of the straight run of commands from ``start``: up to a jump, or to a
    command a jump lands on."""
    targets = set(c.jump for c in commands if c.kind in ('branch', 'goto'))
    end = start
    while end < len(commands) and commands[end].kind not in ('branch', 'goto') and \
            (end == start or end not in targets):
        end += 1
    return end


def _straight_runs(commands):
    """(start, end) of every straight run of commands (see _straight_end)."""
    runs, j = [], 0
    while j < len(commands):
        if commands[j].kind in ('branch', 'goto'):
            j += 1
            continue
        end = _straight_end(commands, j)
        runs.append((j, end))
        j = end
    return runs


def read_variables(w, pairs, reads, indent):
    """{name: the temp it is read into}, each variable of ``pairs`` read once."""
    temps = {}
    for _lit, name in pairs:
        if name not in temps:
            temps[name] = t = w.temp()
            w.line('%s = %s' % (t, reads % w.bind(name, '_n')), indent)
    return temps


def has_numbered(sql):
    """Whether an SQL text has $n of its own (besides the :variables that become $n)."""
    return _NUMBERED.search(sql) is not None


def _execute_pieces(name, sql):
    """sql_pieces of 'EXECUTE name (:a, :b...)' for the variables of ``sql``."""
    pairs, _tail = parse_pieces(sql)
    if not pairs:
        return (), 'EXECUTE %s' % name
    return tuple([('EXECUTE %s (' % name, pairs[0][1])] +
                 [(', ', n) for _lit, n in pairs[1:]]), ')'


def _execute_sql(name, uses):
    """psycopg2's EXECUTE of the prepared statement ``name`` with ``uses`` values."""
    return ('EXECUTE %s (%s)' % (name, ', '.join(['%s'] * uses)) if uses
            else 'EXECUTE %s' % name)
