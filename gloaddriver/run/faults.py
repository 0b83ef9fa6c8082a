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

On a replica set (``backends.replicaset``) an action has a ``target`` (leader or
replica) and the event names the ``member`` it hit (so does one on the private pooler,
target ``pooler``: its address); ``promote`` (the failover
coordinator's move) says ``from`` and ``to``, and is the writable service's return.

Under ``--ha patroni`` nobody in the driver promotes: ``switchover`` asks Patroni (and
says ``from`` and ``to``), the ``dcs`` target is its etcd (``dcs-down`` is kill-dcs) and
the ``proxy`` target the private HAProxy. What Patroni and HAProxy did on their own
(``server.watch_ha``: leader-lost, leader-elected, promoted, demoted, proxy-admitted,
proxy-dropped) is recorded among the events with a ``source``; a member ``promoted``
by Patroni is the writable service's return.
"""
from __future__ import absolute_import, division, print_function

import gevent

from gloaddriver import converters, errors
from gloaddriver.py23 import clock, spawn_named

RETURNS = ('start', 'restart', 'cont', 'promote', 'switchover')
SEEN_RETURNS = ('promoted',)      # events of watch_ha that are the service's return


class Injector(object):
    def __init__(self, faults, server):
        self.faults = faults
        self.server = server
        self.events = []
        self._greenlet = None
        self._t0 = None
        self._on_return = None
        pooled = [f for f in faults if f.target == converters.FAULT_POOLER]
        if pooled and getattr(server, 'pooler', None) is None:
            raise errors.ConfigError('--fault %s-pooler@%gs: this run has no pooler to act on '
                                     '(--pooler pgbouncer, with --spawn)'
                                     % (pooled[0].action, pooled[0].at))
        # Patroni (--ha) elects a new leader by itself: a killed one is no outage to the end.
        elects = getattr(server, 'ha', None) is not None
        for f in converters.left_down(faults):
            if f.target not in (None, 'leader', converters.FAULT_POOLER) or (
                    elects and f.target == 'leader'):
                continue     # the writes go on to the leader
            # Said before the first op: a user who forgot start@ would otherwise watch
            # --outage-limit of failures before the run aborts.
            errors.say('note: --fault %s@%gs leaves the %s %s: nothing in the schedule '
                       'brings it back (add %s@TIME), so from then on ops fail until the '
                       'phase ends or --outage-limit aborts the run'
                       % (f.action, f.at, f.target or 'server',
                          'killed' if f.action == 'kill' else 'paused',
                          ('start' if f.action == 'kill' else 'cont') + (
                              '-pooler' if f.target == converters.FAULT_POOLER else '')))

    def begin(self, on_return=None):
        """Start the schedule now (the first phase's start); idempotent."""
        if self._greenlet is not None or not self.faults:
            return
        self._t0 = clock()
        self._on_return = on_return
        self._greenlet = spawn_named('faults', self._run)
        watch = getattr(self.server, 'watch_ha', None)
        if watch is not None:
            watch(self._seen)

    def _seen(self, event):
        """An event of the HA stack's own (``watch_ha``), with its clock time."""
        self.events.append(event)
        if event['action'] in SEEN_RETURNS and self._on_return is not None:
            self._on_return(event['t'])

    def _run(self):
        plan = []
        for f in self.faults:
            plan.append((f.at, f.action, f.duration, f.target))
            if f.action == 'stop' and f.duration is not None:
                plan.append((f.at + f.duration, 'cont', None, f.target))
        plan.sort(key=lambda p: p[0])
        for at, action, length, target in plan:
            gevent.sleep(max(self._t0 + at - clock(), 0))
            self._do(at, action, length, target)

    def _do(self, at, action, length, target=None):
        server = self.server
        started = clock()
        event = {'action': action, 'at': at, 't': started}
        if target is not None:
            event['target'] = target
        if length is not None:
            event['duration'] = length
        # A replica set's methods take the target and return the member they hit; a
        # single server's take nothing.
        on = (target,) if target is not None else ()
        try:
            if action in ('promote', 'switchover'):
                old, new = getattr(server, action)()
                event['from'], event['to'] = old.uri, new.uri
            else:
                member = self._act(server, action, length, on)
                if target is not None:
                    event['member'] = member.uri
        except Exception as e:   # said and recorded; the run goes on
            event['error'] = str(e) if isinstance(e, errors.GloadError) else '%s: %s' % (
                e.__class__.__name__, e)
            name = '%s-%s' % (action, target) if target else action
            errors.say('note: --fault %s@%gs failed: %s' % (name, at, event['error']))
        done = clock()
        event['took'] = round(done - started, 3)
        self.events.append(event)
        if action in RETURNS and 'error' not in event and self._on_return is not None:
            self._on_return(done)

    @staticmethod
    def _act(server, action, length, on):
        if action == 'kill':
            return server.kill(*on)
        if action == 'stop':
            return server.pause(*on)
        if action == 'cont':
            return server.resume(*on)
        if action == 'start':
            return server.start_again(*on)
        # restart: kill, then start on the same port and data (after DURATION if given)
        member = server.kill(*on)
        if length:
            gevent.sleep(length)
        server.start_again(*on)
        return member

    def wait(self):
        """Until the schedule's last action is done."""
        if self._greenlet is not None:
            self._greenlet.join()

    def end(self):
        """Stop the schedule; a server left paused is resumed so that it can be stopped."""
        if self._greenlet is not None:
            self._greenlet.kill()
            self._greenlet = None
        unwatch = getattr(self.server, 'unwatch_ha', None)
        if unwatch is not None:
            unwatch()
        resume_all = getattr(self.server, 'resume_all', None)
        if resume_all is not None:
            resume_all()
            return
        stopped = [e for e in self.events if e['action'] in ('stop', 'cont')]
        if stopped and stopped[-1]['action'] == 'stop':
            self.server.resume()

    def in_window(self, t0, t1):
        """The events between clock times t0 and t1, as seconds from t0."""
        return [dict(e, t=round(e['t'] - t0, 3)) for e in self._in_order() if t0 <= e['t'] <= t1]

    def _in_order(self):
        # A fault's event is kept as it ends, with the time it began; the HA watch's
        # come as seen: the list in time order.
        return sorted(self.events, key=lambda e: e['t'])

    def describe(self):
        """The events as seconds from the schedule's start (for the run's result)."""
        if self._t0 is None:
            return []
        return [dict(e, t=round(e['t'] - self._t0, 3)) for e in self._in_order()]
