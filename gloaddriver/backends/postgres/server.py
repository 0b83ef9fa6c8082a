"""A private PostgreSQL cluster for ``--spawn``, the demo and the tests."""
from __future__ import absolute_import, division, print_function

import binascii
import os
import signal
import subprocess
import time

from gloaddriver import errors
from gloaddriver.backends.spawn import Server, tail, which

POSTGRES_USER = 'gloaddriver'
POSTGRES_DB = 'gloaddriver'

# What --wal-mode means for a spawned PostgreSQL, next to Tarantool's wal_mode.
_PG_WAL = {
    'none': ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
    'write': ['-c', 'synchronous_commit=off'],
    'fsync': [],
}


def postgres_bindir():
    """The directory of initdb/postgres: pg_config's, else the newest Debian one."""
    import glob
    found = sorted(glob.glob('/usr/lib/postgresql/*/bin/postgres'),
                   key=lambda p: [int(x) for x in p.split('/')[4].split('.') if x.isdigit()])
    if found:
        return os.path.dirname(found[-1])
    path = which('postgres')
    return os.path.dirname(path) if path else None


def _connect(dsn, seconds=5):
    """psycopg2.connect bounded in time, green or not: libpq's connect_timeout does
    nothing once a wait callback is installed (a server started again during a run with
    --fault)."""
    import gevent
    import psycopg2
    with gevent.Timeout(seconds, psycopg2.OperationalError('no answer within %d s' % seconds)):
        return psycopg2.connect(dsn, connect_timeout=seconds)


class PostgresServer(Server):
    """A private PostgreSQL cluster: initdb in a temp dir, free port, password auth.

    ``initdb`` and ``postgres`` refuse to run as root, so as root the cluster
    runs as the ``postgres`` system user (or $GLOADDRIVER_PG_USER). ssl=off:
    a loopback server gains nothing from TLS and it costs ~24 %.
    """

    name = 'postgres'
    log_name = 'stdout.log'
    _stop_signal = signal.SIGINT   # "fast" shutdown: does not wait for clients

    def __init__(self, wal_mode='none', max_connections=300, bindir=None, init_file=None):
        Server.__init__(self)
        self.init_file = os.path.abspath(init_file) if init_file else None
        self._init_done = False
        self.wal_mode = wal_mode
        self.max_connections = max_connections
        self.bindir = bindir or postgres_bindir()
        self.user = POSTGRES_USER
        self.database = POSTGRES_DB
        self.password = binascii.hexlify(os.urandom(12)).decode('ascii')

    @property
    def dsn(self):
        """libpq keyword DSN, password included: never print it."""
        return 'host=%s port=%d dbname=%s user=%s password=%s sslmode=disable' % (
            self.host, self.port, self.database, self.user, self.password)

    def settings(self):
        return {'kind': 'postgres', 'spawned': True, 'wal_mode': self.wal_mode,
                'settings': ' '.join(self._setting_args()[1::2]) or 'defaults',
                'ssl': 'off', 'max_connections': self.max_connections, 'bindir': self.bindir,
                'init_file': self.init_file}

    def _argv(self):
        return [os.path.join(self.bindir, 'postgres'), '-D', os.path.join(self.work_dir, 'data'),
                '-p', str(self.port), '-k', self.work_dir, '-c', 'listen_addresses=127.0.0.1',
                '-c', 'ssl=off', '-c', 'max_connections=%d' % self.max_connections,
                '-c', 'shared_buffers=256MB'] + self._setting_args()

    def _setting_args(self):
        """The ``-c`` pairs that follow the fixed ones: --wal-mode's (a replica set's
        members change them)."""
        return list(_PG_WAL[self.wal_mode])

    def _as_user(self):
        if os.geteuid() != 0:
            return None
        import pwd
        name = os.environ.get('GLOADDRIVER_PG_USER', 'postgres')
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            raise errors.SetupError(
                'PostgreSQL refuses to run as root and there is no %r user to run it as; '
                'create one (useradd %s) or set GLOADDRIVER_PG_USER' % (name, name))
        return pw.pw_uid, pw.pw_gid

    def start(self, timeout=60.0):
        return Server.start(self, timeout)

    def _check(self):
        if not self.bindir or not os.path.exists(os.path.join(self.bindir, 'initdb')):
            raise errors.SetupError('no PostgreSQL server binaries found; install them '
                                    '(apt-get install -y postgresql) or pass --dsn')
        self._run_as = self._as_user()

    def _prepare(self):
        pwfile = os.path.join(self.work_dir, 'pw')
        with open(pwfile, 'w') as f:
            f.write(self.password + '\n')
        if self._run_as is not None:
            for path in (self.work_dir, pwfile):
                os.chown(path, self._run_as[0], self._run_as[1])
        self._initdb(pwfile)
        os.unlink(pwfile)

    def _initdb(self, pwfile):
        run_as = self._run_as

        def preexec():
            if run_as is not None:
                os.setgid(run_as[1])
                os.setuid(run_as[0])
        log = os.path.join(self.work_dir, 'initdb.log')
        with open(log, 'w') as out:
            rc = subprocess.call(
                [os.path.join(self.bindir, 'initdb'), '-D', os.path.join(self.work_dir, 'data'),
                 '-U', self.user, '--pwfile', pwfile, '--auth-host', 'scram-sha-256',
                 '--auth-local', 'scram-sha-256', '-E', 'UTF8', '--locale', 'C', '--no-sync'],
                cwd=self.work_dir, stdout=out, stderr=subprocess.STDOUT, preexec_fn=preexec)
        if rc != 0:
            raise errors.SetupError('initdb failed (exit %d): %s' % (rc, tail(log)))

    def _ready(self, timeout):
        """Wait until it accepts logins, then create the database and hstore."""
        import psycopg2
        deadline = time.time() + timeout
        admin = 'host=%s port=%d dbname=postgres user=%s password=%s sslmode=disable' % (
            self.host, self.port, self.user, self.password)
        while True:
            try:
                conn = _connect(admin)
                break
            except psycopg2.OperationalError as e:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise errors.SetupError('postgres did not accept logins: %s | %s'
                                            % (str(e).strip(), tail(self._log_path())))
                time.sleep(0.1)
        try:
            conn.autocommit = True
            cur = conn.cursor()
            cur.execute('SELECT 1 FROM pg_database WHERE datname = %s', (self.database,))
            if cur.fetchone() is None:
                cur.execute('CREATE DATABASE %s' % self.database)
        finally:
            conn.close()
        conn = _connect(self.dsn)
        try:
            conn.autocommit = True
            conn.cursor().execute('CREATE EXTENSION IF NOT EXISTS hstore')
            if self.init_file and not self._init_done:   # once, not at each restart
                self._run_init(conn.cursor())
                self._init_done = True
        finally:
            conn.close()

    def _run_init(self, cur):
        """The user's own schema (an SQL file), run once in the new database."""
        import io
        import psycopg2
        with io.open(self.init_file, encoding='utf-8') as f:
            sql = f.read()
        try:
            cur.execute(sql)
        except psycopg2.Error as e:
            raise errors.SetupError('--spawn-init %s failed: %s' % (
                self.init_file, ' '.join(str(e).split())))
