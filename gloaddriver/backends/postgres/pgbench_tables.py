"""pgbench's four tables, made as ``pgbench -i`` makes them, and what pgbench reads from
them and does to them before a run.

The tables (per unit of scale: 1 branch, 10 tellers, 100,000 accounts; every balance
0; history empty):

* ``pgbench_branches (bid int not null, bbalance int, filler char(88))``
* ``pgbench_tellers (tid int not null, bid int, tbalance int, filler char(84))``
* ``pgbench_accounts (aid int not null, bid int, abalance int, filler char(84))``,
  ``aid`` a bigint from scale 20,000 on (more accounts than an int holds)
* ``pgbench_history (tid int, bid int, aid int, delta int, mtime timestamp,
  filler char(22))``

The first three get ``fillfactor`` (``-F``, 100 by default); ``--unlogged-tables``
makes all four unlogged. Branch and teller fillers are NULL, account fillers blank.

``create`` runs pgbench's initialization steps (``-I``), in the order given:

* ``d`` drop the four tables; ``t`` create them;
* ``g`` fill them from the client (COPY; the accounts with FREEZE, as the same
  transaction emptied the table), ``G`` fill them in the server (generate_series);
  either first empties all four, in the same transaction;
* ``v`` VACUUM ANALYZE each; ``p`` primary keys on bid, tid, aid; ``f`` the foreign
  keys (tellers and accounts to branches; history to branches, tellers, accounts).

Progress goes to ``say`` as pgbench words it (``creating tables...``, a line per 100,000
accounts or with ``quiet`` one each 5 s, ``done in ... s (...)``).

``scale_of`` is pgbench's rule for the scale of the built-in scripts: the row count of
pgbench_branches. ``vacuum_before_run`` is what pgbench does before a run unless ``-n``.
"""
from __future__ import absolute_import, division, print_function

import contextlib
import time

from gloaddriver import errors

STEPS = 'dtgGvpf'
BRANCHES, TELLERS, ACCOUNTS = 1, 10, 100000     # rows per unit of scale
# From this scale on, aid outgrows a 32-bit int (pgbench switches it to bigint).
BIGINT_SCALE = 20000
TABLES = ('pgbench_accounts', 'pgbench_branches', 'pgbench_history', 'pgbench_tellers')
_PROGRESS_ROWS = 100000     # a progress line per this many accounts ...
_QUIET_SECONDS = 5.0        # ... or, quiet, one per this many seconds
_COPY_CHUNK = 10000         # rows formatted per read() of the COPY stream

# Each step: what it says as it starts, and its name in the closing "done in" line.
_STEP_WORDS = {
    'd': ('dropping old tables...', 'drop tables'),
    't': ('creating tables...', 'create tables'),
    'g': ('generating data (client-side)...', 'client-side generate'),
    'G': ('generating data (server-side)...', 'server-side generate'),
    'v': ('vacuuming...', 'vacuum'),
    'p': ('creating primary keys...', 'primary keys'),
    'f': ('creating foreign keys...', 'foreign keys'),
}
_FOREIGN_KEYS = (('pgbench_tellers', 'bid', 'pgbench_branches'),
                 ('pgbench_accounts', 'bid', 'pgbench_branches'),
                 ('pgbench_history', 'bid', 'pgbench_branches'),
                 ('pgbench_history', 'tid', 'pgbench_tellers'),
                 ('pgbench_history', 'aid', 'pgbench_accounts'))


def check_steps(steps):
    """The steps without blanks; ConfigError naming the first letter that is not one."""
    out = ''.join(steps.split())
    for c in out:
        if c not in STEPS:
            raise errors.ConfigError('unknown initialization step "%s" (-I takes letters of '
                                     '%s)' % (c, STEPS))
    return out


