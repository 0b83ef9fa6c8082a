"""SIGINT and SIGTERM during a run: the first stops it cleanly, the second at once.

The first signal ends the phase in progress as if its time were up and runs no
later phase, so everything measured so far is reported (table, JSON with
``"aborted": "interrupted"``, HTML), spawned servers and child processes are
removed, and the exit code is 130. A second signal exits at once; a private
server dies with the driver (PR_SET_PDEATHSIG), so nothing is left behind.
"""
from __future__ import absolute_import, division, print_function

import os
import signal

import gevent

from gloaddriver import errors

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts(object):
    """``with Interrupts(stop):`` calls ``stop()`` on the first SIGINT/SIGTERM (in the
    hub, as a callback) and exits with 130 on the second."""

    def __init__(self, stop):
        self.stop = stop
        self.received = 0
        self._handles = []

    def _signal(self):
        self.received += 1
        if self.received == 1:
            errors.say('interrupted: finishing the phase in progress and reporting '
                       '(again to quit at once)')
            self.stop()
        else:
            os._exit(errors.EXIT_INTERRUPTED)

    def __enter__(self):
        self._handles = [gevent.signal_handler(s, self._signal) for s in SIGNALS]
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.cancel()
        self._handles = []
        # gevent leaves SIGINT at its default; a Ctrl-C after the run is a plain one
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
