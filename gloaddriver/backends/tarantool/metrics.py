"""Tarantool's own figures for the server-metrics sampler: ``box.stat()`` request totals
per type, ``box.info.lsn`` and ``box.slab.info()`` memory, on a connection of its own."""
from __future__ import absolute_import, division, print_function

from gloaddriver.measure.server_metrics import ServerMetrics

_SAMPLE = u"""local s = box.stat() local sl = box.slab.info()
return {select = s.SELECT.total, insert = s.INSERT.total, replace = s.REPLACE.total,
        update = s.UPDATE.total, delete = s.DELETE.total, upsert = s.UPSERT.total,
        call = s.CALL.total, eval = s.EVAL.total,
        execute = s.EXECUTE and s.EXECUTE.total, prepare = s.PREPARE and s.PREPARE.total,
        lsn = box.info.lsn,
        arena_used = sl.arena_used, items_used = sl.items_used, quota_used = sl.quota_used}"""
RATES = ('select', 'insert', 'replace', 'update', 'delete', 'upsert', 'call', 'eval',
         'execute', 'prepare')
# box.stat() counts every request the server took, from any client (our sampler's
# evals too), not only this run's ops.
PROGRESS_LABEL = 'req/s (all request types, all clients)'
GAUGES = ('lsn', 'arena_used', 'items_used', 'quota_used')
CHARTS = [{'kind': 'server-memory', 'title': 'Server: memory (box.slab.info)',
           'keys': ['arena_used', 'items_used', 'quota_used'], 'unit': 'bytes'}]


def sampler(conn, pid=None):
    """The sampler on ``conn``, a buffered connection not yet connected."""
    conn.connect()

    def sample(timeout):     # the caller bounds it
        return dict(conn.eval(_SAMPLE)[0])
    return ServerMetrics(sample, conn.close, RATES, GAUGES, charts=CHARTS, pid=pid,
                         progress_label=PROGRESS_LABEL)