def create(cur, scale, steps='dtGvp', fillfactor=100, unlogged=False, say=None, quiet=False):
    """Run the initialization ``steps`` for ``scale`` on ``cur`` (a psycopg2 cursor in
    autocommit); returns [(step name, seconds)]. A server error is a SetupError naming
    the step."""
    steps = check_steps(steps)
    if not 10 <= fillfactor <= 100:
        raise errors.ConfigError('fillfactor must be 10..100, got %d' % fillfactor)
    if scale < 1:
        raise errors.ConfigError('scale must be at least 1, got %d' % scale)
    say = say or (lambda _text: None)
    import psycopg2
    began = time.time()
    took = []
    for step in steps:
        words, name = _STEP_WORDS[step]
        say(words)
        t0 = time.time()
        try:
            if step == 'd':
                cur.execute('DROP TABLE IF EXISTS %s' % ', '.join(TABLES))
            elif step == 't':
                _create_tables(cur, scale, fillfactor, unlogged)
            elif step == 'g':
                _fill_from_client(cur, scale, say, quiet)
            elif step == 'G':
                _fill_in_server(cur, scale)
            elif step == 'v':
                for table in TABLES:
                    cur.execute('VACUUM ANALYZE %s' % table)
            elif step == 'p':
                for table, column in (('pgbench_branches', 'bid'), ('pgbench_tellers', 'tid'),
                                      ('pgbench_accounts', 'aid')):
                    cur.execute('ALTER TABLE %s ADD PRIMARY KEY (%s)' % (table, column))
            else:
                for table, column, other in _FOREIGN_KEYS:
                    cur.execute('ALTER TABLE %s ADD FOREIGN KEY (%s) REFERENCES %s'
                                % (table, column, other))
        except psycopg2.Error as e:
            _end_transaction(cur)
            raise errors.SetupError('pgbench tables: %s failed: %s'
                                    % (name, ' '.join(str(e).split())))
        took.append((name, time.time() - t0))
    say('done in %.2f s (%s).' % (time.time() - began,
                                  ', '.join('%s %.2f s' % pair for pair in took)))
    return took


def _create_tables(cur, scale, fillfactor, unlogged):
    aid = 'bigint' if scale >= BIGINT_SCALE else 'int'
    table = 'CREATE UNLOGGED TABLE' if unlogged else 'CREATE TABLE'
    fill = ' WITH (fillfactor=%d)' % fillfactor
    cur.execute('%s pgbench_history (tid int, bid int, aid %s, delta int, mtime timestamp, '
                'filler char(22))' % (table, aid))
    cur.execute('%s pgbench_tellers (tid int not null, bid int, tbalance int, '
                'filler char(84))%s' % (table, fill))
    cur.execute('%s pgbench_accounts (aid %s not null, bid int, abalance int, '
                'filler char(84))%s' % (table, aid, fill))
    cur.execute('%s pgbench_branches (bid int not null, bbalance int, filler char(88))%s'
                % (table, fill))


def _fill_in_server(cur, scale):
    cur.execute('BEGIN')
    cur.execute('TRUNCATE %s' % ', '.join(TABLES))
    cur.execute('INSERT INTO pgbench_branches (bid, bbalance) '
                'SELECT bid, 0 FROM generate_series(1, %d) AS bid' % (BRANCHES * scale))
    cur.execute('INSERT INTO pgbench_tellers (tid, bid, tbalance) '
                'SELECT tid, (tid - 1) / %d + 1, 0 FROM generate_series(1, %d) AS tid'
                % (TELLERS, TELLERS * scale))
    cur.execute("INSERT INTO pgbench_accounts (aid, bid, abalance, filler) "
                "SELECT aid, (aid - 1) / %d + 1, 0, '' FROM generate_series(1, %d) AS aid"
                % (ACCOUNTS, ACCOUNTS * scale))
    cur.execute('COMMIT')


class _Rows(object):
    """The text COPY reads: ``line(i)`` for i in 1..total, made a chunk of rows per read
    (a large scale never sits in memory), reporting as it goes. A read may return more
    than ``size``: psycopg2 sends what it is given."""

    def __init__(self, total, line, report=None):
        self.total, self.line, self.report = total, line, report
        self.done = 0

    def read(self, size=-1):
        if self.done >= self.total:
            return ''
        upto = min(self.total, self.done + _COPY_CHUNK)
        chunk = ''.join(self.line(i) for i in range(self.done + 1, upto + 1))
        self.done = upto
        if self.report is not None:
            self.report(upto)
        return chunk


