"""Flame-graph samplers, run from outside the processes they watch, one per phase.

``--flamegraph``: py-spy samples the driver (Python 2.7 or 3.x) from outside, with no
change to it. ``--nonblocking``: it reads the stacks without stopping the process, so
the driver's ops/s pay nothing but the CPU py-spy takes on another core (reported).
Idle threads are left out: the graph shows where the CPU went. A worker greenlet's
frames are the thread's frames while it runs, so they are sampled like any others.

``--server-flamegraph``: perf records the server (a spawned one, or ``--server-pid``)
on the software ``cpu-clock`` event with call graphs, and ``perf script`` folds them.
When perf cannot run there, one line says why and the run goes on without it.

Both are started by a launcher of their own (backends/launcher.py), made before the
syscall counters open: a sampler is then no descendant of the driver, and its own
syscalls are never counted as the client's.
"""
from __future__ import absolute_import, division, print_function

import os
import signal
import subprocess
import sys
import tempfile
import time

from gloaddriver import errors
from gloaddriver.backends.launcher import Launcher
from gloaddriver.measure import flamegraph, procfs

STOP_WAIT = 60   # s: writing a long phase's stacks out takes py-spy or perf a moment
READY_WAIT = 2   # s: how long a phase waits for py-spy to attach before it opens anyway
_TICK = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100


def find_tool(name, python=None):
    """``name`` beside this interpreter, or the ``python`` given (a venv's bin: pip puts
    py-spy there), else on PATH; None if neither has it."""
    here = os.path.join(os.path.dirname(python or sys.executable), name)
    if os.access(here, os.X_OK):
        return here
    for d in os.environ.get('PATH', '').split(os.pathsep):
        path = os.path.join(d, name)
        if d and os.access(path, os.X_OK):
            return path
    return None


def _output(argv, empty):
    """(exit code, output) of a short command; (None, why) if it cannot start."""
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=open(os.devnull))
    except OSError as e:
        return None, '%s: %s' % (argv[0], e)
    out = p.communicate()[0].decode('utf-8', 'replace')
    return p.returncode, out or empty


def _last_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else 'no output'


def _cpu_seconds(pid):
    """utime + stime of one process, in seconds; None when /proc has none."""
    # Its own stat file only: a scan of /proc would be many reads inside the window.
    try:
        with open('/proc/%d/stat' % pid) as f:
            stat = f.read().rpartition(')')[2].split()
    except (IOError, OSError):
        return None
    return (int(stat[12]) + int(stat[13])) / _TICK


def _mkdir(directory, flag):
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory)
    except OSError as e:
        raise errors.ConfigError('%s: cannot create the directory %r: %s' % (flag, directory, e))


class _Sampler(object):
    """One sampling process per phase, started and stopped through the launcher."""

    name = prefix = raw_suffix = None

    def __init__(self, directory, rate):
        self.directory = directory
        self.rate = rate
        self.launcher = None   # the session's (backends.launcher), once every one is checked
        self._proc = self._raw = self._log = None
        self._t0 = self._seconds = self._cpu = None

    def _argv(self, raw):
        raise NotImplementedError

    def prepare(self, phase):
        """Before the phase's window opens."""

    def _ready(self):
        """Whether the sampler has begun to sample (its log says so)."""
        return True

    def _path(self, phase, suffix):
        """DIR/<prefix>.<phase>.<pid><suffix>, named like the callgrind files."""
        return os.path.join(self.directory, '%s.%s.%d%s' % (self.prefix, phase, os.getpid(),
                                                            suffix))

    def start(self, phase):
        """Start sampling before the window opens, and wait (at most READY_WAIT) until it
        samples: the window's first moments are then in the graph, and the start's cost
        is not in the phase's figures."""
        self.prepare(phase)
        self._raw = self._path(phase, self.raw_suffix)
        fd, self._log = tempfile.mkstemp(prefix='gloaddriver-sampler-')
        os.close(fd)
        self._proc = self.launcher.spawn(self._argv(self._raw), os.getcwd(), os.environ,
                                         self._log)
        deadline = time.time() + READY_WAIT
        while not self._ready() and time.time() < deadline and self._proc.poll() is None:
            time.sleep(0.01)

    def opened(self):
        self._t0 = time.time()

    def stop(self):
        """Tell the sampler to stop and write (before the phase's counters are read)."""
        self._seconds = time.time() - self._t0
        self._cpu = _cpu_seconds(self._proc.pid)
        self.launcher.call(op='signal', pid=self._proc.pid, signal=int(signal.SIGINT))

    def _finish(self):
        """Wait for the sampler's exit; its last line if it failed, else None."""
        try:
            code = self._proc.wait(timeout=STOP_WAIT)
        except RuntimeError as e:   # left to die with the launcher at the run's end
            return str(e)
        with open(self._log) as f:
            log = f.read()
        os.remove(self._log)
        # perf ends by the SIGINT it was told to stop with, raised again: its way to say so.
        if code in (0, -signal.SIGINT):
            return None
        return '%s exit %s: %s' % (self.name, code, _last_line(log))

    def _section(self, phase, stacks, files, failed):
        if stacks:
            path = self._path(phase, '.speedscope.json')
            flamegraph.write_speedscope(stacks, '%s %s %s' % (self.prefix, phase, os.getpid()),
                                        path)
            files = list(files) + [path]
        extra = {'sampler': self.name, 'rate': self.rate,
                 'sampler_cpu_seconds': round(self._cpu, 3) if self._cpu is not None else None,
                 'sampler_cpu_share': round(self._cpu / self._seconds, 4)
                 if self._cpu is not None and self._seconds else None}
        if failed:
            extra['note'] = failed
        return flamegraph.section(stacks, files, **extra)


