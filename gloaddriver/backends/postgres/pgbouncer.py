"""A private pgbouncer (``--pooler pgbouncer``) in front of a spawned PostgreSQL server,
or of a replica set's leader, and what its admin console says.

It runs from the system's ``pgbouncer`` (Debian's 1.18), on a free loopback port, in a
temporary directory of its own, as the same unprivileged user as the PostgreSQL members
(pgbouncer, like PostgreSQL, refuses to run as root). Its one database is the server's,
its one user the server's, with the same password (in its ``auth_file``, which only that
user can read); the same user is its admin (``SHOW POOLS``, ``SHOW STATS``, ``RELOAD``
on the ``pgbouncer`` database). No Unix socket: everything is on 127.0.0.1.

What is set, and why:

- ``pool_mode``: ``--pool-mode`` (session or transaction);
- ``default_pool_size``: the driver's pool size and SPARE_SERVER_CONNECTIONS more, so
  that in session mode every client the driver opens (its pool, and the connection
  that checks the tables or reads the keys back for --verify while the pool's are
  open) can have its server connection: pgbouncer's default of 20 would make the rest
  wait, and the run would measure that instead;
- ``max_client_conn``: enough for the driver's connections and the samplers';
- everything else as pgbouncer ships it, ``server_login_retry`` (15 s) included: how
  long a pool waits after a failed login to the server is part of what a failover
  through pgbouncer costs (measured: a promotion's new leader gets its first server
  connection 15 s after the failed login to the old one, RELOAD or not). The user's
  ``--pooler-setting NAME=VALUE`` lines come last, and win.

When the leader moves (``repoint``), the ``[databases]`` line is written again and
pgbouncer told to ``RELOAD``: it closes the server connections of the old address as
they come free and makes new ones to the new.
"""
from __future__ import absolute_import, division, print_function

import io
import os
import time

from gloaddriver import errors
from gloaddriver.backends.spawn import Server, tail, which

POOL_MODES = ('session', 'transaction')
ADMIN_DB = 'pgbouncer'
# SHOW POOLS' columns kept per interval, as the server metrics' gauges (prefixed).
POOL_GAUGES = ('cl_active', 'cl_waiting', 'sv_active', 'sv_idle', 'sv_used', 'sv_login')
# SHOW STATS' cumulative counters kept, as the server metrics' rates (prefixed):
# transactions and queries pooled, and the microseconds clients waited for a server.
STATS_RATES = ('total_xact_count', 'total_query_count', 'total_wait_time')
PREFIX = 'pgbouncer_'
SPARE_SERVER_CONNECTIONS = 4


