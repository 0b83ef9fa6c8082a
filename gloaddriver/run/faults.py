"""--fault: kill, pause and start the spawned server on a schedule during the run.

The schedule (``converters.faults``) counts from the start of the first measured
phase. A greenlet of the driver's main thread carries it out: a private server dies
with the thread that started it (PR_SET_PDEATHSIG), so never from a helper thread.
Starting a server again blocks only this greenlet (subprocess and the readiness
check are cooperative under gevent's patching).

Each action taken is an event: ``action``, ``at`` (the planned second), ``t`` (clock
time it took effect; the runner turns it into seconds into a phase), ``took``
(seconds the action needed, e.g. a start until the server accepted logins) and
``error`` when it failed. When the server comes back (start, restart, cont) the
listener hears the time, which an open outage takes as the server's true return.
"""
from __future__ import absolute_import, division, print_function

import gevent

from gloaddriver import errors
from gloaddriver.py23 import clock, spawn_named

RETURNS = ('start', 'restart', 'cont')


class Injector(object):
    def __init__(self, faults, server):
        self.faults = faults
        self.server = server
        self.events = []
        self._greenlet = None
        self._t0 = None
        self._on_return = None

    def begin(self, on_return=None):
        """Start the schedule now (the first phase's start); idempotent."""
        if self._greenlet is not None or not self.faults:
            return
        self._t0 = clock()
        self._on_return = on_return
        self._greenlet = spawn_named('faults', self._run)

    def _run(self):
        plan = []
        for f in self.faults:
            plan.append((f.at, f.action, f.duration))
            if f.action == 'stop' and f.duration is not None:
                plan.append((f.at + f.duration, 'cont', None))
        plan.sort(key=lambda p: p[0])
        for at, action, length in plan:
            gevent.sleep(max(self._t0 + at - clock(), 0))
            self._do(at, action, length)

    def _do(self, at, action, length):
        server = self.server
        started = clock()
        event = {'action': action, 'at': at, 't': started}
        if length is not None:
            event['duration'] = length
        try:
            if action == 'kill':
                server.kill()
            elif action == 'stop':
                server.pause()
            elif action == 'cont':
                server.resume()
            elif action == 'start':
                server.start_again()
            elif action == 'restart':
                server.kill()
                if length:
                    gevent.sleep(length)
                server.start_again()
        except errors.GloadError as e:
            event['error'] = str(e)
            errors.say('note: --fault %s@%gs failed: %s' % (action, at, e))
        done = clock()
        event['took'] = round(done - started, 3)
        self.events.append(event)
        if action in RETURNS and 'error' not in event and self._on_return is not None:
            self._on_return(done)

    def wait(self):
        """Until the schedule's last action is done."""
        if self._greenlet is not None:
            self._greenlet.join()

    def end(self):
        """Stop the schedule; a server left paused is resumed so that it can be stopped."""
        if self._greenlet is not None:
            self._greenlet.kill()
            self._greenlet = None
        stopped = [e for e in self.events if e['action'] in ('stop', 'cont')]
        if stopped and stopped[-1]['action'] == 'stop':
            self.server.resume()

    def in_window(self, t0, t1):
        """The events between clock times t0 and t1, as seconds from t0."""
        return [dict(e, t=round(e['t'] - t0, 3)) for e in self.events if t0 <= e['t'] <= t1]

    def describe(self):
        """The events as seconds from the schedule's start (for the run's result)."""
        if self._t0 is None:
            return []
        return [dict(e, t=round(e['t'] - self._t0, 3)) for e in self.events]
