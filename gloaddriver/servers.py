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


class TarantoolServer(object):
    """A private Tarantool: ``start()``, use ``host``/``port``/``user``/``password``, ``stop()``."""

    def __init__(self, space='gloaddriver', wal_mode='none', memtx_memory=1 << 30,
                 readahead=1 << 20, net_msg_max=4096, binary=None):
        self.space = space
        self.wal_mode = wal_mode
        self.memtx_memory = memtx_memory
        self.readahead = readahead
        self.net_msg_max = net_msg_max
        self.binary = binary or which('tarantool')
        self.host = '127.0.0.1'
        self.port = None
        self.user = TARANTOOL_USER
        self.password = binascii.hexlify(os.urandom(12)).decode('ascii')
        self.work_dir = None
        self.proc = None

    @property
    def uri(self):
        return '%s:%d' % (self.host, self.port)

    def settings(self):
        """What the manifest says about this server (never the password)."""
        return {'kind': 'tarantool', 'spawned': True, 'wal_mode': self.wal_mode,
                'memtx_memory': self.memtx_memory, 'readahead': self.readahead,
                'net_msg_max': self.net_msg_max, 'binary': self.binary}

    def start(self, timeout=30.0):
        if not self.binary:
            raise errors.SetupError('no tarantool binary on PATH; install it '
                                    '(apt-get install -y tarantool) or pass --uri to a running server')
        self.work_dir = tempfile.mkdtemp(prefix='gloaddriver-tarantool-')
        self.port = free_port()
        init = os.path.join(self.work_dir, 'init.lua')
        with open(init, 'w') as f:
            f.write(_TARANTOOL_INIT % {
                'port': self.port, 'work_dir': self.work_dir, 'wal_mode': self.wal_mode,
                'memtx_memory': self.memtx_memory, 'readahead': self.readahead,
                'net_msg_max': self.net_msg_max, 'user': self.user, 'space': self.space})
        self._launch()
        try:
            _wait_listening(self.port, self.proc, os.path.join(self.work_dir, 'tarantool.log'),
                            'tarantool', timeout)
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self):
        env = dict(os.environ, GLOADDRIVER_SPAWN_PASSWORD=self.password)
        with open(os.path.join(self.work_dir, 'stdout.log'), 'w') as out:
            self.proc = subprocess.Popen([self.binary, os.path.join(self.work_dir, 'init.lua')],
                                         cwd=self.work_dir, env=env, stdout=out,
                                         stderr=subprocess.STDOUT, preexec_fn=_detach)

    def _wait_ready(self, timeout):
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
        raise errors.SetupError('tarantool did not finish init.lua: %s'
                                % _tail(os.path.join(self.work_dir, 'tarantool.log')))

    def pause(self):
        """SIGSTOP the server (tests of stalls)."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self):
        """Kill the process but keep the directory and port (to restart later)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self, timeout=30.0):
        """Start again on the same port and directory (data is gone with wal_mode=none)."""
        self.kill()
        self._launch()
        _wait_listening(self.port, self.proc, os.path.join(self.work_dir, 'tarantool.log'),
                        'tarantool', timeout)
        self._wait_ready(timeout)

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    os.kill(self.proc.pid, signal.SIGCONT)
                    self.proc.terminate()
                    deadline = time.time() + 5
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
