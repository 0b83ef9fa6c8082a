"""Private servers for ``--spawn``, the demo and the tests.

Each server gets a fresh temporary directory and a free loopback port, and is
removed (process and files) by ``stop()``. Nothing here talks the protocol;
the backends do.
"""
from __future__ import absolute_import, division, print_function

import binascii
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from gloaddriver import errors

TARANTOOL_USER = 'gloaddriver'

_TARANTOOL_INIT = """
box.cfg{
    listen = '127.0.0.1:%(port)d',
    work_dir = '%(work_dir)s',
    wal_mode = '%(wal_mode)s',
    memtx_memory = %(memtx_memory)d,
    readahead = %(readahead)d,
    net_msg_max = %(net_msg_max)d,
    log = 'tarantool.log',
    pid_file = 'tarantool.pid',
}
box.schema.user.create('%(user)s', {password = os.getenv('GLOADDRIVER_SPAWN_PASSWORD'),
                                    if_not_exists = true})
box.schema.user.grant('%(user)s', 'read,write,execute,create,drop', 'universe', nil,
                      {if_not_exists = true})
local s = box.schema.space.create('%(space)s', {
    if_not_exists = true,
    format = {{name = 'id', type = 'unsigned'}, {name = 'value', type = 'string'}},
})
s:create_index('primary', {type = 'tree', parts = {1, 'unsigned'}, if_not_exists = true})
io.stdout:write('gloaddriver: ready\\n')
io.stdout:flush()
"""


