"""What the server saw, sampled each interval next to the client's figures.

A backend gives a sampler (``Backend.server_metrics``): a function of the
seconds it has, returning the server's cumulative counters read on a
connection of its own (the time is enforced around it too), and which of
them are rates and which gauges. Tarantool, say, gives ``box.stat()`` request
totals, PostgreSQL ``pg_stat_database``; each backend's ``metrics.py`` says
what its figures mean. For a server this driver spawned, its CPU over each
phase comes from /proc (all its processes), read at phase boundaries only.
Those few queries a second are in the client's syscall counts (well under 0.1 %).
"""
from __future__ import absolute_import, division, print_function

import os

import gevent
from gevent.hub import getcurrent

from gloaddriver.py23 import clock, spawn_named
from gloaddriver.measure import procfs

_TICK = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100

# A look at a phase's edge is outside the window, so it can wait: a healthy server on a
# busy machine can take more than a second to answer (several servers and clients on
# two cores), and an edge without figures leaves the whole phase without them. A server
# that did not answer its last look gets EDGE_WAIT_DOWN only: a paused one must not
# hold a phase's end for long.
EDGE_WAIT = 3.0
# The share of a sample's time a replica set's look waits for the leader's figures and
# the members' together; what has not come back by then is left out.
BOTH_SHARE = 0.9
# A replica set's requests per member (backends.replicaset.figures): this, then HOST:PORT.
MEMBER_REQUESTS = 'requests@'
EDGE_WAIT_DOWN = 1.0


def process_cpu_seconds(pid):
    """user+sys CPU seconds of pid and every live process it started (Linux /proc)."""
    fields = procfs.family(pid)
    if not fields:
        return None
    return sum(int(f[11]) + int(f[12]) for f in fields.values()) / float(_TICK)


