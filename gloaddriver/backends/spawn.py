"""What every private server (``--spawn``, the demo, the tests) has in common.

Each server gets a fresh temporary directory and a free loopback port, and is
removed (process and files) by ``stop()``; when the driver is killed before it can
stop them, its reaper (``reaper``) kills the processes and removes the directories. Each backend subclasses ``Server``
in its own ``server.py``; nothing here talks a protocol.
"""
from __future__ import absolute_import, division, print_function

import os
import shutil
import signal
import socket
import tempfile
import time

from gloaddriver import errors
from gloaddriver.backends import reaper
from gloaddriver.backends.launcher import Launcher
from gloaddriver.measure import procfs

def free_port():
    """A loopback TCP port nobody listens on right now."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]
    finally:
        s.close()


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
                                    % (what, proc.returncode, tail(log_path)))
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.settimeout(0.2)
            if s.connect_ex(('127.0.0.1', port)) == 0:
                return
        finally:
            s.close()
        time.sleep(0.05)
    raise errors.SetupError('%s did not listen on port %d within %.0f s: %s'
                            % (what, port, timeout, tail(log_path)))


def tail(path, lines=3):
    try:
        with open(path) as f:
            text = f.read().strip().splitlines()
        return ' | '.join(text[-lines:]) or '(empty log)'
    except (IOError, OSError):
        return '(no log at %s)' % path


class Server(object):
    """A child server process with a temp dir: launch, pause/resume, kill, stop."""

    name = 'server'
    log_name = 'server.log'

    def __init__(self):
        self.host = '127.0.0.1'
        self.port = None
        self.work_dir = None
        self.proc = None
        self._run_as = None   # (uid, gid) when dropping root
        self._launcher = None

    @property
    def uri(self):
        return '%s:%d' % (self.host, self.port)

    def _argv(self):
        raise NotImplementedError

    def _env(self):
        return dict(os.environ)

    def _launch(self):
        # Through the launcher, never forked from here: a server started again during
        # a run would otherwise count in the driver's syscall counters.
        self.proc = self._launcher.spawn(self._argv(), self.work_dir, self._env(),
                                         os.path.join(self.work_dir, 'stdout.log'),
                                         self._run_as)
        reaper.watch_pid(self.proc.pid)   # killed even if the driver is

    def _log_path(self):
        return os.path.join(self.work_dir, self.log_name)

    def _wait_up(self, timeout):
        _wait_listening(self.port, self.proc, self._log_path(), self.name, timeout)

    def _family(self):
        """The server's process and its children. A signal to the process group is not
        enough: PostgreSQL's backends each lead a session of their own."""
        return [self.proc.pid] + [p for p in procfs.family(self.proc.pid)
                                  if p != self.proc.pid]

    def _signal_all(self, sig, pids=None):
        for pid in pids or self._family():
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def pause(self):
        """SIGSTOP every process of the server (a stall: connections stay open). The
        parent first, so that it starts no new child meanwhile."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        self._signal_all(signal.SIGSTOP)

    def resume(self):
        self._signal_all(signal.SIGCONT)

    def kill(self):
        """Crash it: SIGKILL to every process of the server at once, as a power cut would
        leave it (but for the OS's page cache); keeps the directory and port to start
        again."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGSTOP)    # no new child while we list them
            family = self._family()
            # SIGKILL before SIGCONT: a paused server woken first would answer what it
            # had already read, and a test of a dead server would see replies.
            self._signal_all(signal.SIGKILL, family)
            self._signal_all(signal.SIGCONT, family)
            self.proc.wait()

    def start_again(self, timeout=30.0):
        """Start a killed server again on the same port and directory."""
        self._boot(timeout)

    def start(self, timeout=30.0):
        """Temp dir, free port, prepare, launch, wait until usable; clean up on failure."""
        self._check()
        self.work_dir = tempfile.mkdtemp(prefix='gloaddriver-%s-' % self.name)
        reaper.watch(self.work_dir)   # removed even if the driver is killed
        try:
            self._launcher = Launcher()   # now: before the driver opens its counters
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
                    self._signal_all(signal.SIGCONT)   # a paused server must hear it
                    os.kill(self.proc.pid, self._stop_signal)
                    deadline = time.time() + 10
                    while self.proc.poll() is None and time.time() < deadline:
                        time.sleep(0.02)
                    if self.proc.poll() is None:
                        self._signal_all(signal.SIGKILL)
                        self.proc.wait()
                except OSError:
                    pass
            self.proc = None
        if self._launcher is not None:
            self._launcher.close()
            self._launcher = None
        if self.work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)
            reaper.forget(self.work_dir)
            self.work_dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