class _Progress(object):
    """pgbench's lines while accounts are generated: one per 100,000 rows, or (quiet)
    one each 5 s and the last."""

    def __init__(self, total, say, quiet):
        self.total, self.say, self.quiet = total, say, quiet
        self.t0 = time.time()
        self.next_rows = _PROGRESS_ROWS
        self.next_time = _QUIET_SECONDS

    def __call__(self, done):
        elapsed = time.time() - self.t0
        if self.quiet:
            due = elapsed >= self.next_time or done == self.total
            while self.next_time <= elapsed:
                self.next_time += _QUIET_SECONDS
        else:
            due = done >= self.next_rows
            while self.next_rows <= done:
                self.next_rows += _PROGRESS_ROWS
        if due:
            remaining = elapsed * (self.total - done) / done
            self.say('%d of %d tuples (%d%%) done (elapsed %.2f s, remaining %.2f s)' % (
                done, self.total, 100 * done // self.total, elapsed, remaining))


@contextlib.contextmanager
def _blocking():
    """psycopg2 refuses COPY while a wait callback is set (gevent's, pool.install):
    lift it for the copy, which then holds the hub (nothing else runs during -i)."""
    import psycopg2.extensions as ext
    previous = ext.get_wait_callback()
    ext.set_wait_callback(None)
    try:
        yield
    finally:
        ext.set_wait_callback(previous)


def _fill_from_client(cur, scale, say, quiet):
    accounts = ACCOUNTS * scale
    cur.execute('BEGIN')
    cur.execute('TRUNCATE %s' % ', '.join(TABLES))
    with _blocking():
        cur.copy_expert('COPY pgbench_branches (bid, bbalance) FROM STDIN',
                        _Rows(BRANCHES * scale, lambda i: '%d\t0\n' % i))
        cur.copy_expert('COPY pgbench_tellers (tid, bid, tbalance) FROM STDIN',
                        _Rows(TELLERS * scale,
                              lambda i: '%d\t%d\t0\n' % (i, (i - 1) // TELLERS + 1)))
        # FREEZE: the rows are written frozen (the table was emptied in this
        # transaction), so the vacuum after does not rewrite every page.
        cur.copy_expert('COPY pgbench_accounts (aid, bid, abalance, filler) FROM STDIN '
                        'WITH (FREEZE)',
                        _Rows(accounts, lambda i: '%d\t%d\t0\t\n' % (i, (i - 1) // ACCOUNTS + 1),
                              _Progress(accounts, say, quiet)))
    cur.execute('COMMIT')


def _end_transaction(cur):
    """After a failed step: leave no transaction open on the connection (its BEGIN
    may have run); ignore a connection that is gone."""
    try:
        cur.execute('ROLLBACK')
    except Exception:
        pass


def scale_of(cur):
    """pgbench's scale: the row count of pgbench_branches; None when there is no such
    table."""
    cur.execute("SELECT to_regclass('pgbench_branches') IS NOT NULL")
    if not cur.fetchone()[0]:
        return None
    cur.execute('SELECT count(*) FROM pgbench_branches')
    return int(cur.fetchone()[0])


def vacuum_before_run(cur, all_tables=False):
    """What pgbench does before a run unless -n: vacuum branches and tellers and empty
    history (with ``all_tables``, -v: vacuum accounts and history too). Each statement
    runs whatever the others did; returns the errors, one line each (pgbench reports
    them and runs anyway)."""
    import psycopg2
    statements = ['VACUUM pgbench_branches', 'VACUUM pgbench_tellers',
                  'TRUNCATE pgbench_history']
    if all_tables:
        statements += ['VACUUM ANALYZE pgbench_accounts', 'VACUUM ANALYZE pgbench_history']
    failed = []
    for sql in statements:
        try:
            cur.execute(sql)
        except psycopg2.Error as e:
            failed.append('%s: %s' % (sql, ' '.join(str(e).split())))
    return failed


def connect(dsn, password=None):
    """An autocommit connection for the steps above, blocking (they run before or
    instead of a run); a failure is a SetupError in one line, the password scrubbed."""
    import psycopg2
    try:
        conn = psycopg2.connect(dsn, password=password) if password else psycopg2.connect(dsn)
    except psycopg2.Error as e:
        text = ' '.join(str(e).split())
        if password:
            text = text.replace(password, '***')
        raise errors.SetupError('cannot connect to PostgreSQL: %s' % text)
    conn.autocommit = True
    return conn
