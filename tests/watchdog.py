"""A deadline per test, so that a hang fails one test instead of stalling the suite.

Most tests run the driver or a script as a child process and wait for it; a child
that hangs (a deadlock at a run's end, found once by the busy suite) would otherwise
hold CI until CI's own limit, and say nothing about where. Past the deadline the
watchdog kills every process the test started (children and their descendants, not
the session's shared servers, which were running before the test began): the test's
``communicate()`` returns, and the test fails on the child's exit status with its
stderr. A hang inside the test process itself is caught on Python 3 by faulthandler a
minute later: it prints every thread's stack and ends the run.

The deadline is generous (a test that runs past it is broken either way); a test that
builds an image on a clean machine sets its own with ``@pytest.mark.deadline(seconds)``.
"""
from __future__ import absolute_import, division, print_function

import os
import signal
import sys
import threading

DEFAULT_SECONDS = 600


def parents():
    """{pid: parent pid} of every process, read from /proc (no psutil)."""
    found = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as f:
                stat = f.read()
        except (IOError, OSError):
            continue   # ended while we looked
        # The command name is in parentheses and may hold spaces: the fields after
        # the last ')' are state, ppid, ...
        found[int(name)] = int(stat.rpartition(')')[2].split()[1])
    return found


def descendants(pid):
    """Every process below ``pid``, nearest first."""
    of = parents()
    found, frontier = [], [pid]
    while frontier:
        below = [c for c, p in of.items() if p in frontier]
        found.extend(below)
        frontier = below
    return found


class Watchdog(object):
    """Start before the test, ``stop()`` after. ``killed`` lists what it killed."""

    def __init__(self, seconds, name='the test', out=None, dump_to=None, grace=60):
        self.seconds = seconds
        self.name = name
        self.out = out or sys.stderr
        # Where faulthandler writes the stacks: the run's own stderr, not the test's
        # captured one, which is lost when faulthandler ends the process.
        self.dump_to = dump_to or sys.stderr
        self.grace = grace
        self.killed = []
        self._before = set(descendants(os.getpid()))
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._faulthandler = None

    def start(self):
        self._timer.start()
        try:
            import faulthandler   # Python 3 only; 2.7 keeps the child-process part
        except ImportError:
            return self
        faulthandler.dump_traceback_later(self.seconds + self.grace, exit=True,
                                          file=self.dump_to)
        self._faulthandler = faulthandler
        return self

    def stop(self):
        self._timer.cancel()
        # Wait for its thread to end: one still waiting as 2.7 shuts down prints a
        # traceback of its own.
        self._timer.join(5)
        if self._faulthandler is not None:
            self._faulthandler.cancel_dump_traceback_later()

    def _fire(self):
        new = [p for p in descendants(os.getpid()) if p not in self._before]
        # Parents first, so none of them starts a replacement for a killed child.
        for pid in new:
            try:
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)
            except OSError:
                pass
        line = ('\nwatchdog: %s still running after %d s; killed the processes it started: '
                '%s\n' % (self.name, self.seconds, ' '.join(str(p) for p in self.killed) or 'none'))
        # In the test's captured stderr (shown with its failure), and at once in the log.
        for out in [self.out] + ([self.dump_to] if self.dump_to is not self.out else []):
            out.write(line)
            out.flush()
