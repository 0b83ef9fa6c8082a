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
    from gloaddriver.backends.postgres import pool as pgpool
    item = pool.connect(setup=False)
    pgpool.name_monitor(item)

    def sample():
        cur = item.cur
        cur.execute(_SAMPLE)
        return dict(zip(_FIELDS, cur.fetchone()))

    def close():
        pgpool.forget(item.fd)
        item.conn.close()
    return ServerMetrics(sample, close, RATES, GAUGES, PROGRESS_RATES, CHARTS, pid=pid,
                         progress_label=PROGRESS_LABEL)
