"""Outage events: when the server could not serve, for how long, and what it cost.

An outage opens on the error path, never on the hot path: the first op that fails
with an outage-class error (``errors.OpError.outage``: lost connection, timeout, a
server shutting down or still starting) while none is open starts a watcher
greenlet. A server that stops answering without any error (paused, within the
request timeout) is caught by a second watcher: ops in flight and none completed for
STALL seconds (or ten times the recent p99) is a stall, an outage from the last
completion. The watcher looks every POLL seconds at the phase's success count and the
backend's reconnect count:

* an op that succeeds within CONFIRM of the first error, with no failure beside it,
  means the server was serving (one slow op under load): no outage is recorded;
  successes with failures beside them (the connections of a pool lost one by one)
  move the start to after them;
* otherwise the outage lasts until the first op that succeeds after it, and the
  watcher notes when the backend reconnected (the server's return, as the client
  first saw it; a fault this driver injected gives the true time instead).

Its start is when the server stopped answering as best the client can tell: the
error's time for a lost connection, the failed request's start for a timeout (the
request went out when the server still looked alive and got no answer).

Each event: ``start`` and ``end`` (seconds into the phase; ``end`` None while
still open when the phase ended), ``duration``, ``failed`` and ``timed_out`` (ops
that ended so while it lasted), ``reconnects``, ``returned`` (when the server came
back, if known) and ``recovery`` (from then to the first success), ``first_error``,
``errors`` (the failed and timed-out ops by kind);
against a replica set, ``member_before`` and ``member_after`` (the member the writes
went to as it began and after it: two of them make it a failover).
"""
from __future__ import absolute_import, division, print_function

import gevent

from gloaddriver.py23 import clock, spawn_named

POLL = 0.02        # seconds between the watcher's looks: the precision of start/end
CONFIRM = 0.05     # a success this soon after the first error: no outage
STALL = 0.5        # no op completing for this long (or 10 x p99) while some wait: a stall
STALL_POLL = 0.05


def _ok(ops):
    return sum(st.ok for st in ops)


def _bad(ops):
    return (sum(st.failed_total for st in ops), sum(st.timed_out for st in ops))


def _by_kind(ops):
    """{error kind: count} over the ops, timeouts as 'timeout' (read at an outage's edges
    only)."""
    out = {}
    for st in ops:
        for kind, n in st.failed.items():
            out[kind] = out.get(kind, 0) + n
        if st.timed_out:
            out['timeout'] = out.get('timeout', 0) + st.timed_out
    return out


class _Open(object):
    __slots__ = ('start', 'first_error_at', 'first_error', 'ok0', 'failed0', 'timed0',
                 'reconnects0', 'returned', 'confirmed', 'member0', 'kinds0')


