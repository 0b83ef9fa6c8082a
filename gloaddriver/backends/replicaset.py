"""A private replica set (``--spawn --replicas N``): a leader and N replicas, each a
``spawn.Server`` of the backend's kind, and what ``--fault`` does to them.

What does not depend on the server kind lives here: the roles (which member takes
writes now), the fault targets, choosing whom to promote, stopping everything. Each
backend subclasses :class:`ReplicaSet` in its own ``replicaset.py`` with how its
members start (the leader first, the replicas from it), how a replica is promoted and
the others made to follow it, and how far each replica is behind.

Targets of a fault (``run.faults``): ``leader`` is the member that takes writes at
that moment; ``replica`` the first live replica in start order. A fault that brings a
member back (``start``, ``cont``) acts on the member the last ``kill``/``stop`` of the
same target hit, whatever its role is now: ``kill-leader@3s,promote@4s,start-leader@8s``
starts the old leader again, as a replica of the new one.

A set stands in for a single server wherever the runner holds one: ``kill()``,
``pause()``, ``resume()`` and ``start_again()`` act on the leader, and
``proc`` is the first leader's process (the server CPU figures follow it).
"""
from __future__ import absolute_import, division, print_function

from gloaddriver import errors
from gloaddriver.measure.server_metrics import MEMBER_REQUESTS

LEADER, REPLICA = 'leader', 'replica'