class ServerMetrics(object):
    """``sample()`` -> cumulative counters; ``delta(a, b, seconds)`` -> rates and gauges.

    ``rates``: counters shown per second; ``gauges``: values shown as read;
    ``progress_rates``: the rates a progress line adds up (default: all of them), and
    ``progress_label`` what that sum counts, as the line shows it ("server 1,234
    req/s (all request types)"); ``charts``: gauges the HTML report draws over time,
    as dicts of kind, title, keys and unit (they go into the result)."""

    def __init__(self, sampler, close, rates, gauges, progress_rates=None, charts=(),
                 pid=None, progress_label='counted/s'):
        self._sampler = sampler
        self._close = close
        self.rates = rates
        self.gauges = gauges
        self.progress_rates = progress_rates or rates
        self.progress_label = progress_label
        self.charts = list(charts)
        self.pid = pid
        self.error = None
        self.answered = True    # did the last look come back? (the first is yet to come)
        self._sampling = None   # the greenlet inside the sampler now, if any

    def edge(self):
        """A look at a phase's edge: cumulative counters with the server's CPU time, or
        None; waited for EDGE_WAIT (EDGE_WAIT_DOWN when the last look went unanswered)."""
        return self.sample(cpu=True, timeout=EDGE_WAIT if self.answered else EDGE_WAIT_DOWN)

    def sample(self, cpu=False, timeout=1.0):
        """Cumulative counters, or None when the server does not answer within
        ``timeout``; with cpu, also the spawned server's CPU time (scans /proc: done
        at phase boundaries only, outside the client's syscall window)."""
        s = None
        self._sampling = getcurrent()
        try:
            with gevent.Timeout(timeout, False):   # False: leave the block quietly
                s = self._sampler(timeout)
        except Exception as e:   # the server may be down: metrics are best effort
            self.error = str(e)
            self.answered = False
            return None
        finally:
            self._sampling = None
        self.answered = s is not None
        if s is None:
            self.error = 'no answer within %.1f s' % timeout
            return None
        if cpu and self.pid is not None:
            s['cpu_seconds'] = process_cpu_seconds(self.pid)
        return s

    def delta(self, a, b, seconds):
        """Rates and gauges between two samples. A counter that went backwards means the
        server restarted between them: no rate can be had for that span, and the result
        says ``server_restarted`` instead of a negative rate. In a replica set whose
        leader was promoted between them (``leader_moves``, counted by the set), the
        leader's figures may be two members' (or one sample has none, its leader down):
        no rate either, and ``leader_changed`` says why; counters that go back after a
        promotion are the sampler's connection reaching the new leader late, not a
        restart."""
        if a is None or b is None or seconds <= 0:
            return None
        keys = [k for k in self.rates if k in a and k in b]
        moved = a.get('leader_moves') != b.get('leader_moves')
        back = any(b[k] < a[k] for k in keys)
        if moved or back:
            out = {'rps': {}, 'counts': {},
                   'leader_changed' if moved or b.get('leader_moves') else
                   'server_restarted': True}
            out.update((k, b.get(k)) for k in self.gauges)
            return out
        out = {'rps': dict((k, round((b[k] - a[k]) / seconds, 1)) for k in keys),
               'counts': dict((k, b[k] - a[k]) for k in keys)}
        out.update((k, b.get(k)) for k in self.gauges)
        if a.get('cpu_seconds') is not None and b.get('cpu_seconds') is not None:
            out['cpu_pct'] = round(100.0 * (b['cpu_seconds'] - a['cpu_seconds']) / seconds, 1)
        return out

    def describe(self, d):
        """A short text for a progress line."""
        if not d:
            return ''
        if d.get('server_restarted'):
            return ' | server restarted'
        if d.get('leader_changed'):
            return ' | leader changed: no server rates this interval'
        if d.get('late'):
            return ' | server: no sample (late)'
        rps = sum(v for k, v in d['rps'].items() if k in self.progress_rates)
        members = sorted((k.split('@', 1)[1], v) for k, v in d['rps'].items()
                         if k.startswith(MEMBER_REQUESTS))
        # In a replica set the server's own figures follow the leader: said, and each
        # member's requests beside them, or reads sent to a replica (--read-from) would
        # look like a server doing nothing.
        if members and not any(k in self.progress_rates for k in d['rps']):
            text = ' | leader: no sample'    # down or slow: the members' figures came
        else:
            text = ' | %s %s %s' % ('leader' if members else 'server', '{:,}'.format(int(rps)),
                                   self.progress_label)
        if d.get('cpu_pct') is not None:
            text += ' cpu %.0f%%' % d['cpu_pct']
        if members:
            text += ' | by member: %s req/s' % ', '.join(
                '%s %s' % (uri, '{:,}'.format(int(v))) for uri, v in members)
        return text

    def with_more(self, sampler, close, rates, gauges, charts):
        """These figures and another sampler's side by side (a replica set's members
        beside its leader): both sampled at once, each bounded by the sample's timeout,
        so that a leader that is down still leaves the members' figures."""
        mine = self._sampler

        def quietly(f, timeout):
            try:
                return f(timeout)
            except Exception as e:    # that side is down: the other's figures still count
                return e

        def both(timeout):
            jobs = [gevent.spawn(quietly, f, timeout) for f in (mine, sampler)]
            try:
                # Within sample()'s timeout, and a little short of it: a leader that is
                # down (a failover) leaves the members' figures, not a late sample.
                gevent.joinall(jobs, timeout=BOTH_SHARE * timeout)
            finally:
                # Gone before this returns: close() kills this greenlet and then closes
                # the connections, and a psycopg2 query still parked in one holds a
                # lock its close would wait on with the whole process.
                gevent.killall(jobs)
            out = {}
            for job in jobs:
                if isinstance(job.value, dict):
                    out.update(job.value)
            failed = [job.value for job in jobs if isinstance(job.value, Exception)]
            if not out and failed:
                raise failed[0]     # the error the result shows
            return out or None

        def close_both():
            self._close()
            close()
        return ServerMetrics(both, close_both, list(self.rates) + list(rates),
                             list(self.gauges) + list(gauges), self.progress_rates,
                             self.charts + list(charts), self.pid, self.progress_label)

    def close(self):
        """Close the sampler's connection once no sample is out on it. A greenlet parked
        in a psycopg2 query holds that connection's lock, and a close from another
        greenlet of the same thread would wait for that lock for ever: the sample is
        ended first (a Poller's, still out at the run's end)."""
        g = self._sampling
        if g is not None and g is not getcurrent() and hasattr(g, 'kill'):
            g.kill()
        self._close()


class Poller(object):
    """The server's figures for the ticker, which must never wait on the server.

    ``tick(wait)`` starts a sample in a greenlet of its own (unless the last one is
    still out) and waits for it at most ``wait``: a server that answers at once gives
    a sample taken at the tick, one that is down, paused or slow costs the ticker no
    more than ``wait`` and its sample is simply late (taken up at a later tick, or
    abandoned after a whole period). Returns ``latest``: (clock time, sample) of the
    newest sample that came back, or None.
    """

    def __init__(self, metrics, period):
        self.metrics = metrics
        self.period = period
        self.latest = None
        self._job = None

    def tick(self, wait):
        job = self._job
        if job is None or job.ready():
            self._take(job)
            job = self._job = spawn_named('server-metrics', self._sample)
        job.join(wait)
        self._take(job)
        return self.latest

    def _take(self, job):
        if job is not None and job.ready() and job.value is not None:
            self.latest = job.value

    def _sample(self):
        s = self.metrics.sample(cpu=False, timeout=self.period)
        return (clock(), s) if s is not None else None

    def stop(self):
        """Let the look still out end (within its own timeout) before the phase's edge
        looks: it holds the sampler's connections, one query each at a time, and the
        edge would find them busy. Outside the window, so waiting costs no figure."""
        job = self._job
        if job is not None:
            job.join(self.period)
            job.kill(block=False)