class PgBouncer(Server):
    """pgbouncer in front of ``host:port`` (``database``, ``user``, ``password``)."""

    name = 'pgbouncer'
    log_name = 'stdout.log'

    def __init__(self, backend_host, backend_port, database, user, password, pool_mode,
                 pool_size, run_as=None, settings=()):
        Server.__init__(self)
        if pool_mode not in POOL_MODES:
            raise errors.ConfigError('--pool-mode must be one of %s, not %r'
                                     % (', '.join(POOL_MODES), pool_mode))
        self.backend_host = backend_host
        self.backend_port = backend_port
        self.database = database
        self.user = user
        self.password = password
        self.pool_mode = pool_mode
        self.pool_size = pool_size
        self._run_as_given = run_as
        self.extra = tuple(settings)     # --pooler-setting: after ours, so they win
        self.binary = which('pgbouncer') or (
            '/usr/sbin/pgbouncer' if os.path.exists('/usr/sbin/pgbouncer') else None)
        self.version = None

    # -- addresses ------------------------------------------------------------------------

    @property
    def dsn(self):
        """What the driver's ops connect to (password included: never print it)."""
        return 'host=%s port=%d dbname=%s user=%s password=%s sslmode=disable' % (
            self.host, self.port, self.database, self.user, self.password)

    @property
    def admin_dsn(self):
        return 'host=%s port=%d dbname=%s user=%s password=%s sslmode=disable' % (
            self.host, self.port, ADMIN_DB, self.user, self.password)

    def settings(self):
        return {'kind': 'pgbouncer', 'version': self.version, 'address': self.uri,
                'pool_mode': self.pool_mode,
                'default_pool_size': self.pool_size + SPARE_SERVER_CONNECTIONS,
                'backend': '%s:%d' % (self.backend_host, self.backend_port),
                'settings': dict(self.extra)}

    # -- files ----------------------------------------------------------------------------

    def _check(self):
        if not self.binary:
            raise errors.SetupError('no pgbouncer found; install it (apt-get install -y '
                                    'pgbouncer) or leave out --pooler')
        self._run_as = self._run_as_given

    def _ini(self):
        return u'\n'.join([
            u'[databases]',
            u'%s = host=%s port=%d dbname=%s' % (self.database, self.backend_host,
                                                 self.backend_port, self.database),
            u'[pgbouncer]',
            u'listen_addr = 127.0.0.1',
            u'listen_port = %d' % self.port,
            u'unix_socket_dir =',
            u'auth_type = scram-sha-256',
            u'auth_file = %s' % os.path.join(self.work_dir, 'userlist.txt'),
            u'admin_users = %s' % self.user,
            u'pool_mode = %s' % self.pool_mode,
            u'default_pool_size = %d' % (self.pool_size + SPARE_SERVER_CONNECTIONS),
            u'max_client_conn = %d' % (self.pool_size + 100),
            u'pidfile = %s' % os.path.join(self.work_dir, 'pgbouncer.pid'),
            u'ignore_startup_parameters = extra_float_digits'] +
            [u'%s = %s' % (k, v) for k, v in self.extra] + [u''])

    def _write(self, name, text, mode=0o600):
        path = os.path.join(self.work_dir, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with io.open(fd, 'w', encoding='utf-8') as f:
            f.write(text)
        if self._run_as is not None:
            os.chown(path, self._run_as[0], self._run_as[1])
        return path

    def _prepare(self):
        if self._run_as is not None:
            os.chown(self.work_dir, self._run_as[0], self._run_as[1])
        self._write('userlist.txt', u'"%s" "%s"\n' % (self.user, self.password))
        self._write('pgbouncer.ini', self._ini())

    def _argv(self):
        return [self.binary, os.path.join(self.work_dir, 'pgbouncer.ini')]

    def _ready(self, timeout):
        """Until its admin console takes a login (it listens a moment before)."""
        import psycopg2
        deadline = time.time() + timeout
        while True:
            try:
                rows = self.admin('SHOW VERSION')
                self.version = rows[0][0].split()[-1] if rows else None
                return
            except psycopg2.Error as e:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise errors.SetupError('pgbouncer did not take logins: %s | %s' % (
                        ' '.join(str(e).split()), tail(self._log_path())))
                time.sleep(0.05)

    # -- the admin console ----------------------------------------------------------------

    def admin_connection(self, seconds=3):
        """A connection to the admin console (autocommit: it takes no transactions)."""
        from gloaddriver.backends.postgres.server import _connect
        conn = _connect(self.admin_dsn, seconds)
        conn.autocommit = True
        return conn

    def admin(self, command, seconds=3):
        """The rows of one admin command, on a connection of its own."""
        conn = self.admin_connection(seconds)
        try:
            cur = conn.cursor()
            cur.execute(command)
            return cur.fetchall() if cur.description else []
        finally:
            conn.close()

    def repoint(self, host, port):
        """Send new server connections to ``host:port`` (a new leader): the ini written
        again, then RELOAD."""
        self.backend_host, self.backend_port = host, port
        if self.work_dir is None:
            return
        self._write('pgbouncer.ini', self._ini())
        if self.proc is not None and self.proc.poll() is None:
            self.admin('RELOAD')


def figures(cur, database):
    """{pgbouncer_NAME: value} of SHOW POOLS (the pool of ``database``: gauges) and SHOW
    STATS (its cumulative counters), read on an admin console cursor."""
    out = {}
    cur.execute('SHOW POOLS')
    names = [d[0] for d in cur.description]
    for row in cur.fetchall():
        r = dict(zip(names, row))
        if r.get('database') != database:
            continue
        for k in POOL_GAUGES:
            out[PREFIX + k] = out.get(PREFIX + k, 0) + int(r.get(k) or 0)
        wait = float(r.get('maxwait') or 0) + float(r.get('maxwait_us') or 0) / 1e6
        out[PREFIX + 'maxwait'] = max(out.get(PREFIX + 'maxwait', 0.0), round(wait, 6))
    cur.execute('SHOW STATS')
    names = [d[0] for d in cur.description]
    for row in cur.fetchall():
        r = dict(zip(names, row))
        if r.get('database') == database:
            for k in STATS_RATES:
                out[PREFIX + k] = int(r.get(k) or 0)
    return out


class Sampler(object):
    """pgbouncer's figures for the server metrics, on an admin console connection of its
    own kept from one interval to the next (made again after any failure). Its counters
    start again from 0 when pgbouncer does (``pooler-restart``): they are kept going up
    here, so that a pooler restart is not read as the server's (counters that went back)."""

    charts = [{'kind': 'pooler-connections', 'title': 'pgbouncer: clients and server '
               'connections of the pool', 'keys': [PREFIX + k for k in
                                                   ('cl_active', 'cl_waiting', 'sv_active',
                                                    'sv_idle')],
               'unit': 'connections'},
              {'kind': 'pooler-wait', 'title': 'pgbouncer: longest a client waits for a '
               'server connection now', 'keys': [PREFIX + 'maxwait'], 'unit': 'seconds'}]

    def __init__(self, pooler):
        self.pooler = pooler
        self.rates = [PREFIX + k for k in STATS_RATES]
        self.gauges = [PREFIX + k for k in POOL_GAUGES] + [PREFIX + 'maxwait']
        self._conn = None
        self._user = None          # the greenlet inside a sample now
        self._last = {}            # the counters as pgbouncer last said them
        self._base = {}            # what they had reached before pgbouncer started again

    def sample(self, timeout):
        from gevent.hub import getcurrent
        if self._user is not None:
            raise RuntimeError('the last pgbouncer sample is still out')
        self._user = getcurrent()
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self.pooler.admin_connection(max(timeout, 1))
            try:
                got = figures(self._conn.cursor(), self.pooler.database)
            except BaseException:
                self._drop()
                raise
        finally:
            self._user = None
        for k in self.rates:
            if k in got:
                if got[k] < self._last.get(k, 0):
                    self._base[k] = self._base.get(k, 0) + self._last[k]
                self._last[k] = got[k]
                got[k] += self._base.get(k, 0)
        return got

    def _drop(self):
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def close(self):
        from gevent.hub import getcurrent
        user = self._user
        if user is not None and user is not getcurrent():
            user.kill()    # psycopg2 lets go of the connection as the kill lands
        self._drop()


class PhaseNote(object):
    """A phase's line about the pooler in the table's notes: SHOW STATS read as the phase
    starts and as it ends (the transactions pooled, how long clients waited for a server
    connection), and SHOW POOLS at its end. ``opts``: the postgres options (the admin
    DSN, ``pooler_admin``, set with --pooler; else this says nothing)."""

    def __init__(self, opts):
        self.opts = opts
        self._before = None

    def _look(self):
        if not self.opts.pooler_admin:
            return None
        from gloaddriver.backends.postgres.server import _connect
        import psycopg2
        import psycopg2.extensions as ext
        try:
            conn = _connect(self.opts.pooler_admin, 2)
            try:
                conn.autocommit = True
                return figures(conn.cursor(), ext.parse_dsn(self.opts.dsn).get('dbname'))
            finally:
                conn.close()
        except psycopg2.Error:
            return None     # down (a pooler fault): the note says so

    def start(self):
        self._before = self._look()

    def notes(self):
        """[the line], or [] without a pooler."""
        if not self.opts.pooler_admin:
            return []
        after = self._look()
        head = '%s (%s pool mode)' % (self.opts.pooler, self.opts.pool_mode)
        if not after:
            return ['%s: no figures (its admin console did not answer)' % head]
        before = self._before or {}
        # Counters that went back: it restarted in the phase; what it counted since then.
        done = dict((k, after.get(PREFIX + k, 0) - (
            0 if after.get(PREFIX + k, 0) < before.get(PREFIX + k, 0)
            else before.get(PREFIX + k, 0))) for k in STATS_RATES)
        xact = done['total_xact_count']
        wait = done['total_wait_time'] / 1000.0 / xact if xact else 0.0
        return ['%s: %s transactions, %s queries pooled; clients waited %.3f ms per '
                'transaction for a server connection (SHOW STATS); at the end %d server '
                'connections (%d active, %d idle), %d clients waiting (SHOW POOLS)' % (
                    head, '{:,}'.format(xact), '{:,}'.format(done['total_query_count']),
                    wait, sum(after.get(PREFIX + k, 0) for k in
                              ('sv_active', 'sv_idle', 'sv_used', 'sv_login')),
                    after.get(PREFIX + 'sv_active', 0), after.get(PREFIX + 'sv_idle', 0),
                    after.get(PREFIX + 'cl_waiting', 0))]
