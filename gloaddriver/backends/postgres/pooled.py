"""A spawned server (a single PostgreSQL or a replica set) with a private pooler in front
(``--spawn --pooler pgbouncer``): what the run holds as its server.

It stands in for the server everywhere the run holds one. ``dsn`` is the pooler's, so
the driver's ops go through it; ``direct_dsn`` is the server's (the leader's), for the
driver's own monitoring connections, which measure the server (pg_stat_database,
pg_stat_activity) and would otherwise measure the pooler's few server connections.

Faults: an action on the ``pooler`` target (``pooler-restart``, ``kill-pooler``...) acts
on pgbouncer; every other goes to the server behind it. A promotion in a replica set
points pgbouncer at the new leader. ``stop()`` removes the pooler, then the server.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver.backends.postgres import pgbouncer

POOLER = 'pooler'    # the fault target (converters.FAULT_POOLER)


class PooledServer(object):

    def __init__(self, server, pooler):
        self.server = server
        self.pooler = pooler

    @classmethod
    def start(cls, server, pool_mode, pool_size, settings=()):
        """pgbouncer in front of the started ``server`` (its leader), started; on any
        failure the server is stopped too."""
        try:
            leader = getattr(server, 'leader', None) or server
            first = getattr(server, 'members', None) or [server]
            pooler = pgbouncer.PgBouncer(leader.host, leader.port, server.database,
                                         server.user, server.password, pool_mode, pool_size,
                                         first[0]._run_as, settings)
            pooler.start()
        except BaseException:
            server.stop()
            raise
        return cls(server, pooler)

    def __getattr__(self, name):
        # Everything the run asks of a server that is not the pooler's: the server's.
        if name in ('server', 'pooler'):
            raise AttributeError(name)
        return getattr(self.server, name)

    @property
    def dsn(self):
        return self.pooler.dsn

    @property
    def direct_dsn(self):
        """The server's own DSN (a replica set's: every member, the writable one wanted)."""
        return self.server.dsn

    def settings(self):
        return dict(self.server.settings(), pooler=self.pooler.settings())

    def extend_metrics(self, metrics, period):
        """The server's sampler with the pooler's figures beside it (and a replica set's
        members' before them)."""
        extend = getattr(self.server, 'extend_metrics', None)
        if extend is not None:
            metrics = extend(metrics, period)
        if metrics is None:
            return None
        sampler = pgbouncer.Sampler(self.pooler)
        return metrics.with_more(sampler.sample, sampler.close, sampler.rates,
                                 sampler.gauges, sampler.charts)

    def stop(self):
        try:
            self.pooler.stop()
        finally:
            self.server.stop()

    # -- faults ---------------------------------------------------------------------------

    def _on(self, target, act, *args):
        if target == POOLER:
            getattr(self.pooler, act)(*args)
            return self.pooler
        on = (target,) if target is not None else ()
        return getattr(self.server, act)(*on)

    def kill(self, target=None):
        return self._on(target, 'kill')

    def pause(self, target=None):
        return self._on(target, 'pause')

    def resume(self, target=None):
        return self._on(target, 'resume')

    def start_again(self, target=None):
        if target == POOLER:
            self.pooler.start_again()
            return self.pooler
        return self.server.start_again(*((target,) if target is not None else ()))

    def promote(self):
        old, new = self.server.promote()
        self.pooler.repoint(new.host, new.port)
        return old, new

    def resume_all(self):
        """Resume what a fault left paused (the pooler too), before stopping."""
        resume_all = getattr(self.server, 'resume_all', None)
        if resume_all is not None:
            resume_all()
        elif self.server.proc is not None and self.server.proc.poll() is None:
            self.server.resume()     # SIGCONT: nothing to a server that runs
        if self.pooler.proc is not None and self.pooler.proc.poll() is None:
            self.pooler.resume()
