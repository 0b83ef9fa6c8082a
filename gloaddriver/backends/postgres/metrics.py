"""PostgreSQL's own figures for the server-metrics sampler: ``pg_stat_database``
(commits, rollbacks, tuples) and the number of backends.

PostgreSQL 15 flushes a busy backend's counters to ``pg_stat_database`` at
most about once a second, so its intervals lag and short runs under-count.
"""
from __future__ import absolute_import, division, print_function

from gloaddriver.measure.server_metrics import ServerMetrics

_SAMPLE = ("SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, "
           "tup_updated, tup_deleted, numbackends FROM pg_stat_database "
           "WHERE datname = current_database()")
_FIELDS = ('xact_commit', 'xact_rollback', 'tup_returned', 'tup_fetched', 'tup_inserted',
           'tup_updated', 'tup_deleted', 'numbackends')
RATES = ('xact_commit', 'xact_rollback', 'tup_returned', 'tup_fetched', 'tup_inserted',
         'tup_updated', 'tup_deleted')
# The progress line counts transactions (each autocommitted statement is one); rows are
# another unit, and adding them in would count an insert twice.
PROGRESS_RATES = ('xact_commit', 'xact_rollback')
PROGRESS_LABEL = 'xact/s (commits + rollbacks, all clients of the database)'
GAUGES = ('numbackends',)
CHARTS = [{'kind': 'server-backends', 'title': 'Server: backends', 'keys': ['numbackends'],
           'unit': 'backends'}]
# With the psycopg2 pool's monitor: the most connections checked out of the pool at once
# in each interval, beside the server's backends ("connections used").
GAUGES_POOL = GAUGES + ('checked_out',)
CHARTS_POOL = [{'kind': 'server-backends', 'title': 'Connections: server backends, checked '
                'out of the pool', 'keys': ['numbackends', 'checked_out'],
                'unit': 'connections'}]


def sampler(pool, pid=None, monitor=None):
    """The sampler, on a connection of its own from ``pool``'s DSN: made again when the
    server lost it (a restart, or a failover: a multi-host DSN reaches the new leader).

    One greenlet at a time uses it (a sample at a phase's edge may come while an
    interval's is still out: it is then skipped), and it is closed only once that one
    has let go: a psycopg2 query parked in the wait callback holds the connection's
    lock, and a close or a query from another greenlet would wait on it with the whole
    process. ``monitor`` (the psycopg2 pool's PeakMonitor) adds ``checked_out``."""
    from gevent.hub import getcurrent
    from gloaddriver.backends.postgres import pool as pgpool
    held = {'item': None, 'user': None}

    def connect():
        item = pool.connect(setup=False, name=pgpool.MONITOR_NAME)
        held['item'] = item
        return item

    def forget(item):
        if held['item'] is item:
            held['item'] = None
        pgpool.forget(item.fd)
        item.conn.close()

    def sample(timeout):     # the caller bounds it
        if held['user'] is not None:
            raise RuntimeError('the last sample is still out')
        held['user'] = getcurrent()
        try:
            item = held['item']
            if item is None or item.conn.closed:
                if item is not None:
                    forget(item)
                item = connect()
            try:
                item.cur.execute(_SAMPLE)
                out = dict(zip(_FIELDS, item.cur.fetchone()))
                if monitor is not None:
                    out['checked_out'] = monitor.take_checked_out()
                return out
            except BaseException:
                if item.conn.closed:
                    forget(item)     # the next sample connects again
                raise
        finally:
            held['user'] = None

    def close():
        user = held['user']
        if user is not None and user is not getcurrent():
            user.kill()      # psycopg2 lets go of the connection as the kill lands
        if held['item'] is not None:
            forget(held['item'])
    connect()
    return ServerMetrics(sample, close, RATES, GAUGES_POOL if monitor else GAUGES,
                         PROGRESS_RATES, CHARTS_POOL if monitor else CHARTS, pid=pid,
                         progress_label=PROGRESS_LABEL)
