"""Removes the private servers' directories when the driver dies without doing it.

A private server's processes die with the driver however it ends (the launcher's
PR_SET_PDEATHSIG), but its temporary directory would stay when the driver is killed
(SIGKILL, an out-of-memory kill, a crash in C): ``Server.stop()`` never runs; and a
server that runs as another user (PostgreSQL, pgbouncer) was seen to outlive the
launcher's death signal. So the
first server a driver starts also starts this small process, in a session of its own
and with no death signal, which holds the read end of a pipe whose write end only the
driver has. The driver names each directory it makes (``{"dir": PATH}``), each it
has removed itself (``{"forget": PATH}``) and each server process it starts (``{"pid",
"start"}``: its start time, so that a pid used again is never taken for it), one JSON
object a line. When the pipe ends (the driver exited, by any means), the reaper kills
each named process still running (and those below it), waits a moment for their last
children to go, removes every directory still named, and exits.

This file runs as a script and imports only the standard library; ``watch`` and
``forget`` are the driver's half.
"""
from __future__ import absolute_import, division, print_function

import json
import os
import shutil
import signal
import subprocess
import sys
import time

_proc = []    # the driver's reaper (one per driver process), once started


def _stat(pid):
    """(parent pid, start time) of a live process, or None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except (IOError, OSError, IndexError):
        return None
    return None if fields[0] == 'Z' else (int(fields[1]), fields[19])


def _kill_tree(pid):
    """SIGKILL ``pid`` and every process below it (PostgreSQL's backends)."""
    try:
        procs = [int(p) for p in os.listdir('/proc') if p.isdigit()]
    except OSError:
        procs = []
    children = {}
    for p in procs:
        st = _stat(p)
        if st is not None:
            children.setdefault(st[0], []).append(p)
    todo = [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, ()))
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def serve(rfile):
    dirs, pids = set(), {}
    for line in iter(rfile.readline, b''):
        try:
            req = json.loads(line.decode('utf-8'))
        except ValueError:
            continue
        if 'dir' in req:
            dirs.add(req['dir'])
        elif 'forget' in req:
            dirs.discard(req['forget'])
        elif 'pid' in req:
            pids[req['pid']] = req['start']
    # The driver is gone. Its servers should die with its launcher, but a server that
    # runs as another user may not hear that death: each still running (the same
    # process: its start time) is killed here, its children with it.
    for pid, start in pids.items():
        st = _stat(pid)
        if st is not None and st[1] == start:
            _kill_tree(pid)
    # A PostgreSQL backend may outlive its postmaster by a moment, so the removal is
    # tried again after one.
    for delay in (0.3, 1.0):
        time.sleep(delay)
        for d in list(dirs):
            shutil.rmtree(d, ignore_errors=True)
            if not os.path.exists(d):
                dirs.discard(d)


def _send(req):
    if not _proc or _proc[0].poll() is not None:
        return
    try:
        _proc[0].stdin.write((json.dumps(req) + '\n').encode('utf-8'))
        _proc[0].stdin.flush()
    except (IOError, OSError):
        pass


def _start():
    script = os.path.abspath(__file__)
    if script.endswith(('.pyc', '.pyo')) and os.path.exists(script[:-1]):
        script = script[:-1]
    with open(os.devnull, 'wb') as null:
        # Its own session: a terminal's Ctrl-C is the driver's, which cleans up itself.
        p = subprocess.Popen([sys.executable, '-E', '-s', script], stdin=subprocess.PIPE,
                             stdout=null, stderr=null, close_fds=True, preexec_fn=os.setsid)
    try:   # the pipe's write end is the driver's alone, not its children's (Python 2)
        import fcntl
        fd = p.stdin.fileno()
        fcntl.fcntl(fd, fcntl.F_SETFD, fcntl.fcntl(fd, fcntl.F_GETFD) | fcntl.FD_CLOEXEC)
    except (ImportError, IOError, OSError):
        pass
    _proc.append(p)


def watch(path):
    """Remove ``path`` should this process die before ``forget(path)``."""
    if not _proc or _proc[0].poll() is not None:
        del _proc[:]
        try:
            _start()
        except (IOError, OSError):
            return      # a convenience: the run goes on without it
    _send({'dir': path})


def watch_pid(pid):
    """Kill ``pid`` (and the processes below it) should this process die first."""
    st = _stat(pid)
    if st is not None:
        _send({'pid': pid, 'start': st[1]})


def forget(path):
    """``path`` is gone (removed by the driver)."""
    _send({'forget': path})


if __name__ == '__main__':
    serve(getattr(sys.stdin, 'buffer', sys.stdin))