class ReplicaSet(object):
    """The members (``members[0]`` started as the leader) and the one that takes writes
    now (``leader``)."""

    def __init__(self, replicas, mode):
        """``mode``: --replication (config.flags.REPLICATION_MODES), as the backend's
        members understand it."""
        if replicas < 1:
            raise errors.ConfigError('a replica set needs at least one replica')
        self.replica_count = replicas
        self.mode = mode
        self.members = []
        self.leader = None
        self._hit = {}          # target -> the member its last kill/stop hit
        self._down = set()      # members killed and not started again (by index)
        self._paused = set()    # members paused (by index)
        self._sampling = {}     # (member uri, slot) -> its connection for the figures
        self._busy = set()      # the (member uri, slot) of the looks out now
        # Promotions begun: the figures carry it, so that counters that went back
        # across one read as the leader changing, not as a restart.
        self.leader_moves = 0

    # -- what a backend gives -------------------------------------------------------------

    def _start_members(self, timeout):
        """Start the leader and the replicas; fill ``members`` (leader first)."""
        raise NotImplementedError

    def _position(self, member):
        """How far a live member's data goes (comparable: higher is further)."""
        raise NotImplementedError

    def _promote(self, member, others):
        """Make ``member`` writable and the live ``others`` replicate from it."""
        raise NotImplementedError

    def _start_member_again(self, member, as_leader, timeout):
        """Start a killed member again, as the leader or as a replica of ``self.leader``."""
        raise NotImplementedError

    def _requests(self, member):
        """Requests the live ``member`` has served from clients (cumulative), or None."""
        return None

    def _sampling_connection(self, member):
        """A connection to ``member`` for the figures (connected, with ``close()``)."""
        raise NotImplementedError

    def _on_sampling_connection(self, member, use, slot='requests'):
        """``use(conn)`` on the member's own connection for the figures, kept from one
        interval to the next (a new one each second would be the driver's syscalls) and
        made again after any failure. ``slot``: figures read at the same time (each
        member's requests, the leader's lag) each have their own, as a psycopg2
        connection takes one query at a time."""
        key = (member.uri, slot)
        if key in self._busy:
            # The last interval's look is still out (a member slow to answer): never two
            # on one connection. A psycopg2 connection holds a lock while its query
            # waits, and a second query or a close from another greenlet would wait for
            # that lock with the whole process.
            raise errors.RequestTimeout('%s still busy with the last look' % member.uri)
        self._busy.add(key)
        try:
            conn = self._sampling.get(key)
            if conn is None:
                conn = self._sampling[key] = self._sampling_connection(member)
            try:
                return use(conn)
            except BaseException:
                # Closed by this greenlet, the only one in it: a query the failure
                # interrupted has let go of the connection by now. (stop() may have
                # emptied the table under a look still out: a pop, not a del.)
                self._sampling.pop(key, None)
                _quietly(conn.close)
                raise
        finally:
            self._busy.discard(key)

    lag_unit = 'rows'    # what lag() counts besides seconds: 'rows' or 'bytes'

    def lag(self):
        """{member uri: {'bytes' or 'seconds': how far it is behind the leader}} of every
        live replica, read from the leader (Tarantool box.info.replication, PostgreSQL
        pg_stat_replication); {} when the leader cannot say."""
        return {}

    def figures(self, seconds):
        """The members' figures for the server metrics: ``requests@URI`` (cumulative
        requests each live member served), ``leader_moves`` (promotions begun: the
        sampler's counters going back across one are another member's, not a restart)
        and, per replica, ``lag@URI`` (lag_unit behind the leader) and ``lag_seconds@URI``. Every member is asked at once, and what has
        not come back within ``seconds`` is left out: a paused member costs the others
        nothing."""
        import gevent
        live = [m for i, m in enumerate(self.members)
                if i not in self._down and i not in self._paused]
        jobs = [gevent.spawn(_quietly, self._requests, m) for m in live]
        lag = gevent.spawn(_quietly, self.lag)
        try:
            gevent.joinall(jobs + [lag], timeout=seconds)
        finally:
            # Not waited for: a look parked on a member that does not answer ends as
            # the kill reaches it, on its own connection (never closed under it).
            gevent.killall(jobs + [lag], block=False)
        out = {'leader_moves': self.leader_moves}
        for m, job in zip(live, jobs):
            if job.value is not None:
                out[MEMBER_REQUESTS + m.uri] = job.value
        for uri, behind in (lag.value or {}).items():
            out['lag@' + uri] = behind.get(self.lag_unit)
            seconds = behind.get('seconds')
            # A replica's clock a hair behind the leader's says a negative lag: none.
            out['lag_seconds@' + uri] = None if seconds is None else max(seconds, 0.0)
        return out

    def extend_metrics(self, metrics, period):
        """The server's sampler (``measure.server_metrics.ServerMetrics``, or None) with
        the members' figures beside it: requests per member as rates, lag as gauges and
        a chart of them; sampled each ``period``, so each look gets most of one."""
        uris = [m.uri for m in self.members]
        rates = [MEMBER_REQUESTS + u for u in uris]
        gauges = ['lag@' + u for u in uris] + ['lag_seconds@' + u for u in uris]
        charts = [{'kind': 'replication-lag', 'title': 'Replicas: %s behind the leader'
                   % self.lag_unit, 'keys': ['lag@' + u for u in uris], 'unit': self.lag_unit},
                  {'kind': 'replication-lag-seconds', 'title': 'Replicas: seconds behind the '
                   'leader', 'keys': ['lag_seconds@' + u for u in uris], 'unit': 'seconds'}]
        if metrics is None:
            return None
        # One look now, unhurried, opens the members' connections: the looks of the
        # phases' edges and intervals then only ask (a login each would not fit in them).
        self.figures(5.0)
        return metrics.with_more(lambda timeout: self.figures(0.8 * timeout), lambda: None,
                                 rates, gauges, charts)

    def settings(self):
        """What the manifest says about the set (never a password)."""
        first = self.members[0].settings() if self.members else {}
        return dict(first, replicas=self.replica_count, replication=self.mode,
                    members=[m.uri for m in self.members])

    # -- life cycle -----------------------------------------------------------------------

    def start(self, timeout=60.0):
        try:
            self._start_members(timeout)
        except BaseException:
            self.stop()
            raise
        self.leader = self.members[0]
        return self

    def stop(self):
        for key, conn in self._sampling.items():
            if key not in self._busy:    # one in use is the server's to end (stopped next)
                _quietly(conn.close)
        self._sampling = {}
        for m in reversed(self.members):
            m.stop()

    @property
    def proc(self):
        return self.members[0].proc if self.members else None

    @property
    def uris(self):
        """host:port of every member, leader first as started."""
        return [m.uri for m in self.members]

    def role(self, member):
        return LEADER if member is self.leader else REPLICA

    # -- fault targets --------------------------------------------------------------------

    def _index(self, member):
        return self.members.index(member)

    def _live_replicas(self):
        return [m for m in self.members if m is not self.leader
                and self._index(m) not in self._down and self._index(m) not in self._paused]

    def member(self, target, action):
        """The member an action on ``target`` hits (see the module docstring)."""
        if action in ('start', 'cont'):
            m = self._hit.get(target)
            if m is None:
                raise errors.SetupError('%s-%s: no %s was %s before' % (
                    action, target, target, 'killed' if action == 'start' else 'stopped'))
            return m
        if target == LEADER:
            return self.leader
        live = self._live_replicas()
        if not live:
            raise errors.SetupError('%s-replica: no live replica is left' % action)
        return live[0]

    def kill(self, target=LEADER):
        m = self.member(target, 'kill')
        m.kill()
        self._hit[target] = m
        self._down.add(self._index(m))
        return m

    def pause(self, target=LEADER):
        m = self.member(target, 'stop')
        m.pause()
        self._hit[target] = m
        self._paused.add(self._index(m))
        return m

    def resume(self, target=LEADER):
        m = self.member(target, 'cont')
        m.resume()
        self._paused.discard(self._index(m))
        return m

    def start_again(self, target=LEADER, timeout=30.0):
        m = self.member(target, 'start')
        self._start_member_again(m, m is self.leader, timeout)
        self._down.discard(self._index(m))
        return m

    def resume_all(self):
        """Resume every paused member (before stopping, or at the schedule's end)."""
        for i in sorted(self._paused):
            self.members[i].resume()
        self._paused.clear()

    def promote(self):
        """The coordinator's move: the most advanced live replica becomes the leader, the
        other live replicas follow it. Returns (old leader, new leader)."""
        live = self._live_replicas()
        if not live:
            raise errors.SetupError('promote: no live replica to promote')
        positions = [(self._position(m), -self._index(m), m) for m in live]
        best = max(positions, key=lambda p: (p[0], p[1]))[2]
        old = self.leader
        # Counted before the move: the figures' sampler may reach the new leader while
        # the others are still being pointed at it.
        self.leader_moves += 1
        self._promote(best, [m for m in live if m is not best])
        self.leader = best
        return old, best


def _quietly(fn, *args):
    """fn(*args), or None when it fails (a member down or restarting)."""
    try:
        return fn(*args)
    except Exception:
        return None
