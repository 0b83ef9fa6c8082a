"""A small helper process that starts the private servers, so that they are not ours.

The driver counts its syscalls with counters that are inherited by every process it
starts after they open (they must be: gevent's resolver threads start late). A server
started again during a run (``--fault kill,start``) would then be counted as the
driver's. So every private server is started by this launcher instead: a process of
its own, started before any counter opens, which forks the servers on request. Its
children are not the driver's descendants, and the counters never see them.

The driver talks to it over two pipes, one JSON object a line:

- ``{"op": "spawn", "argv", "cwd", "env", "stdout", "run_as"}`` -> ``{"pid"}``
- ``{"op": "poll", "pid"}`` -> ``{"returncode"}`` (null while it runs)
- ``{"op": "signal", "pid", "signal"}`` -> ``{}`` (a sampler told to stop and write:
  run/sampler.py starts py-spy and perf here, so that they are not ours either)

and any reply may be ``{"error": "..."}``. Each server gets its own session and dies
with the launcher (PR_SET_PDEATHSIG), which dies with the driver: a killed driver
leaves nothing behind. The launcher ends when its stdin closes.

This file runs as a script and imports only the standard library; ``Launcher`` is
its driver-side half, and ``LaunchedProcess`` stands in for a ``subprocess.Popen``.
"""
from __future__ import absolute_import, division, print_function

import json
import os
import signal
import subprocess
import sys
import threading
import time

_PY2 = sys.version_info[0] == 2


def _native(value):
    """JSON gives text; Python 2's exec wants byte strings."""
    if _PY2 and isinstance(value, unicode):   # noqa: F821 (Python 2 only)
        return value.encode('utf-8')
    return value


def detach():
    """Own session (a terminal's Ctrl-C is the driver's alone), and SIGKILL when the
    process that started this one exits by any means."""
    os.setsid()
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG = 1
    except Exception:
        pass


def _spawn(req, children):
    run_as = req.get('run_as')

    def preexec():
        if run_as is not None:
            os.setgid(run_as[1])
            os.setuid(run_as[0])
        detach()   # after setuid: a change of credentials clears it
    env = dict((_native(k), _native(v)) for k, v in req['env'].items())
    with open(_native(req['stdout']), 'w') as out:
        p = subprocess.Popen([_native(a) for a in req['argv']], cwd=_native(req['cwd']),
                             env=env, stdout=out, stderr=subprocess.STDOUT,
                             stdin=open(os.devnull), close_fds=True, preexec_fn=preexec)
    children[p.pid] = p
    return {'pid': p.pid}


def _poll(req, children):
    p = children.get(req['pid'])
    if p is None:
        return {'error': 'no process %s was started here' % req['pid']}
    code = p.poll()
    if code is not None:
        del children[p.pid]
    return {'returncode': code}


def _signal(req, children):
    p = children.get(req['pid'])
    if p is None:
        return {'error': 'no process %s was started here' % req['pid']}
    if p.poll() is None:
        p.send_signal(req['signal'])
    return {}


def serve(rfile, wfile):
    children = {}
    ops = {'spawn': _spawn, 'poll': _poll, 'signal': _signal}
    for line in iter(rfile.readline, ''):
        try:
            req = json.loads(line)
            reply = ops[req['op']](req, children)
        except Exception as e:   # said to the driver, which raises it there
            reply = {'error': '%s: %s' % (type(e).__name__, e)}
        wfile.write(json.dumps(reply) + '\n')
        wfile.flush()


class LaunchedProcess(object):
    """What the servers use of ``subprocess.Popen``: pid, poll, wait, returncode."""

    def __init__(self, launcher, pid):
        self._launcher = launcher
        self.pid = pid
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            self.returncode = self._launcher.call(op='poll', pid=self.pid)['returncode']
        return self.returncode

    def wait(self, timeout=None):
        # The exit is seen by the launcher, its parent: ask until it is. Sleeps yield
        # to the hub under gevent.
        deadline = None if timeout is None else time.time() + timeout
        delay = 0.001
        while self.poll() is None:
            if deadline is not None and time.time() > deadline:
                raise RuntimeError('process %d did not exit within %s s' % (self.pid, timeout))
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        return self.returncode


class Launcher(object):
    """The driver's end: starts the launcher process (before any counter opens) and
    asks it to start servers."""

    def __init__(self):
        script = os.path.abspath(__file__)
        if script.endswith(('.pyc', '.pyo')) and os.path.exists(script[:-1]):
            script = script[:-1]
        # -E -s: no user site or PYTHON* variables can change what this stdlib script does.
        self.proc = subprocess.Popen([sys.executable, '-E', '-s', script],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     close_fds=True, preexec_fn=detach)
        # One request and its reply at a time: a fault's greenlet may ask while another
        # waits for a server to come up. (A gevent lock once threading is patched.)
        self._lock = threading.Lock()

    def call(self, **req):
        with self._lock:
            if self.proc is None:
                raise RuntimeError('the server launcher is closed')
            # Bytes both ways: gevent's text pipes on Python 2 cannot read a line.
            self.proc.stdin.write((json.dumps(req) + '\n').encode('ascii'))
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('the server launcher exited (code %s)' % self.proc.poll())
        reply = json.loads(line.decode('ascii'))
        if 'error' in reply:
            raise OSError(reply['error'])
        return reply

    def spawn(self, argv, cwd, env, stdout, run_as=None):
        reply = self.call(op='spawn', argv=list(argv), cwd=cwd, env=dict(env),
                          stdout=stdout, run_as=list(run_as) if run_as else None)
        return LaunchedProcess(self, reply['pid'])

    def close(self):
        """Ends the launcher (and with it, any server still running)."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
        except (IOError, OSError):
            pass
        try:
            proc.wait()
        except Exception:
            pass
        try:
            proc.stdout.close()
        except (IOError, OSError):
            pass


if __name__ == '__main__':
    serve(sys.stdin, sys.stdout)