class OutageWatch(object):
    """The outages of one phase. ``failed(exc)`` from the error path; ``finish(now)``
    at the phase's end returns the events (JSON-ready)."""

    def __init__(self, ops, t0, timeout, reconnects=None, say=None, member=None):
        self._ops = ops
        self._t0 = t0
        self._timeout = timeout
        self._reconnects = reconnects or (lambda: None)
        self._member = member or (lambda: None)
        self._say = say
        self._open = None
        self._greenlet = None
        self._stalls = None
        self._returns = []     # clock times an injected fault brought the server back
        self.events = []

    @property
    def active(self):
        """An outage is open and confirmed (for the progress line)."""
        return self._open is not None and self._open.confirmed

    def failed(self, exc, started=None):
        """Called before the op's error is counted, with the clock time the op began;
        cheap when an outage is open."""
        if self._open is not None or not getattr(exc, 'outage', False):
            return
        now = clock()
        # An op that failed after waiting about a request timeout (a timeout, or a
        # connector that turns its timeout into a lost connection) went out when the
        # server still looked alive: the outage dates from then. Others fail at once.
        if started is None:
            started = now - self._timeout if getattr(exc, 'kind', None) == 'timeout' else now
        start = started if now - started >= 0.9 * self._timeout else now
        self._begin(start, now, '%s: %s' % (getattr(exc, 'kind', 'error'), str(exc)[:200]),
                    False)

    def _begin(self, start, now, first_error, confirmed):
        o = self._open = _Open()
        o.start = start
        o.first_error_at = now
        o.first_error = first_error
        o.ok0 = _ok(self._ops)
        o.failed0, o.timed0 = _bad(self._ops)
        o.reconnects0 = self._reconnects()
        o.member0 = self._member()
        o.kinds0 = _by_kind(self._ops)
        o.returned = None
        o.confirmed = confirmed
        if confirmed and self._say is not None:
            self._say('outage: %s' % first_error)
        self._greenlet = spawn_named('outage-watch', self._watch)

    def watch_stalls(self, latency, open_loop=False):
        """Start looking for a server that stops answering without any error (paused,
        or the network silent, within the request timeout). ``latency()`` gives the
        phase's recent p99 in seconds, or None. In an open loop a free worker starts an
        op on schedule whether or not others complete, so there completions are
        counted at every look, not only when no op was started."""
        self._stalls = spawn_named('stall-watch', self._stall_loop, latency, open_loop)

    def _stall_loop(self, latency, open_loop):
        """No op completes while some are in flight, for STALL seconds or ten times the
        recent p99 (a workload of slow ops is not stalled): an outage from the last
        completion. Nothing in flight (an open loop between arrivals, a stage at zero
        greenlets) is never one."""
        ops = self._ops
        seen, since, first = None, clock(), None
        while True:
            gevent.sleep(STALL_POLL)
            if self._open is not None:
                seen = None
                continue
            now = clock()
            # Cheap first: an op taken means a worker was free (closed loop: its last op
            # completed). Only while none is taken are the completions counted.
            attempted = sum(st.attempted for st in ops)
            if seen is None or (attempted != seen[0] and not open_loop):
                seen, since = (attempted, None), now
                continue
            failed, timed = _bad(ops)
            done = _ok(ops) + failed + timed
            if seen[1] is not None and done != seen[1]:
                since = now
            seen = (attempted, done)
            if first is None:
                if not done:
                    continue     # nothing completed yet: how long an op takes is unknown
                first = now - self._t0    # the first ops took at most this long
            if attempted > done:
                p99 = latency()
                limit = max(STALL, 10 * (p99 if p99 is not None else first))
                if now - since >= limit:
                    self._begin(since, now, 'stall: ops in flight, none completed for '
                                '%.1f s' % (now - since), True)

    def server_returned(self, when):
        """A fault this driver injected brought the server back at clock time ``when``."""
        self._returns.append(when)

    def _watch(self):
        o = self._open
        ok_seen, bad_seen = o.ok0, sum(_bad(self._ops))
        while True:
            gevent.sleep(POLL)
            now = clock()
            # The reconnect first: it often comes in the same look as the first success.
            if o.returned is None and o.reconnects0 is not None:
                r = self._reconnects()
                if r is not None and r > o.reconnects0:
                    o.returned = now
            ok = _ok(self._ops)
            if ok > ok_seen:
                if o.confirmed:
                    self._close(now)
                    return
                bad = sum(_bad(self._ops))
                if bad == bad_seen:
                    self._open = None     # serving, and nothing failed since: no outage
                    return
                # Successes and failures side by side (one connection of several lost,
                # the others not yet): an outage, if this becomes one, starts after them.
                o.ok0 = ok_seen = ok
                bad_seen = bad
                o.start = o.first_error_at = now
                continue
            if not o.confirmed and now - o.first_error_at >= CONFIRM:
                o.confirmed = True
                if self._say is not None:
                    self._say('outage: no op succeeds since %.2f s (%s)'
                              % (o.start - self._t0, o.first_error))

    def _close(self, end):
        o = self._open
        self._open = None
        event = self._event(o, end)
        self.events.append(event)
        if self._say is not None:
            back = '' if event['recovery'] is None else \
                ', first success %.2f s after the server returned' % event['recovery']
            if event.get('member_after') not in (None, event.get('member_before')):
                back += '; writes now go to %s' % event['member_after']
            self._say('outage over after %.2f s: %d failed, %d timed out, %d reconnect%s%s'
                      % (event['duration'], event['failed'], event['timed_out'],
                         event['reconnects'] or 0, '' if event['reconnects'] == 1 else 's',
                         back))

    def _event(self, o, end):
        failed, timed = _bad(self._ops)
        # The server's return: when an injected fault brought it back, else when the
        # client reconnected. A fault's start counts until the server is fully ready,
        # and the client may get in before that: the earlier of the two, then.
        last = end if end is not None else clock()
        seen = [t for t in self._returns if o.start <= t <= last]
        if o.returned is not None:
            seen.append(o.returned)
        returned = min(seen) if seen else None
        r = self._reconnects()
        t0 = self._t0
        event = {
            'start': round(o.start - t0, 3),
            'end': round(end - t0, 3) if end is not None else None,
            'duration': round((end if end is not None else clock()) - o.start, 3),
            'open': end is None,
            'failed': failed - o.failed0,
            'timed_out': timed - o.timed0,
            'reconnects': (r - o.reconnects0) if (r is not None and o.reconnects0 is not None)
            else None,
            'returned': round(returned - t0, 3) if returned is not None else None,
            'recovery': round(end - returned, 3) if (end is not None and returned is not None)
            else None,
            'first_error': o.first_error,
            'errors': dict((k, n - o.kinds0.get(k, 0)) for k, n in _by_kind(self._ops).items()
                           if n > o.kinds0.get(k, 0)),
        }
        if o.member0 is not None:
            event['member_before'] = o.member0
            event['member_after'] = self._member() if end is not None else None
        return event

    def finish(self, now):
        """The phase ended at clock time ``now``: an outage still open is reported open
        (its duration up to ``now``); one never confirmed is dropped."""
        for g in (self._greenlet, self._stalls):
            if g is not None:
                g.kill()
        self._greenlet = self._stalls = None
        o, self._open = self._open, None
        if o is not None and (o.confirmed or now - o.first_error_at >= CONFIRM):
            if _ok(self._ops) > o.ok0:
                # Succeeded after it, between the watcher's last look and the end.
                self.events.append(self._event(o, now))
            else:
                event = self._event(o, None)
                event['duration'] = round(now - o.start, 3)
                self.events.append(event)
        return self.events


