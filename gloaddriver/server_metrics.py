"""What the server saw, sampled each interval next to the client's figures.

Tarantool: ``box.stat()`` request totals per type, ``box.info.lsn`` and
``box.slab.info()`` memory. PostgreSQL: ``pg_stat_database`` (commits,
rollbacks, tuples) and the number of backends; PostgreSQL 15 flushes a busy
backend's counters to it at most about once a second, so its intervals lag
and short runs under-count. For a server this driver
spawned, also its CPU over each phase from /proc (all its processes:
PostgreSQL's backends are separate processes), read at phase boundaries only. Sampled on a connection of its own; those
few queries a second are in the client's syscall counts (well under 0.1 %).
"""
from __future__ import absolute_import, division, print_function

import os

_TARANTOOL = u"""local s = box.stat() local sl = box.slab.info()
return {select = s.SELECT.total, insert = s.INSERT.total, replace = s.REPLACE.total,
        update = s.UPDATE.total, delete = s.DELETE.total, upsert = s.UPSERT.total,
        call = s.CALL.total, eval = s.EVAL.total, lsn = box.info.lsn,
        arena_used = sl.arena_used, items_used = sl.items_used, quota_used = sl.quota_used}"""
_POSTGRES = ("SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, "
             "tup_updated, tup_deleted, numbackends FROM pg_stat_database "
             "WHERE datname = current_database()")
_PG_FIELDS = ('xact_commit', 'xact_rollback', 'tup_returned', 'tup_fetched', 'tup_inserted',
              'tup_updated', 'tup_deleted', 'numbackends')
RATES = {'tarantool': ('select', 'insert', 'replace', 'update', 'delete', 'upsert', 'call'),
         'postgres': ('xact_commit', 'xact_rollback', 'tup_returned', 'tup_fetched',
                      'tup_inserted', 'tup_updated', 'tup_deleted')}
GAUGES = {'tarantool': ('lsn', 'arena_used', 'items_used', 'quota_used'),
          'postgres': ('numbackends',)}
_TICK = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100


def process_cpu_seconds(pid):
    """user+sys CPU seconds of pid and every live process it started (Linux /proc)."""
    total = 0.0
    try:
        pids = [p for p in os.listdir('/proc') if p.isdigit()]
    except OSError:
        return None
    for p in pids:
        try:
            with open('/proc/%s/stat' % p) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (IOError, OSError):
            continue
        # fields[1] is ppid; utime, stime are fields[11], fields[12]
        if p == str(pid) or fields[1] == str(pid):
            total += (int(fields[11]) + int(fields[12])) / float(_TICK)
    return total


class ServerMetrics(object):
    """``sample()`` -> cumulative counters; ``delta(a, b, seconds)`` -> rates and gauges."""

    def __init__(self, kind, sampler, close, pid=None):
        self.kind = kind
        self._sampler = sampler
        self._close = close
        self.pid = pid
        self.error = None

    def sample(self, cpu=False):
        """Cumulative counters; with cpu, also the spawned server's CPU time (scans /proc:
        done at phase boundaries only, outside the client's syscall window)."""
        try:
            s = self._sampler()
        except Exception as e:   # the server may be down: metrics are best effort
            self.error = str(e)
            return None
        if cpu and self.pid is not None:
            s['cpu_seconds'] = process_cpu_seconds(self.pid)
        return s

    def delta(self, a, b, seconds):
        if a is None or b is None or seconds <= 0:
            return None
        keys = [k for k in RATES[self.kind] if k in a and k in b]
        out = {'rps': dict((k, round((b[k] - a[k]) / seconds, 1)) for k in keys),
               'counts': dict((k, b[k] - a[k]) for k in keys)}
        out.update((k, b.get(k)) for k in GAUGES[self.kind])
        if a.get('cpu_seconds') is not None and b.get('cpu_seconds') is not None:
            out['cpu_pct'] = round(100.0 * (b['cpu_seconds'] - a['cpu_seconds']) / seconds, 1)
        return out

    def close(self):
        self._close()


def for_tarantool(config, pid=None):
    from gloaddriver.backends.tarantool.connection import Connection
    conn = Connection(config.host, config.port, config.user, config.password,
                      timeout=config.timeout, name='metrics').connect()

    def sample():
        return dict(conn.eval(_TARANTOOL)[0])
    return ServerMetrics('tarantool', sample, conn.close, pid)


def for_postgres(pool, pid=None):
    from gloaddriver.backends.postgres.backend import name_monitor
    item = pool.connect(setup=False)
    name_monitor(item)

    def sample():
        cur = item.cur
        cur.execute(_POSTGRES)
        return dict(zip(_PG_FIELDS, cur.fetchone()))

    def close():
        from gloaddriver.backends.postgres import pool as pgpool
        pgpool.forget(item.fd)
        item.conn.close()
    return ServerMetrics('postgres', sample, close, pid)


def describe(d):
    """A short text for a progress line."""
    if not d:
        return ''
    rps = sum(v for k, v in d['rps'].items() if k not in ('tup_returned', 'tup_fetched'))
    text = ' | server %s/s' % '{:,}'.format(int(rps))
    if d.get('cpu_pct') is not None:
        text += ' cpu %.0f%%' % d['cpu_pct']
    return text
