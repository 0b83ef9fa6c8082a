"""A spawned server (a single PostgreSQL or a replica set) with a private pooler and/or
proxy in front (``--spawn --pooler pgbouncer``, ``--proxy haproxy``): what the run holds
as its server.

It stands in for the server everywhere the run holds one. ``dsn`` is the front's (the
pooler's, else the proxy's), so the driver's ops go through it; ``direct_dsn`` is the
server's, for the driver's own monitoring connections, which measure the server
(pg_stat_database, pg_stat_activity) and would otherwise measure the pooler's few
server connections.

Faults: an action on the ``pooler`` target (``pooler-restart``, ``kill-pooler``...) acts
on pgbouncer, one on the ``proxy`` target (``proxy-restart``) on HAProxy; every other
goes to the server behind them. A promotion in a replica set (or a leader Patroni
elected, ``--ha patroni``) points pgbouncer at the new leader, unless HAProxy is between
them (it follows the leader by its checks). ``stop()`` removes the pooler, the proxy, then the server.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver.backends.postgres import pgbouncer

POOLER = 'pooler'    # the fault target (converters.FAULT_POOLER)
PROXY = 'proxy'      # the fault target (converters.FAULT_PROXY)


class PooledServer(object):

    def __init__(self, server, pooler, proxy=None):
        self.server = server
        self.pooler = pooler
        self.proxy = proxy

    @classmethod
    def start(cls, server, pool_mode=None, pool_size=None, settings=(), proxy=False):
        """HAProxy (``proxy``) in front of the started replica set ``server``, and
        pgbouncer (``pool_mode``) in front of that or of the server's leader, started;
        on any failure what was started is stopped, the server too."""
        front = cls(server, None)
        try:
            first = (getattr(server, 'members', None) or [server])[0]
            backend = getattr(server, 'leader', None) or server
            if proxy:
                from gloaddriver.backends.postgres.haproxy import HAProxy
                front.proxy = HAProxy(server.members, server.database, server.user,
                                      server.password, first.bindir, first._run_as)
                front.proxy.start()
                backend = front.proxy
            if pool_mode:
                front.pooler = pgbouncer.PgBouncer(
                    backend.host, backend.port, server.database, server.user,
                    server.password, pool_mode, pool_size, first._run_as, settings)
                front.pooler.start()
                if front.proxy is None and hasattr(server, 'on_leader'):
                    pooler = front.pooler
                    server.on_leader.append(lambda m: pooler.repoint(m.host, m.port))
        except BaseException:
            front.stop()
            raise
        return front

    def __getattr__(self, name):
        # Everything the run asks of a server that is not the front's: the server's.
        if name in ('server', 'pooler', 'proxy'):
            raise AttributeError(name)
        return getattr(self.server, name)

    @property
    def dsn(self):
        return (self.pooler or self.proxy).dsn

    @property
    def direct_dsn(self):
        """The server's own DSN (a replica set's: every member, the writable one wanted)."""
        return self.server.dsn

    def settings(self):
        out = dict(self.server.settings())
        if self.pooler is not None:
            out['pooler'] = self.pooler.settings()
        if self.proxy is not None:
            out['proxy'] = self.proxy.settings()
        return out

    def extend_metrics(self, metrics, period):
        """The server's sampler with the pooler's figures beside it (and a replica set's
        members' before them)."""
        extend = getattr(self.server, 'extend_metrics', None)
        if extend is not None:
            metrics = extend(metrics, period)
        if metrics is None or self.pooler is None:
            return metrics
        sampler = pgbouncer.Sampler(self.pooler)
        return metrics.with_more(sampler.sample, sampler.close, sampler.rates,
                                 sampler.gauges, sampler.charts)

    def stop(self):
        try:
            for front in (self.pooler, self.proxy):
                if front is not None:
                    front.stop()
        finally:
            self.server.stop()

    # -- faults ---------------------------------------------------------------------------

    def _on(self, target, act, *args):
        if target in (POOLER, PROXY):
            front = self.pooler if target == POOLER else self.proxy
            getattr(front, act)(*args)
            return front
        on = (target,) if target is not None else ()
        return getattr(self.server, act)(*on)

    def kill(self, target=None):
        return self._on(target, 'kill')

    def pause(self, target=None):
        return self._on(target, 'pause')

    def resume(self, target=None):
        return self._on(target, 'resume')

    def start_again(self, target=None):
        return self._on(target, 'start_again')

    def promote(self):
        old, new = self.server.promote()
        if self.pooler is not None and self.proxy is None:
            self.pooler.repoint(new.host, new.port)
        return old, new

    def switchover(self):
        return self.server.switchover()

    def watch_ha(self, sink):
        """A Patroni cluster's events (``patroni.PatroniSet.watch_ha``), HAProxy's too."""
        watch = getattr(self.server, 'watch_ha', None)
        if watch is not None:
            watch(sink, self.proxy)

    def resume_all(self):
        """Resume what a fault left paused (the pooler too), before stopping."""
        resume_all = getattr(self.server, 'resume_all', None)
        if resume_all is not None:
            resume_all()
        elif self.server.proc is not None and self.server.proc.poll() is None:
            self.server.resume()     # SIGCONT: nothing to a server that runs
        if self.pooler is not None and self.pooler.proc is not None and \
                self.pooler.proc.poll() is None:
            self.pooler.resume()