def free_port():
    """A loopback TCP port nobody listens on right now."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]
    finally:
        s.close()


def _detach():
    """preexec_fn of a server: own session, and killed if its parent dies.

    PR_SET_PDEATHSIG makes the kernel SIGKILL the server when the process
    that spawned it exits by any means (even kill -9), so a killed test run
    or driver never leaves a private server behind.
    """
    os.setsid()
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG = 1
    except Exception:
        pass


def which(name):
    for d in os.environ.get('PATH', '').split(os.pathsep):
        path = os.path.join(d, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _wait_listening(port, proc, log_path, what, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise errors.SetupError('%s exited with code %s before listening: %s'
                                    % (what, proc.returncode, _tail(log_path)))
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.settimeout(0.2)
            if s.connect_ex(('127.0.0.1', port)) == 0:
                return
        finally:
            s.close()
        time.sleep(0.05)
    raise errors.SetupError('%s did not listen on port %d within %.0f s: %s'
                            % (what, port, timeout, _tail(log_path)))


def _tail(path, lines=3):
    try:
        with open(path) as f:
            text = f.read().strip().splitlines()
        return ' | '.join(text[-lines:]) or '(empty log)'
    except (IOError, OSError):
        return '(no log at %s)' % path


class _Server(object):
    """A child server process with a temp dir: launch, pause/resume, kill, stop."""

    name = 'server'
    log_name = 'server.log'

    def __init__(self):
        self.host = '127.0.0.1'
        self.port = None
        self.work_dir = None
        self.proc = None
        self._run_as = None   # (uid, gid) when dropping root

    @property
    def uri(self):
        return '%s:%d' % (self.host, self.port)

    def _argv(self):
        raise NotImplementedError

    def _env(self):
        return dict(os.environ)

    def _launch(self):
        run_as = self._run_as

        def preexec():
            if run_as is not None:
                os.setgid(run_as[1])
                os.setuid(run_as[0])
            _detach()
        with open(os.path.join(self.work_dir, 'stdout.log'), 'w') as out:
            self.proc = subprocess.Popen(self._argv(), cwd=self.work_dir, env=self._env(),
                                         stdout=out, stderr=subprocess.STDOUT,
                                         preexec_fn=preexec)

    def _log_path(self):
        return os.path.join(self.work_dir, self.log_name)

    def _wait_up(self, timeout):
        _wait_listening(self.port, self.proc, self._log_path(), self.name, timeout)

    def pause(self):
        """SIGSTOP the server (tests of stalls)."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self):
        """Kill the process but keep the directory and port (to restart later)."""
        if self.proc is not None and self.proc.poll() is None:
            # SIGKILL first: a paused server woken by SIGCONT before it would
            # answer what it had already read, and a test of a dead server
            # would see replies.
            self.proc.kill()
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except OSError:
                pass
            self.proc.wait()

    def start(self, timeout=30.0):
        """Temp dir, free port, prepare, launch, wait until usable; clean up on failure."""
        self._check()
        self.work_dir = tempfile.mkdtemp(prefix='gloaddriver-%s-' % self.name)
        try:
            self.port = free_port()
            self._prepare()
            self._boot(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def restart(self, timeout=30.0):
        """Start again on the same port and directory."""
        self.kill()
        self._boot(timeout)

    def _boot(self, timeout):
        self._launch()
        self._wait_up(timeout)
        self._ready(timeout)

    def _check(self):
        """Raise SetupError when the server cannot be started here."""

    def _prepare(self):
        """Write the server's files into work_dir before the first launch."""

    def _ready(self, timeout):
        pass

    _stop_signal = signal.SIGTERM

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.kill(self.proc.pid, signal.SIGCONT)
                    os.kill(self.proc.pid, self._stop_signal)
                    deadline = time.time() + 10
                    while self.proc.poll() is None and time.time() < deadline:
                        time.sleep(0.02)
                    if self.proc.poll() is None:
                        self.proc.kill()
                        self.proc.wait()
                except OSError:
                    pass
            self.proc = None
        if self.work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            self.work_dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class TarantoolServer(_Server):
    """A private Tarantool: ``start()``, use ``host``/``port``/``user``/``password``, ``stop()``."""

    name = 'tarantool'
    log_name = 'tarantool.log'

    def __init__(self, space='gloaddriver', wal_mode='none', memtx_memory=1 << 30,
                 readahead=1 << 20, net_msg_max=4096, binary=None):
        _Server.__init__(self)
        self.space = space
        self.wal_mode = wal_mode
        self.memtx_memory = memtx_memory
        self.readahead = readahead
        self.net_msg_max = net_msg_max
        self.binary = binary or which('tarantool')
        self.user = TARANTOOL_USER
        self.password = binascii.hexlify(os.urandom(12)).decode('ascii')

    def settings(self):
        """What the manifest says about this server (never the password)."""
        return {'kind': 'tarantool', 'spawned': True, 'wal_mode': self.wal_mode,
                'memtx_memory': self.memtx_memory, 'readahead': self.readahead,
                'net_msg_max': self.net_msg_max, 'binary': self.binary}

    def _argv(self):
        return [self.binary, os.path.join(self.work_dir, 'init.lua')]

    def _env(self):
        return dict(os.environ, GLOADDRIVER_SPAWN_PASSWORD=self.password)

    def _check(self):
        if not self.binary:
            raise errors.SetupError('no tarantool binary on PATH; install it '
                                    '(apt-get install -y tarantool) or pass --uri to a running server')

    def _prepare(self):
        with open(os.path.join(self.work_dir, 'init.lua'), 'w') as f:
            f.write(_TARANTOOL_INIT % {
                'port': self.port, 'work_dir': self.work_dir, 'wal_mode': self.wal_mode,
                'memtx_memory': self.memtx_memory, 'readahead': self.readahead,
                'net_msg_max': self.net_msg_max, 'user': self.user, 'space': self.space})

    def _ready(self, timeout):
        # The port opens at box.cfg; the user and space exist once init.lua ends.
        path = os.path.join(self.work_dir, 'stdout.log')
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(path) as f:
                if 'gloaddriver: ready' in f.read():
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise errors.SetupError('tarantool did not finish init.lua: %s' % _tail(self._log_path()))


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


class PostgresServer(_Server):
    """A private PostgreSQL cluster: initdb in a temp dir, free port, password auth.

    ``initdb`` and ``postgres`` refuse to run as root, so as root the cluster
    runs as the ``postgres`` system user (or $GLOADDRIVER_PG_USER). ssl=off:
    a loopback server gains nothing from TLS and it costs ~24 %.
    """

    name = 'postgres'
    log_name = 'stdout.log'
    _stop_signal = signal.SIGINT   # "fast" shutdown: does not wait for clients

    def __init__(self, wal_mode='none', max_connections=300, bindir=None):
        _Server.__init__(self)
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
                'settings': ' '.join(_PG_WAL[self.wal_mode][1::2]) or 'defaults',
                'ssl': 'off', 'max_connections': self.max_connections, 'bindir': self.bindir}

    def _argv(self):
        return [os.path.join(self.bindir, 'postgres'), '-D', os.path.join(self.work_dir, 'data'),
                '-p', str(self.port), '-k', self.work_dir, '-c', 'listen_addresses=127.0.0.1',
                '-c', 'ssl=off', '-c', 'max_connections=%d' % self.max_connections,
                '-c', 'shared_buffers=256MB'] + _PG_WAL[self.wal_mode]

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
        return _Server.start(self, timeout)

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
            raise errors.SetupError('initdb failed (exit %d): %s' % (rc, _tail(log)))

    def _ready(self, timeout):
        """Wait until it accepts logins, then create the database and hstore."""
        import psycopg2
        deadline = time.time() + timeout
        admin = 'host=%s port=%d dbname=postgres user=%s password=%s sslmode=disable' % (
            self.host, self.port, self.user, self.password)
        while True:
            try:
                conn = psycopg2.connect(admin, connect_timeout=5)
                break
            except psycopg2.OperationalError as e:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise errors.SetupError('postgres did not accept logins: %s | %s'
                                            % (str(e).strip(), _tail(self._log_path())))
                time.sleep(0.1)
        try:
            conn.autocommit = True
            cur = conn.cursor()
            cur.execute('SELECT 1 FROM pg_database WHERE datname = %s', (self.database,))
            if cur.fetchone() is None:
                cur.execute('CREATE DATABASE %s' % self.database)
        finally:
            conn.close()
        conn = psycopg2.connect(self.dsn, connect_timeout=5)
        try:
            conn.autocommit = True
            conn.cursor().execute('CREATE EXTENSION IF NOT EXISTS hstore')
        finally:
            conn.close()