def summary(events):
    """One line of a phase's outages for the report, or ''."""
    if not events:
        return ''
    parts = []
    for e in events:
        if e['open']:
            parts.append('from %.2f s, still down at the end (%.2f s)' % (e['start'], e['duration']))
        else:
            parts.append('%.2f-%.2f s (%.2f s)' % (e['start'], e['end'], e['duration']))
        if e.get('member_after') not in (None, e.get('member_before')):
            parts[-1] += ', failover %s -> %s' % (e['member_before'], e['member_after'])
    return '%d outage%s: %s' % (len(events), '' if len(events) == 1 else 's', '; '.join(parts))


def merge_concurrent(lists):
    """One list of outages from processes or shards that ran side by side against one
    server: events that overlap in time are one outage seen by several of them (its
    span the union, its counts the sum, its recovery the slowest)."""
    events = sorted((e for events in lists for e in events), key=lambda e: e['start'])
    out = []
    for e in events:
        last = out[-1] if out else None
        last_end = None if last is None else (last['end'] if last['end'] is not None
                                              else last['start'] + last['duration'])
        if last is None or e['start'] > last_end:
            out.append(dict(e))
            continue
        e_end = e['end'] if e['end'] is not None else e['start'] + e['duration']
        end = max(last_end, e_end)
        last['open'] = last['open'] or e['open']
        last['end'] = None if last['open'] else round(end, 3)
        last['duration'] = round(end - last['start'], 3)
        for k in ('failed', 'timed_out', 'reconnects'):
            if last.get(k) is not None or e.get(k) is not None:
                last[k] = (last.get(k) or 0) + (e.get(k) or 0)
        if e.get('errors'):
            kinds = last['errors'] = dict(last.get('errors') or {})
            for kind, n in e['errors'].items():
                kinds[kind] = kinds.get(kind, 0) + n
        if e.get('member_after') is not None:     # the side that saw where writes went
            last['member_after'] = e['member_after']
        if e.get('returned') is not None:
            last['returned'] = min(x for x in (last.get('returned'), e['returned'])
                                   if x is not None)
        rec = [x for x in (last.get('recovery'), e.get('recovery')) if x is not None]
        last['recovery'] = max(rec) if rec else None
    return out