class ClientSampler(_Sampler):
    """py-spy on the driver itself (each --processes child samples its own)."""

    name, prefix, raw_suffix = 'py-spy', 'flamegraph', '.folded'

    def __init__(self, directory, rate):
        _Sampler.__init__(self, directory, rate)
        self.exe = find_tool('py-spy')

    def check(self):
        """ConfigError, before the first op, if py-spy is missing or cannot read us."""
        if self.exe is None:
            raise errors.ConfigError('--flamegraph needs py-spy: pip install "gloaddriver[profile]" '
                                     '(or py-spy on PATH)')
        code, out = _output([self.exe, 'dump', '--nonblocking', '--pid', str(os.getpid())],
                            'no output')
        if code != 0:
            raise errors.ConfigError('--flamegraph: py-spy cannot read this process (%s); it '
                                     'needs root or kernel.yama.ptrace_scope=0'
                                     % _last_line(out))
        _mkdir(self.directory, '--flamegraph')

    def _ready(self):
        with open(self._log) as f:
            return 'Sampling process' in f.read()

    def _argv(self, raw):
        # --function: a frame is a function (its first line), not each line it ran.
        return [self.exe, 'record', '--pid', str(os.getpid()), '--rate', str(self.rate),
                '--format', 'raw', '--function', '--nonblocking', '--output', raw]

    def save(self, phase):
        failed = self._finish()
        stacks = flamegraph.read_folded(self._raw)
        return self._section(phase, stacks, [self._raw] if stacks else [], failed)


class ServerSampler(_Sampler):
    """perf on the server: its process and its children (PostgreSQL's backends, which a
    pool may start inside the window, so perf cannot name them up front: it records the
    whole host, ``-a``, and the samples of the server's family are kept, read at the
    phase's start and end) on the software cpu-clock event with call graphs."""

    name, prefix, raw_suffix = 'perf', 'server-flamegraph', '.perf.data'

    def __init__(self, directory, rate, pid):
        _Sampler.__init__(self, directory, rate)
        self.pid = pid
        self.exe = find_tool('perf')
        self._pids = set([pid])

    def check(self):
        """Why perf cannot record the server here (one line), or None if it can."""
        if self.exe is None:
            return 'no perf on PATH (Debian: apt-get install linux-perf)'
        _mkdir(self.directory, '--server-flamegraph')
        fd, probe = tempfile.mkstemp(prefix='gloaddriver-perf-probe-')
        os.close(fd)
        try:
            code, out = _output([self.exe, 'record', '-q', '-a', '-e', 'cpu-clock', '-g',
                                 '-o', probe, '--', 'sleep', '0.05'], 'no output')
        finally:
            os.remove(probe)
        if code != 0:
            return 'perf cannot record here: %s' % _last_line(out)
        return None

    def prepare(self, phase):
        # Before the window opens: a scan of /proc is many reads, not the client's.
        self._pids = set(procfs.family(self.pid)) | set([self.pid])

    def _argv(self, raw):
        return [self.exe, 'record', '-q', '-a', '-e', 'cpu-clock', '-F', str(self.rate), '-g',
                '-o', raw]

    def save(self, phase):
        failed = self._finish()
        stacks = {}
        if os.path.exists(self._raw):
            pids = self._pids | set(procfs.family(self.pid))
            code, out = _output([self.exe, 'script', '-F', 'comm,pid,tid,ip,sym,dso', '-i',
                                 self._raw], 'no output')
            if code == 0:
                stacks = fold_perf_script(out, pids)
            else:
                failed = failed or 'perf script: %s' % _last_line(out)
        files = [self._raw]
        if stacks:
            folded = self._path(phase, '.folded')
            flamegraph.write_folded(stacks, folded)
            files.append(folded)
        return self._section(phase, stacks, files, failed)


def fold_perf_script(text, pids):
    """``perf script -F comm,pid,tid,ip,sym,dso``'s samples of ``pids`` (a header line
    ``comm pid/tid``, then one frame a line, leaf first, a blank line after each) as
    {stack: samples}, root first like stackcollapse-perf.pl: the command name, then
    the frames; an unresolved frame is its binary, [name]."""
    stacks = {}
    comm, frames = None, []
    for line in text.splitlines() + ['']:
        if not line.strip():
            if comm is not None:
                stack = ';'.join([comm] + frames[::-1])
                stacks[stack] = stacks.get(stack, 0) + 1
            comm, frames = None, []
        elif line[0] not in ' \t':
            # comm may hold spaces: the pid is the first "pid/tid" word after it
            words = line.split()
            ids = [i for i, w in enumerate(words) if i and w.split('/')[0].isdigit()]
            pid = int(words[ids[0]].split('/')[0]) if ids else None
            comm = ' '.join(words[:ids[0]]) if pid in pids else None
        elif comm is not None:
            frames.append(_perf_frame(line.split(None, 1)[1] if ' ' in line.strip() else ''))
    return stacks


def _perf_frame(text):
    """``func+0x1f (/usr/bin/tarantool)`` -> ``func``; ``[unknown] (/lib/x.so)`` -> ``[x.so]``."""
    sym, _sep, dso = text.rpartition(' (')
    sym = sym.strip()
    if not sym or sym == '[unknown]':
        dso = os.path.basename(dso.rstrip(')'))
        return dso if dso.startswith('[') else '[%s]' % (dso or 'unknown')
    return sym.rsplit('+0x', 1)[0]
