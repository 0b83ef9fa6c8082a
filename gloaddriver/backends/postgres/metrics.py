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


def sampler(pool, pid=None):
    """The sampler, on a connection of its own from ``pool``'s DSN: made again when the
    server lost it (a restart, or a failover: a multi-host DSN reaches the new leader)."""
    from gloaddriver.backends.postgres import pool as pgpool
    held = [None]

    def connect():
        item = pool.connect(setup=False)
        pgpool.name_monitor(item)
        held[0] = item
        return item

    def drop():
        item, held[0] = held[0], None
        if item is not None:
            pgpool.forget(item.fd)
            item.conn.close()

    def sample():
        item = held[0]
        if item is None or item.conn.closed:
            drop()
            item = connect()
        try:
            item.cur.execute(_SAMPLE)
            return dict(zip(_FIELDS, item.cur.fetchone()))
        except Exception:
            if item.conn.closed:
                drop()     # the next sample connects again
            raise
    connect()
    return ServerMetrics(sample, drop, RATES, GAUGES, PROGRESS_RATES, CHARTS, pid=pid,
                         progress_label=PROGRESS_LABEL)
